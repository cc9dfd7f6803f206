/*
 * nccl.c - NCCL's entry points as the program calls them, so that a
 * transparent checkpoint can take NCCL's communicators down at a point every
 * rank agrees on and make them again afterwards (nccl.h says why).
 *
 * Handles. Every call that makes a communicator (ncclCommInitRank,
 * ncclCommInitRankConfig, ncclCommInitRankScalable, ncclCommSplit, and the
 * ones that cannot be made again: ncclCommInitAll, ncclCommShrink) returns a
 * handle of the runtime's, `struct gk_nccl_comm`, which records how it was
 * made; every call that takes a communicator is passed the real one. After a
 * restore the real one is new; the program's handle is the same.
 *
 * The consistent cut (issue 27). NCCL's ranks issue the same collectives in
 * the same order on a communicator, so "every rank has issued exactly the
 * first K, K the largest count any rank reached" is a point where all of them
 * can finish and none waits for another. The runtime counts the calls on each
 * communicator (a group counts each call in it, and is entered and left as
 * one unit). At a checkpoint it holds every thread at the start of its next
 * unit, and the ranks agree in rounds through files in the rendezvous folder
 * (the folder above the checkpoint folders: the step's, on one node): each
 * writes its counts, reads everyone's, lets its threads run forward to the
 * largest, and writes again, until one round has them all equal. Then no
 * thread is inside a call, every collective issued has a partner on every
 * rank, and a synchronize of each communicator's context finishes them.
 *
 * Taking down and making again. ncclCommDestroy then unmaps and releases the
 * memory NCCL shared between the processes and closes its sockets, so the
 * driver's checkpoint and CRIU find a process that holds nothing of another.
 * Afterwards each communicator's rank 0 asks the real NCCL for a new unique
 * id and writes it to the folder; the others read it and all make the
 * communicator again (a split: from its parent, made again first, with the
 * same color and key), in the order they were first made.
 *
 * Cost while the program runs: one uncontended mutex per call, beside a
 * collective's microseconds.
 */
#include "config.h"

#include "common/export.h"
#define GK_NCCL_API GK_EXPORT
#include "core/interpose/nccl_abi.h"
#include "core/interpose/nccl.h"
#include "core/driver/driver.h"
#include "core/state/runtime.h"
#include "core/state/track.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/settings_env.h"
#include "image/image.h"
#include "image/setfile.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GK_NCCL_MAGIC 0x676b6e63636c3031ull /* "gkncl01" */
#define GK_NCCL_CONFIG_MAX 512
/* How long the ranks wait for one another: to agree on a cut (the slowest
 * rank must get its signal and finish a step; GPUCKPT_NCCL_TIMEOUT, below the
 * shepherd's --ready-timeout of 10 s, which the whole of a runtime's part must
 * fit in), and to make the communicators again after a restore (the tasks of
 * a step are restored one by one). */
#define GK_NCCL_AGREE_S 8.0
#define GK_NCCL_REMAKE_S 300.0

enum how { MADE_INIT, MADE_SPLIT, MADE_OTHER };

struct gk_nccl_comm {
	uint64_t magic;
	ncclComm_t real; /* NULL while taken down */
	int nranks, rank;
	uint64_t key; /* the same on every rank of the communicator */
	enum how how;
	const char *made_by; /* for MADE_OTHER: the call, for the refusal */
	struct gk_nccl_comm *parent;
	int color, split_key, splits;
	unsigned char config[GK_NCCL_CONFIG_MAX];
	int has_config;
	CUcontext ctx; /* current where it was made: NCCL takes the device from it */
	uint64_t issued, target;
	uint64_t at_freeze; /* issued when the quiesce began: what ran forward is the rest */
	int destroyed;	    /* by the program */
	struct gk_nccl_comm *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t moved = PTHREAD_COND_INITIALIZER;
static struct gk_nccl_comm *comms, **comms_tail = &comms;
static int frozen;	    /* threads are held at the start of a unit */
static int inside;	    /* units under way (a call, or a group) */
static uint64_t generation; /* quiesces taken, the same on every rank */
static int taken_down;	    /* gk_nccl_quiesce destroyed the communicators */
static int registrations;   /* buffers registered with a communicator */
static int premul_ops;	    /* reduction operators made for a communicator */
static __thread int group_depth;
/* Inside a wrapped call: NCCL's own entry points may call one another
 * (ncclBcast is ncclBroadcast), and such a call is part of the outer one. */
static __thread int in_call;

/* ---- the real NCCL ---- */

/* NCCL may be in a local scope (Python loads PyTorch's extension, and
 * libnccl.so.2 with it, RTLD_LOCAL), where dlsym(RTLD_NEXT) does not look:
 * the loaded library is found by name and asked directly. The callback only
 * copies the name: dl_iterate_phdr holds the loader's lock while it runs,
 * and a dlopen there deadlocked against the agent thread's own dlopen
 * (hwloc loading a plugin), which takes the loader's locks the other way. */
static int find_nccl(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libnccl.so") &&
	    strlen(info->dlpi_name) < PATH_MAX) {
		strcpy(arg, info->dlpi_name);
		return 1;
	}
	return 0;
}

