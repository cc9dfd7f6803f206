/*
 * memory.c - legacy device memory (cuMemAlloc), managed memory, page-locked
 * host memory, legacy IPC between processes, and the queries on them.
 * "Device memory" is host memory at the
 * device address; it is charged against the device's size so that running
 * out of device memory can be tested.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "standin.h"

/*
 * Managed memory is placed as the real driver (580, x86_64) places it: a
 * reservation first, through libc's mmap (anonymous, private, PROT_NONE, the
 * size rounded up to 2 MiB plus 32 MiB less a page, anywhere the kernel
 * likes), then the memory mapped at the first 32 MiB boundary inside it and
 * the rest of the reservation given back. So, as with the driver, the
 * address comes from the process's mmap layout: it changes from run to run
 * with address space randomisation, and a restore relies on the runtime
 * placing the reservation where the checkpointed run had it
 * (runtime/core/interpose/steer.c).
 * GPUCKPT_STANDIN_MANAGED_BASE gives the kernel a hint for the first
 * reservation (each next one just above the last allocation): a run whose
 * layout differs from the checkpointed one, deterministically.
 */
#define SI_MANAGED_ALIGN (32ULL << 20)
#define SI_MANAGED_GRAIN (2ULL << 20)

static unsigned long long managed_hint; /* 0: none yet; guarded by the atomics */

