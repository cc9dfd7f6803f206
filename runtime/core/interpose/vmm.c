/*
 * vmm.c - memory the program maps itself (vmm.h): the interposed VMM entry
 * points keep three lists, under one lock: reservations (with their number in
 * the order the program made them), allocation handles (properties, size, the
 * program's references, the driver's handle now) and mappings (address, size,
 * offset, handle, access). The runtime's own placement calls the driver
 * directly (gk_real) and never appears here.
 *
 * The lists are short in practice (an allocator maps a few large granules at
 * a time), so they are linked lists searched in full.
 */
#include "config.h"

#include "core/interpose/vmm.h"
#include "core/placement/arena.h"
#include "core/placement/layout.h"
#include "core/driver/driver.h"
#include "core/interpose/gate.h"
#include "core/interpose/handlers.h"
#include "common/log.h"
#include "core/state/runtime.h"
#include "core/state/track.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct resv {
	CUdeviceptr base;
	size_t size; /* the program's */
	size_t len;  /* the driver's: more in the window (window_len) */
	uint64_t order;
	struct resv *next;
};

struct handle {
	/* What the program holds: the driver's handle at creation. After a
	 * transparent restore the driver's handle is `real`, another value. */
	CUmemGenericAllocationHandle id, real;
	CUmemAllocationProp prop;
	size_t size;
	long refs;  /* the program's: cuMemCreate, cuMemRetainAllocationHandle */
	long nmaps; /* mappings of it */
	int saveable; /* plain device memory */
	int exported; /* cuMemExportToShareableHandle: counted as VMM_EXPORT while it lives */
	struct handle *next;
};

