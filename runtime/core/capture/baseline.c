#include "config.h"

#include "core/capture/baseline.h"
#include "common/error.h"
#include "common/log.h"
#include "core/state/runtime.h"
#include "image/ckptname.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gk_manifest *base;
static uint64_t restored_seq; /* a restore to read lazily; 0: none */

/* Every allocation carries change keys (an allocation of size 0 has no
 * chunks to key): without them nothing can be compared. */
static int has_all_keys(const struct gk_manifest *m)
{
	if (m->version < 3)
		return 0;
	for (size_t i = 0; i < m->nallocs; i++)
		if (m->allocs[i].nchunks && !m->allocs[i].has_keys)
			return 0;
	return 1;
}

static void replace(struct gk_manifest *m)
{
	gk_manifest_free(base);
	base = m;
}

void gk_baseline_set(struct gk_manifest *m)
{
	pthread_mutex_lock(&lock);
	restored_seq = 0;
	if (m && !has_all_keys(m)) {
		gk_manifest_free(m);
		m = NULL;
	}
	replace(m);
	pthread_mutex_unlock(&lock);
}

/* Whether the folder holding `dir` is the checkpoint root: increments refer to
 * their base by its name in the root, ckpt.N. */
static int in_root(const char *dir)
{
	char parent[4200];
	struct stat a, b;
	const char *slash;
	size_t n = strlen(dir);

	if (!gk_rt.settings.dir[0])
		return 0;
	while (n > 1 && dir[n - 1] == '/')
		n--;
	slash = memrchr(dir, '/', n);
	if (slash)
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - dir), dir);
	else
		snprintf(parent, sizeof(parent), ".");
	if (!parent[0])
		snprintf(parent, sizeof(parent), "/");
	return stat(parent, &a) == 0 && stat(gk_rt.settings.dir, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

void gk_baseline_restored(const char *dir, uint64_t seq)
{
	pthread_mutex_lock(&lock);
	replace(NULL);
	restored_seq = in_root(dir) ? seq : 0;
	if (!restored_seq)
		gk_info("checkpoint: %s is outside the checkpoint root %s: the next checkpoint is "
			"written whole",
			dir, gk_runtime_dir());
	pthread_mutex_unlock(&lock);
}

const struct gk_manifest *gk_baseline_get(void)
{
	const struct gk_manifest *m;

	pthread_mutex_lock(&lock);
	if (!base && restored_seq) {
		gk_error_t err;
		struct gk_manifest *r = NULL;
		int fd = open(gk_rt.settings.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd >= 0 && gk_chain_read_manifest(fd, restored_seq, &r, &err) == 0 &&
		    has_all_keys(r))
			base = r;
		else
			gk_manifest_free(r);
		if (fd >= 0)
			close(fd);
		if (!base)
			gk_info("checkpoint: the restored checkpoint " GK_CKPT_FMT
				" cannot be built on (no change keys, or its manifest is gone): "
				"this checkpoint is written whole",
				(uint64_t)restored_seq);
		restored_seq = 0;
	}
	m = base;
	pthread_mutex_unlock(&lock);
	return m;
}

const struct gk_alloc_rec *gk_baseline_alloc(const struct gk_manifest *b, int device,
					     uint64_t address)
{
	size_t lo = 0, hi = b->nallocs;

	/* Allocations are sorted by (device, address) (the parser checks it). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct gk_alloc_rec *a = &b->allocs[mid];

		if (a->device == device && a->address == address)
			return a;
		if (a->device < device || (a->device == device && a->address < address))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int gk_baseline_file(const struct gk_manifest *b, uint64_t sequence, const char *file,
		     const char **id, uint64_t *size)
{
	if (sequence == b->sequence) {
		for (size_t i = 0; i < b->nfiles; i++)
			if (!strcmp(b->files[i].name, file)) {
				*id = b->id;
				*size = b->files[i].size;
				return 0;
			}
		return -ENOENT;
	}
	for (size_t r = 0; r < b->nrefs; r++) {
		if (b->refs[r].sequence != sequence)
			continue;
		for (size_t i = 0; i < b->refs[r].nfiles; i++)
			if (!strcmp(b->refs[r].files[i].name, file)) {
				*id = b->refs[r].id;
				*size = b->refs[r].files[i].size;
				return 0;
			}
	}
	return -ENOENT;
}
