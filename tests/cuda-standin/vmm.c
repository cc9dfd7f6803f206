/*
 * vmm.c - the virtual memory management API with real mappings: a
 * reservation is PROT_NONE address space, an allocation is a memfd, a mapping
 * maps the memfd into a reservation, and cuMemSetAccess is mprotect. As on a
 * GPU, mapped memory is inaccessible until cuMemSetAccess grants access, and a
 * reservation at a requested address is honoured when the address is free.
 *
 * Allocation handles and pools are refused with CUDA_ERROR_INVALID_VALUE, the
 * code the real driver documents for these calls. An allocation exported as
 * a POSIX file descriptor is a duplicate of its memfd (no importer: the
 * runtime must refuse a process that exported memory before anything else).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "standin.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

struct si_vmm {
	struct si_obj obj; /* one reference for the handle, one per mapping */
	int fd;
	size_t size;
	int dev;
	CUmemAllocationProp prop;
	int handle_refs; /* vmm_lock */
	bool imported;	 /* cuMemImportFromShareableHandle: charged to the exporter */
};

struct reservation {
	uintptr_t base;
	size_t size;
	struct reservation *next;
};

static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reservation *reservations;

static void vmm_release(struct si_obj *obj)
{
	struct si_vmm *v = (struct si_vmm *)obj;

	close(v->fd);
	if (!v->imported)
		si_uncharge(v->dev, v->size);
	free(v);
}

static CUresult vmm_get(CUmemGenericAllocationHandle h, struct si_vmm **out)
{
	CUresult rc = si_check_init();
	struct si_obj *obj;

	if (rc)
		return rc;
	obj = si_handle_get((const void *)(uintptr_t)h, SI_T_VMM);
	if (!obj)
		return CUDA_ERROR_INVALID_VALUE;
	*out = (struct si_vmm *)obj;
	return CUDA_SUCCESS;
}

static bool is_aligned(uintptr_t x, size_t a)
{
	return x % a == 0;
}

static CUresult check_location(const CUmemLocation *loc)
{
	if (loc->type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	return loc->id < 0 || loc->id >= si.ndev ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

static CUresult check_prop(const CUmemAllocationProp *prop)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return CUDA_ERROR_INVALID_VALUE;
	if (prop->requestedHandleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	return check_location(&prop->location);
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
				       CUmemAllocationGranularity_flags option)
{
	CUresult rc = si_check_init();

	if (rc)
		SI_RET(rc);
	if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
			     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "option=%d", (int)option);
	rc = check_prop(prop);
	if (rc)
		SI_RET(rc);
	*granularity = SI_GRANULARITY;
	SI_RETF(CUDA_SUCCESS, "dev=%d -> %llu", prop->location.id, SI_GRANULARITY);
}

#define SI_HINT_MIN (32ull << 20)
#define SI_HINT_ALIGN (32ull << 20)

static uintptr_t round_up(uintptr_t v, size_t to)
{
	return (v + to - 1) / to * to;
}

/* Address space anywhere, aligned: map more than needed and trim both ends. */
static void *reserve_anywhere(size_t size, size_t align)
{
	size_t len = size + align;
	uintptr_t p, start;
	void *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	p = (uintptr_t)m;
	start = (p + align - 1) / align * align;
	if (start > p)
		munmap(m, start - p);
	if (p + len > start + size)
		munmap((void *)(start + size), p + len - (start + size));
	return (void *)start;
}

static void *reserve_at(uintptr_t addr, size_t size)
{
	void *m = mmap((void *)addr, size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);

	if (m == MAP_FAILED)
		return NULL;
	/* Kernels before 4.17 take MAP_FIXED_NOREPLACE as a mere hint. */
	if ((uintptr_t)m != addr) {
		munmap(m, size);
		return NULL;
	}
	return m;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
			     unsigned long long flags)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t align = alignment > SI_GRANULARITY ? alignment : SI_GRANULARITY;
	struct reservation *res;
	void *p = NULL;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%zu at %#llx", size, (unsigned long long)addr);
	if (!ptr || !size || flags || !is_aligned(size, page) || !is_aligned(addr, page) ||
	    (alignment & (alignment - 1)))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%zu align=%zu at %#llx flags=%#llx", size,
			alignment, (unsigned long long)addr, flags);
	res = calloc(1, sizeof(*res));
	if (!res)
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "%zu", size);
	/*
	 * The address is a hint, taken as the H200's driver (580) takes it
	 * (2026-11-29): a reservation under SI_HINT_MIN comes from the driver's
	 * own pool whatever the hint; a larger one goes to the hint rounded up to
	 * a multiple of SI_HINT_ALIGN when that is free; else placement is ours.
	 */
	if (addr && size >= SI_HINT_MIN)
		p = reserve_at(round_up(addr, align > SI_HINT_ALIGN ? align : SI_HINT_ALIGN), size);
	/* Where the driver puts one itself, a large one is at such a multiple
	 * too (0x302000000 on the H200), so that a later process can ask for it. */
	if (!p)
		p = reserve_anywhere(size, size >= SI_HINT_MIN && align < SI_HINT_ALIGN ? SI_HINT_ALIGN
										 : align);
	if (!p) {
		free(res);
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "%zu align=%zu at %#llx", size, alignment,
			(unsigned long long)addr);
	}
	res->base = (uintptr_t)p;
	res->size = size;
	pthread_mutex_lock(&vmm_lock);
	res->next = reservations;
	reservations = res;
	pthread_mutex_unlock(&vmm_lock);
	*ptr = res->base;
	SI_RETF(CUDA_SUCCESS, "%zu align=%zu at %#llx -> %#llx", size, alignment,
		(unsigned long long)addr, (unsigned long long)*ptr);
}

