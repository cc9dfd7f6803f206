/*
 * collectives.c - all-reduce, broadcast, all-gather and reduce-scatter,
 * blocking until every rank of the communicator has called the same one:
 * each rank sends its contribution to rank 0, which reduces in rank order
 * (so results do not depend on timing) and sends every rank its part back.
 *
 * Device pointers of the CUDA stand-in are host addresses (its README: device
 * memory is host memory at the device address, and its kernels touch it
 * directly), so the data is read and written here as a kernel would, without
 * driver calls; the CUDA stand-in is therefore the only driver this library
 * works with. Before reading, the stream is synchronised, so the program's
 * earlier work on it is done.
 *
 * A peer that goes away (its socket closes) fails the collective with
 * ncclRemoteError on every rank still there, and the communicator stays
 * broken (ncclCommGetAsyncError says so) until destroyed.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "nccl_standin.h"

/* One message each way per rank and collective: this header, then BYTES of data. */
#define NS_HANGUP 0 /* kind of rank 0's last message on a communicator it gives up */
struct ns_msg {
	char magic[NS_ID_MAGIC_LEN];
	uint32_t seq;
	int32_t kind, type, op, root;
	int32_t status; /* the sender's: its own failure, or (from rank 0) the collective's */
	uint64_t count;
	uint64_t bytes;
};

const char *ns_kind_name(enum ns_kind kind)
{
	switch (kind) {
	case NS_ALLREDUCE:
		return "ncclAllReduce";
	case NS_BROADCAST:
		return "ncclBroadcast";
	case NS_ALLGATHER:
		return "ncclAllGather";
	case NS_REDUCESCATTER:
		return "ncclReduceScatter";
	}
	return "(unknown collective)";
}

static bool reduces(enum ns_kind kind)
{
	return kind == NS_ALLREDUCE || kind == NS_REDUCESCATTER;
}

/* What rank R contributes, in bytes. */
static size_t in_bytes(const struct ns_coll *c, int r)
{
	size_t b = c->count * ns_type_size(c->type);

	switch (c->kind) {
	case NS_BROADCAST:
		return r == c->root ? b : 0;
	case NS_REDUCESCATTER:
		return b * (size_t)c->comm->nranks;
	default:
		return b;
	}
}

/* What every rank receives, in bytes. */
static size_t out_bytes(const struct ns_coll *c)
{
	size_t b = c->count * ns_type_size(c->type);

	return c->kind == NS_ALLGATHER ? b * (size_t)c->comm->nranks : b;
}

ncclResult_t ns_coll_check(const struct ns_coll *c)
{
	const char *fn = ns_kind_name(c->kind);
	size_t sz = ns_type_size(c->type);

	if (!c->comm) {
		ns_set_error("%s: comm is NULL", fn);
		return ncclInvalidArgument;
	}
	if (!sz) {
		ns_set_error("%s: data type %d is not one the stand-in reduces%s", fn, c->type,
			     c->type == ncclFloat16 || c->type == ncclBfloat16 ? " (16-bit float)"
									       : "");
		return ncclInvalidArgument;
	}
	if (reduces(c->kind) && !ns_op_valid(c->op)) {
		ns_set_error("%s: reduction operator %d", fn, c->op);
		return ncclInvalidArgument;
	}
	if (c->kind == NS_BROADCAST && (c->root < 0 || c->root >= c->comm->nranks)) {
		ns_set_error("%s: root %d of %d ranks", fn, c->root, c->comm->nranks);
		return ncclInvalidArgument;
	}
	if (c->count > SIZE_MAX / sz / (size_t)c->comm->nranks) {
		ns_set_error("%s: count %zu is too large", fn, c->count);
		return ncclInvalidArgument;
	}
	if (c->count && (!c->recv || (!c->send && in_bytes(c, c->comm->rank)))) {
		ns_set_error("%s: %s buffer is NULL", fn, c->recv ? "send" : "receive");
		return ncclInvalidArgument;
	}
	return ncclSuccess;
}

static struct ns_msg header(const struct ns_coll *c, uint32_t seq, ncclResult_t status,
			    size_t bytes)
{
	struct ns_msg m = {
	    .seq = seq,
	    .kind = c->kind,
	    .type = c->type,
	    /* Only what the collective takes, so that ignored arguments never mismatch. */
	    .op = reduces(c->kind) ? c->op : 0,
	    .root = c->kind == NS_BROADCAST ? c->root : 0,
	    .status = status,
	    .count = c->count,
	    .bytes = bytes,
	};

	memcpy(m.magic, NS_ID_MAGIC, NS_ID_MAGIC_LEN);
	return m;
}

