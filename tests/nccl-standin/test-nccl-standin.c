/*
 * test-nccl-standin.c - the NCCL stand-in between real processes, as a
 * program sees it (linked with -lnccl -lcuda, run by test-nccl-standin.sh
 * against both stand-ins). One mode per run; exit status 0 when every check
 * held, and "# ..." lines on stdout (TAP comments) saying which did not.
 *
 *	test-nccl-standin errors              one process: arguments, ids, queries
 *	test-nccl-standin collectives NRANKS  NRANKS processes: results, groups,
 *	                                      shared memory, destroy and re-init
 *	test-nccl-standin peer-loss           3 processes: a rank that goes away
 *
 * The parent forks the ranks (each does cuInit and cuCtxCreate on device 0
 * itself, as an MPI or torchrun rank would) and hands out each unique id
 * from rank 0 through pipes.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "nccl_abi.h"

#define MAX_RANKS 8
#define CONFIG_MAGIC 0xcafebeefu
#define TIME_LIMIT_S 120

static int me; /* this process's rank, for the messages */
static int failures;
static int id_pipe[MAX_RANKS][2]; /* rank 0 writes each unique id to the others */
static pid_t kids[MAX_RANKS];
static int nkids;

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			fail_(__LINE__, __VA_ARGS__);                                              \
	} while (0)

static void fail_(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail_(int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("# rank %d, line %d: %s\n", me, line, msg);
	fflush(stdout);
	failures++;
}

/* CALL(rc, want, what): an NCCL call's result, with the library's own words. */
#define IS_NCCL(got, want, what)                                                                   \
	do {                                                                                       \
		ncclResult_t g_ = (got), w_ = (want);                                              \
		CHECK(g_ == w_, "%s: got %d (%s), expected %d: %s", (what), g_,                    \
		      ncclGetErrorString(g_), w_, ncclGetLastError(NULL));                         \
	} while (0)

#define IS_CU(got, what)                                                                           \
	do {                                                                                       \
		CUresult g_ = (got);                                                               \
		CHECK(g_ == CUDA_SUCCESS, "%s: CUresult %d", (what), (int)g_);                     \
	} while (0)

/* ---- the ranks' common ground ---- */

/* Rank 0 makes a unique id and sends it to the others, which read it. */
static ncclUniqueId share_id(int nranks)
{
	ncclUniqueId id;

	memset(&id, 0, sizeof(id));
	if (me == 0) {
		IS_NCCL(ncclGetUniqueId(&id), ncclSuccess, "ncclGetUniqueId");
		for (int r = 1; r < nranks; r++)
			CHECK(write(id_pipe[r][1], &id, sizeof(id)) == (ssize_t)sizeof(id),
			      "writing the id for rank %d", r);
	} else {
		CHECK(read(id_pipe[me][0], &id, sizeof(id)) == (ssize_t)sizeof(id),
		      "reading the id from rank 0");
	}
	return id;
}

static void cuda_up(CUcontext *ctx)
{
	CUdevice dev;

	IS_CU(cuInit(0), "cuInit");
	IS_CU(cuDeviceGet(&dev, 0), "cuDeviceGet 0");
	IS_CU(cuCtxCreate(ctx, NULL, 0, dev), "cuCtxCreate on device 0");
}

/* Mappings of VMM memory (the CUDA stand-in's memfds) in this process. */
static int vmm_mappings(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	int n = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "gpuckpt-standin-vmm"))
			n++;
	fclose(f);
	return n;
}

/* A communicator maps its own buffer and its predecessor's (one rank: its own).
 * Counted as a difference, since an LD_PRELOADed runtime may map its own. */
static int comm_maps(int nranks)
{
	return nranks > 1 ? 2 : 1;
}