static void *real_sym(const char *name)
{
	static void *lib;
	void *p = NULL, *h = __atomic_load_n(&lib, __ATOMIC_ACQUIRE);

	if (!h) {
		char path[PATH_MAX] = "";

		dl_iterate_phdr(find_nccl, path);
		if (path[0])
			h = dlopen(path, RTLD_LAZY | RTLD_NOLOAD);
		if (h)
			__atomic_store_n(&lib, h, __ATOMIC_RELEASE);
	}
	/* glibc's dlsym, not the runtime's own (interpose.c), which sits above. */
	if (h)
		p = gk_real_dlsym(h, name);
	return p ? p : gk_real_dlsym(RTLD_NEXT, name);
}

/* The first lines of a wrapper: the real entry point, found once. */
#define REAL(name)                                                                                 \
	static __typeof__(name) *real_##name;                                                      \
	if (!real_##name)                                                                          \
		real_##name = (__typeof__(name) *)real_sym(#name);                                 \
	if (!real_##name)                                                                          \
	return ncclSystemError

typedef ncclResult_t (*init_config_fn)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *);
typedef ncclResult_t (*split_fn)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *);
typedef ncclResult_t (*comm_fn)(ncclComm_t);
typedef ncclResult_t (*async_fn)(ncclComm_t, ncclResult_t *);
typedef ncclResult_t (*uid_fn)(ncclUniqueId *);

/* ---- handles ---- */

static struct gk_nccl_comm *handle(ncclComm_t c)
{
	struct gk_nccl_comm *h = (struct gk_nccl_comm *)c;

	return h && h->magic == GK_NCCL_MAGIC ? h : NULL;
}

/* The real communicator of a handle; a handle that is not the runtime's is
 * passed on as it is (made before the runtime was loaded: cannot happen
 * with LD_PRELOAD, but costs nothing). */
static ncclComm_t real_of(ncclComm_t c)
{
	struct gk_nccl_comm *h = handle(c);

	return h ? __atomic_load_n(&h->real, __ATOMIC_ACQUIRE) : c;
}

static uint64_t mix(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull; /* FNV-1a */
	return h;
}

static struct gk_nccl_comm *new_handle(ncclComm_t real, int nranks, int rank, enum how how,
				       const ncclConfig_t *config)
{
	struct gk_nccl_comm *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->magic = GK_NCCL_MAGIC;
	h->real = real;
	h->nranks = nranks;
	h->rank = rank;
	h->how = how;
	if (config && config->size >= sizeof(size_t)) {
		size_t n = config->size < GK_NCCL_CONFIG_MAX ? config->size : GK_NCCL_CONFIG_MAX;

		memcpy(h->config, config, n);
		h->has_config = 1;
	}
	if (gk_real.cuCtxGetCurrent)
		gk_real.cuCtxGetCurrent(&h->ctx);
	return h;
}

static void add_handle(struct gk_nccl_comm *h)
{
	pthread_mutex_lock(&lock);
	*comms_tail = h;
	comms_tail = &h->next;
	pthread_mutex_unlock(&lock);
}

/* ---- units: a call, or a group, as the cut counts them ---- */

/* Held while frozen and this communicator (NULL: every one) reached its
 * target. */
static int held(const struct gk_nccl_comm *h)
{
	if (!frozen)
		return 0;
	if (h)
		return h->issued >= h->target;
	for (const struct gk_nccl_comm *c = comms; c; c = c->next)
		if (!c->destroyed && c->issued < c->target)
			return 0;
	return 1;
}

static void unit_begin(struct gk_nccl_comm *h)
{
	pthread_mutex_lock(&lock);
	if (group_depth == 0) {
		while (held(h))
			pthread_cond_wait(&moved, &lock);
		inside++;
	}
	if (h)
		h->issued++;
	pthread_mutex_unlock(&lock);
}

static void unit_end(void)
{
	if (group_depth != 0)
		return;
	pthread_mutex_lock(&lock);
	inside--;
	pthread_cond_broadcast(&moved);
	pthread_mutex_unlock(&lock);
}

ncclResult_t ncclGroupStart(void)
{
	REAL(ncclGroupStart);
	if (in_call)
		return real_ncclGroupStart();
	if (group_depth == 0)
		unit_begin(NULL);
	group_depth++;
	return real_ncclGroupStart();
}

ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t r;

	REAL(ncclGroupEnd);
	if (in_call)
		return real_ncclGroupEnd();
	in_call = 1;
	r = real_ncclGroupEnd();
	in_call = 0;
	if (group_depth > 0 && --group_depth == 0)
		unit_end();
	return r;
}