static void *map_managed(size_t len)
{
	const char *v = getenv("GPUCKPT_STANDIN_MANAGED_BASE");
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t res_len = si_align_up(len, SI_MANAGED_GRAIN) + SI_MANAGED_ALIGN - page;
	unsigned long long hint = 0;
	uintptr_t res, p;
	void *m;

	if (v && *v) {
		hint = __atomic_load_n(&managed_hint, __ATOMIC_RELAXED);
		if (!hint)
			hint = strtoull(v, NULL, 0);
	}
	m = mmap((void *)(uintptr_t)hint, res_len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	res = (uintptr_t)m;
	p = (res + SI_MANAGED_ALIGN - 1) & ~(uintptr_t)(SI_MANAGED_ALIGN - 1);
	if (mmap((void *)p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0) != (void *)p) {
		munmap(m, res_len);
		return NULL;
	}
	if (p > res) {
		munmap(m, p - res);
		si_intrude(res, p - res);
	}
	if (res + res_len > p + len) {
		munmap((void *)(p + len), res + res_len - (p + len));
		si_intrude(p + len, res + res_len - (p + len));
	}
	if (v && *v)
		__atomic_store_n(&managed_hint, (unsigned long long)(p + si_align_up(len, SI_MANAGED_ALIGN)),
				 __ATOMIC_RELAXED);
	return (void *)p;
}

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
	r->base = (uintptr_t)(kind == SI_MEM_MANAGED ? map_managed(len) : si_map_anon(len));
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

/*
 * Legacy IPC between processes. cuMemAlloc memory is private anonymous memory
 * until its first cuIpcGetMemHandle, which moves its pages into a memfd mapped
 * shared at the same address (contents kept). The 64-byte handle names the
 * exporter's pid, the memfd's descriptor number there and a tag that is also
 * in the memfd's name; the importer opens /proc/PID/fd/N (the same memfd, as
 * for any process of the same user that may read the exporter's /proc), checks
 * the name, and maps it shared: a write on either side is seen by the other.
 * The exporter keeps the memfd until cuMemFree; an importer's mapping keeps the
 * pages alive after that, as the driver keeps an opened allocation.
 */
#define SI_IPC_MAGIC "SIIPC01"

struct si_ipc_handle {
	char magic[8];
	int32_t pid;
	int32_t fd;
	uint64_t base; /* the exporter's address (informative) */
	uint64_t size;
	uint64_t tag;
	char pad[24];
};

_Static_assert(sizeof(struct si_ipc_handle) == sizeof(CUipcMemHandle), "IPC handle size");

static pthread_mutex_t ipc_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long ipc_next_tag;

static void ipc_memfd_name(char *buf, size_t len, long pid, unsigned long long tag)
{
	snprintf(buf, len, "gpuckpt-standin-ipc:%ld:%llu", pid, tag);
}

/* Moves r's pages (an SI_MEM_DEVICE range, registry write lock held) into a memfd. */
static CUresult ipc_make_shared(struct si_range *r)
{
	unsigned long long tag = ++ipc_next_tag;
	char name[96];
	void *tmp, *at;
	int fd;

	ipc_memfd_name(name, sizeof(name), (long)getpid(), tag);
	fd = memfd_create(name, MFD_CLOEXEC);
	if (fd < 0) {
		si_msg("cuIpcGetMemHandle: memfd_create: %s", strerror(errno));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (ftruncate(fd, (off_t)r->map_len) < 0)
		goto out_close;
	tmp = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (tmp == MAP_FAILED)
		goto out_close;
	memcpy(tmp, (void *)r->base, r->map_len);
	munmap(tmp, r->map_len);
	at = mmap((void *)r->base, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
		  0);
	if (at != (void *)r->base) {
		/* MAP_FIXED failed before unmapping anything: the old pages stay. */
		goto out_close;
	}
	r->has_fd = true;
	r->fd = fd;
	r->ipc_tag = tag;
	return CUDA_SUCCESS;
out_close:
	si_msg("cuIpcGetMemHandle: %#llx: sharing %zu bytes: %s", (unsigned long long)r->base,
	       r->map_len, strerror(errno));
	close(fd);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Legacy IPC works on cuMemAlloc memory only, as with the real driver. */
CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	struct si_ipc_handle h = {.magic = SI_IPC_MAGIC};
	struct CUctx_st *ctx;
	struct si_range copy, *r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "%#llx", (unsigned long long)dptr);
	if (!pHandle || !si_reg_lookup(dptr, &copy) || copy.kind != SI_MEM_DEVICE ||
	    copy.base != dptr)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx", (unsigned long long)dptr);
	/* No queued copy may write the old pages while they move. */
	if (copy.ctx)
		si_ctx_sync(copy.ctx);
	pthread_mutex_lock(&ipc_lock);
	si_reg_wrlock();
	r = si_reg_find_locked(dptr);
	if (!r || r->kind != SI_MEM_DEVICE || r->base != dptr)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (!r->has_fd)
		rc = ipc_make_shared(r);
	if (!rc) {
		h.pid = (int32_t)getpid();
		h.fd = r->fd;
		h.base = r->base;
		h.size = r->size;
		h.tag = r->ipc_tag;
	}
	si_reg_unlock();
	pthread_mutex_unlock(&ipc_lock);
	if (!rc)
		memcpy(pHandle, &h, sizeof(h));
	SI_RETF(rc, "%#llx", (unsigned long long)dptr);
}

static CUresult ipc_open(CUdeviceptr *pdptr, const CUipcMemHandle *handle, unsigned flags)
{
	struct si_ipc_handle h;
	struct CUctx_st *ctx;
	struct si_range *r;
	char path[64], want[128], got[160];
	size_t len;
	struct stat st;
	ssize_t n;
	void *p;
	int fd;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		return rc;
	memcpy(&h, handle, sizeof(h));
	if (!pdptr || (flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
	    memcmp(h.magic, SI_IPC_MAGIC, sizeof(h.magic)) || h.pid <= 0 || h.fd < 0 || !h.size)
		return CUDA_ERROR_INVALID_VALUE;
	/* As the driver: a process does not open its own memory this way. */
	if (h.pid == (int32_t)getpid())
		return CUDA_ERROR_INVALID_CONTEXT;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)h.pid, (int)h.fd);
	ipc_memfd_name(want, sizeof(want), (long)h.pid, (unsigned long long)h.tag);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		si_msg("cuIpcOpenMemHandle: %s: %s (the exporter gone, or freed the memory?)", path,
		       strerror(errno));
		return CUDA_ERROR_INVALID_HANDLE;
	}
	/* The descriptor number may have been reused: the memfd's name says which it is. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = '\0';
	len = si_align_up(h.size, (size_t)sysconf(_SC_PAGESIZE));
	if (strncmp(got, "/memfd:", 7) || strncmp(got + 7, want, strlen(want)) ||
	    (got[7 + strlen(want)] != '\0' && got[7 + strlen(want)] != ' ') || fstat(fd, &st) ||
	    (uint64_t)st.st_size < len) {
		close(fd);
		si_msg("cuIpcOpenMemHandle: /proc/%d/fd/%d is not the exported memory", (int)h.pid,
		       (int)h.fd);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = calloc(1, sizeof(*r));
	if (!r) {
		munmap(p, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r->base = (uintptr_t)p;
	r->size = h.size;
	r->kind = SI_MEM_IPC;
	r->ctx = ctx;
	r->dev = ctx->dev;
	r->map_len = len;
	rc = si_reg_insert(r);
	if (rc) {
		munmap(p, len);
		free(r);
		return rc;
	}
	*pdptr = r->base;
	return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	CUresult rc = ipc_open(pdptr, &handle, Flags);

	SI_RETF(rc, "flags=%#x -> %#llx", Flags, rc ? 0ULL : (unsigned long long)*pdptr);
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	struct CUctx_st *ctx;
	struct si_range *r;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "%#llx", (unsigned long long)dptr);
	r = si_reg_remove(dptr, SI_KIND(SI_MEM_IPC));
	if (!r)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx", (unsigned long long)dptr);
	free_range_synced(r);
	SI_RETF(CUDA_SUCCESS, "%#llx", (unsigned long long)dptr);
}

void si_mem_ctx_teardown(struct CUctx_st *ctx)
{
	struct si_range **list;
	size_t n = si_reg_take_ctx(ctx,
				   SI_KIND(SI_MEM_DEVICE) | SI_KIND(SI_MEM_MANAGED) |
				       SI_KIND(SI_MEM_HOST) | SI_KIND(SI_MEM_REGISTERED) |
				       SI_KIND(SI_MEM_IPC),
				   &list);

	for (size_t i = 0; i < n; i++)
		si_range_free(list[i]);
	free(list);
}

/* ---- managed memory hints: checked, remembered, no data moves (it is all
 * host memory) ---- */

