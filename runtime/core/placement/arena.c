#include "config.h"

#include "core/placement/arena.h"
#include "common/clock.h"
#include "core/driver/driver.h"
#include "common/log.h"
#include "core/placement/peer_access.h"
#include "core/state/runtime.h"
#include "core/state/track.h"
#include "common/settings_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct gk_arena *gk_arenas[GK_MAX_DEVICES];
static pthread_mutex_t arenas_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t next_buffer_id = 1;
/* Set once, while the runtime loads (arena.h). */
static const struct gk_arena_seeder *seeder;
/*
 * Unless GPUCKPT_CUDA_IPC=0 (read once): physical memory is created
 * exportable as a POSIX file descriptor (exportable, cleared when the driver
 * refuses that), so that legacy IPC of it can be served (interpose/ipc.c).
 * On by default since it was seen to cost nothing (benchmarks/exportable:
 * set-up, take-down, count and bandwidth the same as plain memory on an
 * H200) and the driver's checkpoint takes such memory (tests/gpu/ipc-gpu.sh).
 */
static pthread_once_t ipc_once = PTHREAD_ONCE_INIT;
static int ipc_wanted;
static int exportable;

static void ipc_init(void)
{
	const char *v = gk_getenv(CUDA_IPC);

	ipc_wanted = !(v && !strcmp(v, "0"));
	__atomic_store_n(&exportable, ipc_wanted, __ATOMIC_RELAXED);
}

int gk_arena_ipc_wanted(void)
{
	pthread_once(&ipc_once, ipc_init);
	return ipc_wanted;
}

struct segment {
	struct gk_ival iv;
	CUmemGenericAllocationHandle handle;
};

struct fence {
	struct gk_ival iv;
	CUevent event;
	CUstream stream;
};

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static struct gk_itree *tree_for(struct gk_arena *a, uint64_t addr)
{
	return addr < a->lay.small_end ? &a->small : &a->large;
}

int gk_device_info(CUdevice dev, struct gk_device_info *info)
{
	CUuuid u;
	size_t total = 0;
	const unsigned char *b = (const unsigned char *)u.bytes;

	memset(info, 0, sizeof(*info));
	if (gk_real.cuDeviceGetName(info->name, sizeof(info->name) - 1, dev) != CUDA_SUCCESS)
		strcpy(info->name, "unknown");
	if (gk_real.cuDeviceGetUuid_v2(&u, dev) == CUDA_SUCCESS)
		snprintf(info->uuid, sizeof(info->uuid),
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
			 b[12], b[13], b[14], b[15]);
	gk_real.cuDeviceGetAttribute(&info->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
				     dev);
	gk_real.cuDeviceGetAttribute(&info->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
				     dev);
	gk_real.cuDeviceTotalMem_v2(&total, dev);
	info->total_memory = total;
	return 0;
}

/* Reserve the device's slice at exactly its address: anything else would give
 * the program addresses a restore could not reproduce. */
static int reserve_slice(struct gk_arena *a)
{
	CUdeviceptr got = 0;
	char obj[96];
	CUresult r;

	snprintf(obj, sizeof(obj), "device %d slice 0x%llx", a->ordinal,
		 (unsigned long long)a->lay.base);
	r = gk_real.cuMemAddressReserve(&got, a->lay.size, GK_GRANULE, a->lay.base, 0);
	if (r != CUDA_SUCCESS)
		return gk_cu_check(r, "cuMemAddressReserve", "placement", obj);
	if (got != a->lay.base) {
		gk_real.cuMemAddressFree(got, a->lay.size);
		gk_error("placement: %s: the driver would only reserve it at 0x%llx; "
			 "set " GK_ENV(VA_BASE) " to a free range",
			 obj, (unsigned long long)got);
		return -EADDRINUSE;
	}
	return 0;
}

static struct gk_arena *arena_create(int ordinal, CUdevice dev, CUcontext ctx)
{
	struct gk_arena *a = calloc(1, sizeof(*a));
	uint64_t base, size;
	double t0;
	int ret;