/* ncclCommInitRank, or ncclCommInitRankConfig when CONFIG is not NULL. */
static ncclComm_t init_rank(int nranks, ncclUniqueId id, ncclConfig_t *config, const char *what)
{
	ncclComm_t comm = NULL;
	int before = vmm_mappings(), added;

	IS_NCCL(config ? ncclCommInitRankConfig(&comm, nranks, id, me, config)
		       : ncclCommInitRank(&comm, nranks, id, me),
		ncclSuccess, what);
	added = vmm_mappings() - before;
	CHECK(!comm || added == comm_maps(nranks), "%s: %d VMM mappings more, expected %d", what,
	      added, comm_maps(nranks));
	return comm;
}

/* ncclCommDestroy, or ncclCommAbort: every mapping of the communicator goes. */
static void destroy_rank(ncclComm_t comm, int nranks, bool abort)
{
	const char *what = abort ? "ncclCommAbort" : "ncclCommDestroy";
	int before = vmm_mappings(), gone;

	IS_NCCL(abort ? ncclCommAbort(comm) : ncclCommDestroy(comm), ncclSuccess, what);
	gone = before - vmm_mappings();
	CHECK(gone == comm_maps(nranks), "%s: %d VMM mappings fewer, expected %d", what, gone,
	      comm_maps(nranks));
}

