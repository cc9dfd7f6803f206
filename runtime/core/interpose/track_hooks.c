/*
 * track_hooks.c - the driver's entry points that create or destroy what the
 * runtime cannot checkpoint: each tells the registry (track.c). Contexts too:
 * a second context on a device is such a thing, and destroying or resetting
 * one frees what the runtime placed in it (arena.c) and what a checkpoint
 * kept of it (dump.c). Kept apart from the registry, which placement calls:
 * these entry points call placement.
 */
#include "config.h"

#include "core/state/track.h"
#include "core/placement/arena.h"
#include "core/driver/driver.h"
#include "core/control/dump.h"
#include "core/interpose/gate.h"
#include "core/interpose/handlers.h"
#include "core/interpose/ipc.h"
#include "common/log.h"
#include "common/settings_env.h"
#include "core/state/runtime.h"

CUresult gk_on_cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	GK_NEED_REAL(cuIpcGetMemHandle);
	/* Memory the runtime placed is VMM memory, which the driver's legacy
	 * IPC refuses: the runtime serves it (ipc.c), unless GPUCKPT_CUDA_IPC=0
	 * turned that off; then the call is refused, saying why. */
	if (gk_enabled() && gk_arena_of(dptr)) {
		if (gk_arena_ipc_wanted())
			return gk_ipc_export(pHandle, dptr);
		gk_error("ipc: 0x%llx: CUDA IPC of device memory is turned off under gpuckpt "
			 "(" GK_ENV(CUDA_IPC) "=0; unset it to let gpuckpt serve it, or run "
			 "without --gpu-checkpoint)",
			 (unsigned long long)dptr);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	return gk_real.cuIpcGetMemHandle(pHandle, dptr);
}

CUresult gk_on_cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	CUresult r;

	GK_NEED_REAL(cuIpcOpenMemHandle_v2);
	if (gk_ipc_is_ours(&handle)) {
		if (!gk_arena_ipc_wanted()) {
			/* Not the driver's handle: do not hand it over. */
			gk_error("ipc: a handle of gpuckpt's CUDA IPC is not opened: this process "
				 "runs with " GK_ENV(CUDA_IPC) "=0");
			return CUDA_ERROR_NOT_SUPPORTED;
		}
		if (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
			return CUDA_ERROR_INVALID_VALUE;
		return gk_ipc_open(pdptr, &handle);
	}
	r = gk_real.cuIpcOpenMemHandle_v2(pdptr, handle, Flags);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track_ptr_add(GK_UNSUP_IPC_OPEN, *pdptr);
	return r;
}

CUresult gk_on_cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	CUresult r;

	GK_NEED_REAL(cuIpcCloseMemHandle);
	if (gk_ipc_close(dptr, &r))
		return r;
	r = gk_real.cuIpcCloseMemHandle(dptr);
	if (r == CUDA_SUCCESS)
		gk_track_ptr_remove(GK_UNSUP_IPC_OPEN, dptr);
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

	GK_NEED_REAL(cuCtxCreate_v4);
	r = gk_real.cuCtxCreate_v4(pctx, params, flags, dev);
	if (r == CUDA_SUCCESS && gk_enabled())
		note_context(dev);
	return r;
}

CUresult gk_on_cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	CUresult r;

	GK_NEED_REAL(cuCtxCreate_v2);
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
	GK_NEED_REAL(cuCtxDestroy_v2);
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
	GK_NEED_REAL(cuDevicePrimaryCtxReset_v2);
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

	GK_NEED_REAL(cuArrayCreate_v2);
	r = gk_real.cuArrayCreate_v2(pHandle, desc);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track_ptr_add(GK_UNSUP_ARRAY, (unsigned long long)(uintptr_t)*pHandle);
	return r;
}

CUresult gk_on_cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
	CUresult r;

	GK_NEED_REAL(cuArray3DCreate_v2);
	r = gk_real.cuArray3DCreate_v2(pHandle, desc);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track_ptr_add(GK_UNSUP_ARRAY, (unsigned long long)(uintptr_t)*pHandle);
	return r;
}

CUresult gk_on_cuArrayDestroy(CUarray hArray)
{
	CUresult r;

	GK_NEED_REAL(cuArrayDestroy);
	r = gk_real.cuArrayDestroy(hArray);
	if (r == CUDA_SUCCESS)
		gk_track_ptr_remove(GK_UNSUP_ARRAY, (unsigned long long)(uintptr_t)hArray);
	return r;
}

CUresult gk_on_cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
				      const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned int levels)
{
	CUresult r;

	GK_NEED_REAL(cuMipmappedArrayCreate);
	r = gk_real.cuMipmappedArrayCreate(pHandle, desc, levels);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track_ptr_add(GK_UNSUP_ARRAY, (unsigned long long)(uintptr_t)*pHandle);
	return r;
}

CUresult gk_on_cuMipmappedArrayDestroy(CUmipmappedArray h)
{
	CUresult r;

	GK_NEED_REAL(cuMipmappedArrayDestroy);
	r = gk_real.cuMipmappedArrayDestroy(h);
	if (r == CUDA_SUCCESS)
		gk_track_ptr_remove(GK_UNSUP_ARRAY, (unsigned long long)(uintptr_t)h);
	return r;
}

CUresult gk_on_cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph graph, const CUgraphNode *deps,
				      size_t ndeps, CUDA_MEM_ALLOC_NODE_PARAMS *params)
{
	CUresult r;

	GK_NEED_REAL(cuGraphAddMemAllocNode);
	r = gk_real.cuGraphAddMemAllocNode(node, graph, deps, ndeps, params);
	/* Graph memory lives and dies with graph launches the runtime does not
	 * follow: once used, the process is not checkpointable. */
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track(GK_UNSUP_GRAPH_MEMORY, 1);
	return r;
}

CUresult gk_on_cuMemPoolExportPointer(CUmemPoolPtrExportData *out, CUdeviceptr ptr)
{
	GK_NEED_REAL(cuMemPoolExportPointer);
	if (gk_enabled())
		gk_track(GK_UNSUP_POOL_IPC, 1);
	return gk_real.cuMemPoolExportPointer(out, ptr);
}

/* Counted by handle until the program releases it (vmm.c, cuMemRelease);
 * its mappings are counted apart, as memory the runtime cannot save, until
 * they are unmapped (cuMemMap), so that a process that took memory from
 * another is refused while it holds any of it, and only then. NCCL imports
 * and releases such handles with each communicator (interpose/nccl.c takes
 * them down before a checkpoint). */
CUresult gk_on_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
					      CUmemAllocationHandleType type)
{
	CUresult r;

	GK_NEED_REAL(cuMemImportFromShareableHandle);
	r = gk_real.cuMemImportFromShareableHandle(handle, osHandle, type);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_track_ptr_add(GK_UNSUP_VMM_IMPORT, (unsigned long long)*handle);
	return r;
}

CUresult gk_on_cuMemPoolImportPointer(CUdeviceptr *out, CUmemoryPool pool,
				      CUmemPoolPtrExportData *data)
{
	GK_NEED_REAL(cuMemPoolImportPointer);
	if (gk_enabled())
		gk_track(GK_UNSUP_POOL_IPC, 1);
	return gk_real.cuMemPoolImportPointer(out, pool, data);
}