	if (!a)
		return NULL;
	a->ordinal = ordinal;
	a->dev = dev;
	a->ctx = ctx;
	pthread_mutex_init(&a->lock, NULL);
	if (!seeder || !seeder->slice(ordinal, &base, &size)) {
		size = gk_rt.settings.va_size;
		base = gk_rt.settings.va_base + (uint64_t)ordinal * size;
	}
	gk_layout_init(&a->lay, base, size);
	t0 = gk_now();
	if (reserve_slice(a) < 0)
		goto fail;
	/* Timed: part of what a restart costs before the program goes on. */
	gk_info("placement: device %d: slice 0x%llx-0x%llx reserved in %.3f s", ordinal,
		(unsigned long long)a->lay.base, (unsigned long long)(a->lay.base + a->lay.size),
		gk_now() - t0);
	ret = seeder ? seeder->populate(a) : 0;
	if (ret < 0) {
		seeder->abandon(ret == -EXDEV ? "the GPUs of this run lack a peer route the "
						"checkpointed run used"
					      : "its allocations could not be recreated on this "
						"device");
		gk_arena_drop_unclaimed(a);
	}
	return a;
fail:
	pthread_mutex_destroy(&a->lock);
	free(a);
	return NULL;
}

void gk_arena_set_seeder(const struct gk_arena_seeder *s)
{
	seeder = s;
}

struct gk_arena *gk_arena_current(CUresult *err)
{
	CUcontext ctx = NULL;
	CUdevice dev;
	struct gk_arena *a;
	static int warned[GK_MAX_DEVICES];

	*err = gk_real.cuCtxGetCurrent(&ctx);
	if (*err != CUDA_SUCCESS)
		return NULL;
	if (!ctx) {
		*err = CUDA_ERROR_INVALID_CONTEXT;
		return NULL;
	}
	*err = gk_real.cuCtxGetDevice(&dev);
	if (*err != CUDA_SUCCESS)
		return NULL;
	if (dev < 0 || dev >= GK_MAX_DEVICES) {
		*err = CUDA_ERROR_INVALID_DEVICE;
		return NULL;
	}
	a = __atomic_load_n(&gk_arenas[dev], __ATOMIC_ACQUIRE);
	if (!a) {
		pthread_mutex_lock(&arenas_lock);
		a = gk_arenas[dev];
		if (!a && !warned[dev]) {
			a = arena_create(dev, dev, ctx);
			if (a)
				__atomic_store_n(&gk_arenas[dev], a, __ATOMIC_RELEASE);
			else
				warned[dev] = 1;
		}
		pthread_mutex_unlock(&arenas_lock);
		if (!a)
			return NULL;
	}
	if (a->ctx != ctx) {
		if (!a->ctx)
			a->ctx = ctx; /* the program reset the device and started again */
		else
			gk_track_multi_context(dev);
	}
	return a;
}

struct gk_arena *gk_arena_of(uint64_t addr)
{
	for (int i = 0; i < GK_MAX_DEVICES; i++) {
		struct gk_arena *a = __atomic_load_n(&gk_arenas[i], __ATOMIC_ACQUIRE);

		if (a && addr >= a->lay.base && addr < a->lay.base + a->lay.size)
			return a;
	}
	return NULL;
}

struct gk_block *gk_arena_find(struct gk_arena *a, uint64_t addr)
{
	return (struct gk_block *)gk_itree_find(tree_for(a, addr), addr);
}