/* Open descriptors: a destroyed communicator leaves none of its sockets and memfds. */
static int open_fds(void)
{
	char path[64];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

static CUdeviceptr dalloc(size_t bytes)
{
	CUdeviceptr p = 0;

	IS_CU(cuMemAlloc(&p, bytes), "cuMemAlloc");
	return p;
}

static void *dptr(CUdeviceptr p)
{
	return (void *)(uintptr_t)p;
}

/* ---- expected values, computed in rank order as the stand-in reduces ---- */

static float f32_value(int i, int r, size_t j)
{
	/* Multiples of 1/4 below 100: exact in a float, and so are their sums. */
	return (float)(r + 1) * 0.5f + (float)((i * 7 + (int)j) % 64) * 0.25f;
}

static float f32_op(float a, float b, ncclRedOp_t op)
{
	switch (op) {
	case ncclProd:
		return a * b;
	case ncclMax:
		return b > a ? b : a;
	case ncclMin:
		return b < a ? b : a;
	default:
		return a + b;
	}
}

static int64_t i64_value(int i, int r, size_t j)
{
	/* Past 32 bits, negative too. */
	return ((int64_t)(r + 1) << 33) * ((int64_t)((j + (size_t)i) % 5) - 2) + (int64_t)j * 3 - r;
}

static int64_t i64_op(int64_t a, int64_t b, ncclRedOp_t op)
{
	switch (op) {
	case ncclProd:
		return (int64_t)((uint64_t)a * (uint64_t)b); /* wraps, as on a GPU */
	case ncclMax:
		return b > a ? b : a;
	case ncclMin:
		return b < a ? b : a;
	default:
		return (int64_t)((uint64_t)a + (uint64_t)b);
	}
}

/* ---- collectives ---- */

#define F32_COUNT 1000
#define I64_COUNT 257

/* 20 all-reduces of float32 and of int64, every operator, on the legacy
 * stream and on a created one (filled asynchronously just before), some in place. */
static void allreduce_rounds(ncclComm_t comm, int nranks, CUstream s)
{
	static const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
	CUdeviceptr fs = dalloc(F32_COUNT * 4), fr = dalloc(F32_COUNT * 4);
	CUdeviceptr is = dalloc(I64_COUNT * 8), ir = dalloc(I64_COUNT * 8);
	float fh[F32_COUNT], fo[F32_COUNT];
	int64_t ih[I64_COUNT], io[I64_COUNT];

	for (int i = 0; i < 20; i++) {
		ncclRedOp_t op = ops[i % 5];
		CUstream st = i % 2 ? s : NULL;
		bool in_place = i % 4 == 3;
		CUdeviceptr fdst = in_place ? fs : fr, idst = in_place ? is : ir;
		int bad = 0;

		for (size_t j = 0; j < F32_COUNT; j++)
			fh[j] = f32_value(i, me, j);
		for (size_t j = 0; j < I64_COUNT; j++)
			ih[j] = i64_value(i, me, j);
		/* On the created stream the copy is still queued when NCCL is called:
		 * the collective must wait for it. */
		IS_CU(cuMemcpyHtoDAsync(fs, fh, sizeof(fh), st), "filling the float32 buffer");
		IS_CU(cuMemcpyHtoDAsync(is, ih, sizeof(ih), st), "filling the int64 buffer");
		IS_NCCL(ncclAllReduce(dptr(fs), dptr(fdst), F32_COUNT, ncclFloat32, op, comm, st),
			ncclSuccess, "ncclAllReduce float32");
		IS_NCCL(ncclAllReduce(dptr(is), dptr(idst), I64_COUNT, ncclInt64, op, comm, st),
			ncclSuccess, "ncclAllReduce int64");
		IS_CU(cuMemcpyDtoH(fo, fdst, sizeof(fo)), "reading the float32 result");
		IS_CU(cuMemcpyDtoH(io, idst, sizeof(io)), "reading the int64 result");
		for (size_t j = 0; j < F32_COUNT; j++) {
			float want = f32_value(i, 0, j);

			for (int r = 1; r < nranks; r++)
				want = f32_op(want, f32_value(i, r, j), op);
			if (op == ncclAvg)
				want /= (float)nranks;
			if (fo[j] != want && !bad++)
				fail_(__LINE__,
				      "all-reduce %d (op %d) float32 [%zu]: %.9g, expected %.9g", i,
				      op, j, (double)fo[j], (double)want);
		}
		for (size_t j = 0; j < I64_COUNT; j++) {
			int64_t want = i64_value(i, 0, j);

			for (int r = 1; r < nranks; r++)
				want = i64_op(want, i64_value(i, r, j), op);
			if (op == ncclAvg)
				want /= nranks;
			if (io[j] != want && !bad++)
				fail_(__LINE__,
				      "all-reduce %d (op %d) int64 [%zu]: %lld, expected %lld", i,
				      op, j, (long long)io[j], (long long)want);
		}
	}
	cuMemFree(fs);
	cuMemFree(fr);
	cuMemFree(is);
	cuMemFree(ir);
}

/* Hand-checked values for 3 ranks: average truncates, uint8 sums wrap. */
static void known_values(ncclComm_t comm)
{
	static const int32_t avg_in[3][4] = {{-7, -8, 9, 100}, {1, 0, 0, 1}, {0, 0, 0, 2}};
	static const int32_t avg_want[4] = {-2, -2, 3, 34};
	static const uint8_t u8_in[3][2] = {{200, 255}, {100, 1}, {0, 0}};
	static const uint8_t u8_want[2] = {44, 0};
	CUdeviceptr a = dalloc(16), b = dalloc(2);
	int32_t got[4];
	uint8_t got8[2];

	IS_CU(cuMemcpyHtoD(a, avg_in[me], sizeof(avg_in[me])), "filling");
	IS_CU(cuMemcpyHtoD(b, u8_in[me], sizeof(u8_in[me])), "filling");
	IS_NCCL(ncclAllReduce(dptr(a), dptr(a), 4, ncclInt32, ncclAvg, comm, NULL), ncclSuccess,
		"ncclAllReduce int32 avg");
	IS_NCCL(ncclAllReduce(dptr(b), dptr(b), 2, ncclUint8, ncclSum, comm, NULL), ncclSuccess,
		"ncclAllReduce uint8 sum");
	IS_CU(cuMemcpyDtoH(got, a, sizeof(got)), "reading");
	IS_CU(cuMemcpyDtoH(got8, b, sizeof(got8)), "reading");
	CHECK(!memcmp(got, avg_want, sizeof(got)), "int32 avg: %d %d %d %d, expected -2 -2 3 34",
	      got[0], got[1], got[2], got[3]);
	CHECK(!memcmp(got8, u8_want, sizeof(got8)), "uint8 sum: %u %u, expected 44 0", got8[0],
	      got8[1]);
	cuMemFree(a);
	cuMemFree(b);
}

#define BCAST_COUNT 777

static void broadcast(ncclComm_t comm, int nranks)
{
	int root = nranks > 1 ? 1 : 0;
	CUdeviceptr buf = dalloc(BCAST_COUNT * 4);
	int32_t h[BCAST_COUNT];
	int bad = 0;

	for (int j = 0; j < BCAST_COUNT; j++)
		h[j] = me == root ? j * 3 - 1000 : 0x5a5a5a5a;
	IS_CU(cuMemcpyHtoD(buf, h, sizeof(h)), "filling");
	/* In place at the root; the last rank passes no send buffer at all. */
	IS_NCCL(ncclBroadcast(me == nranks - 1 && me != root ? NULL : dptr(buf), dptr(buf),
			      BCAST_COUNT, ncclInt32, root, comm, NULL),
		ncclSuccess, "ncclBroadcast");
	IS_CU(cuMemcpyDtoH(h, buf, sizeof(h)), "reading");
	for (int j = 0; j < BCAST_COUNT; j++)
		if (h[j] != j * 3 - 1000 && !bad++)
			fail_(__LINE__, "broadcast [%d]: %d, expected %d", j, h[j], j * 3 - 1000);
	cuMemFree(buf);
}

#define GATHER_COUNT 5

static void allgather(ncclComm_t comm, int nranks)
{
	CUdeviceptr send = dalloc(GATHER_COUNT * 4), recv = dalloc(GATHER_COUNT * 4 * MAX_RANKS);
	uint32_t h[GATHER_COUNT * MAX_RANKS];
	CUdeviceptr from = send;

	for (int j = 0; j < GATHER_COUNT; j++)
		h[j] = (uint32_t)(me * 100 + j);
	IS_CU(cuMemcpyHtoD(send, h, GATHER_COUNT * 4), "filling");
	/* Rank 1 gathers in place: its part is already where it goes. */
	if (me == 1) {
		from = recv + GATHER_COUNT * 4;
		IS_CU(cuMemcpyHtoD(from, h, GATHER_COUNT * 4), "filling");
	}
	IS_NCCL(ncclAllGather(dptr(from), dptr(recv), GATHER_COUNT, ncclUint32, comm, NULL),
		ncclSuccess, "ncclAllGather");
	IS_CU(cuMemcpyDtoH(h, recv, GATHER_COUNT * 4 * (size_t)nranks), "reading");
	for (int r = 0; r < nranks; r++)
		for (int j = 0; j < GATHER_COUNT; j++)
			CHECK(h[r * GATHER_COUNT + j] == (uint32_t)(r * 100 + j),
			      "all-gather [%d][%d]: %u", r, j, h[r * GATHER_COUNT + j]);
	cuMemFree(send);
	cuMemFree(recv);
}

#define GROUP_COUNT 64
#define SCATTER_COUNT 10

static double scatter_value(int r, int k)
{
	return (double)((k * 7 + r * 13) % 29) - 0.5;
}

/* An all-reduce and a reduce-scatter in one (nested) group: nothing runs
 * before the outermost ncclGroupEnd, then both, in order. */
static void grouped(ncclComm_t comm, int nranks, CUstream s)
{
	CUdeviceptr a = dalloc(GROUP_COUNT * 4), ar = dalloc(GROUP_COUNT * 4);
	CUdeviceptr b = dalloc(SCATTER_COUNT * 8 * MAX_RANKS), br = dalloc(SCATTER_COUNT * 8);
	int32_t ah[GROUP_COUNT];
	double bh[SCATTER_COUNT * MAX_RANKS];

	for (int j = 0; j < GROUP_COUNT; j++)
		ah[j] = j * (me + 1);
	for (int k = 0; k < SCATTER_COUNT * nranks; k++)
		bh[k] = scatter_value(me, k);
	IS_CU(cuMemcpyHtoD(a, ah, sizeof(ah)), "filling");
	IS_CU(cuMemcpyHtoD(b, bh, SCATTER_COUNT * 8 * (size_t)nranks), "filling");
	IS_CU(cuMemsetD8(ar, 0xee, GROUP_COUNT * 4), "clearing");
	IS_CU(cuMemsetD8(br, 0xee, SCATTER_COUNT * 8), "clearing");

	IS_NCCL(ncclGroupStart(), ncclSuccess, "ncclGroupStart");
	IS_NCCL(ncclGroupStart(), ncclSuccess, "ncclGroupStart (nested)");
	IS_NCCL(ncclAllReduce(dptr(a), dptr(ar), GROUP_COUNT, ncclInt32, ncclSum, comm, s),
		ncclSuccess, "ncclAllReduce in a group");
	IS_NCCL(ncclGroupEnd(), ncclSuccess, "ncclGroupEnd (nested)");
	IS_NCCL(ncclReduceScatter(dptr(b), dptr(br), SCATTER_COUNT, ncclFloat64, ncclMax, comm, s),
		ncclSuccess, "ncclReduceScatter in a group");
	CHECK(((const uint8_t *)dptr(ar))[0] == 0xee && ((const uint8_t *)dptr(br))[0] == 0xee,
	      "a collective ran before the outermost ncclGroupEnd");
	IS_NCCL(ncclGroupEnd(), ncclSuccess, "ncclGroupEnd");

	IS_CU(cuStreamSynchronize(s), "cuStreamSynchronize");
	IS_CU(cuMemcpyDtoH(ah, ar, sizeof(ah)), "reading");
	IS_CU(cuMemcpyDtoH(bh, br, SCATTER_COUNT * 8), "reading");
	for (int j = 0; j < GROUP_COUNT; j++)
		CHECK(ah[j] == j * nranks * (nranks + 1) / 2, "grouped all-reduce [%d]: %d", j,
		      ah[j]);
	for (int k = 0; k < SCATTER_COUNT; k++) {
		int at = me * SCATTER_COUNT + k;
		double want = scatter_value(0, at);

		for (int r = 1; r < nranks; r++)
			if (scatter_value(r, at) > want)
				want = scatter_value(r, at);
		CHECK(bh[k] == want, "grouped reduce-scatter [%d]: %g, expected %g", k, bh[k],
		      want);
	}
	cuMemFree(a);
	cuMemFree(ar);
	cuMemFree(b);
	cuMemFree(br);
}

static void queries(ncclComm_t comm, int nranks)
{
	ncclResult_t async = ncclInternalError;
	int v = -1;

	IS_NCCL(ncclCommCount(comm, &v), ncclSuccess, "ncclCommCount");
	CHECK(v == nranks, "ncclCommCount: %d", v);
	IS_NCCL(ncclCommUserRank(comm, &v), ncclSuccess, "ncclCommUserRank");
	CHECK(v == me, "ncclCommUserRank: %d", v);
	IS_NCCL(ncclCommCuDevice(comm, &v), ncclSuccess, "ncclCommCuDevice");
	CHECK(v == 0, "ncclCommCuDevice: %d", v);
	IS_NCCL(ncclCommGetAsyncError(comm, &async), ncclSuccess, "ncclCommGetAsyncError");
	CHECK(async == ncclSuccess, "async error %d", async);
}

static void collectives_rank(int nranks)
{
	ncclConfig_t config = {
	    .size = sizeof(config), .magic = CONFIG_MAGIC, .version = 22809, .blocking = 0};
	ncclUniqueId id, id2;
	ncclComm_t comm = NULL;
	CUcontext ctx;
	CUstream s;
	double d = me + 0.25, dsum = 0;
	int fds;

	cuda_up(&ctx);
	IS_CU(cuStreamCreate(&s, 0), "cuStreamCreate");
	id = share_id(nranks);
	fds = open_fds();
	comm = init_rank(nranks, id, NULL, "ncclCommInitRank");
	if (!comm)
		return;
	queries(comm, nranks);
	if (nranks == 3)
		known_values(comm);
	allreduce_rounds(comm, nranks, s);
	broadcast(comm, nranks);
	allgather(comm, nranks);
	grouped(comm, nranks, s);
	IS_NCCL(ncclCommFinalize(comm), ncclSuccess, "ncclCommFinalize");
	destroy_rank(comm, nranks, false);
	CHECK(open_fds() == fds, "%d descriptors open after ncclCommDestroy, %d before init",
	      open_fds(), fds);

	/* Again in the same process with a new id, as after a restore. */
	id2 = share_id(nranks);
	CHECK(memcmp(&id, &id2, sizeof(id)), "the second unique id is the first");
	comm = init_rank(nranks, id2, &config, "ncclCommInitRankConfig (non-blocking config)");
	if (!comm)
		return;
	{
		CUdeviceptr p = dalloc(8);

		IS_CU(cuMemcpyHtoD(p, &d, 8), "filling");
		IS_NCCL(ncclAllReduce(dptr(p), dptr(p), 1, ncclFloat64, ncclSum, comm, NULL),
			ncclSuccess, "ncclAllReduce after re-init");
		IS_CU(cuMemcpyDtoH(&d, p, 8), "reading");
		for (int r = 0; r < nranks; r++)
			dsum += r + 0.25;
		CHECK(d == dsum, "all-reduce after re-init: %g, expected %g", d, dsum);
		cuMemFree(p);
	}
	queries(comm, nranks);
	destroy_rank(comm, nranks, false);
	cuStreamDestroy(s);
	cuCtxDestroy(ctx);
}

/* ---- a rank that goes away ---- */

static void sleep_ms(int ms)
{
	nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000l}, NULL);
}