struct mapping {
	CUdeviceptr addr;
	size_t size, offset;
	struct handle *h; /* NULL: a handle not made here (imported) */
	const struct resv *r;
	CUmemAccessDesc access[GK_MAX_DEVICES];
	size_t naccess;
	struct mapping *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct resv *resvs;
static struct handle *handles;
static struct mapping *maps;
static uint64_t next_resv_order;
static uint64_t window_cursor; /* lock; where the next reservation in the window may start */
static int released; /* transparent: the physical memory is given back */
static const struct gk_vmm_restorer *restorer;

void gk_vmm_set_restorer(const struct gk_vmm_restorer *r)
{
	__atomic_store_n(&restorer, r, __ATOMIC_RELEASE);
}

static void abandon(const char *why)
{
	const struct gk_vmm_restorer *r = __atomic_load_n(&restorer, __ATOMIC_ACQUIRE);

	if (r)
		r->abandon(why);
}

/* The handle the program means by id: one it still holds (a value the
 * driver gave back may be given again to a new allocation). */
static struct handle *handle_of(CUmemGenericAllocationHandle id)
{
	for (struct handle *h = handles; h; h = h->next)
		if (h->id == id && h->refs > 0)
			return h;
	return NULL;
}

/* The driver's handle for what the program holds (itself if unknown). */
static CUmemGenericAllocationHandle real_of(CUmemGenericAllocationHandle id)
{
	struct handle *h;
	CUmemGenericAllocationHandle r = id;

	pthread_mutex_lock(&lock);
	h = handle_of(id);
	if (h)
		r = h->real;
	pthread_mutex_unlock(&lock);
	return r;
}

static void handle_drop_locked(struct handle *h)
{
	if (h->refs > 0 || h->nmaps > 0)
		return;
	for (struct handle **p = &handles; *p; p = &(*p)->next)
		if (*p == h) {
			*p = h->next;
			break;
		}
	if (h->exported)
		gk_track(GK_UNSUP_VMM_EXPORT, -1);
	free(h);
}

static const struct resv *resv_of(CUdeviceptr p, size_t n)
{
	for (struct resv *r = resvs; r; r = r->next)
		if (p >= r->base && n <= r->size && p - r->base <= r->size - n)
			return r;
	return NULL;
}

static int saveable(const struct mapping *m)
{
	return m->h && m->h->saveable && m->r;
}

/* ---- reservations ---- */

/* A restart hands the program's n-th reservation the checkpoint's address of
 * it: the program stores pointers into it. */
static CUdeviceptr restored_address(uint64_t order, size_t size)
{
	const struct gk_vmm_restorer *rs = __atomic_load_n(&restorer, __ATOMIC_ACQUIRE);
	const struct gk_manifest *m = rs ? rs->pending() : NULL;
	char why[256];

	if (!m)
		return 0;
	for (size_t i = 0; i < m->nallocs; i++) {
		const struct gk_alloc_rec *a = &m->allocs[i];

		if (strcmp(a->kind, GK_KIND_VMM) || a->order != order)
			continue;
		if (a->resv_size == size)
			return a->resv_address;
		snprintf(why, sizeof(why),
			 "the program's reservation %llu is %zu bytes now and %llu bytes in the "
			 "checkpoint",
			 (unsigned long long)order, size, (unsigned long long)a->resv_size);
		abandon(why);
		return 0;
	}
	return 0;
}

/*
 * The window of the program's reservations (layout.h): a small reservation
 * (under GK_HINT_MIN) that names no address goes to the next free multiple
 * of GK_HINT_ALIGN there, GK_HINT_MIN long, so that a restart can ask for
 * it again. Left to the driver, it would go to the driver's own pool, at an
 * address no later process can ask for (NCCL's buffers are such). Larger
 * ones stay where the driver puts them, which a restart can ask for: that
 * is how XLA's pool and PyTorch's expandable segments were round-tripped on
 * the H200, and the window was not run with them. The window is used up in
 * order and never reused: its 4 TiB hold 131072 small ones.
 */
static void window_bounds(uint64_t *lo, uint64_t *hi)
{
	uint64_t vb = gk_rt.settings.va_base;

	*lo = *hi = 0;
	if (vb >= GK_IMPORT_WINDOW + 2 * GK_RESV_WINDOW) {
		*hi = vb - GK_IMPORT_WINDOW;
		*lo = *hi - GK_RESV_WINDOW;
	}
}

static size_t window_len(size_t size)
{
	return gk_align_up(size < GK_HINT_MIN ? GK_HINT_MIN : size, GK_HINT_ALIGN);
}

static int in_window(CUdeviceptr p)
{
	uint64_t lo, hi;

	window_bounds(&lo, &hi);
	return p >= lo && p < hi;
}

/* The next place in the window for size bytes, or 0 (no window, or full). */
static CUdeviceptr window_take(size_t size, size_t alignment)
{
	uint64_t lo, hi, at, len = window_len(size);
	uint64_t al = alignment > GK_HINT_ALIGN ? alignment : GK_HINT_ALIGN;

	window_bounds(&lo, &hi);
	if (!hi)
		return 0;
	pthread_mutex_lock(&lock);
	at = gk_align_up(window_cursor > lo ? window_cursor : lo, al);
	if (at < hi && len <= hi - at)
		window_cursor = at + len;
	else
		at = 0;
	pthread_mutex_unlock(&lock);
	return at;
}

/* A restored reservation in the window: what follows goes after it. */
static void window_skip(CUdeviceptr at, size_t size)
{
	pthread_mutex_lock(&lock);
	if (window_cursor < at + window_len(size))
		window_cursor = at + window_len(size);
	pthread_mutex_unlock(&lock);
}

CUresult gk_on_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
				   CUdeviceptr addr, unsigned long long flags)
{
	CUdeviceptr want = 0;
	struct resv *r;
	uint64_t order;
	size_t len = size;
	CUresult res;

	GK_NEED_REAL(cuMemAddressReserve);
	if (!gk_enabled() || !ptr)
		return gk_real.cuMemAddressReserve(ptr, size, alignment, addr, flags);
	gk_gate_enter();
	pthread_mutex_lock(&lock);
	order = next_resv_order++;
	pthread_mutex_unlock(&lock);
	want = restored_address(order, size);
	if (want && in_window(want))
		window_skip(want, size);
	else if (!want && !addr && size < GK_HINT_MIN)
		addr = window_take(size, alignment);
	if (in_window(want ? want : addr))
		len = window_len(size);
	res = gk_real.cuMemAddressReserve(ptr, len, alignment, want ? want : addr, flags);
	if (res == CUDA_SUCCESS && want && *ptr != want) {
		char why[256];

		snprintf(why, sizeof(why),
			 "the program's reservation %llu (%zu bytes) cannot be made at 0x%llx "
			 "again: the driver gave 0x%llx",
			 (unsigned long long)order, size, (unsigned long long)want,
			 (unsigned long long)*ptr);
		abandon(why);
	}
	if (res == CUDA_SUCCESS) {
		r = calloc(1, sizeof(*r));
		if (!r) {
			gk_real.cuMemAddressFree(*ptr, len);
			res = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			r->base = *ptr;
			r->size = size;
			r->len = len;
			r->order = order;
			pthread_mutex_lock(&lock);
			r->next = resvs;
			resvs = r;
			pthread_mutex_unlock(&lock);
		}
	}
	gk_gate_leave();
	return res;
}

