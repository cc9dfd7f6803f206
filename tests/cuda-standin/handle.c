/*
 * handle.c - the live handles of every kind, so that a destroyed or made-up
 * handle gets CUDA_ERROR_INVALID_HANDLE instead of a crash, and so that
 * destroying a context finds what it owns. Objects are reference counted: a
 * stream destroyed while an operation of another stream still waits on it
 * stays in memory until that operation let go of it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "standin.h"

/* Open addressing; a removed slot becomes a tombstone so that probing goes on. */
#define TOMBSTONE ((struct si_obj *)1)

static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static struct si_obj **slots;
static size_t nslots, nused, nlive;

static size_t hash_ptr(const void *p)
{
	uintptr_t x = (uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

static size_t find_slot(const void *p)
{
	size_t i = hash_ptr(p) & (nslots - 1);

	while (slots[i]) {
		if (slots[i] == p)
			return i;
		i = (i + 1) & (nslots - 1);
	}
	return SIZE_MAX;
}

static int grow(void)
{
	size_t n = nslots ? nslots * 2 : 256;
	struct si_obj **old = slots;
	size_t oldn = nslots;

	if (nlive * 4 < nslots) /* mostly tombstones: rehash at the same size */
		n = nslots;
	slots = calloc(n, sizeof(*slots));
	if (!slots) {
		slots = old;
		return -ENOMEM;
	}
	nslots = n;
	nused = 0;
	for (size_t i = 0; i < oldn; i++) {
		struct si_obj *o = old[i];

		if (o && o != TOMBSTONE) {
			size_t j = hash_ptr(o) & (nslots - 1);

			while (slots[j])
				j = (j + 1) & (nslots - 1);
			slots[j] = o;
			nused++;
		}
	}
	free(old);
	return 0;
}

void si_obj_init(struct si_obj *obj, enum si_type type, struct CUctx_st *owner,
		 void (*release)(struct si_obj *))
{
	atomic_init(&obj->refs, 1);
	obj->type = type;
	obj->owner = owner;
	obj->release = release;
}

int si_handle_add(struct si_obj *obj)
{
	size_t i;
	int err = 0;

	pthread_mutex_lock(&handles_lock);
	if ((nused + 1) * 2 > nslots) {
		err = grow();
		if (err)
			goto out_unlock;
	}
	i = hash_ptr(obj) & (nslots - 1);
	while (slots[i] && slots[i] != TOMBSTONE)
		i = (i + 1) & (nslots - 1);
	if (!slots[i])
		nused++;
	slots[i] = obj;
	nlive++;
out_unlock:
	pthread_mutex_unlock(&handles_lock);
	return err;
}

bool si_handle_del(struct si_obj *obj)
{
	size_t i;

	pthread_mutex_lock(&handles_lock);
	i = nslots ? find_slot(obj) : SIZE_MAX;
	if (i != SIZE_MAX) {
		slots[i] = TOMBSTONE;
		nlive--;
	}
	pthread_mutex_unlock(&handles_lock);
	return i != SIZE_MAX;
}

struct si_obj *si_handle_get(const void *h, enum si_type type)
{
	struct si_obj *obj = NULL;
	size_t i;

	if (!h || h == TOMBSTONE)
		return NULL;
	pthread_mutex_lock(&handles_lock);
	i = nslots ? find_slot(h) : SIZE_MAX;
	if (i != SIZE_MAX && slots[i]->type == type) {
		obj = slots[i];
		atomic_fetch_add(&obj->refs, 1);
	}
	pthread_mutex_unlock(&handles_lock);
	return obj;
}

size_t si_handle_take_owned(struct CUctx_st *ctx, enum si_type type, struct si_obj ***out)
{
	struct si_obj **list = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&handles_lock);
	for (size_t i = 0; i < nslots; i++) {
		struct si_obj *o = slots[i];

		if (!o || o == TOMBSTONE || o->owner != ctx || o->type != type)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct si_obj **nl = realloc(list, ncap * sizeof(*nl));

			if (!nl)
				break; /* the rest stays live; nothing is lost, only kept longer */
			list = nl;
			cap = ncap;
		}
		list[n++] = o;
		slots[i] = TOMBSTONE;
		nlive--;
	}
	pthread_mutex_unlock(&handles_lock);
	*out = list;
	return n;
}

size_t si_handle_list(enum si_type type, struct si_obj ***out)
{
	struct si_obj **list;
	size_t n = 0;

	pthread_mutex_lock(&handles_lock);
	list = malloc((nlive ? nlive : 1) * sizeof(*list));
	for (size_t i = 0; list && i < nslots; i++) {
		struct si_obj *o = slots[i];

		if (o && o != TOMBSTONE && o->type == type) {
			atomic_fetch_add(&o->refs, 1);
			list[n++] = o;
		}
	}
	pthread_mutex_unlock(&handles_lock);
	*out = list;
	return n;
}

void si_obj_ref(struct si_obj *obj)
{
	atomic_fetch_add(&obj->refs, 1);
}

void si_obj_put(struct si_obj *obj)
{
	if (obj && atomic_fetch_sub(&obj->refs, 1) == 1)
		obj->release(obj);
}
