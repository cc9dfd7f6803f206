/*
 * memory.c - the interposed allocation entry points: every device allocation
 * the program makes, through whatever route, ends up in its device's arena;
 * the queries about device memory answer for what the arena placed.
 */
#include "config.h"

#include "core/placement/arena.h"
#include "core/driver/driver.h"
#include "core/interpose/gate.h"
#include "core/interpose/handlers.h"
#include "core/interpose/managed.h"
#include "common/log.h"
#include "core/state/runtime.h"
#include "core/state/track.h"

#include <stdint.h>

static CUresult alloc_common(CUdeviceptr *dptr, size_t size, enum gk_kind kind, int async,
			     CUstream stream)
{
	struct gk_arena *a;
	CUresult r;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	if (size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	gk_gate_enter();
	a = gk_arena_current(&r);
	if (a) {
		r = gk_arena_alloc(a, size, kind, async, stream, dptr);
	} else if (r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_SUPPORTED) {
		/* The device could not be placed (logged once): the program still
		 * gets its memory, and checkpoints are refused from now on. */
		r = async ? gk_real.cuMemAllocAsync(dptr, size, stream)
			  : gk_real.cuMemAlloc_v2(dptr, size);
		if (r == CUDA_SUCCESS)
			gk_track(GK_UNSUP_UNPLACED, 1);
	}
	gk_gate_leave();
	return r;
}

#define ENSURE_DRIVER()                                                                            \
	do {                                                                                       \
		if (gk_driver_ensure() < 0)                                                        \
			return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;                               \
	} while (0)

CUresult gk_on_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	ENSURE_DRIVER();
	if (!gk_enabled())
		return gk_real.cuMemAlloc_v2(dptr, bytesize);
	return alloc_common(dptr, bytesize, GK_KIND_ALLOC, 0, NULL);
}

CUresult gk_on_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t width, size_t height,
				  unsigned int elem)
{
	size_t pitch;
	CUresult r;

	ENSURE_DRIVER();
	if (!gk_enabled())
		return gk_real.cuMemAllocPitch_v2(dptr, pPitch, width, height, elem);
	if (!pPitch || width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16))
		return CUDA_ERROR_INVALID_VALUE;
	/* Rows start 512-byte aligned, as the driver's own pitched allocations
	 * do on current GPUs. */
	pitch = (width + 511) & ~(size_t)511;
	if (height > SIZE_MAX / pitch)
		return CUDA_ERROR_INVALID_VALUE;
	r = alloc_common(dptr, pitch * height, GK_KIND_PITCH, 0, NULL);
	if (r == CUDA_SUCCESS)
		*pPitch = pitch;
	return r;
}

static CUresult free_common(CUdeviceptr dptr, int async, CUstream stream)
{
	struct gk_arena *a = gk_arena_of(dptr);
	CUresult r;

	if (!a) {
		if (!async && gk_managed_free(dptr, &r))
			return r;
		if (async)
			r = gk_real.cuMemFreeAsync(dptr, stream);
		else
			r = gk_real.cuMemFree_v2(dptr);
		if (r == CUDA_SUCCESS && dptr &&
		    !gk_track_ptr_remove(GK_UNSUP_MANAGED, dptr))
			gk_track_ptr_remove(GK_UNSUP_UNPLACED, dptr);
		return r;
	}
	gk_gate_enter();
	if (!async) {
		/* cuMemFree waits for the device to finish with the memory; the
		 * runtime keeps the mapping, so it must not be reused before. */
		CUcontext cur = NULL;

		gk_real.cuCtxGetCurrent(&cur);
		if (cur != a->ctx && a->ctx && gk_real.cuCtxPushCurrent_v2(a->ctx) == CUDA_SUCCESS) {
			gk_real.cuCtxSynchronize();
			gk_real.cuCtxPopCurrent_v2(NULL);
		} else {
			gk_real.cuCtxSynchronize();
		}
	}
	r = gk_arena_free(a, dptr, async, stream);
	gk_gate_leave();
	return r;
}

CUresult gk_on_cuMemFree_v2(CUdeviceptr dptr)
{
	ENSURE_DRIVER();
	if (!gk_enabled())
		return gk_real.cuMemFree_v2(dptr);
	return free_common(dptr, 0, NULL);
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t size, CUstream stream)
{
	CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;

	/* Inside a stream capture the request becomes a graph memory node: that
	 * memory is the graph's, not the program's; let the driver have it. */
	if (gk_real.cuStreamIsCapturing &&
	    gk_real.cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS &&
	    status != CU_STREAM_CAPTURE_STATUS_NONE) {
		gk_track(GK_UNSUP_GRAPH_MEMORY, 1);
		return gk_real.cuMemAllocAsync(dptr, size, stream);
	}
	return alloc_common(dptr, size, GK_KIND_ASYNC, 1, stream);
}

