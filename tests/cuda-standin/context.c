/*
 * context.c - contexts: created ones, one primary context per device, and the
 * calling thread's stack of current contexts.
 *
 * A destroyed context is never freed: another thread may still have it
 * current, and must get CUDA_ERROR_CONTEXT_IS_DESTROYED from it rather than a
 * dangling pointer. A primary context keeps its handle across its lives
 * (retain after the last release, reset), as it does with the real driver.
 */
#include <stdlib.h>

#include "standin.h"

#define CTX_STACK_MAX 64

static __thread struct CUctx_st *ctx_stack[CTX_STACK_MAX];
static __thread int ctx_depth;

/* Destroyed contexts, kept for the threads that may still have them current. */
static pthread_mutex_t destroyed_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUctx_st *destroyed;

static void ctx_never_freed(struct si_obj *obj)
{
	(void)obj;
}

static void ctx_init(struct CUctx_st *ctx, int dev, unsigned flags, bool primary)
{
	si_obj_init(&ctx->obj, SI_T_CTX, NULL, ctx_never_freed);
	ctx->dev = dev;
	ctx->flags = flags;
	ctx->primary = primary;
	atomic_init(&ctx->alive, false);
	atomic_init(&ctx->gen, 0);
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_cond_init(&ctx->stream_gone, NULL);
	pthread_mutex_init(&ctx->prim_lock, NULL);
}

/* Gives the context a new life: a legacy default stream and nothing else. */
static CUresult ctx_setup(struct CUctx_st *ctx)
{
	CUresult rc;

	atomic_fetch_add(&ctx->gen, 1);
	atomic_store(&ctx->sticky, CUDA_SUCCESS);
	atomic_store(&ctx->peers, 0);
	rc = si_stream_new(ctx, 0, SI_PRIO_LEAST, SI_STREAM_LEGACY, &ctx->legacy);
	if (rc)
		return rc;
	atomic_store(&ctx->alive, true);
	return CUDA_SUCCESS;
}

/* Ends the context's life: finishes its work and frees what it owns. */
static void ctx_teardown(struct CUctx_st *ctx)
{
	si_ctx_sync(ctx);
	atomic_store(&ctx->alive, false);
	si_stream_ctx_teardown(ctx);
	si_event_ctx_teardown(ctx);
	si_module_ctx_teardown(ctx);
	si_array_ctx_teardown(ctx);
	si_mem_ctx_teardown(ctx);
	si_ptds_forget(ctx);
}

void si_ctx_init_primaries(void)
{
	for (int d = 0; d < si.ndev; d++) {
		struct CUctx_st *ctx = calloc(1, sizeof(*ctx));

		/* Out of memory this early: cuDevicePrimaryCtxRetain reports it. */
		if (!ctx)
			continue;
		ctx_init(ctx, d, 0, true);
		if (si_handle_add(&ctx->obj)) {
			free(ctx);
			continue;
		}
		si.dev[d].primary = ctx;
	}
}

CUresult si_ctx_sticky(struct CUctx_st *ctx)
{
	return (CUresult)atomic_load(&ctx->sticky);
}

void si_ctx_fault(struct CUctx_st *ctx, CUresult rc)
{
	int none = CUDA_SUCCESS;

	atomic_compare_exchange_strong(&ctx->sticky, &none, (int)rc);
}

static CUresult ctx_alive(struct CUctx_st *ctx)
{
	if (atomic_load(&ctx->alive))
		return CUDA_SUCCESS;
	/* A released primary context is inactive rather than destroyed. */
	return ctx->primary ? CUDA_ERROR_INVALID_CONTEXT : CUDA_ERROR_CONTEXT_IS_DESTROYED;
}

static CUresult ctx_usable(struct CUctx_st *ctx)
{
	CUresult rc = ctx_alive(ctx);

	return rc ? rc : si_ctx_sticky(ctx);
}

/* The current context, alive; a sticky error does not matter (questions
 * about the context itself, which a broken context still answers). */
