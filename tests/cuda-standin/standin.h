/*
 * standin.h - private interface between the files of the host-memory CUDA
 * driver stand-in (libcuda.so.1 for machines without a GPU; see README.md).
 *
 * Every exported entry point is defined with its cuda.h name, so the versioned
 * symbol (cuMemAlloc -> cuMemAlloc_v2, ...) comes from cuda.h's own macros.
 * Internal helpers carry the si_ prefix and are never exported (libcuda.map).
 * Internal code never calls an exported cu* function: a preloaded interposer
 * (the gpuckpt runtime) would otherwise see the stand-in's calls to itself.
 */
#ifndef STANDIN_H
#define STANDIN_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SI_DRIVER_VERSION 13000
#define SI_MAX_DEVICES 16
#define SI_DEFAULT_DEVICES 4
#define SI_DEFAULT_MEMORY (1ULL << 30)
#define SI_GRANULARITY (2ULL << 20)
#define SI_ALLOC_ALIGN 256
#define SI_PITCH_ALIGN 512
#define SI_SM_COUNT 8
#define SI_PRIO_LEAST 0
#define SI_PRIO_GREATEST (-5)

/* ---- trace.c: GPUCKPT_STANDIN_TRACE and diagnostics ---- */

bool si_tracing(void);
CUresult si_traced(const char *fn, CUresult rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void si_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *si_error_name(CUresult rc);

/* Every entry point returns through one of these, so a trace shows each call. */
#define SI_RET(rc) return si_traced(__func__, (rc), "%s", "")
#define SI_RETF(rc, ...) return si_traced(__func__, (rc), __VA_ARGS__)

/* ---- handle.c: validated, reference-counted handles ---- */

enum si_type {
	SI_T_CTX = 1,
	SI_T_STREAM,
	SI_T_EVENT,
	SI_T_MODULE,
	SI_T_FUNCTION,
	SI_T_POOL,
	SI_T_VMM,
	SI_T_ARRAY,
	SI_T_LIBRARY, /* CUlibrary: process-wide, as the driver's */
	SI_T_KERNEL,  /* CUkernel: a launch takes one for a CUfunction */
	SI_T_GRAPH,   /* CUgraph: process-wide, made by a stream capture */
	SI_T_GRAPH_EXEC,
};

struct CUctx_st;

/* First member of every object a handle points at. */
struct si_obj {
	atomic_int refs;
	enum si_type type;
	struct CUctx_st *owner; /* destroyed with this context; NULL: process-wide */
	void (*release)(struct si_obj *obj);
};

void si_obj_init(struct si_obj *obj, enum si_type type, struct CUctx_st *owner,
		 void (*release)(struct si_obj *));
int si_handle_add(struct si_obj *obj);
/* Removes the handle; true if it was there (so exactly one caller owns its reference). */
bool si_handle_del(struct si_obj *obj);
/* A new reference to the object behind handle h if it is live and of that type. */
struct si_obj *si_handle_get(const void *h, enum si_type type);
/* Removes every handle owned by ctx and hands back their objects (with the handle's reference). */
size_t si_handle_take_owned(struct CUctx_st *ctx, enum si_type type, struct si_obj ***out);
/* Every live handle of a type, each with a new reference. */
size_t si_handle_list(enum si_type type, struct si_obj ***out);
void si_obj_ref(struct si_obj *obj);
void si_obj_put(struct si_obj *obj);

/* ---- init.c / device.c: configuration and devices ---- */

struct si_device {
	int phys; /* index among the emulated physical devices */
	char name[96];
	CUuuid uuid;
	size_t total;
	atomic_size_t used;
	int cc_major, cc_minor;
	int pci_bus;
	struct CUctx_st *primary;
	struct CUmemPoolHandle_st *default_pool;
	struct CUmemPoolHandle_st *_Atomic current_pool;
};

struct si_state {
	atomic_bool ready;
	CUresult init_rc;
	int ndev; /* visible devices */
	struct si_device dev[SI_MAX_DEVICES];
};

extern struct si_state si;

/* CUDA_ERROR_NOT_INITIALIZED until cuInit succeeded. */
CUresult si_check_init(void);
void si_ctx_init_primaries(void);
CUresult si_check_device(CUdevice dev);
void si_uuid_format(const CUuuid *uuid, char *buf, size_t len);
/* Charges n bytes against the device's memory: CUDA_ERROR_OUT_OF_MEMORY beyond it. */
CUresult si_charge(int dev, size_t n);
void si_uncharge(int dev, size_t n);

/* ---- peer.c ---- */

/* Whether device dev can reach peer's memory (GPUCKPT_STANDIN_NO_PEER). */
bool si_peer_route(int dev, int peer);

/* ---- context.c ---- */

struct CUstream_st;

struct CUctx_st {
	struct si_obj obj;
	int dev;
	unsigned flags;
	bool primary;
	atomic_bool alive;
	/* A kernel faulted (standin_kernel.h): CUresult that every later call on
	 * this context returns, as the driver's sticky errors; 0 while none. */
	atomic_int sticky;
	int primary_refs; /* primary contexts: retains not yet released (prim_lock) */
	pthread_mutex_t prim_lock;
	/* Bumped at each (re)activation so per-thread streams of an earlier life are not reused. */
	atomic_ullong gen;
	/*
	 * lock orders submissions to the blocking streams of this context, which
	 * the legacy default stream synchronises with, and guards the stream list.
	 */
	pthread_mutex_t lock;
	/* Every stream whose worker still runs, destroyed ones with work left included. */
	struct CUstream_st *streams;
	pthread_cond_t stream_gone; /* a worker left the list */
	struct CUstream_st *legacy;
	struct CUctx_st *next_destroyed; /* kept, see context.c */
	atomic_ullong peers; /* devices whose memory it may access (peer.c), one bit each */
};

/* The calling thread's current context, checked to be usable (alive, and no
 * sticky error). */
CUresult si_ctx_current(struct CUctx_st **out);
/* The context's sticky error, CUDA_SUCCESS while it has none. */
CUresult si_ctx_sticky(struct CUctx_st *ctx);
/* A kernel of ctx faulted: from now on ctx answers rc (the first one stays). */
void si_ctx_fault(struct CUctx_st *ctx, CUresult rc);
/* A context handle, checked to be usable; NULL means the current one. */
CUresult si_ctx_resolve(CUcontext h, struct CUctx_st **out);
CUresult si_ctx_sync(struct CUctx_st *ctx);
/* Finishes the work of every live context, as a device-wide synchronisation does. */
void si_sync_all(void);

/* ---- stream.c: streams, operations and their ordering ---- */

struct si_dep {
	struct CUstream_st *stream; /* holds a reference */
	uint64_t seq;
};

struct si_op {
	struct si_op *next;
	uint64_t seq;
	struct si_dep *deps;
	unsigned ndeps;
	/* Runs on the stream's worker thread, once every dependency completed. */
	void (*run)(struct si_op *op);
	/* Frees the operation (and drops what it holds); NULL: free(op). */
	void (*fini)(struct si_op *op);
};

enum si_stream_kind {
	SI_STREAM_USER,
	SI_STREAM_LEGACY,
	SI_STREAM_PER_THREAD,
};

struct CUstream_st {
	struct si_obj obj;
	struct CUctx_st *ctx;
	unsigned flags;
	int priority;
	enum si_stream_kind kind;
	pthread_mutex_t lock;
	pthread_cond_t work, done;
	struct si_op *head, *tail;
	uint64_t submitted, completed;
	bool stopping;
	pthread_t thread;
	struct CUstream_st *ctx_next, *ctx_prev; /* ctx->lock */
	struct si_capture *capture;		 /* lock; NULL: not capturing (graph.c) */
};

CUresult si_stream_new(struct CUctx_st *ctx, unsigned flags, int priority, enum si_stream_kind kind,
		       struct CUstream_st **out);
/*
 * Refuses further work; the worker finishes what is queued, then leaves the
 * context's stream list and exits. The caller keeps its reference.
 */
void si_stream_stop(struct CUstream_st *s);
/*
 * The stream a handle names, with a reference: NULL is the legacy stream, or
 * the calling thread's per-thread stream for the _ptsz/_ptds entry points.
 */
CUresult si_stream_resolve(CUstream h, bool ptds, struct CUstream_st **out);
/*
 * Queues op and gives its sequence number (op itself may be gone by then);
 * wait (optional) is one more dependency, whose reference it takes.
 */
CUresult si_stream_submit(struct CUstream_st *s, struct si_op *op, struct si_dep *wait,
			  uint64_t *seq);
void si_stream_wait_seq(struct CUstream_st *s, uint64_t seq);
CUresult si_stream_sync(struct CUstream_st *s);
void si_stream_put(struct CUstream_st *s);
/* Drops the calling thread's per-thread streams of an ended context life. */
void si_ptds_forget(struct CUctx_st *ctx);

/* What a context's end frees, area by area (context.c calls them in order). */
void si_stream_ctx_teardown(struct CUctx_st *ctx);
void si_event_ctx_teardown(struct CUctx_st *ctx);
void si_module_ctx_teardown(struct CUctx_st *ctx);
void si_array_ctx_teardown(struct CUctx_st *ctx);

/* Entry points shared by the legacy and per-thread variants. */
CUresult si_api_stream_sync(CUstream h, bool ptds);
CUresult si_api_stream_query(CUstream h, bool ptds);
CUresult si_api_stream_wait_event(CUstream h, CUevent e, unsigned flags, bool ptds);
CUresult si_api_stream_get_ctx(CUstream h, CUcontext *pctx, bool ptds);
CUresult si_api_stream_get_flags(CUstream h, unsigned *flags, bool ptds);
CUresult si_api_stream_get_priority(CUstream h, int *prio, bool ptds);
CUresult si_api_event_record(CUevent e, CUstream h, unsigned flags, bool ptds);

/* ---- event.c ---- */

struct CUevent_st {
	struct si_obj obj;
	unsigned flags;
	pthread_mutex_t lock;
	struct CUstream_st *stream; /* last record, with a reference */
	uint64_t seq;
	uint64_t gen;	   /* records so far */
	uint64_t time_gen; /* record whose time is in time_ns */
	uint64_t time_ns;
};

/* The event's last record as a dependency (stream NULL if never recorded). */
struct si_dep si_event_snapshot(struct CUevent_st *e);

/* ---- registry.c: every range of memory the devices can address ---- */

enum si_mem_kind {
	SI_MEM_DEVICE,	   /* cuMemAlloc, cuMemAllocPitch */
	SI_MEM_POOL,	   /* cuMemAllocAsync, cuMemAllocFromPoolAsync */
	SI_MEM_MANAGED,	   /* cuMemAllocManaged */
	SI_MEM_HOST,	   /* cuMemHostAlloc, cuMemAllocHost */
	SI_MEM_REGISTERED, /* cuMemHostRegister */
	SI_MEM_VMM,	   /* one cuMemMap mapping */
	SI_MEM_GLOBAL,	   /* a module's global, found by cuModuleGetGlobal */
	SI_MEM_IPC,	   /* another process's cuMemAlloc memory, cuIpcOpenMemHandle */
};

/* A module's global declared __managed__ (STANDIN_MANAGED in its module):
 * cuPointerGetAttribute says it is managed memory, as the driver does. */
#define SI_GLOBAL_MANAGED 1u

struct si_range {
	uintptr_t base;
	size_t size;
	enum si_mem_kind kind;
	struct CUctx_st *ctx; /* owner; NULL for pool, VMM and global memory */
	int dev;	      /* visible ordinal, -1 for host memory */
	unsigned long long id;
	unsigned flags; /* host alloc/register or managed attach flags; VMM: handle types;
			 * global: SI_GLOBAL_MANAGED */
	size_t charged; /* bytes charged against dev */
	size_t map_len; /* bytes to munmap for SI_MEM_DEVICE/POOL/MANAGED/HOST */
	void *owner;	/* pool, VMM allocation or module */
	size_t offset;	/* VMM: offset in the allocation */
	unsigned char access[SI_MAX_DEVICES]; /* VMM: CUmemAccess_flags per device */
	/* SI_MEM_DEVICE exported with cuIpcGetMemHandle: the memfd now under its
	 * pages (closed by si_range_free), and the tag in the memfd's name. */
	bool has_fd;
	int fd;
	unsigned long long ipc_tag;
	/* Managed: what cuMemPrefetchAsync and cuMemAdvise last said (a device
	 * ordinal or CU_DEVICE_CPU), for cuMemRangeGetAttribute; has_*: said at all. */
	bool has_prefetch, has_preferred;
	int last_prefetch, preferred;
};

void si_reg_rdlock(void);
void si_reg_wrlock(void);
void si_reg_unlock(void);
/* The range containing p, or NULL (lock held). */
struct si_range *si_reg_find_locked(uintptr_t p);
/* The first range at or after p, or NULL (lock held). */
struct si_range *si_reg_next_locked(uintptr_t p);
/* Adds r (allocated by the caller): CUDA_ERROR_INVALID_VALUE if it overlaps a range. */
CUresult si_reg_insert(struct si_range *r);
/* Removes and returns the range starting exactly at base, of a kind in the mask. */
struct si_range *si_reg_remove(uintptr_t base, unsigned kinds);
/* Removes and returns every range owned by ctx whose kind is in the mask. */
size_t si_reg_take_ctx(struct CUctx_st *ctx, unsigned kinds, struct si_range ***out);
/* Copies the range containing p; false if there is none. */
bool si_reg_lookup(uintptr_t p, struct si_range *out);
/* Whether [p, p+n) lies in memory the devices can read (write) now. */
CUresult si_reg_check(uintptr_t p, size_t n, bool write);
/* Managed memory hints (memory.c), for their _ptsz variants (ptds.c). */
CUresult si_managed_prefetch(CUdeviceptr p, size_t n, CUmemLocation loc, unsigned flags);
CUresult si_managed_attach(CUdeviceptr p, size_t n, unsigned flags);
/* Whether host memory at p is page-locked (cuMemHostAlloc/Register, managed). */
bool si_reg_is_pinned(const void *p, size_t n);
unsigned long long si_reg_new_id(void);
#define SI_KIND(k) (1u << (k))

/* Releases what a range of kinds DEVICE/POOL/MANAGED/HOST holds, and the range. */
void si_range_free(struct si_range *r);
void *si_map_anon(size_t len);
/* GPUCKPT_STANDIN_INTRUDER set: another thread's mmap (a malloc arena, a
 * thread's stack) lands in [p, p + len) the moment the driver gives it back,
 * as it can on a real machine; the stand-in calls this after each munmap of
 * managed memory, which makes that race happen every time. */
void si_intrude(uintptr_t p, size_t len);

/* ---- memory.c / pool.c / vmm.c ---- */

void si_mem_ctx_teardown(struct CUctx_st *ctx);
/* Frees a pool allocation already taken out of the registry. */
void si_pool_range_free(struct si_range *r);
CUresult si_pool_default(int dev, struct CUmemPoolHandle_st **out);
CUresult si_api_alloc_async(CUdeviceptr *dptr, size_t n, CUmemoryPool pool, CUstream h, bool ptds);
CUresult si_api_free_async(CUdeviceptr p, CUstream h, bool ptds);

/* ---- copy.c ---- */

enum si_side {
	SIDE_HOST,   /* the caller's host memory, not checked */
	SIDE_DEVICE, /* must be memory the device can address */
	SIDE_ANY,    /* unified addressing: device memory if the registry knows it */
};

CUresult si_api_copy(uintptr_t dst, uintptr_t src, size_t n, CUstream h, bool async, bool ptds);
CUresult si_api_copy_dir(uintptr_t dst, enum si_side dside, uintptr_t src, enum si_side sside,
			 size_t n, CUstream h, bool async, bool ptds);
CUresult si_api_set(uintptr_t dst, unsigned value, unsigned elem, size_t count, CUstream h,
		    bool async, bool ptds);
CUresult si_api_copy2d(const CUDA_MEMCPY2D *c, CUstream h, bool async, bool ptds);

/* ---- module.c / launch.c ---- */

/* f: a CUfunction, or a CUkernel cast to one (as cudart passes it). */
CUresult si_api_launch(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		       unsigned by, unsigned bz, unsigned shmem, CUstream h, void **params,
		       void **extra, bool ptds);
CUresult si_api_host_func(CUstream h, CUhostFn fn, void *data, bool ptds);
CUresult si_api_add_callback(CUstream h, CUstreamCallback cb, void *data, unsigned flags,
			     bool ptds);

/* ---- graph.c: stream capture and graphs ---- */

/*
 * What a capture records of one operation: a graph launch queues it anew on
 * the launch's stream each time (the graph is immutable once captured).
 */
struct si_node {
	struct si_node *next;
	CUresult (*submit)(struct si_node *n, struct CUstream_st *s);
	void (*fini)(struct si_node *n);
};

/* Whether s is capturing (an invalidated capture counts: it is still open). */
bool si_stream_capturing(struct CUstream_st *s);
/* Appends n to s's capture (taking it, also on failure):
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED if the capture was invalidated,
 * CUDA_ERROR_ILLEGAL_STATE if it ended meanwhile. */
CUresult si_capture_record(struct CUstream_st *s, struct si_node *n);
/* s->lock held: work the capture cannot record, or a synchronisation, met
 * s capturing: the capture is invalidated, as the driver does; the call's
 * error (CUDA_SUCCESS if s does not capture). */
CUresult si_capture_refuse_locked(struct CUstream_st *s);
CUresult si_capture_refuse(struct CUstream_st *s);
/* cuCtxSynchronize: while a stream of ctx captures, invalidates every
 * capture of ctx and answers CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED. */
CUresult si_ctx_refuse_if_capturing(struct CUctx_st *ctx);
void si_capture_free(struct si_capture *c);
CUresult si_api_begin_capture(CUstream h, CUstreamCaptureMode mode, bool ptds);
CUresult si_api_end_capture(CUstream h, CUgraph *graph, bool ptds);
CUresult si_api_is_capturing(CUstream h, CUstreamCaptureStatus *status, bool ptds);
CUresult si_api_graph_launch(CUgraphExec exec, CUstream h, bool ptds);

/* ---- small helpers ---- */

uint64_t si_now_ns(void);

static inline size_t si_align_up(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

#endif
