/*
 * pool.c - stream-ordered allocation: memory pools (one default pool per
 * device, and created ones) and cuMemAllocAsync/cuMemFreeAsync. The memory is
 * handed out at once; the free happens when the stream reaches it. Pools keep
 * no cache: freed memory goes back to the device, so "reserved" equals "used".
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "standin.h"

struct CUmemPoolHandle_st {
	struct si_obj obj;
	int dev;
	bool is_default;
	pthread_mutex_t lock;
	int reuse_follow, reuse_opportunistic, reuse_internal;
	cuuint64_t release_threshold;
	cuuint64_t used, used_high, reserved_high;
	CUmemAllocationHandleType handle_types;
};

static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;

static void pool_release(struct si_obj *obj)
{
	struct CUmemPoolHandle_st *p = (struct CUmemPoolHandle_st *)obj;

	pthread_mutex_destroy(&p->lock);
	free(p);
}

static CUresult pool_new(int dev, bool is_default, CUmemAllocationHandleType types,
			 struct CUmemPoolHandle_st **out)
{
	struct CUmemPoolHandle_st *p = calloc(1, sizeof(*p));

	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	si_obj_init(&p->obj, SI_T_POOL, NULL, pool_release);
	p->dev = dev;
	p->is_default = is_default;
	p->reuse_follow = p->reuse_opportunistic = p->reuse_internal = 1;
	p->handle_types = types;
	pthread_mutex_init(&p->lock, NULL);
	if (si_handle_add(&p->obj)) {
		si_obj_put(&p->obj);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = p;
	return CUDA_SUCCESS;
}

CUresult si_pool_default(int dev, struct CUmemPoolHandle_st **out)
{
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&default_lock);
	if (!si.dev[dev].default_pool) {
		rc = pool_new(dev, true, CU_MEM_HANDLE_TYPE_NONE, &si.dev[dev].default_pool);
		if (!rc)
			atomic_store(&si.dev[dev].current_pool, si.dev[dev].default_pool);
	}
	*out = si.dev[dev].default_pool;
	pthread_mutex_unlock(&default_lock);
	return rc;
}

static CUresult current_pool(int dev, struct CUmemPoolHandle_st **out)
{
	struct CUmemPoolHandle_st *def;
	CUresult rc = si_pool_default(dev, &def);

	if (rc)
		return rc;
	*out = atomic_load(&si.dev[dev].current_pool);
	return CUDA_SUCCESS;
}

static CUresult pool_get(CUmemoryPool h, struct CUmemPoolHandle_st **out)
{
	CUresult rc = si_check_init();
	struct si_obj *obj;

	if (rc)
		return rc;
	obj = si_handle_get(h, SI_T_POOL);
	if (!obj)
		return CUDA_ERROR_INVALID_VALUE;
	*out = (struct CUmemPoolHandle_st *)obj;
	return CUDA_SUCCESS;
}

void si_pool_range_free(struct si_range *r)
{
	struct CUmemPoolHandle_st *p = r->owner;

	pthread_mutex_lock(&p->lock);
	p->used -= r->charged;
	pthread_mutex_unlock(&p->lock);
	si_range_free(r);
	si_obj_put(&p->obj);
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	struct CUmemPoolHandle_st *p;
	CUresult rc = si_check_device(dev);

	if (rc)
		SI_RETF(rc, "dev=%d", dev);
	if (!pool_out)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "dev=%d", dev);
	rc = si_pool_default(dev, &p);
	if (!rc)
		*pool_out = p;
	SI_RETF(rc, "dev=%d -> %p", dev, rc ? NULL : (void *)p);
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	struct CUmemPoolHandle_st *p;
	CUresult rc = si_check_device(dev);

	if (rc)
		SI_RETF(rc, "dev=%d", dev);
	if (!pool)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "dev=%d", dev);
	rc = current_pool(dev, &p);
	if (!rc)
		*pool = p;
	SI_RETF(rc, "dev=%d -> %p", dev, rc ? NULL : (void *)p);
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	struct CUmemPoolHandle_st *p, *def;
	CUresult rc = si_check_device(dev);

	if (rc)
		SI_RETF(rc, "dev=%d", dev);
	rc = pool_get(pool, &p);
	if (rc)
		SI_RETF(rc, "dev=%d %p", dev, (void *)pool);
	if (p->dev != dev) {
		rc = CUDA_ERROR_INVALID_DEVICE;
		goto out;
	}
	rc = si_pool_default(dev, &def);
	if (!rc)
		atomic_store(&si.dev[dev].current_pool, p);
out:
	si_obj_put(&p->obj);
	SI_RETF(rc, "dev=%d %p", dev, (void *)pool);
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	struct CUmemPoolHandle_st *p;
	CUresult rc = si_check_init();

	if (rc)
		SI_RET(rc);
	if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    (poolProps->handleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	rc = si_check_device(poolProps->location.id);
	if (rc)
		SI_RETF(rc, "dev=%d", poolProps->location.id);
	rc = pool_new(poolProps->location.id, false, poolProps->handleTypes, &p);
	if (!rc)
		*pool = p;
	SI_RETF(rc, "dev=%d -> %p", poolProps->location.id, rc ? NULL : (void *)p);
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	struct CUmemPoolHandle_st *p;
	CUresult rc = pool_get(pool, &p);

	if (rc)
		SI_RETF(rc, "%p", (void *)pool);
	if (p->is_default) {
		si_obj_put(&p->obj);
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%p (a device's default pool)", (void *)pool);
	}
	/* Destroying the current pool makes the default one current again. */
	atomic_compare_exchange_strong(&si.dev[p->dev].current_pool, &p,
				       si.dev[p->dev].default_pool);
	/* Allocations still out keep the pool until they are freed. */
	if (si_handle_del(&p->obj))
		si_obj_put(&p->obj);
	si_obj_put(&p->obj);
	SI_RETF(CUDA_SUCCESS, "%p", (void *)pool);
}