/* ---- making communicators ---- */

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
				    ncclConfig_t *config)
{
	ncclResult_t r;
	struct gk_nccl_comm *h;

	REAL(ncclCommInitRankConfig);
	gk_track_nccl_made();
	r = real_ncclCommInitRankConfig(comm, nranks, id, rank, config);
	if ((r != ncclSuccess && r != ncclInProgress) || !comm)
		return r;
	h = new_handle(*comm, nranks, rank, MADE_INIT, config);
	if (!h)
		return r; /* the program keeps NCCL's own; never checkpointed */
	h->key = mix(0xcbf29ce484222325ull, &id, sizeof(id));
	add_handle(h);
	*comm = (ncclComm_t)h;
	return r;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	return ncclCommInitRankConfig(comm, nranks, id, rank, NULL);
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			   ncclConfig_t *config)
{
	struct gk_nccl_comm *p = handle(comm), *h;
	ncclResult_t r;
	int nranks = 0, rank = 0, n;

	REAL(ncclCommSplit);
	gk_track_nccl_made();
	r = real_ncclCommSplit(real_of(comm), color, key, newcomm, config);
	if ((r != ncclSuccess && r != ncclInProgress) || !newcomm || !*newcomm || !p)
		return r;
	/* Every rank of the parent splits, in the same order: the n-th split
	 * and the color name the child the same on each of its ranks. */
	n = __atomic_fetch_add(&p->splits, 1, __ATOMIC_RELAXED);
	if (r == ncclSuccess) {
		ncclResult_t (*count)(ncclComm_t, int *) = real_sym("ncclCommCount");
		ncclResult_t (*user)(ncclComm_t, int *) = real_sym("ncclCommUserRank");

		if (count && user) {
			count(*newcomm, &nranks);
			user(*newcomm, &rank);
		}
	}
	h = new_handle(*newcomm, nranks, rank, MADE_SPLIT, config);
	if (!h)
		return r;
	h->parent = p;
	h->color = color;
	h->split_key = key;
	h->key = mix(mix(mix(p->key, &n, sizeof(n)), &color, sizeof(color)), "split", 5);
	add_handle(h);
	*newcomm = (ncclComm_t)h;
	return r;
}

/* Made by a call whose making the runtime does not repeat: the process is
 * never checkpointed while the communicator lives (gk_nccl_quiesce says so). */
static void other(ncclComm_t *comm, const char *by)
{
	struct gk_nccl_comm *h;

	if (!comm || !*comm)
		return;
	h = new_handle(*comm, 0, 0, MADE_OTHER, NULL);
	if (!h)
		return;
	h->made_by = by;
	add_handle(h);
	*comm = (ncclComm_t)h;
}

ncclResult_t ncclCommInitAll(ncclComm_t *comms_out, int ndev, const int *devlist)
{
	ncclResult_t r;

	REAL(ncclCommInitAll);
	r = real_ncclCommInitAll(comms_out, ndev, devlist);
	if (r == ncclSuccess)
		for (int i = 0; i < ndev; i++)
			other(&comms_out[i], "ncclCommInitAll");
	return r;
}

/* Several roots only spread the bootstrap: one unique id from rank 0 makes
 * the same communicator again. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nids,
				      ncclUniqueId *ids, ncclConfig_t *config)
{
	ncclResult_t r;
	struct gk_nccl_comm *h;

	REAL(ncclCommInitRankScalable);
	gk_track_nccl_made();
	r = real_ncclCommInitRankScalable(comm, nranks, rank, nids, ids, config);
	if ((r != ncclSuccess && r != ncclInProgress) || !comm || nids < 1)
		return r;
	h = new_handle(*comm, nranks, rank, MADE_INIT, config);
	if (!h)
		return r;
	h->key = mix(0xcbf29ce484222325ull, ids, sizeof(*ids) * (size_t)nids);
	add_handle(h);
	*comm = (ncclComm_t)h;
	return r;
}

ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm,
			    ncclConfig_t *config, int flags)
{
	ncclResult_t r;

	REAL(ncclCommShrink);
	r = real_ncclCommShrink(real_of(comm), exclude, nexclude, newcomm, config, flags);
	if (r == ncclSuccess || r == ncclInProgress)
		other(newcomm, "ncclCommShrink");
	return r;
}

/* ---- ending communicators ---- */

static ncclResult_t end_comm(ncclComm_t comm, const char *name)
{
	struct gk_nccl_comm *h = handle(comm);
	comm_fn fn = (comm_fn)real_sym(name);
	ncclComm_t real = real_of(comm);
	ncclResult_t r = ncclSuccess;

	if (!fn)
		return ncclSystemError;
	if (real)
		r = fn(real);
	if (h && r == ncclSuccess) {
		pthread_mutex_lock(&lock);
		h->destroyed = 1;
		h->real = NULL;
		pthread_cond_broadcast(&moved);
		pthread_mutex_unlock(&lock);
	}
	return r;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	return end_comm(comm, "ncclCommDestroy");
}

ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	return end_comm(comm, "ncclCommAbort");
}

ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	REAL(ncclCommFinalize);
	return real_of(comm) ? real_ncclCommFinalize(real_of(comm)) : ncclSuccess;
}

ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags)
{
	REAL(ncclCommRevoke);
	return real_ncclCommRevoke(real_of(comm), flags);
}

