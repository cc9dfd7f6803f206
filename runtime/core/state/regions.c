/*
 * regions.c - the registry of host regions (regions.h): what
 * gpuckpt_protect() registered, read by the checkpoint's plan and by restore.
 */
#include "config.h"

#include "core/state/regions.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct gk_region *gk_regions;
size_t gk_nregions;
pthread_mutex_t gk_regions_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t cap;

int gk_regions_set(const char *name, void *addr, size_t size)
{
	pthread_mutex_lock(&gk_regions_lock);
	for (size_t i = 0; i < gk_nregions; i++) {
		if (!strcmp(gk_regions[i].name, name)) {
			gk_regions[i].addr = addr;
			gk_regions[i].size = size;
			pthread_mutex_unlock(&gk_regions_lock);
			return 0;
		}
	}
	if (gk_nregions == cap) {
		size_t ncap = cap ? cap * 2 : 16;
		struct gk_region *p = realloc(gk_regions, ncap * sizeof(*p));

		if (!p) {
			pthread_mutex_unlock(&gk_regions_lock);
			return -ENOMEM;
		}
		gk_regions = p;
		cap = ncap;
	}
	strcpy(gk_regions[gk_nregions].name, name);
	gk_regions[gk_nregions].addr = addr;
	gk_regions[gk_nregions].size = size;
	gk_nregions++;
	pthread_mutex_unlock(&gk_regions_lock);
	return 0;
}

int gk_regions_remove(const char *name)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&gk_regions_lock);
	for (size_t i = 0; i < gk_nregions; i++) {
		if (!strcmp(gk_regions[i].name, name)) {
			gk_regions[i] = gk_regions[--gk_nregions];
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&gk_regions_lock);
	return ret;
}