static bool has_mappings(uintptr_t base, size_t size)
{
	struct si_range *r;

	si_reg_rdlock();
	r = si_reg_next_locked(base);
	si_reg_unlock();
	return r && r->base < base + size;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct reservation **pp, *res = NULL;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%#llx %zu", (unsigned long long)ptr, size);
	pthread_mutex_lock(&vmm_lock);
	for (pp = &reservations; *pp; pp = &(*pp)->next) {
		if ((*pp)->base == ptr && (*pp)->size == size) {
			res = *pp;
			break;
		}
	}
	/* The stand-in insists on cuMemUnmap first, which catches leaked mappings. */
	if (!res || has_mappings(ptr, size)) {
		pthread_mutex_unlock(&vmm_lock);
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx %zu%s", (unsigned long long)ptr, size,
			res ? " (still mapped)" : " (not a reservation)");
	}
	*pp = res->next;
	pthread_mutex_unlock(&vmm_lock);
	munmap((void *)res->base, res->size);
	free(res);
	SI_RETF(CUDA_SUCCESS, "%#llx %zu", (unsigned long long)ptr, size);
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct si_vmm *v;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%zu", size);
	if (!handle || !size || flags || !is_aligned(size, SI_GRANULARITY))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%zu flags=%#llx", size, flags);
	rc = check_prop(prop);
	if (rc)
		SI_RETF(rc, "%zu", size);
	v = calloc(1, sizeof(*v));
	if (!v)
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "%zu", size);
	rc = si_charge(prop->location.id, size);
	if (rc)
		goto out_free;
	v->fd = memfd_create("gpuckpt-standin-vmm", MFD_CLOEXEC);
	if (v->fd < 0) {
		si_msg("cuMemCreate: %zu bytes: memfd_create: %s", size, strerror(errno));
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_uncharge;
	}
	if (ftruncate(v->fd, (off_t)size)) {
		si_msg("cuMemCreate: %zu bytes: ftruncate: %s", size, strerror(errno));
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_close;
	}
	si_obj_init(&v->obj, SI_T_VMM, NULL, vmm_release);
	v->size = size;
	v->dev = prop->location.id;
	v->prop = *prop;
	v->handle_refs = 1;
	if (si_handle_add(&v->obj)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_close;
	}
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
	SI_RETF(CUDA_SUCCESS, "%zu dev=%d handles=%#x -> %#llx", size, v->dev,
		(unsigned)prop->requestedHandleTypes, *handle);

out_close:
	close(v->fd);
out_uncharge:
	si_uncharge(prop->location.id, size);
out_free:
	free(v);
	SI_RETF(rc, "%zu dev=%d", size, prop->location.id);
}

/* Drops one user reference to the handle; the memory goes with the last mapping. */
static void handle_unref(struct si_vmm *v)
{
	bool last;

	pthread_mutex_lock(&vmm_lock);
	last = --v->handle_refs == 0 && si_handle_del(&v->obj);
	pthread_mutex_unlock(&vmm_lock);
	if (last)
		si_obj_put(&v->obj);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct si_vmm *v;
	CUresult rc = vmm_get(handle, &v);

	if (rc)
		SI_RETF(rc, "%#llx", handle);
	handle_unref(v);
	si_obj_put(&v->obj);
	SI_RETF(CUDA_SUCCESS, "%#llx", handle);
}