static CUresult pool_set(struct CUmemPoolHandle_st *p, CUmemPool_attribute attr, void *value)
{
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		p->reuse_follow = *(int *)value;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		p->reuse_opportunistic = *(int *)value;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		p->reuse_internal = *(int *)value;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		p->release_threshold = *(cuuint64_t *)value;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		/* High watermarks can only be reset, to zero. */
		if (*(cuuint64_t *)value != 0)
			return CUDA_ERROR_INVALID_VALUE;
		if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH)
			p->used_high = p->used;
		else
			p->reserved_high = p->used;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

static CUresult pool_get_attr(struct CUmemPoolHandle_st *p, CUmemPool_attribute attr, void *value)
{
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
		*(int *)value = p->reuse_follow;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
		*(int *)value = p->reuse_opportunistic;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*(int *)value = p->reuse_internal;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*(cuuint64_t *)value = p->release_threshold;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		*(cuuint64_t *)value = p->used;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		*(cuuint64_t *)value = p->reserved_high;
		return CUDA_SUCCESS;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		*(cuuint64_t *)value = p->used_high;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	struct CUmemPoolHandle_st *p;
	CUresult rc = pool_get(pool, &p);

	if (rc)
		SI_RETF(rc, "%p attr=%d", (void *)pool, (int)attr);
	if (!value) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		pthread_mutex_lock(&p->lock);
		rc = pool_set(p, attr, value);
		pthread_mutex_unlock(&p->lock);
	}
	si_obj_put(&p->obj);
	SI_RETF(rc, "%p attr=%d", (void *)pool, (int)attr);
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	struct CUmemPoolHandle_st *p;
	CUresult rc = pool_get(pool, &p);

	if (rc)
		SI_RETF(rc, "%p attr=%d", (void *)pool, (int)attr);
	if (!value) {
		rc = CUDA_ERROR_INVALID_VALUE;
	} else {
		pthread_mutex_lock(&p->lock);
		rc = pool_get_attr(p, attr, value);
		pthread_mutex_unlock(&p->lock);
	}
	si_obj_put(&p->obj);
	SI_RETF(rc, "%p attr=%d", (void *)pool, (int)attr);
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	struct CUmemPoolHandle_st *p;
	CUresult rc = pool_get(pool, &p);

	/* Nothing is cached, so there is nothing to trim. */
	if (!rc)
		si_obj_put(&p->obj);
	SI_RETF(rc, "%p keep=%zu", (void *)pool, minBytesToKeep);
}

