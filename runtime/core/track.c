#include "config.h"

#include "track.h"
#include "arena.h"
#include "driver.h"
#include "dump.h"
#include "gate.h"
#include "handlers.h"
#include "log.h"
#include "runtime.h"
#include "shepherd_protocol.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long live[GK_UNSUP_COUNT];
static const char *const what[GK_UNSUP_COUNT] = {
#define X(name, text) text,
	GK_UNSUPPORTED_LIST(X)
#undef X
};

/* Pointers of tracked kinds, so that a free can be matched to its kind.
 * These are rare objects; a short list is enough. */
struct tracked_ptr {
	enum gk_unsupported kind;
	unsigned long long ptr;
};
static struct tracked_ptr *ptrs;
static size_t nptrs, cap;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void gk_track(enum gk_unsupported kind, long delta)
{
	long now = __atomic_add_fetch(&live[kind], delta, __ATOMIC_RELAXED);

	if (delta > 0 && now == delta)
		gk_warn("track: this process now holds %s: checkpoints will be refused while it "
			"does",
			what[kind]);
	if (now < 0)
		__atomic_store_n(&live[kind], 0, __ATOMIC_RELAXED);
}

void gk_track_multi_context(int device)
{
	static int seen[GK_MAX_DEVICES];

	if (device >= 0 && device < GK_MAX_DEVICES &&
	    !__atomic_exchange_n(&seen[device], 1, __ATOMIC_RELAXED))
		gk_track(GK_UNSUP_MULTI_CONTEXT, 1);
}

int gk_track_report(char *buf, size_t len)
{
	int n = 0;
	size_t used = 0;

	buf[0] = 0;
	for (int k = 0; k < GK_UNSUP_COUNT; k++) {
		long c = __atomic_load_n(&live[k], __ATOMIC_RELAXED);

		if (c <= 0)
			continue;
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0, "%s%s (%ld)",
					 n ? "; " : "", what[k], c);
		n++;
		if (used >= len)
			break;
	}
	return n;
}

long gk_track_live(enum gk_unsupported kind)
{
	return __atomic_load_n(&live[kind], __ATOMIC_RELAXED);
}

int gk_track_driver_cannot(const char **word, char *buf, size_t len)
{
	static const struct {
		enum gk_unsupported kind;
		const char *word;
	} cannot[] = {
	    {GK_UNSUP_MANAGED, GK_PROTO_REFUSE_MANAGED},
	    {GK_UNSUP_IPC_OPEN, GK_PROTO_REFUSE_IPC},
	    {GK_UNSUP_POOL_IPC, GK_PROTO_REFUSE_IPC},
	    {GK_UNSUP_VMM_IMPORT, GK_PROTO_REFUSE_IPC},
	};

	for (size_t i = 0; i < sizeof(cannot) / sizeof(cannot[0]); i++) {
		long c = gk_track_live(cannot[i].kind);

		if (c > 0) {
			*word = cannot[i].word;
			snprintf(buf, len, "%s (%ld)", what[cannot[i].kind], c);
			return 1;
		}
	}
	*word = NULL;
	buf[0] = 0;
	return 0;
}

void gk_track_ptr_add(enum gk_unsupported kind, unsigned long long ptr)
{
	pthread_mutex_lock(&lock);
	if (nptrs == cap) {
		size_t ncap = cap ? cap * 2 : 16;
		struct tracked_ptr *p = realloc(ptrs, ncap * sizeof(*p));

		if (!p) {
			pthread_mutex_unlock(&lock);
			gk_track(kind, 1); /* counted, never forgotten: safe side */
			return;
		}
		ptrs = p;
		cap = ncap;
	}
	ptrs[nptrs++] = (struct tracked_ptr){kind, ptr};
	pthread_mutex_unlock(&lock);
	gk_track(kind, 1);
}