CUresult gk_on_cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct resv *r = NULL;
	CUresult res;

	GK_NEED_REAL(cuMemAddressFree);
	if (!gk_enabled())
		return gk_real.cuMemAddressFree(ptr, size);
	gk_gate_enter();
	/* Taken off the list before the driver frees it (one walk), and put
	 * back if the driver refuses; the gate keeps a checkpoint from looking
	 * at the list meanwhile. */
	pthread_mutex_lock(&lock);
	for (struct resv **p = &resvs; *p; p = &(*p)->next)
		if ((*p)->base == ptr) {
			r = *p;
			*p = r->next;
			break;
		}
	pthread_mutex_unlock(&lock);
	/* A reservation in the window is longer than the program asked. */
	res = gk_real.cuMemAddressFree(ptr, r && r->size == size ? r->len : size);
	if (res != CUDA_SUCCESS && r) {
		pthread_mutex_lock(&lock);
		r->next = resvs;
		resvs = r;
		pthread_mutex_unlock(&lock);
		r = NULL;
	}
	free(r);
	gk_gate_leave();
	return res;
}

/* ---- allocation handles ---- */

/* After a transparent restore the driver's handles are new values, and one
 * may equal a value the program still holds for another allocation: such a
 * handle is kept aside (so that the driver gives another) and released. */
static CUresult create_unclaimed(CUmemGenericAllocationHandle *out, size_t size,
				 const CUmemAllocationProp *prop, unsigned long long flags)
{
	CUmemGenericAllocationHandle aside[8];
	int naside = 0, taken;
	CUresult res;

	for (;;) {
		res = gk_real.cuMemCreate(out, size, prop, flags);
		if (res != CUDA_SUCCESS)
			break;
		pthread_mutex_lock(&lock);
		taken = handle_of(*out) != NULL;
		pthread_mutex_unlock(&lock);
		if (!taken)
			break;
		if (naside == (int)(sizeof(aside) / sizeof(aside[0]))) {
			gk_real.cuMemRelease(*out);
			res = CUDA_ERROR_OUT_OF_MEMORY;
			break;
		}
		aside[naside++] = *out;
	}
	while (naside > 0)
		gk_real.cuMemRelease(aside[--naside]);
	return res;
}

CUresult gk_on_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			   const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct handle *h;
	CUresult res;

	GK_NEED_REAL(cuMemCreate);
	if (!gk_enabled() || !handle || !prop)
		return gk_real.cuMemCreate(handle, size, prop, flags);
	gk_gate_enter();
	res = create_unclaimed(handle, size, prop, flags);
	if (res != CUDA_SUCCESS)
		goto out;
	h = calloc(1, sizeof(*h));
	if (!h) {
		gk_real.cuMemRelease(*handle);
		res = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	h->id = h->real = *handle;
	h->prop = *prop;
	h->size = size;
	h->refs = 1;
	h->saveable = prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
		      prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && prop->location.id >= 0 &&
		      prop->location.id < GK_MAX_DEVICES;
	if (h->saveable && !gk_arenas[prop->location.id]) {
		/* The checkpoint lists the device and copies through its
		 * context: set the arena up now if the program is on it. */
		CUdevice cur;
		CUresult e;

		if (gk_real.cuCtxGetDevice(&cur) == CUDA_SUCCESS && cur == prop->location.id)
			gk_arena_current(&e);
	}
	pthread_mutex_lock(&lock);
	h->next = handles;
	handles = h;
	pthread_mutex_unlock(&lock);
out:
	gk_gate_leave();
	return res;
}

