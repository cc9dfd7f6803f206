/*
 * shared.c - the memory NCCL's P2P transport shares between the ranks of a
 * node, done the way it does it with the VMM API: each rank creates a
 * buffer, maps it, exports it as a POSIX file descriptor, and its successor
 * imports and maps it. The collectives do not use it; it is there so that a
 * process holding a communicator holds imported memory, as with real NCCL
 * (the gpuckpt runtime refuses a transparent checkpoint of such a process).
 * Every call goes to libcuda's exported entry points, where an LD_PRELOADed
 * interposer sees them.
 */
#include <string.h>
#include <unistd.h>

#include "nccl_standin.h"

/* Written at the head of each buffer by its owner, checked by the importer. */
struct ns_tag {
	char magic[NS_ID_MAGIC_LEN];
	int rank;
};

static ncclResult_t cuda_failed(const char *what, CUresult cr)
{
	const char *name = NULL;

	cuGetErrorName(cr, &name);
	ns_set_error("%s: %s", what, name ? name : "unknown CUresult");
	return ncclUnhandledCudaError;
}

#define NS_CU(call)                                                                                \
	do {                                                                                       \
		CUresult cr_ = (call);                                                             \
		if (cr_ != CUDA_SUCCESS)                                                           \
			return cuda_failed(#call, cr_);                                            \
	} while (0)

/* Reserves address space for S's handle, maps it and grants DEV access. */
static ncclResult_t map_for(struct ns_shared *s, CUdevice dev)
{
	CUmemAccessDesc access = {
	    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev},
	    .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};

	NS_CU(cuMemAddressReserve(&s->va, NS_SHARED_BYTES, 0, 0, 0));
	s->reserved = true;
	NS_CU(cuMemMap(s->va, NS_SHARED_BYTES, 0, s->handle, 0));
	s->mapped = true;
	NS_CU(cuMemSetAccess(s->va, NS_SHARED_BYTES, &access, 1));
	return ncclSuccess;
}

ncclResult_t ns_shared_create(struct ns_shared *s, CUdevice dev, int rank)
{
	CUmemAllocationProp prop = {
	    .type = CU_MEM_ALLOCATION_TYPE_PINNED,
	    .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
	    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev},
	};
	struct ns_tag tag = {.rank = rank};
	ncclResult_t rc;

	NS_CU(cuMemCreate(&s->handle, NS_SHARED_BYTES, &prop, 0));
	s->have_handle = true;
	rc = map_for(s, dev);
	if (rc)
		return rc;
	/* Device memory of the CUDA stand-in is host memory at its address. */
	memcpy(tag.magic, NS_ID_MAGIC, NS_ID_MAGIC_LEN);
	memcpy((void *)(uintptr_t)s->va, &tag, sizeof(tag));
	NS_CU(cuMemExportToShareableHandle(&s->fd, s->handle,
					   CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
	return ncclSuccess;
}

ncclResult_t ns_shared_import(struct ns_shared *s, int fd, CUdevice dev, int rank)
{
	struct ns_tag tag;
	ncclResult_t rc;

	s->fd = fd;
	NS_CU(cuMemImportFromShareableHandle(&s->handle, (void *)(intptr_t)fd,
					     CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
	s->have_handle = true;
	rc = map_for(s, dev);
	if (rc)
		return rc;
	memcpy(&tag, (const void *)(uintptr_t)s->va, sizeof(tag));
	if (memcmp(tag.magic, NS_ID_MAGIC, NS_ID_MAGIC_LEN) || tag.rank != rank) {
		ns_set_error("the memory shared by rank %d does not carry its tag", rank);
		return ncclInternalError;
	}
	return ncclSuccess;
}

void ns_shared_release(struct ns_shared *s)
{
	if (s->mapped)
		cuMemUnmap(s->va, NS_SHARED_BYTES);
	if (s->have_handle)
		cuMemRelease(s->handle);
	if (s->reserved)
		cuMemAddressFree(s->va, NS_SHARED_BYTES);
	if (s->fd >= 0)
		close(s->fd);
	*s = (struct ns_shared)NS_SHARED_INIT;
}