int gk_arena_export(struct gk_arena *a, uint64_t addr, struct gk_arena_export *ex)
{
	struct gk_block *b;
	uint64_t start, end, at;
	int rc = 0;

	memset(ex, 0, sizeof(*ex));
	pthread_mutex_lock(&a->lock);
	b = gk_arena_find(a, addr);
	if (!b || b->iv.start != addr || b->kind == GK_KIND_ASYNC) {
		rc = -ENOENT;
		goto out;
	}
	start = b->iv.start & ~(GK_GRANULE - 1);
	end = align_up(b->iv.start + b->size, GK_GRANULE);
	at = start;
	while (at < end) {
		struct gk_ival *n = gk_itree_first_overlap(&a->segs, at, at + 1);
		struct segment *s = (struct segment *)n;
		CUresult r;
		int fd = -1;

		if (!n || ex->nseg == GK_ARENA_EXPORT_MAX) {
			rc = n ? -E2BIG : -EFAULT;
			goto out;
		}
		if (!ex->nseg)
			ex->offset = addr - n->start;
		r = gk_real.cuMemExportToShareableHandle(&fd, s->handle,
							 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
		if (r != CUDA_SUCCESS) {
			gk_cu_check(r, "cuMemExportToShareableHandle", "ipc", "placed memory");
			rc = -EOPNOTSUPP;
			goto out;
		}
		ex->fd[ex->nseg] = fd;
		ex->len[ex->nseg++] = n->end - n->start;
		at = n->end;
	}
	ex->size = b->size;
out:
	pthread_mutex_unlock(&a->lock);
	if (rc) {
		for (int i = 0; i < ex->nseg; i++)
			close(ex->fd[i]);
		ex->nseg = 0;
	}
	return rc;
}

static void unmap_segment(struct gk_arena *a, struct segment *s)
{
	uint64_t len = s->iv.end - s->iv.start;

	a->known_lo = a->known_hi = 0;
	gk_real.cuMemUnmap(s->iv.start, len);
	gk_real.cuMemRelease(s->handle);
	gk_itree_remove(&a->segs, &s->iv);
	a->mapped -= len;
	free(s);
}

/* Mapped memory in use: under or guarding a live block, or under a pending fence. */
static int range_in_use(struct gk_arena *a, uint64_t start, uint64_t end)
{
	uint64_t lo, hi;

	gk_layout_near(&a->lay, start, end, &lo, &hi);
	return gk_itree_first_overlap(&a->small, lo, hi) ||
	       gk_itree_first_overlap(&a->large, lo, hi) ||
	       gk_itree_first_overlap(&a->fences, start, end);
}

/* Give back physical memory under no live block, guarding none, and under no
 * pending fence. */
static uint64_t trim(struct gk_arena *a)
{
	struct gk_ival *n = gk_itree_first(&a->segs);
	uint64_t freed = 0;

	while (n) {
		struct gk_ival *next = gk_itree_next(&a->segs, n);

		if (!range_in_use(a, n->start, n->end)) {
			freed += n->end - n->start;
			unmap_segment(a, (struct segment *)n);
		}
		n = next;
	}
	return freed;
}

/* Physical memory of this arena's device under [start, start + len), readable
 * and writable from it. */
static CUresult back_range(struct gk_arena *a, uint64_t start, uint64_t len,
			   CUmemGenericAllocationHandle *out)
{
	CUmemAllocationProp prop = {0};
	CUmemAccessDesc access[GK_MAX_DEVICES];
	uint64_t peers = gk_peer_accessors(a->ordinal);
	size_t naccess = 1;
	CUmemGenericAllocationHandle h;
	CUresult r;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = a->dev;
	/* With GPUCKPT_CUDA_IPC=1: exportable as a file descriptor, so that the
	 * program's legacy IPC of this memory can be served (ipc.c); a driver
	 * that cannot gets plain memory, and such IPC is then refused at the
	 * call. Without it: plain memory, as always. */
	if (gk_arena_ipc_wanted() && __atomic_load_n(&exportable, __ATOMIC_RELAXED))
		prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	r = gk_real.cuMemCreate(&h, len, &prop, 0);
	if ((r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_INVALID_VALUE) &&
	    prop.requestedHandleTypes) {
		__atomic_store_n(&exportable, 0, __ATOMIC_RELAXED);
		gk_info("placement: device %d: memory exportable as a file descriptor: %s; "
			"legacy CUDA IPC of placed memory will be refused",
			a->ordinal, gk_cu_name(r));
		prop.requestedHandleTypes = 0;
		r = gk_real.cuMemCreate(&h, len, &prop, 0);
	}
	if (r == CUDA_ERROR_OUT_OF_MEMORY && trim(a) > 0)
		r = gk_real.cuMemCreate(&h, len, &prop, 0);
	if (r != CUDA_SUCCESS)
		return r;
	r = gk_real.cuMemMap(start, len, 0, h, 0);
	if (r != CUDA_SUCCESS)
		goto out_release;
	access[0].location = prop.location;
	access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	/* And the devices the program enabled peer access from (peer.h). */
	for (int p = 0; p < GK_MAX_DEVICES; p++) {
		if (!(peers >> p & 1))
			continue;
		access[naccess] = access[0];
		access[naccess++].location.id = p;
	}
	r = gk_real.cuMemSetAccess(start, len, access, naccess);
	if (r != CUDA_SUCCESS)
		goto out_unmap;
	*out = h;
	return CUDA_SUCCESS;
out_unmap:
	gk_real.cuMemUnmap(start, len);
out_release:
	gk_real.cuMemRelease(h);
	return r;
}

CUresult gk_arena_grant(struct gk_arena *a, int accessor)
{
	CUmemAccessDesc access = {0};
	CUresult r = CUDA_SUCCESS;

	access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	access.location.id = accessor;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	pthread_mutex_lock(&a->lock);
	for (struct gk_ival *n = gk_itree_first(&a->segs); n && r == CUDA_SUCCESS;
	     n = gk_itree_next(&a->segs, n))
		r = gk_real.cuMemSetAccess(n->start, n->end - n->start, &access, 1);
	pthread_mutex_unlock(&a->lock);
	return r;
}

static CUresult map_run(struct gk_arena *a, uint64_t start, uint64_t len)
{
	CUmemGenericAllocationHandle h;
	struct segment *s;
	CUresult r;

	r = back_range(a, start, len, &h);
	if (r != CUDA_SUCCESS)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s) {
		gk_real.cuMemUnmap(start, len);
		gk_real.cuMemRelease(h);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	s->iv.start = start;
	s->iv.end = start + len;
	s->handle = h;
	gk_itree_insert(&a->segs, &s->iv);
	a->mapped += len;
	return CUDA_SUCCESS;
}

/* Map physical memory under every granule of [start, end) that has none. */
static CUresult ensure_mapped(struct gk_arena *a, uint64_t start, uint64_t end)
{
	uint64_t g = start & ~(GK_GRANULE - 1), gend = align_up(end, GK_GRANULE);

	while (g < gend) {
		struct gk_ival *s = gk_itree_first_overlap(&a->segs, g, gend);
		uint64_t run_end = s ? s->start : gend;
		CUresult r;

		if (run_end > g) {
			r = map_run(a, g, run_end - g);
			if (r != CUDA_SUCCESS)
				return r;
		}
		if (!s)
			break;
		g = s->end;
	}
	return CUDA_SUCCESS;
}

/*
 * Map a block's memory and its guards (layout.h). Guards are slack the
 * program may use by accident, not memory it asked for: when the device has
 * no room for them, the block is mapped alone.
 */
static CUresult map_block(struct gk_arena *a, uint64_t start, uint64_t end)
{
	uint64_t lo, hi;
	CUresult r;

	gk_layout_mapped(&a->lay, start, end, &lo, &hi);
	/* An alloc/free loop maps nothing new: no lookup at all. */
	if (lo >= a->known_lo && hi <= a->known_hi)
		return CUDA_SUCCESS;
	r = ensure_mapped(a, lo, hi);
	if (r == CUDA_SUCCESS) {
		/* Two ranges mapped throughout that meet are one. */
		if (lo <= a->known_hi && hi >= a->known_lo && a->known_hi) {
			a->known_lo = lo < a->known_lo ? lo : a->known_lo;
			a->known_hi = hi > a->known_hi ? hi : a->known_hi;
		} else {
			a->known_lo = lo;
			a->known_hi = hi;
		}
	}
	if (r == CUDA_ERROR_OUT_OF_MEMORY) {
		gk_debug("placement: device %d: no memory for the guards of 0x%llx-0x%llx",
			 a->ordinal, (unsigned long long)start, (unsigned long long)end);
		r = ensure_mapped(a, start, end);
	}
	return r;
}

static void drop_fence(struct gk_arena *a, struct fence *f)
{
	gk_itree_remove(&a->fences, &f->iv);
	gk_real.cuEventDestroy_v2(f->event);
	free(f);
}

/* Before [start, end) is handed out again, wait for the work that was still
 * using it when it was freed in stream order: in stream order for a
 * stream-ordered request (as the driver's pools do), on the host otherwise. */
static CUresult wait_fences(struct gk_arena *a, uint64_t start, uint64_t end, int async,
			    CUstream stream)
{
	struct gk_ival *n;
	CUresult r = CUDA_SUCCESS;

	while ((n = gk_itree_first_overlap(&a->fences, start, end))) {
		struct fence *f = (struct fence *)n;

		if (gk_real.cuEventQuery(f->event) != CUDA_SUCCESS) {
			if (async && f->stream != stream)
				r = gk_real.cuStreamWaitEvent(stream, f->event, 0);
			else if (!async)
				r = gk_real.cuEventSynchronize(f->event);
			if (r != CUDA_SUCCESS)
				return r;
		}
		drop_fence(a, f);
	}
	return CUDA_SUCCESS;
}

static struct gk_block *claim_restored(struct gk_arena *a, uint64_t order)
{
	size_t lo = 0, hi = a->nrestored;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (a->restored[mid]->order < order)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < a->nrestored && a->restored[lo]->order == order && a->restored[lo]->restored)
		return a->restored[lo];
	return NULL;
}