CUresult gk_on_cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct handle *h;
	CUresult res = CUDA_SUCCESS;

	GK_NEED_REAL(cuMemRelease);
	if (!gk_enabled())
		return gk_real.cuMemRelease(handle);
	gk_gate_enter();
	pthread_mutex_lock(&lock);
	h = handle_of(handle);
	if (!h || h->refs <= 0) {
		pthread_mutex_unlock(&lock);
		res = gk_real.cuMemRelease(handle);
		/* An imported handle (track_hooks.c) is the process's no more. */
		if (res == CUDA_SUCCESS && !h)
			gk_track_ptr_remove(GK_UNSUP_VMM_IMPORT, (unsigned long long)handle);
		goto out;
	}
	/* The driver holds one reference for all of the program's (retains are
	 * answered here): it is released with the last one. */
	if (h->refs == 1 && !released)
		res = gk_real.cuMemRelease(h->real);
	if (res == CUDA_SUCCESS) {
		h->refs--;
		handle_drop_locked(h);
	}
	pthread_mutex_unlock(&lock);
out:
	gk_gate_leave();
	return res;
}

CUresult gk_on_cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	CUresult res = CUDA_ERROR_INVALID_VALUE;
	CUdeviceptr p = (CUdeviceptr)(uintptr_t)addr;

	GK_NEED_REAL(cuMemRetainAllocationHandle);
	if (!gk_enabled() || !handle)
		return gk_real.cuMemRetainAllocationHandle(handle, addr);
	pthread_mutex_lock(&lock);
	for (struct mapping *m = maps; m; m = m->next)
		if (p >= m->addr && p - m->addr < m->size && m->h) {
			if (m->h->refs == 0 && !released) {
				/* The program holds it again: so does the driver. */
				CUmemGenericAllocationHandle again;

				res = gk_real.cuMemRetainAllocationHandle(&again, addr);
				if (res != CUDA_SUCCESS)
					break;
			}
			m->h->refs++;
			*handle = m->h->id;
			res = CUDA_SUCCESS;
			break;
		}
	pthread_mutex_unlock(&lock);
	if (res == CUDA_ERROR_INVALID_VALUE)
		return gk_real.cuMemRetainAllocationHandle(handle, addr);
	return res;
}

CUresult gk_on_cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
						      CUmemGenericAllocationHandle handle)
{
	GK_NEED_REAL(cuMemGetAllocationPropertiesFromHandle);
	if (!gk_enabled())
		return gk_real.cuMemGetAllocationPropertiesFromHandle(prop, handle);
	return gk_real.cuMemGetAllocationPropertiesFromHandle(prop, real_of(handle));
}

/* Another process may import it: in transparent mode its memory cannot be
 * given back and made anew under that process. Counted while the handle
 * lives (released and unmapped everywhere here: handle_drop_locked); a
 * handle the runtime did not make is counted for good, on the safe side. */
CUresult gk_on_cuMemExportToShareableHandle(void *shareableHandle,
					    CUmemGenericAllocationHandle handle,
					    CUmemAllocationHandleType handleType,
					    unsigned long long flags)
{
	CUresult res;

	GK_NEED_REAL(cuMemExportToShareableHandle);
	if (!gk_enabled())
		return gk_real.cuMemExportToShareableHandle(shareableHandle, handle, handleType,
							    flags);
	res = gk_real.cuMemExportToShareableHandle(shareableHandle, real_of(handle), handleType,
						   flags);
	if (res == CUDA_SUCCESS) {
		struct handle *h;

		pthread_mutex_lock(&lock);
		h = handle_of(handle);
		if (!h || !h->exported)
			gk_track(GK_UNSUP_VMM_EXPORT, 1);
		if (h)
			h->exported = 1;
		pthread_mutex_unlock(&lock);
	}
	return res;
}

/* ---- mappings ---- */

