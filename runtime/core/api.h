/* api.h - the registry of host regions, shared by the API, dump and restore. */
#ifndef GK_API_H
#define GK_API_H

#include "image.h"

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

/* What a checkpoint point does before any checkpoint: marks the program
 * checkpoint-aware at the first call, loads a pending restore
 * (GPUCKPT_RESTORED). *due gets the GK_DUE_* bits left; the checkpoint bit is
 * not consumed. */
int gk_point_prepare(int *due);

#endif