/* While a communicator is down no error can arise in it: PyTorch's watchdog
 * asks all the time, and must hear "none". */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async)
{
	struct gk_nccl_comm *h = handle(comm);
	ncclResult_t r;

	REAL(ncclCommGetAsyncError);
	if (!h)
		return real_ncclCommGetAsyncError(comm, async);
	/* Under the lock: the agent takes the real one away under it before
	 * destroying it, and this is asked from other threads meanwhile. */
	pthread_mutex_lock(&lock);
	if (h->real) {
		r = real_ncclCommGetAsyncError(h->real, async);
	} else {
		if (async)
			*async = ncclSuccess;
		r = ncclSuccess;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

/* ---- questions about a communicator: answered from the handle while it is
 * down, so that no caller ever passes NCCL a NULL ---- */

#define ASK(name, field)                                                                           \
	ncclResult_t name(const ncclComm_t comm, int *out)                                         \
	{                                                                                          \
		struct gk_nccl_comm *h = handle(comm);                                             \
		ncclResult_t r;                                                                    \
		REAL(name);                                                                        \
		if (!h)                                                                            \
			return real_##name(comm, out);                                             \
		pthread_mutex_lock(&lock);                                                         \
		if (h->real) {                                                                     \
			r = real_##name(h->real, out);                                             \
		} else {                                                                           \
			if (out)                                                                   \
				*out = field;                                                      \
			r = ncclSuccess;                                                           \
		}                                                                                  \
		pthread_mutex_unlock(&lock);                                                       \
		return r;                                                                          \
	}
ASK(ncclCommCount, h->nranks)
ASK(ncclCommUserRank, h->rank)

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
	REAL(ncclCommCuDevice);
	return real_ncclCommCuDevice(real_of(comm), device);
}

const char *ncclGetLastError(ncclComm_t comm)
{
	static const char *(*fn)(ncclComm_t);

	if (!fn)
		fn = (const char *(*)(ncclComm_t))real_sym("ncclGetLastError");
	return fn ? fn(comm ? real_of(comm) : NULL) : "";
}

/* Registered buffers and reduction operators belong to one real
 * communicator: counted, and a checkpoint waits for none to be live. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **h)
{
	ncclResult_t r;

	REAL(ncclCommRegister);
	r = real_ncclCommRegister(real_of(comm), buff, size, h);
	if (r == ncclSuccess)
		__atomic_add_fetch(&registrations, 1, __ATOMIC_RELAXED);
	return r;
}

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *h)
{
	ncclResult_t r;

	REAL(ncclCommDeregister);
	r = real_ncclCommDeregister(real_of(comm), h);
	if (r == ncclSuccess)
		__atomic_sub_fetch(&registrations, 1, __ATOMIC_RELAXED);
	return r;
}

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, void **win, int flags)
{
	ncclResult_t r;

	REAL(ncclCommWindowRegister);
	r = real_ncclCommWindowRegister(real_of(comm), buff, size, win, flags);
	if (r == ncclSuccess)
		__atomic_add_fetch(&registrations, 1, __ATOMIC_RELAXED);
	return r;
}

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, void *win)
{
	ncclResult_t r;

	REAL(ncclCommWindowDeregister);
	r = real_ncclCommWindowDeregister(real_of(comm), win);
	if (r == ncclSuccess)
		__atomic_sub_fetch(&registrations, 1, __ATOMIC_RELAXED);
	return r;
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t type,
				      int residence, ncclComm_t comm)
{
	ncclResult_t r;

	REAL(ncclRedOpCreatePreMulSum);
	r = real_ncclRedOpCreatePreMulSum(op, scalar, type, residence, real_of(comm));
	if (r == ncclSuccess)
		__atomic_add_fetch(&premul_ops, 1, __ATOMIC_RELAXED);
	return r;
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
	ncclResult_t r;

	REAL(ncclRedOpDestroy);
	r = real_ncclRedOpDestroy(op, real_of(comm));
	if (r == ncclSuccess)
		__atomic_sub_fetch(&premul_ops, 1, __ATOMIC_RELAXED);
	return r;
}

/* Device communicators (NCCL 2.28's device API) live in one real
 * communicator: counted like registrations. */
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void *reqs, void *out)
{
	ncclResult_t r;

	REAL(ncclDevCommCreate);
	r = real_ncclDevCommCreate(real_of(comm), reqs, out);
	if (r == ncclSuccess)
		__atomic_add_fetch(&registrations, 1, __ATOMIC_RELAXED);
	return r;
}

ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void *devcomm)
{
	ncclResult_t r;

	REAL(ncclDevCommDestroy);
	r = real_ncclDevCommDestroy(real_of(comm), devcomm);
	if (r == ncclSuccess)
		__atomic_sub_fetch(&registrations, 1, __ATOMIC_RELAXED);
	return r;
}

/* ---- collectives and point-to-point: counted units ---- */

#define UNIT(name, params, args)                                                                   \
	ncclResult_t name params                                                                   \
	{                                                                                          \
		struct gk_nccl_comm *h = handle(comm);                                             \
		ncclResult_t r;                                                                    \
		REAL(name);                                                                        \
		if (in_call)                                                                       \
			return real_##name args;                                                   \
		unit_begin(h);                                                                     \
		comm = real_of(comm);                                                              \
		in_call = 1;                                                                       \
		r = real_##name args;                                                              \
		in_call = 0;                                                                       \
		unit_end();                                                                        \
		return r;                                                                          \
	}