CUresult gk_on_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct mapping *m;
	CUresult res;

	GK_NEED_REAL(cuMemMap);
	if (!gk_enabled())
		return gk_real.cuMemMap(ptr, size, offset, handle, flags);
	m = calloc(1, sizeof(*m));
	if (!m)
		return CUDA_ERROR_OUT_OF_MEMORY;
	gk_gate_enter();
	res = gk_real.cuMemMap(ptr, size, offset, real_of(handle), flags);
	if (res != CUDA_SUCCESS) {
		free(m);
		goto out;
	}
	m->addr = ptr;
	m->size = size;
	m->offset = offset;
	pthread_mutex_lock(&lock);
	m->h = handle_of(handle);
	m->r = resv_of(ptr, size);
	if (m->h)
		m->h->nmaps++;
	m->next = maps;
	maps = m;
	pthread_mutex_unlock(&lock);
	/* Never a mapping left out of a checkpoint silently: what cannot be
	 * saved (memory not on a device, a handle from elsewhere, a range
	 * reserved where the runtime did not see it) refuses it while mapped. */
	if (!saveable(m))
		gk_track(GK_UNSUP_VMM_OTHER, 1);
out:
	gk_gate_leave();
	return res;
}

CUresult gk_on_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult res;

	GK_NEED_REAL(cuMemUnmap);
	if (!gk_enabled())
		return gk_real.cuMemUnmap(ptr, size);
	gk_gate_enter();
	res = gk_real.cuMemUnmap(ptr, size);
	if (res == CUDA_SUCCESS) {
		pthread_mutex_lock(&lock);
		for (struct mapping **p = &maps; *p;) {
			struct mapping *m = *p;

			if (m->addr >= ptr && m->addr - ptr < size) {
				*p = m->next;
				if (!saveable(m))
					gk_track(GK_UNSUP_VMM_OTHER, -1);
				if (m->h) {
					m->h->nmaps--;
					handle_drop_locked(m->h);
				}
				free(m);
			} else {
				p = &m->next;
			}
		}
		pthread_mutex_unlock(&lock);
	}
	gk_gate_leave();
	return res;
}

/* Access is kept per mapping, one descriptor per location (the last one set
 * for it), and set again whole on a re-created mapping. */
static void note_access_locked(struct mapping *m, const CUmemAccessDesc *d)
{
	for (size_t i = 0; i < m->naccess; i++)
		if (m->access[i].location.type == d->location.type &&
		    m->access[i].location.id == d->location.id) {
			m->access[i].flags = d->flags;
			return;
		}
	if (m->naccess < GK_MAX_DEVICES)
		m->access[m->naccess++] = *d;
}

CUresult gk_on_cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
			      size_t count)
{
	CUresult res;

	GK_NEED_REAL(cuMemSetAccess);
	if (!gk_enabled())
		return gk_real.cuMemSetAccess(ptr, size, desc, count);
	gk_gate_enter();
	res = gk_real.cuMemSetAccess(ptr, size, desc, count);
	if (res == CUDA_SUCCESS && desc) {
		pthread_mutex_lock(&lock);
		for (struct mapping *m = maps; m; m = m->next)
			if (m->addr < ptr + size && ptr < m->addr + m->size)
				for (size_t i = 0; i < count; i++)
					note_access_locked(m, &desc[i]);
		pthread_mutex_unlock(&lock);
	}
	gk_gate_leave();
	return res;
}

/* ---- checkpoint ---- */


size_t gk_vmm_count(void)
{
	size_t n = 0;

	pthread_mutex_lock(&lock);
	for (struct mapping *m = maps; m; m = m->next)
		n += saveable(m);
	pthread_mutex_unlock(&lock);
	return n;
}

size_t gk_vmm_describe(struct gk_alloc_rec *recs, size_t cap)
{
	size_t n = 0;

	pthread_mutex_lock(&lock);
	for (struct mapping *m = maps; m && n < cap; m = m->next) {
		struct gk_alloc_rec *a = &recs[n];

		if (!saveable(m))
			continue;
		a->device = m->h->prop.location.id;
		a->address = m->addr;
		a->size = m->size;
		a->order = m->r->order;
		snprintf(a->kind, sizeof(a->kind), "%s", GK_KIND_VMM);
		a->resv_address = m->r->base;
		a->resv_size = m->r->size;
		n++;
	}
	pthread_mutex_unlock(&lock);
	return n;
}