int gk_track_ptr_remove(enum gk_unsupported kind, unsigned long long ptr)
{
	int found = 0;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nptrs; i++) {
		if (ptrs[i].kind == kind && ptrs[i].ptr == ptr) {
			ptrs[i] = ptrs[--nptrs];
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	if (found)
		gk_track(kind, -1);
	return found;
}

/* ---- the interposed entry points that create or destroy such things ---- */

#define PASS(call)                                                                                 \
	do {                                                                                       \
		if (gk_driver_ensure() < 0)                                                        \
			return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;                               \
		if (!gk_real.call)                                                                 \
			return CUDA_ERROR_NOT_SUPPORTED;                                           \
	} while (0)

CUresult gk_on_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	CUresult r;

	PASS(cuMemAllocManaged);
	r = gk_real.cuMemAllocManaged(dptr, bytesize, flags);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track_ptr_add(GK_UNSUP_MANAGED, *dptr);
	return r;
}

CUresult gk_on_cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	PASS(cuIpcGetMemHandle);
	if (gk_enabled() && gk_arena_of(dptr)) {
		/* Memory the runtime placed is not legacy-IPC capable; say why
		 * rather than let the driver answer with a bare error. */
		gk_error("ipc: 0x%llx: CUDA IPC of device memory is not supported under gpuckpt "
			 "(run without --gpu-checkpoint, or share memory another way)",
			 (unsigned long long)dptr);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return gk_real.cuIpcGetMemHandle(pHandle, dptr);
}

CUresult gk_on_cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	CUresult r;

	PASS(cuIpcOpenMemHandle_v2);
	r = gk_real.cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track_ptr_add(GK_UNSUP_IPC_OPEN, *pdptr);
	return r;
}

CUresult gk_on_cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	CUresult r;

	PASS(cuIpcCloseMemHandle);
	r = gk_real.cuIpcCloseMemHandle(dptr);
	if (r == CUDA_SUCCESS)
		gk_track_ptr_remove(GK_UNSUP_IPC_OPEN, dptr);
	return r;
}

/* The runtime maps through gk_real directly; only the program's own cuMemMap
 * calls arrive here. */
CUresult gk_on_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	CUresult r;

	PASS(cuMemMap);
	r = gk_real.cuMemMap(ptr, size, offset, handle, flags);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track_ptr_add(GK_UNSUP_APP_VMM, ptr);
	return r;
}

CUresult gk_on_cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult r;

	PASS(cuMemUnmap);
	r = gk_real.cuMemUnmap(ptr, size);
	if (r == CUDA_SUCCESS)
		gk_track_ptr_remove(GK_UNSUP_APP_VMM, ptr);
	return r;
}

static void note_context(CUdevice dev)
{
	struct gk_arena *a;

	if (dev < 0 || dev >= GK_MAX_DEVICES)
		return;
	a = __atomic_load_n(&gk_arenas[dev], __ATOMIC_ACQUIRE);
	if (a && a->ctx)
		gk_track_multi_context(dev);
}

CUresult gk_on_cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags,
			      CUdevice dev)
{
	CUresult r;

	PASS(cuCtxCreate_v4);
	r = gk_real.cuCtxCreate_v4(pctx, params, flags, dev);
	if (r == CUDA_SUCCESS && gk_enabled())
		note_context(dev);
	return r;
}

CUresult gk_on_cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	CUresult r;

	PASS(cuCtxCreate_v2);
	r = gk_real.cuCtxCreate_v2(pctx, flags, dev);
	if (r == CUDA_SUCCESS && gk_enabled())
		note_context(dev);
	return r;
}

/* Destroying the context that owned a device's allocations frees them, as the
 * driver would have freed its own; the placement is not tied to a context,
 * so the runtime does it. */
static void release_arena_of_context(CUcontext ctx)
{
	for (int i = 0; i < GK_MAX_DEVICES; i++) {
		struct gk_arena *a = __atomic_load_n(&gk_arenas[i], __ATOMIC_ACQUIRE);

		if (a && a->ctx == ctx)
			gk_arena_reset(a);
	}
}

CUresult gk_on_cuCtxDestroy_v2(CUcontext ctx)
{
	PASS(cuCtxDestroy_v2);
	if (gk_enabled()) {
		gk_gate_enter();
		if (gk_real.cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS) {
			gk_real.cuCtxSynchronize();
			gk_real.cuCtxPopCurrent_v2(NULL);
		}
		release_arena_of_context(ctx);
		gk_gate_leave();
		gk_dump_context_gone(ctx);
	}
	return gk_real.cuCtxDestroy_v2(ctx);
}