UNIT(ncclAllReduce,
     (const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
      gk_nccl_stream_t st),
     (s, d, n, t, op, comm, st))
UNIT(ncclReduce,
     (const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t comm,
      gk_nccl_stream_t st),
     (s, d, n, t, op, root, comm, st))
UNIT(ncclBroadcast,
     (const void *s, void *d, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
      gk_nccl_stream_t st),
     (s, d, n, t, root, comm, st))
UNIT(ncclBcast,
     (void *b, size_t n, ncclDataType_t t, int root, ncclComm_t comm, gk_nccl_stream_t st),
     (b, n, t, root, comm, st))
UNIT(ncclAllGather,
     (const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t comm, gk_nccl_stream_t st),
     (s, d, n, t, comm, st))
UNIT(ncclReduceScatter,
     (const void *s, void *d, size_t n, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
      gk_nccl_stream_t st),
     (s, d, n, t, op, comm, st))
UNIT(ncclAlltoAll,
     (const void *s, void *d, size_t n, ncclDataType_t t, ncclComm_t comm, gk_nccl_stream_t st),
     (s, d, n, t, comm, st))
UNIT(ncclGather,
     (const void *s, void *d, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
      gk_nccl_stream_t st),
     (s, d, n, t, root, comm, st))
UNIT(ncclScatter,
     (const void *s, void *d, size_t n, ncclDataType_t t, int root, ncclComm_t comm,
      gk_nccl_stream_t st),
     (s, d, n, t, root, comm, st))
UNIT(ncclSend,
     (const void *s, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, gk_nccl_stream_t st),
     (s, n, t, peer, comm, st))
UNIT(ncclRecv,
     (void *d, size_t n, ncclDataType_t t, int peer, ncclComm_t comm, gk_nccl_stream_t st),
     (d, n, t, peer, comm, st))

/* ---- the rendezvous folder ---- */

/* The folder above this task's checkpoint folder: under Slurm JOB/step.S,
 * which every task of the step on this node shares. */
static int rendezvous_dir(char *out, size_t len)
{
	char *slash;

	if (!gk_rt.settings.dir[0] || strlen(gk_rt.settings.dir) >= len)
		return -1;
	strcpy(out, gk_rt.settings.dir);
	while ((slash = strrchr(out, '/')) && slash[1] == 0 && slash != out)
		*slash = 0;
	slash = strrchr(out, '/');
	if (!slash || slash == out)
		return -1;
	*slash = 0;
	return 0;
}

/* Write text to dir/name whole: the others read it only once it is there. */
static int publish(const char *dir, const char *name, const void *data, size_t len)
{
	char tmp[4400], path[4400];
	int fd;
	ssize_t n;

	snprintf(tmp, sizeof(tmp), "%s/.%s.%d", dir, name, (int)getpid());
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	n = write(fd, data, len);
	close(fd);
	if (n != (ssize_t)len || rename(tmp, path) < 0) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

/* Read dir/name whole into buf (len bytes), waiting until it is there or
 * deadline passes: its length, or -ETIMEDOUT. */
static ssize_t await(const char *dir, const char *name, void *buf, size_t len, double deadline)
{
	char path[4400];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

		if (fd >= 0) {
			ssize_t n = read(fd, buf, len);

			close(fd);
			if (n >= 0)
				return n;
		}
		if (gk_now() > deadline)
			return -ETIMEDOUT;
		struct timespec ts = {0, 5000000};
		nanosleep(&ts, NULL);
	}
}

static void file_name(char *out, size_t len, const struct gk_nccl_comm *h, const char *what,
		      int round, int rank)
{
	snprintf(out, len, GK_NCCL_RENDEZVOUS_PREFIX "%016llx.g%llu.%s%d.r%d",
		 (unsigned long long)h->key, (unsigned long long)generation, what, round, rank);
}

/* Remove this rank's files of the current generation (after the others
 * can no longer need them: the communicators were made again, which every
 * rank of each joined). */
static void clean_own(const char *dir)
{
	char name[256], path[4400];

	for (struct gk_nccl_comm *h = comms; h; h = h->next) {
		if (h->destroyed || h->nranks < 2)
			continue;
		for (int round = 0; round < 64; round++) {
			file_name(name, sizeof(name), h, "count", round, h->rank);
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			if (unlink(path) < 0 && round > 0)
				break;
		}
	}
}

/* ---- the cut ---- */

static double agree_s(void)
{
	const char *v = gk_getenv(NCCL_TIMEOUT);
	long s = v ? strtol(v, NULL, 10) : 0;

	return s >= 1 && s <= 3600 ? (double)s : GK_NCCL_AGREE_S;
}

int gk_nccl_active(void)
{
	int any = 0;

	pthread_mutex_lock(&lock);
	for (struct gk_nccl_comm *h = comms; h; h = h->next)
		if (!h->destroyed && h->real && h->nranks != 1)
			any = 1;
	pthread_mutex_unlock(&lock);
	return any;
}

static void thaw(void)
{
	pthread_mutex_lock(&lock);
	frozen = 0;
	pthread_cond_broadcast(&moved);
	pthread_mutex_unlock(&lock);
}

