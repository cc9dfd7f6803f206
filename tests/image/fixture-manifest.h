/*
 * fixture-manifest.h - a manifest with the fields every checkpoint has, filled
 * as the runtime fills them, for the unit tests that write checkpoints
 * (test-store, test-store-transparent, test-stepset). Header-only like tap.h.
 */
#ifndef GK_FIXTURE_MANIFEST_H
#define GK_FIXTURE_MANIFEST_H

#include "image/image.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A manifest labelled LABEL, made now by this process on "testhost", with
 * chunks of 4 KiB and a 1 TiB range at 0x200000000000, and no device memory
 * yet: what the shepherd writes when no runtime reported, and what a test
 * adds allocations to. */
static inline struct gk_manifest *empty_manifest(const char *label)
{
	struct gk_manifest *m = gk_manifest_new();
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(m->created, sizeof(m->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	m->created_unix = now;
	strcpy(m->hostname, "testhost");
	m->uid = geteuid();
	m->pid = getpid();
	snprintf(m->label, sizeof(m->label), "%s", label);
	m->chunk_size = 4096;
	m->va_base = 0x200000000000ull;
	m->va_size = 1ull << 40;
	return m;
}

#endif