/* Sharing pool memory with another process: as with legacy IPC, there is
 * no other stand-in process to share with. */
CUresult cuMemPoolExportPointer(CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr)
{
	(void)shareData_out;
	SI_RETF(CUDA_ERROR_NOT_SUPPORTED, "%#llx (no IPC between stand-in processes)",
		(unsigned long long)ptr);
}

CUresult si_api_alloc_async(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream h, bool ptds)
{
	struct CUmemPoolHandle_st *p = NULL;
	struct CUstream_st *s;
	struct si_range *r;
	size_t len = si_align_up(n, (size_t)sysconf(_SC_PAGESIZE));
	CUresult rc;

	if (!dptr || !n)
		return CUDA_ERROR_INVALID_VALUE;
	rc = si_stream_resolve(h, ptds, &s);
	if (rc)
		return rc;
	if (pool) {
		rc = pool_get(pool, &p);
	} else {
		rc = current_pool(s->ctx->dev, &p);
		if (!rc)
			si_obj_ref(&p->obj);
	}
	if (rc)
		goto out_stream;
	r = calloc(1, sizeof(*r));
	if (!r) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_pool;
	}
	r->kind = SI_MEM_POOL;
	r->dev = p->dev;
	r->size = n;
	r->charged = si_align_up(n, SI_ALLOC_ALIGN);
	r->map_len = len;
	r->owner = p;
	rc = si_charge(p->dev, r->charged);
	if (rc)
		goto out_free;
	r->base = (uintptr_t)si_map_anon(len);
	if (!r->base) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_uncharge;
	}
	rc = si_reg_insert(r);
	if (rc)
		goto out_unmap;
	pthread_mutex_lock(&p->lock);
	p->used += r->charged;
	if (p->used > p->used_high)
		p->used_high = p->used;
	if (p->used > p->reserved_high)
		p->reserved_high = p->used;
	pthread_mutex_unlock(&p->lock);
	*dptr = r->base;
	si_stream_put(s);
	return CUDA_SUCCESS; /* the range keeps the pool reference */

out_unmap:
	munmap((void *)r->base, len);
out_uncharge:
	si_uncharge(p->dev, r->charged);
out_free:
	free(r);
out_pool:
	si_obj_put(&p->obj);
out_stream:
	si_stream_put(s);
	return rc;
}

struct free_op {
	struct si_op op;
	struct si_range *range;
};

static void free_run(struct si_op *op)
{
	si_pool_range_free(((struct free_op *)op)->range);
}

/*
 * The pointer is invalid for everything submitted after the free (so it leaves
 * the registry now); its memory goes when the stream reaches the free.
 */
CUresult si_api_free_async(CUdeviceptr ptr, CUstream h, bool ptds)
{
	struct CUstream_st *s;
	struct free_op *f;
	CUresult rc = si_stream_resolve(h, ptds, &s);

	if (rc)
		return rc;
	f = calloc(1, sizeof(*f));
	if (!f) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_stream;
	}
	f->range = si_reg_remove(ptr, SI_KIND(SI_MEM_POOL));
	if (!f->range) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out_free;
	}
	f->op.run = free_run;
	rc = si_stream_submit(s, &f->op, NULL, NULL);
	if (rc) {
		si_reg_insert(f->range);
		goto out_free;
	}
	si_stream_put(s);
	return CUDA_SUCCESS;

out_free:
	free(f);
out_stream:
	si_stream_put(s);
	return rc;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	CUresult rc = si_api_alloc_async(dptr, bytesize, NULL, hStream, false);

	SI_RETF(rc, "%zu stream=%p -> %#llx", bytesize, (void *)hStream,
		rc ? 0ULL : (unsigned long long)*dptr);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				 CUstream hStream)
{
	CUresult rc;

	if (!pool)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%zu pool=NULL", bytesize);
	rc = si_api_alloc_async(dptr, bytesize, pool, hStream, false);
	SI_RETF(rc, "%zu pool=%p stream=%p -> %#llx", bytesize, (void *)pool, (void *)hStream,
		rc ? 0ULL : (unsigned long long)*dptr);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	SI_RETF(si_api_free_async(dptr, hStream, false), "%#llx stream=%p",
		(unsigned long long)dptr, (void *)hStream);
}