int gk_vmm_check_restored(const struct gk_manifest *m, char *why, size_t len)
{
	int ret = 0;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < m->nallocs && !ret; i++) {
		const struct gk_alloc_rec *a = &m->allocs[i];
		const struct mapping *found = NULL;

		if (strcmp(a->kind, GK_KIND_VMM))
			continue;
		for (const struct mapping *p = maps; p && !found; p = p->next)
			if (p->addr == a->address && p->size == a->size && saveable(p))
				found = p;
		if (!found || found->h->prop.location.id != a->device) {
			snprintf(why, len,
				 "the checkpoint holds memory the program mapped at 0x%llx (%llu "
				 "bytes, device %d), which this run has not mapped there before its "
				 "first checkpoint point",
				 (unsigned long long)a->address, (unsigned long long)a->size,
				 a->device);
			ret = -EINVAL;
		}
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

uint64_t gk_vmm_release_memory(void)
{
	uint64_t bytes = 0;
	size_t nmaps = 0;

	pthread_mutex_lock(&lock);
	if (released)
		goto out;
	for (struct mapping *m = maps; m; m = m->next) {
		if (!saveable(m))
			continue;
		gk_cu_check(gk_real.cuMemUnmap(m->addr, m->size), "cuMemUnmap", "transparent",
			    "memory the program mapped");
		nmaps++;
	}
	for (struct handle *h = handles; h; h = h->next) {
		if (!h->saveable)
			continue;
		/* Held by the program, the driver has a reference to drop. */
		if (h->refs > 0)
			gk_real.cuMemRelease(h->real);
		bytes += h->size;
	}
	released = 1;
	gk_info("vmm: released %llu bytes in %zu mappings the program made itself",
		(unsigned long long)bytes, nmaps);
out:
	pthread_mutex_unlock(&lock);
	return bytes;
}

/* The device's context current while its memory is made again (the agent's
 * thread has none of its own). 1 when one was pushed. */
static int push_device(int ordinal)
{
	struct gk_arena *a = ordinal >= 0 && ordinal < GK_MAX_DEVICES
				     ? __atomic_load_n(&gk_arenas[ordinal], __ATOMIC_ACQUIRE)
				     : NULL;

	return a && a->ctx && gk_real.cuCtxPushCurrent_v2(a->ctx) == CUDA_SUCCESS;
}

int gk_vmm_remap_memory(void)
{
	size_t nmaps = 0;
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (!released)
		goto out;
	/* Same properties; the device ordinal names whichever GPU the process
	 * has now (the driver's restore maps them). */
	for (struct handle *h = handles; h && !ret; h = h->next) {
		int pushed;

		if (!h->saveable)
			continue;
		pushed = push_device(h->prop.location.id);
		if (gk_cu_check(gk_real.cuMemCreate(&h->real, h->size, &h->prop, 0), "cuMemCreate",
				"transparent", "memory the program mapped") < 0)
			ret = -ENOMEM;
		if (pushed)
			gk_real.cuCtxPopCurrent_v2(NULL);
	}
	for (struct mapping *m = maps; m && !ret; m = m->next) {
		int pushed;

		if (!saveable(m))
			continue;
		pushed = push_device(m->h->prop.location.id);
		if (gk_cu_check(gk_real.cuMemMap(m->addr, m->size, m->offset, m->h->real, 0),
				"cuMemMap", "transparent", "memory the program mapped") < 0 ||
		    (m->naccess &&
		     gk_cu_check(gk_real.cuMemSetAccess(m->addr, m->size, m->access, m->naccess),
				 "cuMemSetAccess", "transparent", "memory the program mapped") < 0))
			ret = -ENOMEM;
		if (pushed)
			gk_real.cuCtxPopCurrent_v2(NULL);
		nmaps++;
	}
	/* A handle the program had released lives on in its mappings only. */
	for (struct handle *h = handles; h && !ret; h = h->next)
		if (h->saveable && h->refs == 0)
			gk_real.cuMemRelease(h->real);
	if (!ret) {
		released = 0;
		gk_info("vmm: mapped %zu mappings again at their addresses", nmaps);
	}
out:
	pthread_mutex_unlock(&lock);
	return ret;
}
