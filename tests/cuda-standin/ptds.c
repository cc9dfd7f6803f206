/*
 * ptds.c - the per-thread default stream variants (_ptsz, _ptds) of the
 * stream-ordered entry points, as the real driver exports them. This file is
 * built with CUDA_API_PER_THREAD_DEFAULT_STREAM, so cuda.h turns each name
 * below into its per-thread symbol. They behave like the legacy ones except
 * that the NULL stream is the calling thread's per-thread stream.
 */
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
#error "ptds.c must be built with -DCUDA_API_PER_THREAD_DEFAULT_STREAM"
#endif

#include "standin.h"

#define P(x) ((unsigned long long)(x))

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	SI_RETF(si_api_copy(dst, src, ByteCount, NULL, false, true), "%#llx <- %#llx %zu", P(dst),
		P(src), ByteCount);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
	SI_RETF(si_api_copy(dst, src, ByteCount, hStream, true, true),
		"%#llx <- %#llx %zu stream=%p", P(dst), P(src), ByteCount, (void *)hStream);
}

CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	SI_RETF(si_api_copy_dir(dstDevice, SIDE_DEVICE, (uintptr_t)srcHost, SIDE_HOST, ByteCount,
				NULL, false, true),
		"%#llx <- %p %zu", P(dstDevice), srcHost, ByteCount);
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	SI_RETF(si_api_copy_dir((uintptr_t)dstHost, SIDE_HOST, srcDevice, SIDE_DEVICE, ByteCount,
				NULL, false, true),
		"%p <- %#llx %zu", dstHost, P(srcDevice), ByteCount);
}

CUresult cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
	SI_RETF(si_api_copy_dir(dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount, NULL,
				false, true),
		"%#llx <- %#llx %zu", P(dstDevice), P(srcDevice), ByteCount);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
			   CUstream hStream)
{
	SI_RETF(si_api_copy_dir(dstDevice, SIDE_DEVICE, (uintptr_t)srcHost, SIDE_HOST, ByteCount,
				hStream, true, true),
		"%#llx <- %p %zu stream=%p", P(dstDevice), srcHost, ByteCount, (void *)hStream);
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
	SI_RETF(si_api_copy_dir((uintptr_t)dstHost, SIDE_HOST, srcDevice, SIDE_DEVICE, ByteCount,
				hStream, true, true),
		"%p <- %#llx %zu stream=%p", dstHost, P(srcDevice), ByteCount, (void *)hStream);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
			   CUstream hStream)
{
	SI_RETF(si_api_copy_dir(dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount, hStream,
				true, true),
		"%#llx <- %#llx %zu stream=%p", P(dstDevice), P(srcDevice), ByteCount,
		(void *)hStream);
}

CUresult cuMemcpy2D(const CUDA_MEMCPY2D *pCopy)
{
	SI_RET(si_api_copy2d(pCopy, NULL, false, true));
}

CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *pCopy)
{
	SI_RET(si_api_copy2d(pCopy, NULL, false, true));
}

CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
	SI_RETF(si_api_copy2d(pCopy, hStream, true, true), "stream=%p", (void *)hStream);
}

CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	SI_RETF(si_api_set(dstDevice, uc, 1, N, NULL, false, true), "%#llx %#x x%zu", P(dstDevice),
		uc, N);
}

CUresult cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
	SI_RETF(si_api_set(dstDevice, us, 2, N, NULL, false, true), "%#llx %#x x%zu", P(dstDevice),
		us, N);
}

CUresult cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	SI_RETF(si_api_set(dstDevice, ui, 4, N, NULL, false, true), "%#llx %#x x%zu", P(dstDevice),
		ui, N);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
	SI_RETF(si_api_set(dstDevice, uc, 1, N, hStream, true, true), "%#llx %#x x%zu stream=%p",
		P(dstDevice), uc, N, (void *)hStream);
}

CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{
	SI_RETF(si_api_set(dstDevice, us, 2, N, hStream, true, true), "%#llx %#x x%zu stream=%p",
		P(dstDevice), us, N, (void *)hStream);
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
	SI_RETF(si_api_set(dstDevice, ui, 4, N, hStream, true, true), "%#llx %#x x%zu stream=%p",
		P(dstDevice), ui, N, (void *)hStream);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	CUresult rc = si_api_alloc_async(dptr, bytesize, NULL, hStream, true);

	SI_RETF(rc, "%zu stream=%p -> %#llx", bytesize, (void *)hStream, rc ? 0ULL : P(*dptr));
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				 CUstream hStream)
{
	CUresult rc;

	if (!pool)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%zu pool=NULL", bytesize);
	rc = si_api_alloc_async(dptr, bytesize, pool, hStream, true);
	SI_RETF(rc, "%zu pool=%p stream=%p -> %#llx", bytesize, (void *)pool, (void *)hStream,
		rc ? 0ULL : P(*dptr));
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	SI_RETF(si_api_free_async(dptr, hStream, true), "%#llx stream=%p", P(dptr),
		(void *)hStream);
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	SI_RETF(si_api_stream_sync(hStream, true), "%p", (void *)hStream);
}

CUresult cuStreamQuery(CUstream hStream)
{
	SI_RETF(si_api_stream_query(hStream, true), "%p", (void *)hStream);
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	SI_RETF(si_api_stream_wait_event(hStream, hEvent, Flags, true), "%p, %p, %#x",
		(void *)hStream, (void *)hEvent, Flags);
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	SI_RETF(si_api_stream_get_ctx(hStream, pctx, true), "%p", (void *)hStream);
}

CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
	CUresult rc = si_api_stream_get_ctx(hStream, pCtx, true);

	if (!rc && pGreenCtx)
		*pGreenCtx = NULL;
	SI_RETF(rc, "%p", (void *)hStream);
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
	SI_RETF(si_api_stream_get_flags(hStream, flags, true), "%p", (void *)hStream);
}

CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
	SI_RETF(si_api_stream_get_priority(hStream, priority, true), "%p", (void *)hStream);
}

CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
			     unsigned int flags)
{
	SI_RETF(si_api_add_callback(hStream, callback, userData, flags, true), "stream=%p",
		(void *)hStream);
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	SI_RETF(si_api_event_record(hEvent, hStream, 0, true), "%p, %p", (void *)hEvent,
		(void *)hStream);
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	SI_RETF(si_api_event_record(hEvent, hStream, flags, true), "%p, %p, %#x", (void *)hEvent,
		(void *)hStream, flags);
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
			unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
			unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
			void **kernelParams, void **extra)
{
	SI_RETF(si_api_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
			      sharedMemBytes, hStream, kernelParams, extra, true),
		"%p grid=%ux%ux%u block=%ux%ux%u stream=%p", (void *)f, gridDimX, gridDimY,
		gridDimZ, blockDimX, blockDimY, blockDimZ, (void *)hStream);
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	SI_RETF(si_api_host_func(hStream, fn, userData, true), "stream=%p", (void *)hStream);
}

CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags, CUstream s)
{
	SI_RETF(si_managed_prefetch(p, n, loc, flags), "%#llx %zu type=%d id=%d %p", P(p), n,
		(int)loc.type, loc.id, (void *)s);
}

CUresult cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t n, unsigned flags)
{
	SI_RETF(si_managed_attach(p, n, flags), "%p %#llx %zu %#x", (void *)s, P(p), n, flags);
}

CUresult cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
	SI_RETF(si_api_begin_capture(hStream, mode, true), "%p mode=%d", (void *)hStream,
		(int)mode);
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	CUresult rc = si_api_end_capture(hStream, phGraph, true);

	SI_RETF(rc, "%p -> %p", (void *)hStream, rc ? NULL : (void *)*phGraph);
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	CUresult rc = si_api_is_capturing(hStream, captureStatus, true);

	SI_RETF(rc, "%p -> %d", (void *)hStream, rc ? -1 : (int)*captureStatus);
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	SI_RETF(si_api_graph_launch(hGraphExec, hStream, true), "%p stream=%p", (void *)hGraphExec,
		(void *)hStream);
}