/* [p, p + n) inside one managed allocation: the range, write-locked; NULL
 * (unlocked) if not. */
static struct si_range *managed_locked(CUdeviceptr p, size_t n)
{
	struct si_range *r;

	si_reg_wrlock();
	r = si_reg_find_locked(p);
	if (!r || r->kind != SI_MEM_MANAGED || n > r->base + r->size - p) {
		si_reg_unlock();
		return NULL;
	}
	return r;
}

static int location_ordinal(CUmemLocation loc, bool *ok)
{
	*ok = true;
	if (loc.type == CU_MEM_LOCATION_TYPE_HOST || loc.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
	    loc.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
		return CU_DEVICE_CPU;
	if (loc.type == CU_MEM_LOCATION_TYPE_DEVICE && loc.id >= 0 && loc.id < si.ndev)
		return loc.id;
	*ok = false;
	return 0;
}

static CUresult prefetch(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags)
{
	struct si_range *r;
	bool ok;
	int where = location_ordinal(loc, &ok);

	if (!ok || flags || !n)
		return CUDA_ERROR_INVALID_VALUE;
	r = managed_locked(p, n);
	if (!r)
		return CUDA_ERROR_INVALID_VALUE;
	r->has_prefetch = true;
	r->last_prefetch = where;
	si_reg_unlock();
	return CUDA_SUCCESS;
}

CUresult si_managed_prefetch(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags)
{
	return prefetch(p, n, loc, flags);
}

CUresult cuMemPrefetchAsync(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags, CUstream s)
{
	SI_RETF(prefetch(p, n, loc, flags), "%#llx %zu type=%d id=%d %p", (unsigned long long)p, n,
		(int)loc.type, loc.id, (void *)s);
}

static CUresult advise(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation loc)
{
	struct si_range *r;
	bool ok;
	int where = location_ordinal(loc, &ok);

	if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
		return CUDA_ERROR_INVALID_VALUE;
	if (!ok && advice != CU_MEM_ADVISE_SET_READ_MOSTLY &&
	    advice != CU_MEM_ADVISE_UNSET_READ_MOSTLY && advice != CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION)
		return CUDA_ERROR_INVALID_VALUE;
	r = managed_locked(p, n);
	if (!r)
		return CUDA_ERROR_INVALID_VALUE;
	if (advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION) {
		r->has_preferred = true;
		r->preferred = where;
	} else if (advice == CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION) {
		r->has_preferred = false;
	}
	si_reg_unlock();
	return CUDA_SUCCESS;
}

CUresult cuMemAdvise(CUdeviceptr p, size_t n, CUmem_advise advice, CUmemLocation loc)
{
	SI_RETF(advise(p, n, advice, loc), "%#llx %zu advice=%d type=%d id=%d",
		(unsigned long long)p, n, (int)advice, (int)loc.type, loc.id);
}

static CUresult attach(CUdeviceptr p, size_t n, unsigned flags)
{
	struct si_range *r;

	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
	    flags != CU_MEM_ATTACH_SINGLE)
		return CUDA_ERROR_INVALID_VALUE;
	r = managed_locked(p, n ? n : 1);
	if (!r)
		return CUDA_ERROR_INVALID_VALUE;
	r->flags = flags;
	si_reg_unlock();
	return CUDA_SUCCESS;
}

CUresult si_managed_attach(CUdeviceptr p, size_t n, unsigned flags)
{
	return attach(p, n, flags);
}

CUresult cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t n, unsigned flags)
{
	SI_RETF(attach(p, n, flags), "%p %#llx %zu %#x", (void *)s, (unsigned long long)p, n, flags);
}

CUresult cuMemRangeGetAttribute(void *data, size_t size, CUmem_range_attribute attr, CUdeviceptr p,
				size_t n)
{
	struct si_range *r;
	int v;

	if (!data || size != sizeof(int) ||
	    (attr != CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION &&
	     attr != CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "attr=%d", (int)attr);
	r = managed_locked(p, n);
	if (!r)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%#llx %zu", (unsigned long long)p, n);
	/* CU_DEVICE_INVALID (-2) when nothing was said, as documented. */
	if (attr == CU_MEM_RANGE_ATTRIBUTE_PREFERRED_LOCATION)
		v = r->has_preferred ? r->preferred : -2;
	else
		v = r->has_prefetch ? r->last_prefetch : -2;
	si_reg_unlock();
	*(int *)data = v;
	SI_RETF(CUDA_SUCCESS, "%#llx attr=%d -> %d", (unsigned long long)p, (int)attr, v);
}
