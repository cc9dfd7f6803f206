/*
 * manifest.c - the manifest of a checkpoint in memory: its creation (with the
 * checkpoint's random id) and release, and the rules on names and chunks that
 * the writer (manifest_write.c) and the reader (manifest_read.c) share.
 */
#include "config.h"
#include "image/image.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

/* 128 random bits: what tells this checkpoint from any other of the same
 * number (a root reused by another run, a copy staged back). */
static int new_id(char id[GK_ID_LEN + 1])
{
	static const char digits[] = "0123456789abcdef";
	uint8_t rnd[GK_ID_LEN / 2];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -1;
	for (size_t i = 0; i < sizeof(rnd); i++) {
		id[2 * i] = digits[rnd[i] >> 4];
		id[2 * i + 1] = digits[rnd[i] & 15];
	}
	id[GK_ID_LEN] = 0;
	return 0;
}

struct gk_manifest *gk_manifest_new(void)
{
	struct gk_manifest *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	if (new_id(m->id) < 0) {
		free(m);
		return NULL;
	}
	m->version = GK_FORMAT_WRITTEN;
	m->chunk_size = GK_DEFAULT_CHUNK_SIZE;
	return m;
}

void gk_manifest_free(struct gk_manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nallocs; i++) {
		free(m->allocs[i].parts);
		free(m->allocs[i].chunks);
	}
	for (size_t i = 0; i < m->nregions; i++)
		free(m->regions[i].chunks);
	for (size_t i = 0; i < m->nrefs; i++)
		free(m->refs[i].files);
	free(m->refs);
	free(m->allocs);
	free(m->regions);
	free(m->devices);
	free(m->files);
	free(m->imports);
	free(m);
}

int gk_name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len >= GK_NAME_MAX || strcmp(name, ".") == 0 || strstr(name, ".."))
		return 0;
	for (const char *p = name; *p; p++) {
		char ch = *p;

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '.' || ch == '-'))
			return 0;
	}
	return 1;
}

uint32_t gk_chunk_count(uint64_t size, uint64_t chunk_size)
{
	uint64_t n;

	if (size == 0 || chunk_size == 0)
		return 0;
	n = (size - 1) / chunk_size + 1;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}
