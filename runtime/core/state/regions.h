/*
 * regions.h - the registry of host regions: named ranges of host memory that
 * the program registered with gpuckpt_protect() (api.c) and that every
 * checkpoint writes beside device memory (plan.c) and a restore loads back
 * (restore.c). A leaf of the engine, so that writing and loading need not
 * reach up to the public API for it. Readers hold gk_regions_lock.
 */
#ifndef GK_REGIONS_H
#define GK_REGIONS_H

#include "image/image.h"

#include <pthread.h>
#include <stddef.h>

struct gk_region {
	char name[GK_NAME_MAX];
	void *addr;
	size_t size;
};

extern struct gk_region *gk_regions;
extern size_t gk_nregions;
extern pthread_mutex_t gk_regions_lock;

/* Register name (already checked) at [addr, addr + size), or move it there
 * if it is registered: 0 or -ENOMEM. */
int gk_regions_set(const char *name, void *addr, size_t size);

/* Forget name: 0, or -ENOENT when it is not registered. */
int gk_regions_remove(const char *name);

#endif