CUresult gk_on_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	ENSURE_DRIVER();
	if (!gk_enabled())
		return gk_real.cuMemAllocAsync(dptr, bytesize, hStream);
	return alloc_async(dptr, bytesize, hStream);
}

CUresult gk_on_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	ENSURE_DRIVER();
	if (!gk_enabled())
		return gk_real.cuMemAllocAsync_ptsz(dptr, bytesize, hStream);
	/* The per-thread default stream is spelled as the handle
	 * CU_STREAM_PER_THREAD when the program passes 0 to a _ptsz entry. */
	return alloc_async(dptr, bytesize, hStream ? hStream : CU_STREAM_PER_THREAD);
}

CUresult gk_on_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				       CUstream hStream)
{
	ENSURE_DRIVER();
	if (!gk_enabled())
		return gk_real.cuMemAllocFromPoolAsync(dptr, bytesize, pool, hStream);
	return alloc_async(dptr, bytesize, hStream);
}

CUresult gk_on_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
					    CUmemoryPool pool, CUstream hStream)
{
	ENSURE_DRIVER();
	if (!gk_enabled())
		return gk_real.cuMemAllocFromPoolAsync_ptsz(dptr, bytesize, pool, hStream);
	return alloc_async(dptr, bytesize, hStream ? hStream : CU_STREAM_PER_THREAD);
}

CUresult gk_on_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	ENSURE_DRIVER();
	if (!gk_enabled())
		return gk_real.cuMemFreeAsync(dptr, hStream);
	return free_common(dptr, 1, hStream);
}

CUresult gk_on_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	ENSURE_DRIVER();
	if (!gk_enabled())
		return gk_real.cuMemFreeAsync_ptsz(dptr, hStream);
	return free_common(dptr, 1, hStream ? hStream : CU_STREAM_PER_THREAD);
}

CUresult gk_on_cuMemGetInfo_v2(size_t *free, size_t *total)
{
	CUdevice dev;
	CUresult r;

	ENSURE_DRIVER();
	r = gk_real.cuMemGetInfo_v2(free, total);
	if (r != CUDA_SUCCESS || !gk_enabled() || !free)
		return r;
	/* Memory kept mapped for reuse is free as far as the program knows. */
	if (gk_real.cuCtxGetDevice(&dev) == CUDA_SUCCESS && dev >= 0 && dev < GK_MAX_DEVICES &&
	    gk_arenas[dev]) {
		*free += gk_arena_slack(gk_arenas[dev]);
		if (total && *free > *total)
			*free = *total;
	}
	return r;
}

/* The block holding ptr: its start, size and id; 0 if the arena has none. */
static int lookup(CUdeviceptr ptr, uint64_t *start, uint64_t *size, uint64_t *id)
{
	struct gk_arena *a = gk_arena_of(ptr);
	struct gk_block *b;
	int found = 0;

	if (!a)
		return 0;
	pthread_mutex_lock(&a->lock);
	b = gk_arena_find(a, ptr);
	/* Inside the padding after the size asked for is not inside the allocation. */
	if (b && ptr < b->iv.start + b->size) {
		*start = b->iv.start;
		*size = b->size;
		*id = b->id;
		found = 1;
	}
	pthread_mutex_unlock(&a->lock);
	return found;
}

CUresult gk_on_cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	uint64_t start, size, id;

	ENSURE_DRIVER();
	if (!gk_enabled() || !lookup(dptr, &start, &size, &id))
		return gk_real.cuMemGetAddressRange_v2(pbase, psize, dptr);
	if (pbase)
		*pbase = start;
	if (psize)
		*psize = size;
	return CUDA_SUCCESS;
}

/* The attributes that describe an allocation rather than the memory under it. */
static int override(CUpointer_attribute attr, void *data, uint64_t start, uint64_t size,
		    uint64_t id)
{
	switch (attr) {
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = start;
		return 1;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = size;
		return 1;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = id;
		return 1;
	default:
		return 0;
	}
}

CUresult gk_on_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	uint64_t start, size, id;

	ENSURE_DRIVER();
	if (gk_enabled() && data && lookup(ptr, &start, &size, &id) &&
	    override(attribute, data, start, size, id))
		return CUDA_SUCCESS;
	return gk_real.cuPointerGetAttribute(data, attribute, ptr);
}

CUresult gk_on_cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data,
				      CUdeviceptr ptr)
{
	uint64_t start, size, id;
	CUresult r;

	ENSURE_DRIVER();
	r = gk_real.cuPointerGetAttributes(n, attrs, data, ptr);
	if (r != CUDA_SUCCESS || !gk_enabled() || !attrs || !data ||
	    !lookup(ptr, &start, &size, &id))
		return r;
	for (unsigned i = 0; i < n; i++)
		if (data[i])
			override(attrs[i], data[i], start, size, id);
	return r;
}
