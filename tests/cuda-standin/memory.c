/*
 * memory.c - legacy device memory (cuMemAlloc), managed memory, page-locked
 * host memory, and the queries on them. "Device memory" is host memory at the
 * device address; it is charged against the device's size so that running
 * out of device memory can be tested.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "standin.h"

static CUresult alloc_range(struct CUctx_st *ctx, enum si_mem_kind kind, size_t n, bool charge,
			    unsigned flags, struct si_range **out)
{
	struct si_range *r = calloc(1, sizeof(*r));
	size_t charged = charge ? si_align_up(n, SI_ALLOC_ALIGN) : 0;
	size_t len = si_align_up(n, (size_t)sysconf(_SC_PAGESIZE));
	CUresult rc;

	if (!r)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (charge) {
		rc = si_charge(ctx->dev, charged);
		if (rc)
			goto out_free;
	}
	r->base = (uintptr_t)si_map_anon(len);
	if (!r->base) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_uncharge;
	}
	r->size = n;
	r->kind = kind;
	r->ctx = ctx;
	r->dev = kind == SI_MEM_HOST ? -1 : ctx->dev;
	r->flags = flags;
	r->charged = charged;
	r->map_len = len;
	rc = si_reg_insert(r);
	if (rc)
		goto out_unmap;
	*out = r;
	return CUDA_SUCCESS;

out_unmap:
	munmap((void *)r->base, len);
out_uncharge:
	if (charge)
		si_uncharge(ctx->dev, charged);
out_free:
	free(r);
	return rc;
}

static CUresult mem_alloc(CUdeviceptr *dptr, size_t n)
{
	struct CUctx_st *ctx;
	struct si_range *r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!dptr || !n)
		return CUDA_ERROR_INVALID_VALUE;
	rc = alloc_range(ctx, SI_MEM_DEVICE, n, true, 0, &r);
	if (!rc)
		*dptr = r->base;
	return rc;
}

CUresult cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	CUresult rc = mem_alloc(dptr, bytesize);

	SI_RETF(rc, "%zu -> %#llx", bytesize, rc ? 0ULL : (unsigned long long)*dptr);
}

CUresult cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
			 unsigned int ElementSizeBytes)
{
	size_t pitch;
	CUresult rc;

	if (!pPitch || !WidthInBytes || !Height ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%zu x %zu elem=%u", WidthInBytes, Height,
			ElementSizeBytes);
	pitch = si_align_up(WidthInBytes, SI_PITCH_ALIGN);
	if (Height > SIZE_MAX / pitch)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%zu x %zu", WidthInBytes, Height);
	rc = mem_alloc(dptr, pitch * Height);
	if (!rc)
		*pPitch = pitch;
	SI_RETF(rc, "%zu x %zu -> %#llx pitch %zu", WidthInBytes, Height,
		rc ? 0ULL : (unsigned long long)*dptr, pitch);
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	struct CUctx_st *ctx;
	struct si_range *r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "%zu", bytesize);
	if (!dptr || !bytesize || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%zu flags=%#x", bytesize, flags);
	/* Managed memory may oversubscribe the device: not charged. */
	rc = alloc_range(ctx, SI_MEM_MANAGED, bytesize, false, flags, &r);
	if (!rc)
		*dptr = r->base;
	SI_RETF(rc, "%zu flags=%#x -> %#llx", bytesize, flags,
		rc ? 0ULL : (unsigned long long)*dptr);
}

/* The real driver may synchronise here; the stand-in must, lest a queued copy touch freed memory.
 */
static void free_range_synced(struct si_range *r)
{
	if (r->ctx)
		si_ctx_sync(r->ctx);
	si_range_free(r);
}

CUresult cuMemFree(CUdeviceptr dptr)
{
	struct CUctx_st *ctx;
	struct si_range *r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "%#llx", (unsigned long long)dptr);
	r = si_reg_remove(dptr,
			  SI_KIND(SI_MEM_DEVICE) | SI_KIND(SI_MEM_MANAGED) | SI_KIND(SI_MEM_POOL));
	if (!r)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx", (unsigned long long)dptr);
	if (r->kind == SI_MEM_POOL)
		si_pool_range_free(r); /* documented as not synchronising */
	else
		free_range_synced(r);
	SI_RETF(CUDA_SUCCESS, "%#llx", (unsigned long long)dptr);
}

CUresult cuMemGetInfo(size_t *free, size_t *total)
{
	struct CUctx_st *ctx;
	struct si_device *d;
	size_t used;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RET(rc);
	if (!free || !total)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	d = &si.dev[ctx->dev];
	used = atomic_load(&d->used);
	*total = d->total;
	*free = d->total - used;
	SI_RETF(CUDA_SUCCESS, "dev=%d -> free=%zu total=%zu", ctx->dev, *free, *total);
}

CUresult cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	struct CUctx_st *ctx;
	struct si_range r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "%#llx", (unsigned long long)dptr);
	if (!si_reg_lookup(dptr, &r))
		SI_RETF(CUDA_ERROR_NOT_FOUND, "%#llx", (unsigned long long)dptr);
	if (pbase)
		*pbase = r.base;
	if (psize)
		*psize = r.size;
	SI_RETF(CUDA_SUCCESS, "%#llx -> %#llx + %zu", (unsigned long long)dptr,
		(unsigned long long)r.base, r.size);
}

