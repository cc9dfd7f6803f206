/*
 * comm.c - communicators: creation (the shared buffers, then the bootstrap
 * that connects the ranks and passes the buffers along), destruction, and
 * what a program may ask of one. Creation is always synchronous, a
 * non-blocking config included: it returns ncclSuccess, never ncclInProgress.
 */
#include <stdlib.h>
#include <unistd.h>

#include "nccl_standin.h"

static void comm_free(struct ncclComm *comm)
{
	if (comm->socks)
		for (int r = 0; r < comm->nranks; r++)
			if (comm->socks[r] >= 0)
				close(comm->socks[r]);
	free(comm->socks);
	ns_shared_release(&comm->pred);
	ns_shared_release(&comm->own);
	free(comm);
}

static ncclResult_t comm_init(ncclComm_t *out, int nranks, const ncclUniqueId *id, int rank,
			      const ncclConfig_t *config)
{
	struct ncclComm *comm;
	ncclResult_t rc;
	CUdevice dev;
	CUresult cr;
	int pred_fd = -1;

	if (!out) {
		ns_set_error("comm is NULL");
		return ncclInvalidArgument;
	}
	*out = NULL;
	if (nranks < 1 || rank < 0 || rank >= nranks) {
		ns_set_error("rank %d of %d", rank, nranks);
		return ncclInvalidArgument;
	}
	if (config && config->magic != NS_CONFIG_MAGIC) {
		ns_set_error("the config was not set up with NCCL_CONFIG_INITIALIZER");
		return ncclInvalidArgument;
	}
	comm = calloc(1, sizeof(*comm));
	if (!comm) {
		ns_set_error("out of memory");
		return ncclSystemError;
	}
	comm->own = comm->pred = (struct ns_shared)NS_SHARED_INIT;
	comm->nranks = nranks;
	comm->rank = rank;
	if (ns_id_name(id, comm->name)) {
		ns_set_error("the unique id is not one of ncclGetUniqueId's");
		rc = ncclInvalidArgument;
		goto out_free;
	}
	/* NCCL takes the device of the calling thread's current context. */
	cr = cuCtxGetDevice(&dev);
	if (cr != CUDA_SUCCESS) {
		const char *name = NULL;

		cuGetErrorName(cr, &name);
		ns_set_error("cuCtxGetDevice: %s", name ? name : "unknown CUresult");
		rc = ncclUnhandledCudaError;
		goto out_free;
	}
	comm->dev = dev;
	comm->socks = malloc(sizeof(*comm->socks) * (size_t)nranks);
	if (!comm->socks) {
		ns_set_error("out of memory for %d ranks", nranks);
		rc = ncclSystemError;
		goto out_free;
	}
	for (int r = 0; r < nranks; r++)
		comm->socks[r] = -1;
	rc = ns_shared_create(&comm->own, dev, rank);
	if (rc)
		goto out_free;
	/* A communicator of one rank has no peer: nothing shared, nothing imported. */
	if (nranks > 1) {
		rc = ns_bootstrap(comm, &pred_fd);
		if (rc)
			goto out_free;
		rc = ns_shared_import(&comm->pred, pred_fd, dev, (rank + nranks - 1) % nranks);
		if (rc)
			goto out_free;
	}
	*out = comm;
	return ncclSuccess;

out_free:
	comm_free(comm);
	return rc;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	ncclResult_t rc = comm_init(comm, nranks, &commId, rank, NULL);

	NS_RET(rc, "rank %d of %d, id %.*s -> %p", rank, nranks, NS_NAME_HEX,
	       commId.internal + NS_ID_MAGIC_LEN, comm ? (void *)*comm : NULL);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				    ncclConfig_t *config)
{
	ncclResult_t rc = comm_init(comm, nranks, &commId, rank, config);

	NS_RET(rc, "rank %d of %d, id %.*s, blocking %d -> %p", rank, nranks, NS_NAME_HEX,
	       commId.internal + NS_ID_MAGIC_LEN, config ? config->blocking : 1,
	       comm ? (void *)*comm : NULL);
}

/* Nothing is in flight once a collective has returned: nothing to flush. */
ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	if (!comm) {
		ns_set_error("ncclCommFinalize: comm is NULL");
		NS_RET(ncclInvalidArgument, "NULL");
	}
	NS_RET(ncclSuccess, "%p", (void *)comm);
}

/* Local: the other ranks notice at their next collective (ncclRemoteError). */
ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (comm)
		comm_free(comm);
	NS_RET(ncclSuccess, "%p", (void *)comm);
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	if (comm)
		comm_free(comm);
	NS_RET(ncclSuccess, "%p", (void *)comm);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	if (!comm || !asyncError) {
		ns_set_error("ncclCommGetAsyncError: comm or asyncError is NULL");
		NS_RET(ncclInvalidArgument, "%p", (void *)comm);
	}
	*asyncError = comm->broken;
	NS_RET(ncclSuccess, "%p -> %s", (void *)comm, ns_result_name(*asyncError));
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	if (!comm || !count) {
		ns_set_error("ncclCommCount: comm or count is NULL");
		NS_RET(ncclInvalidArgument, "%p", (void *)comm);
	}
	*count = comm->nranks;
	NS_RET(ncclSuccess, "%p -> %d", (void *)comm, *count);
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	if (!comm || !rank) {
		ns_set_error("ncclCommUserRank: comm or rank is NULL");
		NS_RET(ncclInvalidArgument, "%p", (void *)comm);
	}
	*rank = comm->rank;
	NS_RET(ncclSuccess, "%p -> %d", (void *)comm, *rank);
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	if (!comm || !device) {
		ns_set_error("ncclCommCuDevice: comm or device is NULL");
		NS_RET(ncclInvalidArgument, "%p", (void *)comm);
	}
	*device = (int)comm->dev;
	NS_RET(ncclSuccess, "%p -> %d", (void *)comm, *device);
}