/* Until every live communicator reached its target and no unit is under
 * way, or deadline: 0 or -ETIMEDOUT. */
static int settle(double deadline)
{
	int ret = 0;

	pthread_mutex_lock(&lock);
	for (;;) {
		int behind = inside > 0;

		for (struct gk_nccl_comm *h = comms; h && !behind; h = h->next)
			if (!h->destroyed && h->issued < h->target)
				behind = 1;
		if (!behind)
			break;
		struct timespec ts;

		if (gk_now() > deadline) {
			ret = -ETIMEDOUT;
			break;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 10000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&moved, &lock, &ts);
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

/* The set of the cut (struct gk_nccl_cut), while it is agreed on. */
struct cut_state {
	struct gk_nccl_comm *span; /* the first live communicator of every task, or NULL */
	uint64_t next, id;	   /* this rank's */
	uint64_t sequence, agreed_id;
};

/* The first communicator the program made, when it holds every task of a
 * step whose tasks checkpoint together, with this rank's proposal. */
static void cut_begin(struct cut_state *c)
{
	const struct gk_settings *st = &gk_rt.settings;
	gk_error_t err;

	memset(c, 0, sizeof(*c));
	if (st->step_tasks < 2 || st->tasks_independent)
		return;
	for (struct gk_nccl_comm *h = comms; h && !c->span; h = h->next)
		if (!h->destroyed && h->real)
			c->span = h;
	if (!c->span || c->span->nranks != (int)st->step_tasks) {
		gk_info("nccl: the first communicator does not hold the step's %u tasks; the "
			"ranks' parts of this checkpoint are not one set",
			st->step_tasks);
		c->span = NULL;
		return;
	}
	if (gk_store_next(st->dir, &c->next, &err) < 0 ||
	    getrandom(&c->id, sizeof(c->id), 0) != (ssize_t)sizeof(c->id)) {
		c->next = 0;
		c->id = 0;
	}
	c->id |= 1; /* never 0: 0 is no set */
}

/* One round of the agreement: write this rank's counts, read every rank's,
 * raise the targets to the largest. 1 when all were equal, 0 when some rank
 * must run forward, <0 on a timeout. */
static int agree_round(const char *dir, int round, double deadline, struct cut_state *c,
		       gk_error_t *err)
{
	char name[256], text[96];
	int equal = 1;

	for (struct gk_nccl_comm *h = comms; h; h = h->next) {
		uint64_t mine;
		int n;

		if (h->destroyed || h->nranks < 2)
			continue;
		pthread_mutex_lock(&lock);
		mine = h->issued;
		pthread_mutex_unlock(&lock);
		/* The first round on the communicator that spans the step
		 * also carries this rank's next checkpoint number and id. */
		if (round == 0 && h == c->span)
			n = snprintf(text, sizeof(text), "%llu %llu %llu\n", (unsigned long long)mine,
				     (unsigned long long)c->next, (unsigned long long)c->id);
		else
			n = snprintf(text, sizeof(text), "%llu\n", (unsigned long long)mine);
		file_name(name, sizeof(name), h, "count", round, h->rank);
		if (publish(dir, name, text, (size_t)n) < 0)
			return gk_errprintf(err, "cannot write %s/%s", dir, name), -EIO;
	}
	for (struct gk_nccl_comm *h = comms; h; h = h->next) {
		uint64_t top = 0, mine;

		if (h->destroyed || h->nranks < 2)
			continue;
		pthread_mutex_lock(&lock);
		mine = h->issued;
		pthread_mutex_unlock(&lock);
		for (int r = 0; r < h->nranks; r++) {
			ssize_t n;
			unsigned long long v;

			file_name(name, sizeof(name), h, "count", round, r);
			n = await(dir, name, text, sizeof(text) - 1, deadline);
			if (n < 0) {
				gk_errprintf(
				    err,
				    "rank %d of %d of an NCCL communicator did not say how "
				    "far it is within %.0f s (no %s in %s; ranks on other "
				    "nodes cannot meet there yet)",
				    r, h->nranks, agree_s(), name, dir);
				return -ETIMEDOUT;
			}
			text[n] = 0;
			if (round == 0 && h == c->span) {
				unsigned long long next = 0, id = 0;

				if (sscanf(text, "%llu %llu %llu", &v, &next, &id) != 3) {
					gk_errprintf(err, "%s/%s: not a count, a number and an id",
						     dir, name);
					return -EPROTO;
				}
				if (next > c->sequence)
					c->sequence = next;
				if (r == 0)
					c->agreed_id = id;
			} else {
				v = strtoull(text, NULL, 10);
			}
			if (v != mine)
				equal = 0;
			if (v > top)
				top = v;
		}
		pthread_mutex_lock(&lock);
		if (top > h->target) {
			/* Threads held short of it go on. */
			h->target = top;
			pthread_cond_broadcast(&moved);
		}
		pthread_mutex_unlock(&lock);
	}
	return equal;
}

static void use_ctx(CUcontext ctx)
{
	if (ctx && gk_real.cuCtxSetCurrent)
		gk_real.cuCtxSetCurrent(ctx);
}

int gk_nccl_quiesce(struct gk_nccl_cut *cut, gk_error_t *err)
{
	struct cut_state c;
	char dir[4096];
	double deadline = gk_now() + agree_s();
	int ret = 0, round;
	comm_fn destroy;

	memset(cut, 0, sizeof(*cut));
	if (!gk_nccl_active())
		return 0;
	for (struct gk_nccl_comm *h = comms; h; h = h->next)
		if (!h->destroyed && h->how == MADE_OTHER)
			return gk_errprintf(err,
					    "an NCCL communicator made with %s, which the runtime "
					    "cannot make again after a restore",
					    h->made_by),
			       -ENOTSUP;
	if (__atomic_load_n(&registrations, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&premul_ops, __ATOMIC_RELAXED))
		return gk_errprintf(err, "buffers registered with an NCCL communicator, device "
					 "communicators, or reduction operators made for one "
					 "are live (the runtime cannot make them again)"),
		       -ENOTSUP;
	if (rendezvous_dir(dir, sizeof(dir)) < 0)
		return gk_errprintf(err, "no folder to meet the other NCCL ranks in (" GK_ENV(
					     DIR) " has no parent)"),
		       -EINVAL;
	destroy = (comm_fn)real_sym("ncclCommDestroy");
	if (!destroy)
		return gk_errprintf(err, "NCCL has no ncclCommDestroy"), -ENOSYS;

	pthread_mutex_lock(&lock);
	generation++;
	frozen = 1;
	for (struct gk_nccl_comm *h = comms; h; h = h->next)
		h->target = h->at_freeze = h->issued;
	pthread_mutex_unlock(&lock);

	cut_begin(&c);
	for (round = 0; round < 64; round++) {
		int r = agree_round(dir, round, deadline, &c, err);

		if (r < 0) {
			ret = r;
			break;
		}
		if (settle(deadline) < 0) {
			gk_errprintf(err,
				     "this rank did not reach the other NCCL ranks' collective "
				     "within %.0f s",
				     agree_s());
			ret = -ETIMEDOUT;
			break;
		}
		if (r == 1)
			break;
	}
	if (!ret && round == 64) {
		gk_errprintf(err, "the NCCL ranks did not agree on a collective in 64 rounds");
		ret = -EAGAIN;
	}
	if (ret < 0) {
		thaw();
		return ret;
	}
	/* Every collective issued has its partners now: finish them, then
	 * take the communicators down, children before parents. */
	for (int pass = 0; pass < 2 && !ret; pass++)
		for (struct gk_nccl_comm *h = comms; h; h = h->next) {
			ncclResult_t r;
			ncclComm_t real;

			if (h->destroyed || !h->real || (pass == 0) != (h->how == MADE_SPLIT))
				continue;
			use_ctx(h->ctx);
			if (gk_real.cuCtxSynchronize)
				gk_real.cuCtxSynchronize();
			/* Out of reach of the program's other threads first
			 * (ncclCommGetAsyncError and the questions look under
			 * the lock), then destroyed. */
			pthread_mutex_lock(&lock);
			real = h->real;
			h->real = NULL;
			pthread_mutex_unlock(&lock);
			r = destroy(real);
			if (r != ncclSuccess) {
				gk_errprintf(err, "ncclCommDestroy failed (NCCL error %d)", r);
				ret = -EIO;
			}
		}
	taken_down = 1;
	if (ret < 0) {
		/* Some are down: the checkpoint is refused, and they must be
		 * made again all the same. */
		gk_nccl_resume();
		return ret;
	}
	uint64_t forward = 0;

	for (struct gk_nccl_comm *h = comms; h; h = h->next)
		if (!h->destroyed)
			forward += h->issued - h->at_freeze;
	/* How far this rank was behind: for the tests, and for a reader who
	 * wonders how long the common point took. */
	gk_info("nccl: communicators taken down at a common collective (generation %llu; this "
		"rank ran %llu collectives forward to it)",
		(unsigned long long)generation, (unsigned long long)forward);
	if (c.span && c.sequence && c.agreed_id) {
		cut->agreed = 1;
		cut->sequence = c.sequence;
		cut->id = c.agreed_id;
		gk_info("nccl: this rank's part is member %u of %u of set %llu (id %016llx)",
			gk_rt.settings.task, gk_rt.settings.step_tasks,
			(unsigned long long)cut->sequence, (unsigned long long)cut->id);
	}
	return 0;
}

/* ---- making them again ---- */

static ncclResult_t wait_made(ncclComm_t real)
{
	async_fn async = (async_fn)real_sym("ncclCommGetAsyncError");
	ncclResult_t state = ncclInProgress;

	while (async && state == ncclInProgress) {
		if (async(real, &state) != ncclSuccess)
			return ncclSystemError;
		if (state == ncclInProgress) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	}
	return state;
}

static int remake(struct gk_nccl_comm *h, const char *dir, char *why, size_t len)
{
	ncclConfig_t *config = h->has_config ? (ncclConfig_t *)h->config : NULL;
	ncclComm_t real = NULL;
	ncclResult_t r;
	char name[256];

	use_ctx(h->ctx);
	if (h->how == MADE_SPLIT) {
		split_fn split = (split_fn)real_sym("ncclCommSplit");

		if (!h->parent || !h->parent->real || !split) {
			snprintf(why, len, "its parent communicator is not there");
			return -1;
		}
		r = split(h->parent->real, h->color, h->split_key, &real, config);
	} else {
		/* With rank 0's count of the cut: ranks restored from checkpoints
		 * of different moments would go on with collectives that do not
		 * match, and compute garbage or hang. */
		struct {
			ncclUniqueId id;
			uint64_t issued;
		} msg = {.issued = h->issued};
		ncclUniqueId id;
		init_config_fn init = (init_config_fn)real_sym("ncclCommInitRankConfig");
		uid_fn uid = (uid_fn)real_sym("ncclGetUniqueId");

		if (!init || !uid) {
			snprintf(why, len, "NCCL lacks ncclCommInitRankConfig or ncclGetUniqueId");
			return -1;
		}
		file_name(name, sizeof(name), h, "id", 0, 0);
		if (h->rank == 0) {
			if (uid(&msg.id) != ncclSuccess ||
			    publish(dir, name, &msg, sizeof(msg)) < 0) {
				snprintf(why, len, "cannot make or write a new unique id (%s/%s)",
					 dir, name);
				return -1;
			}
		} else if (await(dir, name, &msg, sizeof(msg), gk_now() + GK_NCCL_REMAKE_S) !=
			   sizeof(msg)) {
			snprintf(why, len, "rank 0 wrote no new unique id (%s/%s) within %.0f s",
				 dir, name, GK_NCCL_REMAKE_S);
			return -1;
		} else if (msg.issued != h->issued) {
			snprintf(why, len,
				 "rank 0 stopped after collective %llu and this rank after %llu: "
				 "they were restored from checkpoints of different moments",
				 (unsigned long long)msg.issued, (unsigned long long)h->issued);
			return -1;
		}
		id = msg.id;
		r = init(&real, h->nranks, id, h->rank, config);
	}
	if (r == ncclInProgress)
		r = wait_made(real);
	if (r != ncclSuccess || !real) {
		snprintf(why, len, "NCCL could not make it again (NCCL error %d)", r);
		return -1;
	}
	pthread_mutex_lock(&lock);
	h->real = real;
	pthread_mutex_unlock(&lock);
	return 0;
}

/* NCCL waits for every rank of a communicator it makes, for ever: a rank
 * that never comes (its task ended in the checkpoint while this one's was
 * refused, or it was not restored) would hang this process. Ended, with the
 * reason, when making them all takes longer than GK_NCCL_REMAKE_S. */
static uint64_t remade; /* the last generation made again */

static void *remake_watch(void *arg)
{
	uint64_t gen = (uint64_t)(uintptr_t)arg;
	double end = gk_now() + GK_NCCL_REMAKE_S;

	while (__atomic_load_n(&remade, __ATOMIC_ACQUIRE) < gen && gk_now() < end) {
		struct timespec ts = {0, 100000000};

		nanosleep(&ts, NULL);
	}
	if (__atomic_load_n(&remade, __ATOMIC_ACQUIRE) < gen) {
		gk_error("nccl: cannot make a communicator again: the other ranks did not all join "
			 "within %.0f s; stopping the program rather than letting it wait for its "
			 "peers for ever",
			 GK_NCCL_REMAKE_S);
		fflush(NULL);
		_exit(EXIT_FAILURE);
	}
	return NULL;
}

void gk_nccl_resume(void)
{
	char dir[4096], why[512], name[256], path[4400];
	pthread_t watch;
	pthread_attr_t attr;

	if (!taken_down)
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&watch, &attr, remake_watch, (void *)(uintptr_t)generation) != 0)
		gk_warn("nccl: cannot watch the making of the communicators: %s", strerror(errno));
	pthread_attr_destroy(&attr);
	if (rendezvous_dir(dir, sizeof(dir)) < 0)
		dir[0] = 0;
	for (struct gk_nccl_comm *h = comms; h; h = h->next) {
		if (h->destroyed || h->real)
			continue;
		if (remake(h, dir, why, sizeof(why)) < 0) {
			gk_error("nccl: cannot make a communicator (rank %d of %d) again: %s; "
				 "stopping the program rather than letting it wait for its peers "
				 "for ever",
				 h->rank, h->nranks, why);
			fflush(NULL);
			_exit(EXIT_FAILURE);
		}
	}
	/* Every rank joined every communicator: no one reads the files of this
	 * generation any more. */
	clean_own(dir);
	for (struct gk_nccl_comm *h = comms; h; h = h->next)
		if (!h->destroyed && h->rank == 0 && h->how != MADE_SPLIT) {
			file_name(name, sizeof(name), h, "id", 0, 0);
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			unlink(path);
		}
	taken_down = 0;
	__atomic_store_n(&remade, generation, __ATOMIC_RELEASE);
	gk_info("nccl: communicators made again (generation %llu)", (unsigned long long)generation);
	thaw();
}