static bool in_reservation(uintptr_t p, size_t n)
{
	bool found = false;

	pthread_mutex_lock(&vmm_lock);
	for (struct reservation *r = reservations; r && !found; r = r->next)
		found = p >= r->base && p - r->base <= r->size && n <= r->size - (p - r->base);
	pthread_mutex_unlock(&vmm_lock);
	return found;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
		  unsigned long long flags)
{
	struct si_vmm *v;
	struct si_range *r;
	void *m;
	CUresult rc;

	if (flags || offset || !size || !is_aligned(ptr, SI_GRANULARITY) ||
	    !is_aligned(size, SI_GRANULARITY))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx %zu offset=%zu flags=%#llx",
			(unsigned long long)ptr, size, offset, flags);
	rc = vmm_get(handle, &v);
	if (rc)
		SI_RETF(rc, "%#llx %zu handle=%#llx", (unsigned long long)ptr, size, handle);
	if (size > v->size || !in_reservation(ptr, size)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out_put;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_put;
	}
	r->base = ptr;
	r->size = size;
	r->kind = SI_MEM_VMM;
	r->dev = v->dev;
	r->owner = v;
	r->offset = offset;
	r->flags = (unsigned)v->prop.requestedHandleTypes;
	rc = si_reg_insert(r); /* fails if part of the range is mapped already */
	if (rc)
		goto out_free;
	/* No access until cuMemSetAccess, as on the GPU. */
	m = mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, v->fd, (off_t)offset);
	if (m == MAP_FAILED) {
		si_msg("cuMemMap: %#llx + %zu: mmap: %s", (unsigned long long)ptr, size,
		       strerror(errno));
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_unregister;
	}
	SI_RETF(CUDA_SUCCESS, "%#llx %zu handle=%#llx", (unsigned long long)ptr, size, handle);

out_unregister:
	si_reg_remove(ptr, SI_KIND(SI_MEM_VMM));
out_free:
	free(r);
out_put:
	si_obj_put(&v->obj);
	SI_RETF(rc, "%#llx %zu handle=%#llx", (unsigned long long)ptr, size, handle);
}

/* Whether [ptr, ptr+size) is exactly a run of whole adjacent mappings. */
static bool whole_mappings_locked(uintptr_t ptr, size_t size)
{
	uintptr_t p = ptr, end = ptr + size;

	while (p < end) {
		struct si_range *r = si_reg_find_locked(p);

		if (!r || r->kind != SI_MEM_VMM || r->base != p || r->size > end - p)
			return false;
		p += r->size;
	}
	return true;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	uintptr_t p = ptr, end = ptr + size;
	bool whole;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%#llx %zu", (unsigned long long)ptr, size);
	if (!size || end < p)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx %zu", (unsigned long long)ptr, size);
	si_reg_rdlock();
	whole = whole_mappings_locked(ptr, size);
	si_reg_unlock();
	if (!whole)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx %zu (not whole mappings)",
			(unsigned long long)ptr, size);
	/* Synchronous like the real call: nothing queued may still touch the memory. */
	si_sync_all();
	while (p < end) {
		struct si_range *r = si_reg_remove(p, SI_KIND(SI_MEM_VMM));

		if (!r)
			break; /* unmapped meanwhile by another thread */
		/* Back to an inaccessible reservation. */
		mmap((void *)r->base, r->size, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
		p = r->base + r->size;
		si_obj_put(&((struct si_vmm *)r->owner)->obj);
		free(r);
	}
	SI_RETF(CUDA_SUCCESS, "%#llx %zu", (unsigned long long)ptr, size);
}

static int host_prot(const struct si_range *r)
{
	int prot = PROT_NONE;

	for (int d = 0; d < si.ndev; d++) {
		if (r->access[d] == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return PROT_READ | PROT_WRITE;
		if (r->access[d] == CU_MEM_ACCESS_FLAGS_PROT_READ)
			prot = PROT_READ;
	}
	return prot;
}

static CUresult check_access_desc(const CUmemAccessDesc *desc, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		CUresult rc = check_location(&desc[i].location);

		if (rc)
			return rc;
		if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE &&
		    desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
		    desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/*
 * Access is recorded per mapping and device; the host sees the widest access
 * any device has, since host memory stands for every device's memory at once.
 */
CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
	uintptr_t p = ptr, end = ptr + size;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%#llx %zu", (unsigned long long)ptr, size);
	if (!desc || !count || !size || end < p || !is_aligned(ptr, SI_GRANULARITY) ||
	    !is_aligned(size, SI_GRANULARITY))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx %zu count=%zu", (unsigned long long)ptr,
			size, count);
	rc = check_access_desc(desc, count);
	if (rc)
		SI_RETF(rc, "%#llx %zu", (unsigned long long)ptr, size);
	si_reg_wrlock();
	/* Check the whole range first, so that a refusal changes nothing. */
	while (p < end) {
		struct si_range *r = si_reg_find_locked(p);

		if (!r || r->kind != SI_MEM_VMM) {
			rc = CUDA_ERROR_INVALID_VALUE;
			goto out_unlock;
		}
		/* Another device gets access only over a peer route. */
		for (size_t i = 0; i < count; i++)
			if (desc[i].location.id != r->dev && desc[i].flags &&
			    !si_peer_route(desc[i].location.id, r->dev)) {
				rc = CUDA_ERROR_INVALID_DEVICE;
				goto out_unlock;
			}
		p = r->base + r->size;
	}
	for (p = ptr; p < end;) {
		struct si_range *r = si_reg_find_locked(p);
		uintptr_t stop = r->base + r->size < end ? r->base + r->size : end;

		for (size_t i = 0; i < count; i++)
			r->access[desc[i].location.id] = (unsigned char)desc[i].flags;
		if (mprotect((void *)p, stop - p, host_prot(r))) {
			si_msg("cuMemSetAccess: %#lx + %zu: mprotect: %s", (unsigned long)p,
			       (size_t)(stop - p), strerror(errno));
			rc = CUDA_ERROR_INVALID_VALUE;
			goto out_unlock;
		}
		p = stop;
	}
out_unlock:
	si_reg_unlock();
	SI_RETF(rc, "%#llx %zu count=%zu flags[0]=%d", (unsigned long long)ptr, size, count,
		(int)desc[0].flags);
}

CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
	struct si_range r;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%#llx", (unsigned long long)ptr);
	if (!flags || !location)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx", (unsigned long long)ptr);
	rc = check_location(location);
	if (rc)
		SI_RETF(rc, "%#llx", (unsigned long long)ptr);
	if (!si_reg_lookup(ptr, &r) || r.kind != SI_MEM_VMM)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx (not mapped)", (unsigned long long)ptr);
	*flags = r.access[location->id];
	SI_RETF(CUDA_SUCCESS, "%#llx dev=%d -> %llu", (unsigned long long)ptr, location->id,
		*flags);
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	struct si_range *r;
	struct si_vmm *v = NULL;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%p", addr);
	if (!handle)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%p", addr);
	si_reg_rdlock();
	r = si_reg_find_locked((uintptr_t)addr);
	if (r && r->kind == SI_MEM_VMM) {
		v = r->owner;
		si_obj_ref(&v->obj); /* becomes the handle's reference if it was released */
	}
	si_reg_unlock();
	if (!v)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%p (not mapped)", addr);
	pthread_mutex_lock(&vmm_lock);
	if (v->handle_refs == 0 && si_handle_add(&v->obj)) {
		pthread_mutex_unlock(&vmm_lock);
		si_obj_put(&v->obj);
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "%p", addr);
	}
	if (v->handle_refs++ > 0)
		si_obj_put(&v->obj);
	pthread_mutex_unlock(&vmm_lock);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
	SI_RETF(CUDA_SUCCESS, "%p -> %#llx", addr, *handle);
}

CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
						CUmemGenericAllocationHandle handle)
{
	struct si_vmm *v;
	CUresult rc;

	if (!prop)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx", handle);
	rc = vmm_get(handle, &v);
	if (rc)
		SI_RETF(rc, "%#llx", handle);
	*prop = v->prop;
	si_obj_put(&v->obj);
	SI_RETF(CUDA_SUCCESS, "%#llx", handle);
}

CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
				      CUmemAllocationHandleType handleType, unsigned long long flags)
{
	struct si_vmm *v;
	CUresult rc;
	int fd;

	if (!shareableHandle || flags || handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx", handle);
	rc = vmm_get(handle, &v);
	if (rc)
		SI_RETF(rc, "%#llx", handle);
	fd = fcntl(v->fd, F_DUPFD_CLOEXEC, 0);
	si_obj_put(&v->obj);
	if (fd < 0)
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "%#llx", handle);
	*(int *)shareableHandle = fd;
	SI_RETF(CUDA_SUCCESS, "%#llx -> fd %d", handle, fd);
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
					CUmemAllocationHandleType shHandleType)
{
	struct CUctx_st *ctx;
	struct si_vmm *v;
	struct stat st;
	int fd = (int)(intptr_t)osHandle;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "fd %d", fd);
	if (!handle || shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || fd < 0 ||
	    fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    !is_aligned((uintptr_t)st.st_size, SI_GRANULARITY))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "fd %d", fd);
	v = calloc(1, sizeof(*v));
	if (!v)
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "fd %d", fd);
	/* The caller keeps its descriptor, as with the driver. */
	v->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (v->fd < 0) {
		free(v);
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "fd %d", fd);
	}
	si_obj_init(&v->obj, SI_T_VMM, NULL, vmm_release);
	v->size = (size_t)st.st_size;
	/* Which device the exporter's memory is on is not in a memfd: the caller's. */
	v->dev = ctx->dev;
	v->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	v->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	v->prop.location.id = ctx->dev;
	v->prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	v->handle_refs = 1;
	v->imported = true;
	if (si_handle_add(&v->obj)) {
		close(v->fd);
		free(v);
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "fd %d", fd);
	}
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)v;
	SI_RETF(CUDA_SUCCESS, "fd %d -> %#llx (%zu bytes)", fd, *handle, v->size);
}