/* Rank GONE leaves (abort, or exit) while the others are in an all-reduce:
 * they get ncclRemoteError, and the communicator stays broken. */
static void lose_rank(int nranks, int gone, bool exit_process)
{
	ncclUniqueId id = share_id(nranks);
	ncclComm_t comm = NULL;
	ncclResult_t async = ncclSuccess;
	CUdeviceptr p = dalloc(4096 * 4);
	char what[64];

	comm = init_rank(nranks, id, NULL, "ncclCommInitRank");
	if (!comm)
		return;
	IS_NCCL(ncclAllReduce(dptr(p), dptr(p), 4096, ncclFloat32, ncclSum, comm, NULL),
		ncclSuccess, "ncclAllReduce while all are there");
	if (me == gone) {
		/* Long enough for the others to be waiting inside the collective. */
		sleep_ms(200);
		if (exit_process) {
			fflush(stdout);
			_exit(failures ? 1 : 0);
		}
		destroy_rank(comm, nranks, true);
		cuMemFree(p);
		return;
	}
	snprintf(what, sizeof(what), "ncclAllReduce once rank %d %s", gone,
		 exit_process ? "exited" : "aborted");
	IS_NCCL(ncclAllReduce(dptr(p), dptr(p), 4096, ncclFloat32, ncclSum, comm, NULL),
		ncclRemoteError, what);
	IS_NCCL(ncclCommGetAsyncError(comm, &async), ncclSuccess, "ncclCommGetAsyncError");
	CHECK(async == ncclRemoteError, "async error %d after losing rank %d", async, gone);
	IS_NCCL(ncclAllReduce(dptr(p), dptr(p), 4096, ncclFloat32, ncclSum, comm, NULL),
		ncclRemoteError, "ncclAllReduce on the broken communicator");
	CHECK(*ncclGetLastError(comm), "no last error text");
	destroy_rank(comm, nranks, false);
	cuMemFree(p);
}

