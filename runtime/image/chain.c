/*
 * chain.c - increments: checkpoints whose unchanged chunks lie in earlier
 * checkpoints' files (format 3). What a checkpoint needs (for pruning,
 * staging and the shared-root flush), where a chunk's bytes are, and the
 * parts of an allocation built from where each chunk is.
 *
 * A checkpoint refers directly to every checkpoint that holds bytes of it
 * (a writer resolves "unchanged since ckpt.5, which had it from ckpt.3" to
 * ckpt.3), so what it needs is itself and its references, never more: no
 * walk down a chain is needed, and a chain cannot loop (references name
 * older sequences only, checked by the parser).
 */
#include "config.h"
#include "image/image.h"
#include "common/error.h"
#include "image/ckptname.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Far above any real manifest; the same bound verify.c uses. */
#define MANIFEST_MAX (256u << 20)

int gk_chain_read_manifest(int rootfd, uint64_t sequence, struct gk_manifest **out, gk_error_t *err)
{
	char name[32], *text = NULL;
	gk_error_t sub;
	struct stat st;
	int dirfd, fd = -1, ret;

	*out = NULL;
	snprintf(name, sizeof(name), GK_CKPT_FMT, sequence);
	dirfd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", name, strerror(-ret));
		return ret;
	}
	fd = openat(dirfd, GK_MANIFEST_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s/%s: %s", name, GK_MANIFEST_FILE, strerror(-ret));
		goto out;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MANIFEST_MAX) {
		ret = -EINVAL;
		gk_errprintf(err, "%s/%s: not a manifest (not a regular file, or too large)", name,
			     GK_MANIFEST_FILE);
		goto out;
	}
	ret = gk_read_small(fd, (size_t)st.st_size, &text);
	if (ret < 0) {
		gk_errprintf(err, "%s/%s: %s", name, GK_MANIFEST_FILE, strerror(-ret));
		goto out;
	}
	ret = gk_manifest_parse(text, (size_t)st.st_size, out, &sub);
	if (ret < 0)
		gk_errprintf(err, "%s/%s: %s", name, GK_MANIFEST_FILE, sub.text);
	else if ((*out)->sequence != sequence) {
		gk_errprintf(err, "%s/%s: says it is checkpoint %" PRIu64, name, GK_MANIFEST_FILE,
			     (*out)->sequence);
		gk_manifest_free(*out);
		*out = NULL;
		ret = -EINVAL;
	}
out:
	free(text);
	if (fd >= 0)
		close(fd);
	close(dirfd);
	return ret;
}

void gk_refs_free(struct gk_ref *refs, size_t n)
{
	for (size_t i = 0; refs && i < n; i++)
		free(refs[i].files);
	free(refs);
}

int gk_chain_needs(int rootfd, uint64_t sequence, struct gk_ref **refs, size_t *n, gk_error_t *err)
{
	struct gk_manifest *m;
	int ret = gk_chain_read_manifest(rootfd, sequence, &m, err);

	*refs = NULL;
	*n = 0;
	if (ret < 0)
		return ret;
	/* Taken over whole: the files arrays move with them. */
	*refs = m->refs;
	*n = m->nrefs;
	m->refs = NULL;
	m->nrefs = 0;
	gk_manifest_free(m);
	return 0;
}

int gk_chunk_where(const struct gk_manifest *m, const struct gk_alloc_rec *a, uint32_t chunk,
		   struct gk_chunk_loc *loc)
{
	uint64_t start = (uint64_t)chunk * m->chunk_size;

	if (chunk >= a->nchunks)
		return -ERANGE;
	for (uint32_t p = 0; p < a->nparts; p++) {
		const struct gk_part *part = &a->parts[p];

		if (start < part->start || start - part->start >= part->size)
			continue;
		if (part->zero) {
			memset(loc, 0, sizeof(*loc));
			loc->zero = 1;
			return 0;
		}
		loc->zero = 0;
		loc->sequence = part->sequence ? part->sequence : m->sequence;
		snprintf(loc->file, sizeof(loc->file), "%s", part->file);
		loc->offset = part->offset + (start - part->start);
		return 0;
	}
	return -ENOENT;
}

int gk_parts_from_chunks(struct gk_alloc_rec *a, uint64_t chunk_size, uint64_t own_sequence,
			 const struct gk_chunk_loc *locs)
{
	struct gk_part *parts;
	uint32_t n = 0;

	free(a->parts);
	a->parts = NULL;
	a->nparts = 0;
	if (a->nchunks == 0)
		return 0;
	parts = calloc(a->nchunks, sizeof(*parts));
	if (!parts)
		return -ENOMEM;
	for (uint32_t c = 0; c < a->nchunks; c++) {
		const struct gk_chunk_loc *l = &locs[c];
		uint64_t start = (uint64_t)c * chunk_size;
		uint64_t len = a->size - start < chunk_size ? a->size - start : chunk_size;
		uint64_t seq = l->sequence == own_sequence ? 0 : l->sequence;
		struct gk_part *prev = n ? &parts[n - 1] : NULL;

		if (l->zero) {
			if (prev && prev->zero) {
				prev->size += len;
				continue;
			}
			parts[n] = (struct gk_part){.zero = 1, .start = start, .size = len};
			n++;
			continue;
		}
		/* A chunk continues the part before when it lies right after it
		 * in the same file. */
		if (prev && !prev->zero && prev->sequence == seq && !strcmp(prev->file, l->file) &&
		    prev->offset + prev->size == l->offset) {
			prev->size += len;
			continue;
		}
		parts[n].sequence = seq;
		snprintf(parts[n].file, sizeof(parts[n].file), "%s", l->file);
		parts[n].offset = l->offset;
		parts[n].start = start;
		parts[n].size = len;
		n++;
	}
	a->parts = parts;
	a->nparts = n;
	return 0;
}