static CUresult ctx_current_alive(struct CUctx_st **out)
{
	CUresult rc = si_check_init();

	if (rc)
		return rc;
	if (ctx_depth == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = ctx_stack[ctx_depth - 1];
	return ctx_alive(*out);
}

CUresult si_ctx_current(struct CUctx_st **out)
{
	CUresult rc = ctx_current_alive(out);

	return rc ? rc : si_ctx_sticky(*out);
}

/* A context handle that names a context (destroyed or not). */
static CUresult ctx_lookup(CUcontext h, struct CUctx_st **out)
{
	struct si_obj *obj = si_handle_get(h, SI_T_CTX);

	if (!obj)
		return CUDA_ERROR_INVALID_CONTEXT;
	si_obj_put(obj);
	*out = (struct CUctx_st *)obj;
	return CUDA_SUCCESS;
}

CUresult si_ctx_resolve(CUcontext h, struct CUctx_st **out)
{
	CUresult rc;

	if (!h)
		return si_ctx_current(out);
	rc = si_check_init();
	if (rc)
		return rc;
	rc = ctx_lookup(h, out);
	return rc ? rc : ctx_usable(*out);
}

CUresult si_ctx_sync(struct CUctx_st *ctx)
{
	struct CUstream_st **list = NULL;
	size_t n = 0, cap = 0;

	pthread_mutex_lock(&ctx->lock);
	for (struct CUstream_st *s = ctx->streams; s; s = s->ctx_next)
		cap++;
	list = cap ? malloc(cap * sizeof(*list)) : NULL;
	if (cap && !list) {
		pthread_mutex_unlock(&ctx->lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (struct CUstream_st *s = ctx->streams; s; s = s->ctx_next) {
		si_obj_ref(&s->obj);
		list[n++] = s;
	}
	pthread_mutex_unlock(&ctx->lock);
	for (size_t i = 0; i < n; i++) {
		uint64_t seq;

		pthread_mutex_lock(&list[i]->lock);
		seq = list[i]->submitted;
		pthread_mutex_unlock(&list[i]->lock);
		si_stream_wait_seq(list[i], seq);
		si_stream_put(list[i]);
	}
	free(list);
	return CUDA_SUCCESS;
}

void si_sync_all(void)
{
	struct si_obj **list;
	size_t n = si_handle_list(SI_T_CTX, &list);

	for (size_t i = 0; i < n; i++) {
		struct CUctx_st *ctx = (struct CUctx_st *)list[i];

		if (atomic_load(&ctx->alive))
			si_ctx_sync(ctx);
		si_obj_put(list[i]);
	}
	free(list);
}

static CUresult check_flags(unsigned flags)
{
	return flags & ~(unsigned)CU_CTX_FLAGS_MASK ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

static CUresult ctx_push(struct CUctx_st *ctx)
{
	if (ctx_depth == CTX_STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_stack[ctx_depth++] = ctx;
	return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
	struct CUctx_st *ctx;
	CUresult rc = si_check_device(dev);

	if (rc)
		return rc;
	if (!pctx || check_flags(flags))
		return CUDA_ERROR_INVALID_VALUE;
	if (ctx_depth == CTX_STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_init(ctx, dev, flags, false);
	rc = ctx_setup(ctx);
	if (rc)
		goto out_free;
	if (si_handle_add(&ctx->obj)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_teardown;
	}
	ctx_push(ctx);
	*pctx = ctx;
	return CUDA_SUCCESS;

out_teardown:
	ctx_teardown(ctx);
out_free:
	free(ctx);
	return rc;
}

CUresult cuCtxCreate(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
		     CUdevice dev)
{
	CUresult rc;

	if (ctxCreateParams && ctxCreateParams->numExecAffinityParams > 0)
		SI_RETF(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "dev=%d", dev);
	if (ctxCreateParams && ctxCreateParams->cigParams)
		SI_RETF(CUDA_ERROR_NOT_SUPPORTED, "dev=%d (CUDA in graphics contexts)", dev);
	rc = ctx_create(pctx, flags, dev);
	SI_RETF(rc, "flags=%#x dev=%d -> %p", flags, dev, rc ? NULL : (void *)*pctx);
}

/* The CUDA 3.2 to 12.4 entry points that programs built with older headers call. */
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	CUresult rc = ctx_create(pctx, flags, dev);

	SI_RETF(rc, "flags=%#x dev=%d -> %p", flags, dev, rc ? NULL : (void *)*pctx);
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
			unsigned int flags, CUdevice dev);
CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
			unsigned int flags, CUdevice dev)
{
	CUresult rc;

	if (numParams > 0)
		SI_RETF(CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "dev=%d", dev);
	rc = ctx_create(pctx, flags, dev);
	SI_RETF(rc, "flags=%#x dev=%d -> %p", flags, dev, rc ? NULL : (void *)*pctx);
}

CUresult cuCtxDestroy(CUcontext ctx)
{
	struct CUctx_st *c;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%p", (void *)ctx);
	rc = ctx_lookup(ctx, &c);
	/* Primary contexts end through cuDevicePrimaryCtxRelease/Reset only. */
	if (rc || c->primary)
		SI_RETF(CUDA_ERROR_INVALID_CONTEXT, "%p", (void *)ctx);
	if (!si_handle_del(&c->obj))
		SI_RETF(CUDA_ERROR_INVALID_CONTEXT, "%p (destroyed meanwhile)", (void *)ctx);
	ctx_teardown(c);
	pthread_mutex_lock(&destroyed_lock);
	c->next_destroyed = destroyed;
	destroyed = c;
	pthread_mutex_unlock(&destroyed_lock);
	if (ctx_depth > 0 && ctx_stack[ctx_depth - 1] == c)
		ctx_depth--;
	SI_RETF(CUDA_SUCCESS, "%p", (void *)ctx);
}

CUresult cuCtxPushCurrent(CUcontext ctx)
{
	struct CUctx_st *c;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%p", (void *)ctx);
	rc = ctx_lookup(ctx, &c);
	if (rc)
		SI_RETF(rc, "%p", (void *)ctx);
	SI_RETF(ctx_push(c), "%p", (void *)ctx);
}

CUresult cuCtxPopCurrent(CUcontext *pctx)
{
	CUresult rc = si_check_init();

	if (rc)
		SI_RET(rc);
	if (ctx_depth == 0)
		SI_RET(CUDA_ERROR_INVALID_CONTEXT);
	ctx_depth--;
	if (pctx)
		*pctx = ctx_stack[ctx_depth];
	SI_RETF(CUDA_SUCCESS, "-> %p", (void *)ctx_stack[ctx_depth]);
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	struct CUctx_st *c;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%p", (void *)ctx);
	if (!ctx) {
		if (ctx_depth > 0)
			ctx_depth--;
		SI_RETF(CUDA_SUCCESS, "NULL");
	}
	rc = ctx_lookup(ctx, &c);
	if (rc)
		SI_RETF(rc, "%p", (void *)ctx);
	if (ctx_depth == 0)
		ctx_depth = 1;
	ctx_stack[ctx_depth - 1] = c;
	SI_RETF(CUDA_SUCCESS, "%p", (void *)ctx);
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult rc = si_check_init();

	if (rc)
		SI_RET(rc);
	if (!pctx)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	*pctx = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
	SI_RETF(CUDA_SUCCESS, "-> %p", (void *)*pctx);
}

CUresult cuCtxGetDevice(CUdevice *device)
{
	struct CUctx_st *ctx;
	CUresult rc = ctx_current_alive(&ctx);

	if (rc)
		SI_RET(rc);
	if (!device)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	*device = ctx->dev;
	SI_RETF(CUDA_SUCCESS, "-> %d", ctx->dev);
}

/* CUDA 13.0: the device of a given context (NULL: the current one). */
CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	struct CUctx_st *c;
	CUresult rc = si_ctx_resolve(ctx, &c);

	if (rc)
		SI_RETF(rc, "%p", (void *)ctx);
	if (!device)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%p", (void *)ctx);
	*device = c->dev;
	SI_RETF(CUDA_SUCCESS, "%p -> %d", (void *)ctx, c->dev);
}

CUresult cuCtxGetFlags(unsigned int *flags)
{
	struct CUctx_st *ctx;
	CUresult rc = ctx_current_alive(&ctx);

	if (rc)
		SI_RET(rc);
	if (!flags)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	*flags = ctx->flags;
	SI_RETF(CUDA_SUCCESS, "-> %#x", ctx->flags);
}

CUresult cuCtxSynchronize(void)
{
	struct CUctx_st *ctx;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RET(rc);
	/* The driver refuses while a stream of the context captures, and the
	 * captures are lost (graph.c). */
	rc = si_ctx_refuse_if_capturing(ctx);
	if (!rc)
		rc = si_ctx_sync(ctx);
	/* A kernel that faulted while this waited. */
	SI_RETF(rc ? rc : si_ctx_sticky(ctx), "ctx=%p", (void *)ctx);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	struct CUctx_st *c;
	CUresult rc = si_ctx_resolve(ctx, &c);

	if (rc)
		SI_RETF(rc, "%p", (void *)ctx);
	rc = si_ctx_refuse_if_capturing(c);
	if (!rc)
		rc = si_ctx_sync(c);
	SI_RETF(rc ? rc : si_ctx_sticky(c), "%p", (void *)ctx);
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	struct CUctx_st *ctx;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RET(rc);
	if (leastPriority)
		*leastPriority = SI_PRIO_LEAST;
	if (greatestPriority)
		*greatestPriority = SI_PRIO_GREATEST;
	SI_RET(CUDA_SUCCESS);
}

static CUresult primary_of(CUdevice dev, struct CUctx_st **out)
{
	CUresult rc = si_check_device(dev);

	if (rc)
		return rc;
	*out = si.dev[dev].primary;
	return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	struct CUctx_st *ctx;
	CUresult rc = primary_of(dev, &ctx);

	if (rc)
		SI_RETF(rc, "dev=%d", dev);
	if (!pctx)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "dev=%d", dev);
	pthread_mutex_lock(&ctx->prim_lock);
	if (ctx->primary_refs == 0)
		rc = ctx_setup(ctx);
	if (!rc) {
		ctx->primary_refs++;
		*pctx = ctx;
	}
	pthread_mutex_unlock(&ctx->prim_lock);
	SI_RETF(rc, "dev=%d -> %p", dev, (void *)ctx);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	struct CUctx_st *ctx;
	CUresult rc = primary_of(dev, &ctx);

	if (rc)
		SI_RETF(rc, "dev=%d", dev);
	pthread_mutex_lock(&ctx->prim_lock);
	if (ctx->primary_refs == 0)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else if (--ctx->primary_refs == 0)
		ctx_teardown(ctx);
	pthread_mutex_unlock(&ctx->prim_lock);
	SI_RETF(rc, "dev=%d", dev);
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	struct CUctx_st *ctx;
	CUresult rc = primary_of(dev, &ctx);

	if (rc)
		SI_RETF(rc, "dev=%d", dev);
	pthread_mutex_lock(&ctx->prim_lock);
	/* Reset frees everything but keeps the retains: the context lives on, empty. */
	if (ctx->primary_refs > 0) {
		ctx_teardown(ctx);
		rc = ctx_setup(ctx);
	}
	pthread_mutex_unlock(&ctx->prim_lock);
	SI_RETF(rc, "dev=%d", dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	struct CUctx_st *ctx;
	CUresult rc = primary_of(dev, &ctx);

	if (rc)
		SI_RETF(rc, "dev=%d", dev);
	if (!flags || !active)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "dev=%d", dev);
	pthread_mutex_lock(&ctx->prim_lock);
	*flags = ctx->flags;
	*active = ctx->primary_refs > 0;
	pthread_mutex_unlock(&ctx->prim_lock);
	SI_RETF(CUDA_SUCCESS, "dev=%d -> flags=%#x active=%d", dev, *flags, *active);
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	struct CUctx_st *ctx;
	CUresult rc = primary_of(dev, &ctx);

	if (rc)
		SI_RETF(rc, "dev=%d", dev);
	if (check_flags(flags))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "dev=%d flags=%#x", dev, flags);
	pthread_mutex_lock(&ctx->prim_lock);
	ctx->flags = flags;
	pthread_mutex_unlock(&ctx->prim_lock);
	SI_RETF(CUDA_SUCCESS, "dev=%d flags=%#x", dev, flags);
}