static void peer_loss_rank(int nranks)
{
	CUcontext ctx;

	cuda_up(&ctx);
	lose_rank(nranks, nranks - 1, false);
	lose_rank(nranks, 0, false);
	lose_rank(nranks, nranks - 1, true); /* the last: that process ends there */
	cuCtxDestroy(ctx);
}

/* ---- one process: arguments, ids, the library's answers ---- */

static void errors_rank(void)
{
	ncclConfig_t bad_config = {.size = sizeof(bad_config), .magic = 1, .blocking = 1};
	ncclUniqueId a, b, junk;
	ncclComm_t comm = (ncclComm_t)&junk;
	CUdeviceptr p;
	CUcontext ctx;
	int v = 0;
	char zero[sizeof(a.internal)] = {0};

	IS_NCCL(ncclGetVersion(&v), ncclSuccess, "ncclGetVersion");
	CHECK(v == 22809, "version %d", v);
	IS_NCCL(ncclGetVersion(NULL), ncclInvalidArgument, "ncclGetVersion(NULL)");
	CHECK(strcmp(ncclGetErrorString(ncclRemoteError), ncclGetErrorString(ncclSuccess)),
	      "error strings");

	IS_NCCL(ncclGetUniqueId(&a), ncclSuccess, "ncclGetUniqueId");
	IS_NCCL(ncclGetUniqueId(&b), ncclSuccess, "ncclGetUniqueId");
	CHECK(!memcmp(a.internal, "GKNCCLSI", 8), "the id's magic");
	CHECK(strspn(a.internal + 8, "0123456789abcdef") == 32, "the id's name is 32 hex digits");
	CHECK(!memcmp(a.internal + 40, zero, sizeof(a.internal) - 40), "the id's rest is zero");
	CHECK(memcmp(&a, &b, sizeof(a)), "two ids are the same");

	/* Before any context: NCCL wants a device. */
	IS_CU(cuInit(0), "cuInit");
	IS_NCCL(ncclCommInitRank(&comm, 1, a, 0), ncclUnhandledCudaError,
		"ncclCommInitRank without a current context");
	CHECK(comm == NULL, "a failed init leaves a communicator");
	cuda_up(&ctx);

	memset(&junk, 0, sizeof(junk));
	IS_NCCL(ncclCommInitRank(&comm, 1, junk, 0), ncclInvalidArgument,
		"ncclCommInitRank with a zero id");
	CHECK(*ncclGetLastError(NULL), "no last error text");
	IS_NCCL(ncclCommInitRank(&comm, 2, a, 2), ncclInvalidArgument, "rank 2 of 2");
	IS_NCCL(ncclCommInitRank(&comm, 2, a, -1), ncclInvalidArgument, "rank -1 of 2");
	IS_NCCL(ncclCommInitRank(&comm, 0, a, 0), ncclInvalidArgument, "rank 0 of 0");
	IS_NCCL(ncclCommInitRank(NULL, 1, a, 0), ncclInvalidArgument, "a NULL comm");
	IS_NCCL(ncclCommInitRankConfig(&comm, 1, a, 0, &bad_config), ncclInvalidArgument,
		"a config without NCCL's magic");

	/* A communicator of one rank: NULL config, no peer, its own data back. */
	comm = NULL;
	v = vmm_mappings();
	IS_NCCL(ncclCommInitRankConfig(&comm, 1, b, 0, NULL), ncclSuccess,
		"ncclCommInitRankConfig, 1 rank, NULL config");
	if (!comm)
		return;
	CHECK(vmm_mappings() - v == 1, "one rank: %d VMM mappings more", vmm_mappings() - v);
	p = dalloc(64);
	IS_CU(cuMemsetD8(p, 7, 64), "filling");
	IS_NCCL(ncclAllReduce(dptr(p), dptr(p), 16, ncclFloat16, ncclSum, comm, NULL),
		ncclInvalidArgument, "float16");
	IS_NCCL(ncclAllReduce(dptr(p), dptr(p), 16, ncclBfloat16, ncclSum, comm, NULL),
		ncclInvalidArgument, "bfloat16");
	IS_NCCL(ncclAllReduce(dptr(p), dptr(p), 16, 42, ncclSum, comm, NULL), ncclInvalidArgument,
		"data type 42");
	IS_NCCL(ncclAllReduce(dptr(p), dptr(p), 16, ncclInt32, 99, comm, NULL), ncclInvalidArgument,
		"operator 99");
	IS_NCCL(ncclAllReduce(NULL, dptr(p), 16, ncclInt32, ncclSum, comm, NULL),
		ncclInvalidArgument, "a NULL send buffer");
	IS_NCCL(ncclAllReduce(dptr(p), dptr(p), 16, ncclInt32, ncclSum, NULL, NULL),
		ncclInvalidArgument, "a NULL comm");
	IS_NCCL(ncclAllReduce(dptr(p), dptr(p), SIZE_MAX / 2, ncclInt32, ncclSum, comm, NULL),
		ncclInvalidArgument, "a count past the address space");
	IS_NCCL(ncclBroadcast(dptr(p), dptr(p), 16, ncclInt8, 1, comm, NULL), ncclInvalidArgument,
		"root 1 of 1");
	IS_NCCL(ncclAllReduce(dptr(p), dptr(p), 0, ncclInt32, ncclSum, comm, NULL), ncclSuccess,
		"count 0");
	IS_NCCL(ncclAllReduce(dptr(p), dptr(p), 64, ncclInt8, ncclAvg, comm, NULL), ncclSuccess,
		"int8 avg of one rank");
	IS_NCCL(ncclReduceScatter(dptr(p), dptr(p), 64, ncclUint8, ncclProd, comm, NULL),
		ncclSuccess, "uint8 reduce-scatter of one rank");
	{
		uint8_t h[64];

		IS_CU(cuMemcpyDtoH(h, p, sizeof(h)), "reading");
		CHECK(h[0] == 7 && h[63] == 7, "one rank's all-reduce: %u %u", h[0], h[63]);
	}
	IS_NCCL(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
	IS_NCCL(ncclCommCount(NULL, &v), ncclInvalidArgument, "ncclCommCount(NULL)");
	destroy_rank(comm, 1, false);
	IS_NCCL(ncclCommDestroy(NULL), ncclSuccess, "ncclCommDestroy(NULL)");
	IS_NCCL(ncclCommAbort(NULL), ncclSuccess, "ncclCommAbort(NULL)");
	cuMemFree(p);
	cuCtxDestroy(ctx);
}

/* ---- the parent ---- */

static void on_alarm(int sig)
{
	static const char msg[] = "# the ranks ran past the time limit: killed\n";

	(void)sig;
	for (int i = 0; i < nkids; i++)
		kill(kids[i], SIGKILL);
	if (write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(2);
	_exit(1);
}

static int run_ranks(int nranks, void (*rank_main)(int nranks))
{
	int status, bad = 0;

	for (int r = 1; r < nranks; r++)
		if (pipe(id_pipe[r])) {
			perror("pipe");
			return 1;
		}
	fflush(stdout);
	for (int r = 0; r < nranks; r++) {
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			on_alarm(0);
		}
		if (pid == 0) {
			me = r;
			alarm(0);
			rank_main(nranks);
			fflush(stdout);
			_exit(failures ? 1 : 0);
		}
		kids[nkids++] = pid;
	}
	for (int r = 1; r < nranks; r++) {
		close(id_pipe[r][0]);
		close(id_pipe[r][1]);
	}
	for (int i = 0; i < nkids; i++) {
		if (waitpid(kids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
			printf("# rank %d ended with status %#x\n", i, status);
			bad++;
		}
	}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int nranks = argc > 2 ? atoi(argv[2]) : 3;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(TIME_LIMIT_S);
	if (nranks < 1 || nranks > MAX_RANKS) {
		fprintf(stderr, "test-nccl-standin: 1 to %d ranks\n", MAX_RANKS);
		return 2;
	}
	if (!strcmp(mode, "errors")) {
		errors_rank();
		return failures ? 1 : 0;
	}
	if (!strcmp(mode, "collectives"))
		return run_ranks(nranks, collectives_rank);
	if (!strcmp(mode, "peer-loss"))
		return run_ranks(3, peer_loss_rank);
	fprintf(stderr, "usage: test-nccl-standin errors|collectives [NRANKS]|peer-loss\n");
	return 2;
}