static CUresult host_alloc(void **pp, size_t n, unsigned flags)
{
	const unsigned valid =
	    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
	struct CUctx_st *ctx;
	struct si_range *r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!pp || !n || (flags & ~valid))
		return CUDA_ERROR_INVALID_VALUE;
	rc = alloc_range(ctx, SI_MEM_HOST, n, false, flags, &r);
	if (!rc)
		*pp = (void *)r->base;
	return rc;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	CUresult rc = host_alloc(pp, bytesize, Flags);

	SI_RETF(rc, "%zu flags=%#x -> %p", bytesize, Flags, rc ? NULL : *pp);
}

CUresult cuMemAllocHost(void **pp, size_t bytesize)
{
	CUresult rc = host_alloc(pp, bytesize, 0);

	SI_RETF(rc, "%zu -> %p", bytesize, rc ? NULL : *pp);
}

CUresult cuMemFreeHost(void *p)
{
	struct CUctx_st *ctx;
	struct si_range *r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "%p", p);
	r = si_reg_remove((uintptr_t)p, SI_KIND(SI_MEM_HOST));
	if (!r)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%p", p);
	free_range_synced(r);
	SI_RETF(CUDA_SUCCESS, "%p", p);
}

CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	const unsigned valid = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
			       CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
	struct CUctx_st *ctx;
	struct si_range *r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "%p %zu", p, bytesize);
	if (!p || !bytesize || (Flags & ~valid))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%p %zu flags=%#x", p, bytesize, Flags);
	if (Flags & CU_MEMHOSTREGISTER_IOMEMORY)
		SI_RETF(CUDA_ERROR_NOT_SUPPORTED, "%p %zu (I/O memory)", p, bytesize);
	r = calloc(1, sizeof(*r));
	if (!r)
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "%p %zu", p, bytesize);
	r->base = (uintptr_t)p;
	r->size = bytesize;
	r->kind = SI_MEM_REGISTERED;
	r->ctx = ctx;
	r->dev = -1;
	r->flags = Flags;
	rc = si_reg_insert(r);
	if (rc) {
		free(r);
		/* Overlapping memory that is already page-locked. */
		if (rc == CUDA_ERROR_INVALID_VALUE)
			rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	}
	SI_RETF(rc, "%p %zu flags=%#x", p, bytesize, Flags);
}

CUresult cuMemHostUnregister(void *p)
{
	struct CUctx_st *ctx;
	struct si_range *r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "%p", p);
	r = si_reg_remove((uintptr_t)p, SI_KIND(SI_MEM_REGISTERED));
	if (!r)
		SI_RETF(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "%p", p);
	free_range_synced(r);
	SI_RETF(CUDA_SUCCESS, "%p", p);
}

static bool host_range(const void *p, struct si_range *r)
{
	return si_reg_lookup((uintptr_t)p, r) &&
	       (r->kind == SI_MEM_HOST || r->kind == SI_MEM_REGISTERED);
}

CUresult cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
	struct CUctx_st *ctx;
	struct si_range r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "%p", p);
	/* With unified addressing the device sees page-locked memory at its host address. */
	if (!pdptr || Flags || !host_range(p, &r))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%p flags=%#x", p, Flags);
	*pdptr = (CUdeviceptr)(uintptr_t)p;
	SI_RETF(CUDA_SUCCESS, "%p", p);
}

CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
	struct CUctx_st *ctx;
	struct si_range r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "%p", p);
	if (!pFlags || !host_range(p, &r) || r.kind != SI_MEM_HOST)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%p", p);
	*pFlags = r.flags;
	SI_RETF(CUDA_SUCCESS, "%p -> %#x", p, r.flags);
}

/* Legacy IPC works on cuMemAlloc memory only, as with the real driver. */
CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	struct CUctx_st *ctx;
	struct si_range r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "%#llx", (unsigned long long)dptr);
	if (!pHandle || !si_reg_lookup(dptr, &r) || r.kind != SI_MEM_DEVICE || r.base != dptr)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx", (unsigned long long)dptr);
	memset(pHandle, 0, sizeof(*pHandle));
	snprintf(pHandle->reserved, sizeof(pHandle->reserved), "standin:%ld:%llx:%llu",
		 (long)getpid(), (unsigned long long)r.base, r.id);
	SI_RETF(CUDA_SUCCESS, "%#llx", (unsigned long long)dptr);
}

CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	(void)pdptr;
	(void)handle;
	SI_RETF(CUDA_ERROR_NOT_SUPPORTED, "flags=%#x (no IPC between stand-in processes)", Flags);
}

void si_mem_ctx_teardown(struct CUctx_st *ctx)
{
	struct si_range **list;
	size_t n = si_reg_take_ctx(ctx,
				   SI_KIND(SI_MEM_DEVICE) | SI_KIND(SI_MEM_MANAGED) |
				       SI_KIND(SI_MEM_HOST) | SI_KIND(SI_MEM_REGISTERED),
				   &list);

	for (size_t i = 0; i < n; i++)
		si_range_free(list[i]);
	free(list);
}