/* The communicator is beyond use: tell whoever is still there, then hang up. */
static void comm_break(struct ncclComm *comm, uint32_t seq)
{
	comm->broken = ncclRemoteError;
	for (int r = 0; r < comm->nranks; r++) {
		struct ns_msg m = {.seq = seq, .kind = NS_HANGUP, .status = ncclRemoteError};

		if (comm->socks[r] < 0)
			continue;
		memcpy(m.magic, NS_ID_MAGIC, NS_ID_MAGIC_LEN);
		/* Best effort: a peer still sending finds the socket shut down instead. */
		if (comm->rank == 0)
			send(comm->socks[r], &m, sizeof(m), MSG_NOSIGNAL | MSG_DONTWAIT);
		shutdown(comm->socks[r], SHUT_RDWR);
	}
}

static int discard(int sock, uint64_t bytes)
{
	char sink[4096];

	while (bytes) {
		size_t n = bytes < sizeof(sink) ? (size_t)bytes : sizeof(sink);
		int err = ns_recv_all(sock, sink, n);

		if (err)
			return err;
		bytes -= n;
	}
	return 0;
}

/* ---- rank 0 ---- */

/*
 * Reads rank R's contribution into BUF. A call that differs from rank 0's
 * makes *STATUS ncclInvalidUsage, a rank that failed at its end
 * ncclRemoteError; -errno when the rank is gone.
 */
static int read_contribution(const struct ns_coll *c, uint32_t seq, int r, void *buf,
			     ncclResult_t *status)
{
	struct ns_msg want = header(c, seq, ncclSuccess, in_bytes(c, r)), m;
	int sock = c->comm->socks[r];
	int err = ns_recv_all(sock, &m, sizeof(m));

	if (err)
		return err;
	if (memcmp(m.magic, NS_ID_MAGIC, NS_ID_MAGIC_LEN))
		return -EPROTO;
	if (m.status != ncclSuccess) {
		ns_set_error("%s: rank %d failed: %s", ns_kind_name(c->kind), r,
			     ns_result_name(m.status));
		if (!*status)
			*status = ncclRemoteError;
		return discard(sock, m.bytes);
	}
	if (m.seq != want.seq || m.kind != want.kind || m.type != want.type || m.op != want.op ||
	    m.root != want.root || m.count != want.count || m.bytes != want.bytes) {
		ns_set_error("%s #%u: rank %d called %s #%u (type %d, op %d, root %d, count %llu)"
			     " instead",
			     ns_kind_name(c->kind), seq, r, ns_kind_name(m.kind), m.seq, m.type,
			     m.op, m.root, (unsigned long long)m.count);
		*status = ncclInvalidUsage;
		return discard(sock, m.bytes);
	}
	/* No buffer: rank 0 ran out of memory, and *STATUS says so already. */
	return buf ? ns_recv_all(sock, buf, m.bytes) : discard(sock, m.bytes);
}

/* Every other rank's contribution into BUFS, whichever comes first. */
static ncclResult_t gather_contributions(const struct ns_coll *c, uint32_t seq, void **bufs,
					 ncclResult_t *status)
{
	struct ncclComm *comm = c->comm;
	int n = comm->nranks, pending = n - 1;
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	int *who = calloc((size_t)n, sizeof(*who));
	bool *done = calloc((size_t)n, sizeof(*done));
	ncclResult_t rc = ncclSuccess;

	if (!p || !who || !done) {
		ns_set_error("%s: out of memory", ns_kind_name(c->kind));
		rc = ncclSystemError;
		goto out;
	}
	while (pending) {
		int k = 0;

		for (int r = 1; r < n; r++)
			if (!done[r]) {
				p[k] = (struct pollfd){.fd = comm->socks[r], .events = POLLIN};
				who[k++] = r;
			}
		if (poll(p, (nfds_t)k, -1) < 0) {
			if (errno == EINTR)
				continue;
			ns_set_error("%s: poll: %s", ns_kind_name(c->kind), strerror(errno));
			rc = ncclSystemError;
			goto out;
		}
		for (int i = 0; i < k; i++) {
			int r = who[i], err;

			if (!p[i].revents)
				continue;
			err = read_contribution(c, seq, r, bufs[r], status);
			if (err) {
				ns_set_error("%s: rank %d is gone: %s", ns_kind_name(c->kind), r,
					     strerror(-err));
				rc = ncclRemoteError;
				goto out;
			}
			done[r] = true;
			pending--;
		}
	}
out:
	free(done);
	free(who);
	free(p);
	return rc;
}