CUresult gk_on_cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	PASS(cuDevicePrimaryCtxReset_v2);
	if (gk_enabled() && dev >= 0 && dev < GK_MAX_DEVICES) {
		struct gk_arena *a = __atomic_load_n(&gk_arenas[dev], __ATOMIC_ACQUIRE);

		if (a) {
			CUcontext ctx = a->ctx;

			gk_gate_enter();
			if (ctx) {
				gk_real.cuCtxPushCurrent_v2(ctx);
				gk_real.cuCtxSynchronize();
				gk_real.cuCtxPopCurrent_v2(NULL);
			}
			gk_arena_reset(a);
			gk_gate_leave();
			if (ctx)
				gk_dump_context_gone(ctx);
		}
	}
	return gk_real.cuDevicePrimaryCtxReset_v2(dev);
}

CUresult gk_on_cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
	CUresult r;

	PASS(cuArrayCreate_v2);
	r = gk_real.cuArrayCreate_v2(pHandle, desc);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track_ptr_add(GK_UNSUP_ARRAY, (unsigned long long)(uintptr_t)*pHandle);
	return r;
}

CUresult gk_on_cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
	CUresult r;

	PASS(cuArray3DCreate_v2);
	r = gk_real.cuArray3DCreate_v2(pHandle, desc);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track_ptr_add(GK_UNSUP_ARRAY, (unsigned long long)(uintptr_t)*pHandle);
	return r;
}

CUresult gk_on_cuArrayDestroy(CUarray hArray)
{
	CUresult r;

	PASS(cuArrayDestroy);
	r = gk_real.cuArrayDestroy(hArray);
	if (r == CUDA_SUCCESS)
		gk_track_ptr_remove(GK_UNSUP_ARRAY, (unsigned long long)(uintptr_t)hArray);
	return r;
}

CUresult gk_on_cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
				      const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned int levels)
{
	CUresult r;

	PASS(cuMipmappedArrayCreate);
	r = gk_real.cuMipmappedArrayCreate(pHandle, desc, levels);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track_ptr_add(GK_UNSUP_ARRAY, (unsigned long long)(uintptr_t)*pHandle);
	return r;
}

CUresult gk_on_cuMipmappedArrayDestroy(CUmipmappedArray h)
{
	CUresult r;

	PASS(cuMipmappedArrayDestroy);
	r = gk_real.cuMipmappedArrayDestroy(h);
	if (r == CUDA_SUCCESS)
		gk_track_ptr_remove(GK_UNSUP_ARRAY, (unsigned long long)(uintptr_t)h);
	return r;
}

CUresult gk_on_cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
				      size_t ndeps, CUDA_MEM_ALLOC_NODE_PARAMS *params)
{
	CUresult r;

	PASS(cuGraphAddMemAllocNode);
	r = gk_real.cuGraphAddMemAllocNode(node, graph, deps, ndeps, params);
	/* Graph memory lives and dies with graph launches the runtime does not
	 * follow: once used, the process is not checkpointable. */
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track(GK_UNSUP_GRAPH_MEMORY, 1);
	return r;
}

CUresult gk_on_cuMemPoolExportPointer(CUmemPoolPtrExportData *out, CUdeviceptr ptr)
{
	PASS(cuMemPoolExportPointer);
	if (gk_enabled())
		gk_track(GK_UNSUP_POOL_IPC, 1);
	return gk_real.cuMemPoolExportPointer(out, ptr);
}

/* Counted and never forgotten (the handle may be mapped and released in any
 * order): a process that took memory from another stays on the safe side. */
CUresult gk_on_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
					      CUmemAllocationHandleType type)
{
	CUresult r;

	PASS(cuMemImportFromShareableHandle);
	r = gk_real.cuMemImportFromShareableHandle(handle, osHandle, type);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track(GK_UNSUP_VMM_IMPORT, 1);
	return r;
}

CUresult gk_on_cuMemPoolImportPointer(CUdeviceptr *out, CUmemoryPool pool,
				      CUmemPoolPtrExportData *data)
{
	PASS(cuMemPoolImportPointer);
	if (gk_enabled())
		gk_track(GK_UNSUP_POOL_IPC, 1);
	return gk_real.cuMemPoolImportPointer(out, pool, data);
}