CUresult gk_arena_alloc(struct gk_arena *a, uint64_t size, enum gk_kind kind, int async,
			CUstream stream, CUdeviceptr *out)
{
	uint64_t extent = gk_layout_extent(size), addr, order;
	struct gk_itree *tree = gk_layout_is_small(size) ? &a->small : &a->large;
	struct gk_block *b;
	CUresult r;

	if (!extent)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&a->lock);
	order = a->next_order++;
	if (a->nrestored) {
		b = claim_restored(a, order);
		if (b && b->size == size && b->kind == kind) {
			b->restored = 0;
			*out = b->iv.start;
			pthread_mutex_unlock(&a->lock);
			return CUDA_SUCCESS;
		}
		if (b) {
			char why[200];

			snprintf(why, sizeof(why),
				 "allocation #%llu on device %d asks for %llu bytes, the checkpointed "
				 "run's asked for %llu: this run's setup is not the same",
				 (unsigned long long)order, a->ordinal, (unsigned long long)size,
				 (unsigned long long)b->size);
			pthread_mutex_unlock(&a->lock);
			/* Restored blocks exist only through the seeder. */
			seeder->abandon(why);
			pthread_mutex_lock(&a->lock);
		}
	}
	if (gk_layout_place(&a->lay, tree, size, &addr) < 0) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	r = map_block(a, addr, addr + extent);
	if (r != CUDA_SUCCESS)
		goto out;
	r = wait_fences(a, addr, addr + extent, async, stream);
	if (r != CUDA_SUCCESS)
		goto out;
	b = calloc(1, sizeof(*b));
	if (!b) {
		r = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	b->iv.start = addr;
	b->iv.end = addr + extent;
	b->size = size;
	b->order = order;
	b->kind = (uint8_t)kind;
	b->id = __atomic_fetch_add(&next_buffer_id, 1, __ATOMIC_RELAXED);
	gk_itree_insert(tree, &b->iv);
	a->live_extent += extent;
	a->nlive++;
	*out = addr;
out:
	pthread_mutex_unlock(&a->lock);
	return r;
}

