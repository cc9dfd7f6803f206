/*
 * nccl_standin.h - private interface of the NCCL stand-in (README.md): the
 * communicator, the unique id's layout, the bootstrap sockets, the shared
 * buffers, the collectives' wire messages, and the exported entry points'
 * prototypes (nccl_abi.h declares NCCL's types only).
 */
#ifndef GK_NCCL_STANDIN_H
#define GK_NCCL_STANDIN_H

#include <cuda.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl_abi.h"

#define NS_VERSION 22809 /* as NCCL 2.28.9 reports itself */
#define NS_ID_MAGIC "GKNCCLSI"
#define NS_ID_MAGIC_LEN 8
#define NS_NAME_HEX 32		    /* 16 random bytes in hex */
#define NS_CONFIG_MAGIC 0xcafebeefu /* what NCCL_CONFIG_INITIALIZER writes */
#define NS_SHARED_BYTES (2ul << 20) /* one VMM granule of the CUDA stand-in */
#define NS_CONNECT_MS 60000	    /* how long a rank tries to reach rank 0, and rank 0 waits */
#define NS_CONNECT_RETRY_MS 10

/* ---- trace.c: GK_NCCL_STANDIN_TRACE, and ncclGetLastError's text ---- */

ncclResult_t ns_traced(const char *fn, ncclResult_t rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Sets this thread's last error text (ncclGetLastError). */
void ns_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *ns_last_error(void);
const char *ns_result_name(ncclResult_t rc);

#define NS_RET(rc, ...) return ns_traced(__func__, (rc), __VA_ARGS__)

/* ---- shared.c: a buffer each rank shares with its successor (P2P transport) ---- */

struct ns_shared {
	CUmemGenericAllocationHandle handle;
	CUdeviceptr va;
	int fd; /* exported (own buffer) or received (the predecessor's); -1 when none */
	bool have_handle, reserved, mapped;
};

#define NS_SHARED_INIT                                                                             \
	{                                                                                          \
		.fd = -1                                                                           \
	}

/* The own buffer: created on DEV, mapped, tagged with RANK, exported into ->fd. */
ncclResult_t ns_shared_create(struct ns_shared *s, CUdevice dev, int rank);
/* The predecessor's, from the descriptor FD (kept in ->fd): imported, mapped
 * for DEV, and its tag checked against RANK. */
ncclResult_t ns_shared_import(struct ns_shared *s, int fd, CUdevice dev, int rank);
/* Unmaps, releases, frees the reservation and closes the descriptor. */
void ns_shared_release(struct ns_shared *s);

/* ---- comm.c ---- */

struct ncclComm {
	int nranks, rank;
	CUdevice dev;
	char name[NS_NAME_HEX + 1];
	/* Rank 0: the socket of each other rank (socks[0] unused); else socks[0]
	 * is the socket to rank 0. -1 when closed. */
	int *socks;
	uint32_t seq;	     /* collectives run on this communicator */
	ncclResult_t broken; /* sticky ncclRemoteError once a peer is lost */
	struct ns_shared own, pred;
};

/* ---- bootstrap.c: the unique id and the sockets between ranks ---- */

void ns_id_fill(ncclUniqueId *id, const char name[NS_NAME_HEX]);
/* The name in ID into NAME (NUL-terminated); -EINVAL if ID is not ours. */
int ns_id_name(const ncclUniqueId *id, char name[NS_NAME_HEX + 1]);
/* Connects the ranks of COMM and passes each rank's exported descriptor
 * (COMM->own.fd) to its successor; *PRED_FD gets the predecessor's. */
ncclResult_t ns_bootstrap(struct ncclComm *comm, int *pred_fd);

/* 0, or -errno; a peer gone (end of file) reads as -ECONNRESET. */
int ns_send_all(int sock, const void *buf, size_t len);
int ns_recv_all(int sock, void *buf, size_t len);

/* ---- reduce.c: data types and reduction operators ---- */

/* The element size of TYPE, or 0 for a type the stand-in does not reduce. */
size_t ns_type_size(ncclDataType_t type);
bool ns_op_valid(ncclRedOp_t op);
/* ACC = ACC op IN, N elements of TYPE. */
void ns_reduce(void *acc, const void *in, size_t n, ncclDataType_t type, ncclRedOp_t op);
/* The last step of ncclAvg: ACC /= NRANKS (integers truncate). */
void ns_reduce_avg(void *acc, size_t n, ncclDataType_t type, int nranks);

/* ---- collectives.c, group.c ---- */

enum ns_kind { NS_ALLREDUCE = 1, NS_BROADCAST, NS_ALLGATHER, NS_REDUCESCATTER };

struct ns_coll {
	enum ns_kind kind;
	const void *send;
	void *recv;
	size_t count; /* elements per rank: count, sendcount or recvcount */
	ncclDataType_t type;
	ncclRedOp_t op;
	int root;
	ncclComm_t comm;
	gk_nccl_stream_t stream;
};

const char *ns_kind_name(enum ns_kind kind);
/* The argument checks done at the call, inside a group too. */
ncclResult_t ns_coll_check(const struct ns_coll *c);
/* Runs one collective to the end, on every rank of its communicator. */
ncclResult_t ns_coll_run(const struct ns_coll *c);
/* Runs C now, or queues it when this thread is inside a group. */
ncclResult_t ns_coll_submit(const struct ns_coll *c);

/* The exported entry points are declared in nccl_abi.h. */

#endif