/* The result from the contributions: into bufs[0] when reduced, else into *OUT. */
static ncclResult_t combine(const struct ns_coll *c, void **bufs, void **out)
{
	int n = c->comm->nranks;
	size_t part = c->count * ns_type_size(c->type);
	char *all;

	switch (c->kind) {
	case NS_ALLREDUCE:
	case NS_REDUCESCATTER:
		for (int r = 1; r < n; r++)
			ns_reduce(bufs[0], bufs[r], in_bytes(c, r) / ns_type_size(c->type), c->type,
				  c->op);
		if (c->op == ncclAvg)
			ns_reduce_avg(bufs[0], in_bytes(c, 0) / ns_type_size(c->type), c->type, n);
		*out = bufs[0];
		return ncclSuccess;
	case NS_BROADCAST:
		*out = bufs[c->root];
		return ncclSuccess;
	case NS_ALLGATHER:
		all = malloc(part * (size_t)n + 1);
		if (!all) {
			ns_set_error("ncclAllGather: out of memory");
			return ncclSystemError;
		}
		for (int r = 0; r < n; r++)
			memcpy(all + part * (size_t)r, bufs[r], part);
		*out = all;
		return ncclSuccess;
	}
	return ncclInternalError;
}

/* Where rank R's part of the result starts. */
static const char *part_of(const struct ns_coll *c, const void *result, int r)
{
	return (const char *)result + (c->kind == NS_REDUCESCATTER ? out_bytes(c) * (size_t)r : 0);
}

static ncclResult_t run_root(const struct ns_coll *c, uint32_t seq, ncclResult_t local)
{
	struct ncclComm *comm = c->comm;
	int n = comm->nranks;
	void **bufs = calloc((size_t)n, sizeof(*bufs));
	void *result = NULL;
	ncclResult_t status = local, remote, rc;

	if (!bufs) {
		ns_set_error("%s: out of memory", ns_kind_name(c->kind));
		return ncclSystemError;
	}
	for (int r = 0; r < n; r++) {
		bufs[r] = malloc(in_bytes(c, r) + 1);
		if (!bufs[r] && !status) {
			ns_set_error("%s: out of memory", ns_kind_name(c->kind));
			status = ncclSystemError;
		}
	}
	/* Rank 0's own part is copied first: the result may overwrite it (in place). */
	if (!status)
		memcpy(bufs[0], c->send, in_bytes(c, 0));
	rc = gather_contributions(c, seq, bufs, &status);
	if (rc) {
		comm_break(comm, seq);
		goto out;
	}
	if (!status)
		status = combine(c, bufs, &result);
	/* The others fail too: with ncclInvalidUsage when they disagreed, else
	 * with ncclRemoteError (the failure was some rank's). */
	remote = status == ncclSuccess || status == ncclInvalidUsage ? status : ncclRemoteError;
	for (int r = 1; r < n; r++) {
		struct ns_msg m = header(c, seq, remote, status ? 0 : out_bytes(c));
		int err = ns_send_all(comm->socks[r], &m, sizeof(m));

		if (!err && !status)
			err = ns_send_all(comm->socks[r], part_of(c, result, r), out_bytes(c));
		if (err) {
			ns_set_error("%s: rank %d is gone: %s", ns_kind_name(c->kind), r,
				     strerror(-err));
			comm_break(comm, seq);
			rc = ncclRemoteError;
			goto out;
		}
	}
	if (!status)
		memcpy(c->recv, part_of(c, result, 0), out_bytes(c));
	rc = local ? local : status;
out:
	if (c->kind == NS_ALLGATHER)
		free(result);
	for (int r = 0; r < n; r++)
		free(bufs[r]);
	free(bufs);
	return rc;
}

/* ---- the other ranks ---- */