CUresult gk_arena_free(struct gk_arena *a, uint64_t ptr, int async, CUstream stream)
{
	struct gk_block *b;
	struct fence *f = NULL;
	CUevent ev = NULL;
	CUresult r = CUDA_SUCCESS;

	if (async) {
		/* The range may still be read by work queued before this point of
		 * the stream: mark it with an event, waited for on reuse. */
		r = gk_real.cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING);
		if (r != CUDA_SUCCESS)
			return r;
		f = calloc(1, sizeof(*f));
		if (!f) {
			gk_real.cuEventDestroy_v2(ev);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	pthread_mutex_lock(&a->lock);
	b = gk_arena_find(a, ptr);
	if (!b || b->iv.start != ptr) {
		r = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (async) {
		r = gk_real.cuEventRecord(ev, stream);
		if (r != CUDA_SUCCESS)
			goto out;
		f->iv.start = b->iv.start;
		f->iv.end = b->iv.end;
		f->event = ev;
		f->stream = stream;
		gk_itree_insert(&a->fences, &f->iv);
		f = NULL;
		ev = NULL;
	}
	gk_itree_remove(tree_for(a, ptr), &b->iv);
	a->live_extent -= b->iv.end - b->iv.start;
	a->nlive--;
	for (size_t i = 0; i < a->nrestored; i++) {
		if (a->restored[i] == b) {
			memmove(&a->restored[i], &a->restored[i + 1],
				(a->nrestored - i - 1) * sizeof(*a->restored));
			a->nrestored--;
			break;
		}
	}
	free(b);
out:
	pthread_mutex_unlock(&a->lock);
	if (ev)
		gk_real.cuEventDestroy_v2(ev);
	free(f);
	return r;
}

uint64_t gk_arena_slack(struct gk_arena *a)
{
	uint64_t slack;

	pthread_mutex_lock(&a->lock);
	slack = a->mapped > a->live_extent ? a->mapped - a->live_extent : 0;
	pthread_mutex_unlock(&a->lock);
	return slack;
}

static void free_tree(struct gk_itree *t)
{
	struct gk_ival *n;

	while ((n = t->root)) {
		gk_itree_remove(t, n);
		free(n);
	}
}

void gk_arena_reset(struct gk_arena *a)
{
	struct gk_ival *n;

	pthread_mutex_lock(&a->lock);
	free_tree(&a->small);
	free_tree(&a->large);
	while ((n = a->fences.root))
		drop_fence(a, (struct fence *)n);
	while ((n = a->segs.root))
		unmap_segment(a, (struct segment *)n);
	free(a->restored);
	a->restored = NULL;
	a->nrestored = 0;
	a->live_extent = 0;
	a->nlive = 0;
	a->ctx = NULL;
	pthread_mutex_unlock(&a->lock);
}

struct gk_block *gk_arena_first(struct gk_arena *a)
{
	struct gk_ival *n = gk_itree_first(&a->small);

	return (struct gk_block *)(n ? n : gk_itree_first(&a->large));
}

struct gk_block *gk_arena_next(struct gk_arena *a, struct gk_block *b)
{
	struct gk_ival *n = gk_itree_next(tree_for(a, b->iv.start), &b->iv);

	if (!n && b->iv.start < a->lay.small_end)
		n = gk_itree_first(&a->large);
	return (struct gk_block *)n;
}

int gk_arena_recreate(struct gk_arena *a, uint64_t addr, uint64_t size, uint64_t order,
		      enum gk_kind kind)
{
	uint64_t extent = gk_layout_extent(size);
	struct gk_itree *tree;
	struct gk_block *b, **grown;
	CUresult r;

	/* Anywhere in the slice: a checkpoint of a version that placed blocks
	 * in the edge granules too is recreated where it was. */
	if (!extent || addr < a->lay.base || addr - a->lay.base > a->lay.size ||
	    extent > a->lay.base + a->lay.size - addr)
		return -EINVAL;
	tree = tree_for(a, addr);
	if ((tree == &a->small) != gk_layout_is_small(size) ||
	    gk_itree_first_overlap(tree, addr, addr + extent))
		return -EINVAL;
	r = map_block(a, addr, addr + extent);
	if (r != CUDA_SUCCESS)
		return gk_cu_check(r, "cuMemCreate/cuMemMap", "restore", "recreating an allocation");
	b = calloc(1, sizeof(*b));
	grown = realloc(a->restored, (a->nrestored + 1) * sizeof(*grown));
	if (!b || !grown) {
		free(b);
		if (grown)
			a->restored = grown;
		return -ENOMEM;
	}
	a->restored = grown;
	b->iv.start = addr;
	b->iv.end = addr + extent;
	b->size = size;
	b->order = order;
	b->kind = (uint8_t)kind;
	b->restored = 1;
	b->id = __atomic_fetch_add(&next_buffer_id, 1, __ATOMIC_RELAXED);
	gk_itree_insert(tree, &b->iv);
	a->live_extent += extent;
	a->nlive++;
	/* Kept sorted by order for claim_restored(); the manifest lists
	 * allocations by address, so insert in place. */
	{
		size_t i = a->nrestored++;

		while (i > 0 && a->restored[i - 1]->order > order) {
			a->restored[i] = a->restored[i - 1];
			i--;
		}
		a->restored[i] = b;
	}
	return 0;
}

void gk_arena_drop_unclaimed(struct gk_arena *a)
{
	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < a->nrestored; i++) {
		struct gk_block *b = a->restored[i];

		if (!b->restored)
			continue;
		gk_itree_remove(tree_for(a, b->iv.start), &b->iv);
		a->live_extent -= b->iv.end - b->iv.start;
		a->nlive--;
		free(b);
	}
	free(a->restored);
	a->restored = NULL;
	a->nrestored = 0;
	pthread_mutex_unlock(&a->lock);
}

void gk_arena_restore_done(struct gk_arena *a, uint64_t next_order)
{
	pthread_mutex_lock(&a->lock);
	for (size_t i = 0; i < a->nrestored; i++)
		a->restored[i]->restored = 0;
	free(a->restored);
	a->restored = NULL;
	a->nrestored = 0;
	/* Orders continue from the checkpointed run's, so that a later
	 * checkpoint numbers its allocations as a restart's setup will. */
	if (a->next_order < next_order)
		a->next_order = next_order;
	pthread_mutex_unlock(&a->lock);
}

uint64_t gk_arena_release_memory(struct gk_arena *a)
{
	struct gk_ival *n;
	uint64_t released = 0;

	pthread_mutex_lock(&a->lock);
	/* The devices are drained: every fence has passed. */
	while ((n = a->fences.root))
		drop_fence(a, (struct fence *)n);
	trim(a);
	a->known_lo = a->known_hi = 0;
	for (n = gk_itree_first(&a->segs); n; n = gk_itree_next(&a->segs, n)) {
		struct segment *s = (struct segment *)n;

		if (!s->handle)
			continue;
		gk_real.cuMemUnmap(n->start, n->end - n->start);
		gk_real.cuMemRelease(s->handle);
		s->handle = 0;
		released += n->end - n->start;
	}
	pthread_mutex_unlock(&a->lock);
	return released;
}

CUresult gk_arena_remap_memory(struct gk_arena *a)
{
	struct gk_ival *n;
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&a->lock);
	for (n = gk_itree_first(&a->segs); n && r == CUDA_SUCCESS; n = gk_itree_next(&a->segs, n)) {
		struct segment *s = (struct segment *)n;

		if (!s->handle)
			r = back_range(a, n->start, n->end - n->start, &s->handle);
	}
	pthread_mutex_unlock(&a->lock);
	return r;
}
