/*
 * nccl_abi.h - the part of NCCL's C interface that gpuckpt interposes
 * (interpose/nccl.c) and that its tests call, declared from NCCL's public
 * documentation so that neither needs NCCL's headers to build: the build
 * machines have no NCCL, and the GPU machines have only the libnccl.so.2 that
 * PyTorch ships. Values are NCCL's (stable since 2.x): enums as ints,
 * ncclComm_t an opaque pointer, ncclUniqueId 128 bytes, and ncclConfig_t
 * copied by its own `size` field, so that a newer NCCL's longer config
 * passes through whole.
 */
#ifndef GK_NCCL_ABI_H
#define GK_NCCL_ABI_H

#include <stddef.h>

typedef int ncclResult_t;
enum {
	ncclSuccess = 0,
	ncclUnhandledCudaError = 1,
	ncclSystemError = 2,
	ncclInternalError = 3,
	ncclInvalidArgument = 4,
	ncclInvalidUsage = 5,
	ncclRemoteError = 6,
	ncclInProgress = 7,
};

typedef int ncclDataType_t;
enum {
	ncclInt8 = 0,
	ncclUint8 = 1,
	ncclInt32 = 2,
	ncclUint32 = 3,
	ncclInt64 = 4,
	ncclUint64 = 5,
	ncclFloat16 = 6,
	ncclFloat32 = 7,
	ncclFloat64 = 8,
	ncclBfloat16 = 9,
};

typedef int ncclRedOp_t;
enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 };

typedef struct ncclComm *ncclComm_t;
typedef void *gk_nccl_stream_t; /* cudaStream_t, which is CUstream */

#define GK_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
	char internal[GK_NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* The leading fields every NCCL config has; the rest is copied by size. */
typedef struct {
	size_t size;
	unsigned int magic;
	unsigned int version;
	int blocking;
} gk_nccl_config_head;
typedef gk_nccl_config_head ncclConfig_t;

/* The entry points, as NCCL 2.28 declares them (ncclWindow_t and the
 * scalar residence as what they are underneath: a pointer, an int).
 * GK_NCCL_API: how the includer marks them (the runtime exports its own). */
#ifndef GK_NCCL_API
#define GK_NCCL_API
#endif
GK_NCCL_API ncclResult_t ncclGetVersion(int *version);
GK_NCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId *id);
GK_NCCL_API const char *ncclGetErrorString(ncclResult_t result);
GK_NCCL_API const char *ncclGetLastError(ncclComm_t comm);
GK_NCCL_API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
GK_NCCL_API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id,
						int rank, ncclConfig_t *config);
GK_NCCL_API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist);
GK_NCCL_API ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nids,
						  ncclUniqueId *ids, ncclConfig_t *config);
GK_NCCL_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
				       ncclConfig_t *config);
GK_NCCL_API ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int nexclude,
					ncclComm_t *newcomm, ncclConfig_t *config, int flags);
GK_NCCL_API ncclResult_t ncclCommFinalize(ncclComm_t comm);
GK_NCCL_API ncclResult_t ncclCommDestroy(ncclComm_t comm);
GK_NCCL_API ncclResult_t ncclCommAbort(ncclComm_t comm);
GK_NCCL_API ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags);
GK_NCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async);
GK_NCCL_API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
GK_NCCL_API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);
GK_NCCL_API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
GK_NCCL_API ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size,
					  void **handle);
GK_NCCL_API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle);
GK_NCCL_API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size,
						void **win, int flags);
GK_NCCL_API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, void *win);
GK_NCCL_API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar,
						  ncclDataType_t type, int residence,
						  ncclComm_t comm);
GK_NCCL_API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
GK_NCCL_API ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
				       ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
				       gk_nccl_stream_t stream);
GK_NCCL_API ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
				    ncclRedOp_t op, int root, ncclComm_t comm,
				    gk_nccl_stream_t stream);
GK_NCCL_API ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count,
				       ncclDataType_t type, int root, ncclComm_t comm,
				       gk_nccl_stream_t stream);
GK_NCCL_API ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t type, int root,
				   ncclComm_t comm, gk_nccl_stream_t stream);
GK_NCCL_API ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount,
				       ncclDataType_t type, ncclComm_t comm,
				       gk_nccl_stream_t stream);
GK_NCCL_API ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount,
					   ncclDataType_t type, ncclRedOp_t op, ncclComm_t comm,
					   gk_nccl_stream_t stream);
GK_NCCL_API ncclResult_t ncclAlltoAll(const void *send, void *recv, size_t count,
				      ncclDataType_t type, ncclComm_t comm,
				      gk_nccl_stream_t stream);
GK_NCCL_API ncclResult_t ncclGather(const void *send, void *recv, size_t count, ncclDataType_t type,
				    int root, ncclComm_t comm, gk_nccl_stream_t stream);
GK_NCCL_API ncclResult_t ncclScatter(const void *send, void *recv, size_t count,
				     ncclDataType_t type, int root, ncclComm_t comm,
				     gk_nccl_stream_t stream);
GK_NCCL_API ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t type, int peer,
				  ncclComm_t comm, gk_nccl_stream_t stream);
GK_NCCL_API ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t type, int peer,
				  ncclComm_t comm, gk_nccl_stream_t stream);
GK_NCCL_API ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void *reqs, void *devcomm);
GK_NCCL_API ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void *devcomm);
GK_NCCL_API ncclResult_t ncclGroupStart(void);
GK_NCCL_API ncclResult_t ncclGroupEnd(void);

#endif