static ncclResult_t run_peer(const struct ns_coll *c, uint32_t seq, ncclResult_t local)
{
	struct ncclComm *comm = c->comm;
	int sock = comm->socks[0];
	size_t mine = local ? 0 : in_bytes(c, comm->rank);
	struct ns_msg m = header(c, seq, local, mine);
	int err;

	/* Straight from the send buffer (host memory), and into the receive one. */
	err = ns_send_all(sock, &m, sizeof(m));
	if (!err)
		err = ns_send_all(sock, c->send, mine);
	if (!err)
		err = ns_recv_all(sock, &m, sizeof(m));
	if (err)
		goto out_gone;
	if (memcmp(m.magic, NS_ID_MAGIC, NS_ID_MAGIC_LEN) || m.seq != seq) {
		err = -EPROTO;
		goto out_gone;
	}
	if (m.status != ncclSuccess) {
		/* Rank 0 gave up on the communicator: a rank is gone. */
		if (m.kind == NS_HANGUP) {
			ns_set_error("%s: rank 0 lost a rank", ns_kind_name(c->kind));
			comm_break(comm, seq);
			return ncclRemoteError;
		}
		if (!local)
			ns_set_error("%s: failed at rank 0 or another rank: %s",
				     ns_kind_name(c->kind), ns_result_name(m.status));
		return local ? local : m.status;
	}
	if (m.bytes != out_bytes(c)) {
		err = -EPROTO;
		goto out_gone;
	}
	err = ns_recv_all(sock, c->recv, out_bytes(c));
	if (err)
		goto out_gone;
	return local;

out_gone:
	ns_set_error("%s: lost rank 0: %s", ns_kind_name(c->kind), strerror(-err));
	comm_break(comm, seq);
	return ncclRemoteError;
}

ncclResult_t ns_coll_run(const struct ns_coll *c)
{
	struct ncclComm *comm = c->comm;
	ncclResult_t local = ncclSuccess;
	uint32_t seq;
	CUresult cr;

	if (comm->broken) {
		ns_set_error("%s: the communicator lost a rank earlier", ns_kind_name(c->kind));
		return comm->broken;
	}
	/* As NCCL: nothing to move, nothing to wait for. */
	if (!c->count)
		return ncclSuccess;
	cr = cuStreamSynchronize((CUstream)c->stream);
	if (cr != CUDA_SUCCESS) {
		const char *name = NULL;

		cuGetErrorName(cr, &name);
		ns_set_error("%s: cuStreamSynchronize(%p): %s", ns_kind_name(c->kind), c->stream,
			     name ? name : "unknown CUresult");
		/* Still takes part, so that the other ranks fail instead of waiting. */
		local = ncclUnhandledCudaError;
	}
	seq = comm->seq++;
	return comm->rank ? run_peer(c, seq, local) : run_root(c, seq, local);
}

/* ---- the entry points ---- */

static ncclResult_t submit(const struct ns_coll *c)
{
	ncclResult_t rc = ns_coll_check(c);

	return rc ? rc : ns_coll_submit(c);
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			   gk_nccl_stream_t stream)
{
	struct ns_coll c = {.kind = NS_ALLREDUCE,
			    .send = sendbuff,
			    .recv = recvbuff,
			    .count = count,
			    .type = datatype,
			    .op = op,
			    .comm = comm,
			    .stream = stream};

	NS_RET(submit(&c), "%p, %p, %zu, type %d, op %d, %p, stream %p", sendbuff, recvbuff, count,
	       datatype, op, (void *)comm, stream);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, int root, ncclComm_t comm,
			   gk_nccl_stream_t stream)
{
	struct ns_coll c = {.kind = NS_BROADCAST,
			    .send = sendbuff,
			    .recv = recvbuff,
			    .count = count,
			    .type = datatype,
			    .root = root,
			    .comm = comm,
			    .stream = stream};

	NS_RET(submit(&c), "%p, %p, %zu, type %d, root %d, %p, stream %p", sendbuff, recvbuff,
	       count, datatype, root, (void *)comm, stream);
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			   ncclDataType_t datatype, ncclComm_t comm, gk_nccl_stream_t stream)
{
	struct ns_coll c = {.kind = NS_ALLGATHER,
			    .send = sendbuff,
			    .recv = recvbuff,
			    .count = sendcount,
			    .type = datatype,
			    .comm = comm,
			    .stream = stream};

	NS_RET(submit(&c), "%p, %p, %zu, type %d, %p, stream %p", sendbuff, recvbuff, sendcount,
	       datatype, (void *)comm, stream);
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
			       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			       gk_nccl_stream_t stream)
{
	struct ns_coll c = {.kind = NS_REDUCESCATTER,
			    .send = sendbuff,
			    .recv = recvbuff,
			    .count = recvcount,
			    .type = datatype,
			    .op = op,
			    .comm = comm,
			    .stream = stream};

	NS_RET(submit(&c), "%p, %p, %zu, type %d, op %d, %p, stream %p", sendbuff, recvbuff,
	       recvcount, datatype, op, (void *)comm, stream);
}
