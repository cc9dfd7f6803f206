/*
 * stream.c - streams that really run asynchronously: one worker thread per
 * stream runs its operations in order, each once the operations it depends on
 * (in other streams) completed.
 *
 * Every operation gets the stream's next sequence number; "operation n of
 * stream s completed" is s->completed >= n, which is all an event record, a
 * cross-stream wait or a synchronisation needs. Dependencies only ever point
 * at operations submitted earlier, so they cannot form a cycle.
 *
 * The legacy default stream (NULL, CU_STREAM_LEGACY) waits for all work
 * submitted before to the context's blocking streams, and blocking streams
 * wait for the legacy stream's earlier work; CU_STREAM_NON_BLOCKING streams
 * take no part. Submissions to blocking streams are serialised by ctx->lock so
 * that two threads submitting at once cannot both miss each other's work.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "standin.h"

static void stream_release(struct si_obj *obj)
{
	struct CUstream_st *s = (struct CUstream_st *)obj;

	si_capture_free(s->capture);
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->done);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void si_stream_put(struct CUstream_st *s)
{
	if (s)
		si_obj_put(&s->obj);
}

static bool is_blocking(const struct CUstream_st *s)
{
	return !(s->flags & CU_STREAM_NON_BLOCKING);
}

void si_stream_wait_seq(struct CUstream_st *s, uint64_t seq)
{
	pthread_mutex_lock(&s->lock);
	while (s->completed < seq)
		pthread_cond_wait(&s->done, &s->lock);
	pthread_mutex_unlock(&s->lock);
}

static void op_free(struct si_op *op)
{
	for (unsigned i = 0; i < op->ndeps; i++)
		si_stream_put(op->deps[i].stream);
	free(op->deps);
	op->deps = NULL;
	op->ndeps = 0;
	if (op->fini)
		op->fini(op);
	else
		free(op);
}

static void *stream_worker(void *arg)
{
	struct CUstream_st *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		struct si_op *op;

		while (!s->head && !s->stopping)
			pthread_cond_wait(&s->work, &s->lock);
		if (!s->head)
			break;
		/* The operation stays at the head while it runs: the stream is busy. */
		op = s->head;
		pthread_mutex_unlock(&s->lock);
		for (unsigned i = 0; i < op->ndeps; i++)
			si_stream_wait_seq(op->deps[i].stream, op->deps[i].seq);
		op->run(op);
		pthread_mutex_lock(&s->lock);
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		s->completed = op->seq;
		pthread_cond_broadcast(&s->done);
		pthread_mutex_unlock(&s->lock);
		op_free(op);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	pthread_mutex_lock(&s->ctx->lock);
	if (s->ctx_prev)
		s->ctx_prev->ctx_next = s->ctx_next;
	else
		s->ctx->streams = s->ctx_next;
	if (s->ctx_next)
		s->ctx_next->ctx_prev = s->ctx_prev;
	s->ctx_next = s->ctx_prev = NULL;
	pthread_cond_broadcast(&s->ctx->stream_gone);
	pthread_mutex_unlock(&s->ctx->lock);
	si_stream_put(s);
	return NULL;
}

CUresult si_stream_new(struct CUctx_st *ctx, unsigned flags, int priority, enum si_stream_kind kind,
		       struct CUstream_st **out)
{
	struct CUstream_st *s = calloc(1, sizeof(*s));
	pthread_attr_t attr;
	int err;

	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	si_obj_init(&s->obj, SI_T_STREAM, ctx, stream_release);
	s->ctx = ctx;
	s->flags = flags;
	s->priority = priority;
	s->kind = kind;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->done, NULL);
	/* One reference for the caller, one for the worker thread. */
	atomic_store(&s->obj.refs, 2);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&s->thread, &attr, stream_worker, s);
	pthread_attr_destroy(&attr);
	if (err) {
		si_msg("stream create: cannot start a worker thread: %s", strerror(err));
		atomic_store(&s->obj.refs, 1);
		si_stream_put(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&ctx->lock);
	s->ctx_next = ctx->streams;
	if (ctx->streams)
		ctx->streams->ctx_prev = s;
	ctx->streams = s;
	pthread_mutex_unlock(&ctx->lock);
	*out = s;
	return CUDA_SUCCESS;
}

void si_stream_stop(struct CUstream_st *s)
{
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_signal(&s->work);
	pthread_mutex_unlock(&s->lock);
}

/* Adds "wait for what t has submitted so far" unless t has nothing pending. */
static int add_pending_dep(struct si_op *op, unsigned *cap, struct CUstream_st *t)
{
	uint64_t seq;
	bool idle;

	pthread_mutex_lock(&t->lock);
	seq = t->submitted;
	idle = t->completed == seq;
	pthread_mutex_unlock(&t->lock);
	if (idle)
		return 0;
	if (op->ndeps == *cap) {
		unsigned ncap = *cap ? *cap * 2 : 4;
		struct si_dep *nd = realloc(op->deps, ncap * sizeof(*nd));

		if (!nd)
			return -ENOMEM;
		op->deps = nd;
		*cap = ncap;
	}
	si_obj_ref(&t->obj);
	op->deps[op->ndeps].stream = t;
	op->deps[op->ndeps].seq = seq;
	op->ndeps++;
	return 0;
}

CUresult si_stream_submit(struct CUstream_st *s, struct si_op *op, struct si_dep *wait,
			  uint64_t *seq)
{
	struct CUctx_st *ctx = s->ctx;
	bool blocking = is_blocking(s);
	unsigned cap = 0;
	CUresult rc = CUDA_SUCCESS;

	op->next = NULL;
	op->deps = NULL;
	op->ndeps = 0;
	if (wait && wait->stream) {
		op->deps = malloc(4 * sizeof(*op->deps));
		if (!op->deps)
			return CUDA_ERROR_OUT_OF_MEMORY;
		cap = 4;
		op->deps[0] = *wait;
		op->ndeps = 1;
		wait->stream = NULL; /* its reference now belongs to op */
	}
	if (blocking)
		pthread_mutex_lock(&ctx->lock);
	if (blocking && s->kind == SI_STREAM_LEGACY) {
		for (struct CUstream_st *t = ctx->streams; t; t = t->ctx_next)
			if (t != s && is_blocking(t) && add_pending_dep(op, &cap, t))
				rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else if (blocking && ctx->legacy && ctx->legacy != s) {
		if (add_pending_dep(op, &cap, ctx->legacy))
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (rc)
		goto out_unlock;
	pthread_mutex_lock(&s->lock);
	if (s->stopping) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else if (s->capture) {
		/* What reaches here was not recorded (graph.c): the capture cannot take it. */
		rc = si_capture_refuse_locked(s);
	} else {
		op->seq = ++s->submitted;
		if (seq)
			*seq = op->seq;
		if (s->tail)
			s->tail->next = op;
		else
			s->head = op;
		s->tail = op;
		pthread_cond_signal(&s->work);
	}
	pthread_mutex_unlock(&s->lock);
out_unlock:
	if (blocking)
		pthread_mutex_unlock(&ctx->lock);
	if (rc) {
		for (unsigned i = 0; i < op->ndeps; i++)
			si_stream_put(op->deps[i].stream);
		free(op->deps);
		op->deps = NULL;
		op->ndeps = 0;
	}
	return rc;
}

static void op_nop(struct si_op *op)
{
	(void)op;
}

/* An empty operation, so that the legacy stream's implicit waits take part. */
static CUresult submit_marker(struct CUstream_st *s, struct si_dep *wait, uint64_t *seq)
{
	struct si_op *op = calloc(1, sizeof(*op));
	CUresult rc;

	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->run = op_nop;
	rc = si_stream_submit(s, op, wait, seq);
	if (rc)
		free(op);
	return rc;
}

CUresult si_stream_sync(struct CUstream_st *s)
{
	uint64_t seq;
	CUresult rc;

	if (s->kind == SI_STREAM_LEGACY) {
		rc = submit_marker(s, NULL, &seq);
		if (rc)
			return rc;
	} else {
		pthread_mutex_lock(&s->lock);
		seq = s->submitted;
		pthread_mutex_unlock(&s->lock);
	}
	si_stream_wait_seq(s, seq);
	return CUDA_SUCCESS;
}

static bool stream_idle(struct CUstream_st *s)
{
	bool idle;

	pthread_mutex_lock(&s->lock);
	idle = s->completed == s->submitted;
	pthread_mutex_unlock(&s->lock);
	return idle;
}

/* ---- per-thread default streams ---- */

#define PTDS_MAX 16

struct ptds_table {
	int n;
	struct {
		struct CUctx_st *ctx;
		unsigned long long gen;
		struct CUstream_st *s; /* holds a reference */
	} e[PTDS_MAX];
};

static pthread_key_t ptds_key;
static pthread_once_t ptds_once = PTHREAD_ONCE_INIT;

static void ptds_drop(struct ptds_table *t, int i)
{
	si_stream_stop(t->e[i].s);
	si_stream_put(t->e[i].s);
	t->e[i] = t->e[--t->n];
}

/* A thread's per-thread streams end with it, after finishing their work. */
static void ptds_thread_exit(void *p)
{
	struct ptds_table *t = p;

	while (t->n)
		ptds_drop(t, 0);
	free(t);
}

static void ptds_key_create(void)
{
	pthread_key_create(&ptds_key, ptds_thread_exit);
}

static struct ptds_table *ptds_table(bool create)
{
	struct ptds_table *t;

	pthread_once(&ptds_once, ptds_key_create);
	t = pthread_getspecific(ptds_key);
	if (!t && create) {
		t = calloc(1, sizeof(*t));
		if (t && pthread_setspecific(ptds_key, t)) {
			free(t);
			t = NULL;
		}
	}
	return t;
}

void si_ptds_forget(struct CUctx_st *ctx)
{
	struct ptds_table *t = ptds_table(false);

	for (int i = 0; t && i < t->n;)
		if (t->e[i].ctx == ctx)
			ptds_drop(t, i);
		else
			i++;
}

static CUresult ptds_get(struct CUctx_st *ctx, struct CUstream_st **out)
{
	struct ptds_table *t = ptds_table(true);
	unsigned long long gen = atomic_load(&ctx->gen);
	struct CUstream_st *s;
	CUresult rc;

	if (!t)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (int i = 0; i < t->n; i++) {
		if (t->e[i].ctx == ctx && t->e[i].gen == gen) {
			si_obj_ref(&t->e[i].s->obj);
			*out = t->e[i].s;
			return CUDA_SUCCESS;
		}
	}
	/* Streams of contexts destroyed or reset since (by any thread) are dead weight. */
	for (int i = 0; i < t->n;) {
		struct CUctx_st *c = t->e[i].ctx;

		if (!atomic_load(&c->alive) || atomic_load(&c->gen) != t->e[i].gen)
			ptds_drop(t, i);
		else
			i++;
	}
	if (t->n == PTDS_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = si_stream_new(ctx, 0, SI_PRIO_LEAST, SI_STREAM_PER_THREAD, &s);
	if (rc)
		return rc;
	t->e[t->n].ctx = ctx;
	t->e[t->n].gen = gen;
	t->e[t->n].s = s;
	t->n++;
	si_obj_ref(&s->obj);
	*out = s;
	return CUDA_SUCCESS;
}

/* ---- handles ---- */

CUresult si_stream_resolve(CUstream h, bool ptds, struct CUstream_st **out)
{
	struct CUctx_st *ctx;
	struct si_obj *obj;
	CUresult rc;

	if (!h)
		h = ptds ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
	if (h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD) {
		rc = si_ctx_current(&ctx);
		if (rc)
			return rc;
		if (h == CU_STREAM_PER_THREAD)
			return ptds_get(ctx, out);
		pthread_mutex_lock(&ctx->lock);
		*out = ctx->legacy;
		if (*out)
			si_obj_ref(&(*out)->obj);
		pthread_mutex_unlock(&ctx->lock);
		return *out ? CUDA_SUCCESS : CUDA_ERROR_CONTEXT_IS_DESTROYED;
	}
	rc = si_check_init();
	if (rc)
		return rc;
	obj = si_handle_get(h, SI_T_STREAM);
	if (!obj)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct CUstream_st *)obj;
	/* A stream of a broken context takes no more work (context.c). */
	rc = si_ctx_sticky((*out)->ctx);
	if (rc) {
		si_obj_put(obj);
		*out = NULL;
	}
	return rc;
}

void si_stream_ctx_teardown(struct CUctx_st *ctx)
{
	struct CUstream_st *s;
	struct si_obj **objs;
	size_t n = si_handle_take_owned(ctx, SI_T_STREAM, &objs);

	for (size_t i = 0; i < n; i++) {
		si_stream_stop((struct CUstream_st *)objs[i]);
		si_obj_put(objs[i]);
	}
	free(objs);
	/*
	 * The legacy stream and per-thread streams (other threads' too; those
	 * threads free them) stop here; then wait for every worker to be gone.
	 */
	pthread_mutex_lock(&ctx->lock);
	for (s = ctx->streams; s; s = s->ctx_next)
		si_stream_stop(s);
	while (ctx->streams)
		pthread_cond_wait(&ctx->stream_gone, &ctx->lock);
	pthread_mutex_unlock(&ctx->lock);
	pthread_mutex_lock(&ctx->lock);
	s = ctx->legacy;
	ctx->legacy = NULL;
	pthread_mutex_unlock(&ctx->lock);
	si_stream_put(s);
}

/* ---- entry points ---- */

static CUresult stream_create(CUstream *ph, unsigned flags, int priority)
{
	struct CUctx_st *ctx;
	struct CUstream_st *s;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		return rc;
	if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	/* Out-of-range priorities are clamped, as the real driver does. */
	if (priority > SI_PRIO_LEAST)
		priority = SI_PRIO_LEAST;
	if (priority < SI_PRIO_GREATEST)
		priority = SI_PRIO_GREATEST;
	rc = si_stream_new(ctx, flags, priority, SI_STREAM_USER, &s);
	if (rc)
		return rc;
	if (si_handle_add(&s->obj)) {
		si_stream_stop(s);
		si_stream_put(s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*ph = s;
	return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	CUresult rc = stream_create(phStream, Flags, SI_PRIO_LEAST);

	SI_RETF(rc, "flags=%#x -> %p", Flags, rc ? NULL : (void *)*phStream);
}

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	CUresult rc = stream_create(phStream, flags, priority);

	SI_RETF(rc, "flags=%#x prio=%d -> %p", flags, priority, rc ? NULL : (void *)*phStream);
}

CUresult cuStreamDestroy(CUstream hStream)
{
	struct si_obj *obj;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%p", (void *)hStream);
	obj = si_handle_get(hStream, SI_T_STREAM);
	if (!obj)
		SI_RETF(CUDA_ERROR_INVALID_HANDLE, "%p", (void *)hStream);
	/* Queued work still runs; the stream goes away once it is done. */
	if (si_handle_del(obj)) {
		si_stream_stop((struct CUstream_st *)obj);
		si_obj_put(obj);
	}
	si_obj_put(obj);
	SI_RETF(CUDA_SUCCESS, "%p", (void *)hStream);
}

CUresult si_api_stream_sync(CUstream h, bool ptds)
{
	struct CUstream_st *s;
	CUresult rc = si_stream_resolve(h, ptds, &s);

	if (rc)
		return rc;
	/* Synchronising a capturing stream ends its capture's usefulness, as on a GPU. */
	rc = si_capture_refuse(s);
	if (!rc)
		rc = si_stream_sync(s);
	/* A kernel that faulted while this waited. */
	if (!rc)
		rc = si_ctx_sticky(s->ctx);
	si_stream_put(s);
	return rc;
}

CUresult si_api_stream_query(CUstream h, bool ptds)
{
	struct CUstream_st *s;
	CUresult rc = si_stream_resolve(h, ptds, &s);
	bool idle;

	if (rc)
		return rc;
	rc = si_capture_refuse(s);
	if (rc) {
		si_stream_put(s);
		return rc;
	}
	idle = stream_idle(s);
	if (idle && s->kind == SI_STREAM_LEGACY) {
		/* The legacy stream is done only when the blocking streams it waits for are. */
		pthread_mutex_lock(&s->ctx->lock);
		for (struct CUstream_st *t = s->ctx->streams; t && idle; t = t->ctx_next)
			if (is_blocking(t))
				idle = stream_idle(t);
		pthread_mutex_unlock(&s->ctx->lock);
	}
	si_stream_put(s);
	return idle ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult si_api_stream_wait_event(CUstream h, CUevent e, unsigned flags, bool ptds)
{
	struct CUstream_st *s;
	struct si_obj *ev;
	struct si_dep dep;
	CUresult rc = si_stream_resolve(h, ptds, &s);

	if (rc)
		return rc;
	ev = si_handle_get(e, SI_T_EVENT);
	if (!ev) {
		rc = CUDA_ERROR_INVALID_HANDLE;
		goto out_stream;
	}
	if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out_event;
	}
	/* The event as recorded now: a later record does not change this wait. */
	dep = si_event_snapshot((struct CUevent_st *)ev);
	rc = submit_marker(s, &dep, NULL);
	if (dep.stream) /* not handed over */
		si_stream_put(dep.stream);
out_event:
	si_obj_put(ev);
out_stream:
	si_stream_put(s);
	return rc;
}

CUresult si_api_stream_get_ctx(CUstream h, CUcontext *pctx, bool ptds)
{
	struct CUstream_st *s;
	CUresult rc;

	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	rc = si_stream_resolve(h, ptds, &s);
	if (rc)
		return rc;
	*pctx = s->ctx;
	si_stream_put(s);
	return CUDA_SUCCESS;
}

CUresult si_api_stream_get_flags(CUstream h, unsigned *flags, bool ptds)
{
	struct CUstream_st *s;
	CUresult rc;

	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	rc = si_stream_resolve(h, ptds, &s);
	if (rc)
		return rc;
	*flags = s->flags;
	si_stream_put(s);
	return CUDA_SUCCESS;
}

CUresult si_api_stream_get_priority(CUstream h, int *prio, bool ptds)
{
	struct CUstream_st *s;
	CUresult rc;

	if (!prio)
		return CUDA_ERROR_INVALID_VALUE;
	rc = si_stream_resolve(h, ptds, &s);
	if (rc)
		return rc;
	*prio = s->priority;
	si_stream_put(s);
	return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	SI_RETF(si_api_stream_sync(hStream, false), "%p", (void *)hStream);
}

CUresult cuStreamQuery(CUstream hStream)
{
	SI_RETF(si_api_stream_query(hStream, false), "%p", (void *)hStream);
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	SI_RETF(si_api_stream_wait_event(hStream, hEvent, Flags, false), "%p, %p, %#x",
		(void *)hStream, (void *)hEvent, Flags);
}

CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx)
{
	SI_RETF(si_api_stream_get_ctx(hStream, pctx, false), "%p", (void *)hStream);
}

CUresult cuStreamGetCtx_v2(CUstream hStream, CUcontext *pCtx, CUgreenCtx *pGreenCtx)
{
	CUresult rc = si_api_stream_get_ctx(hStream, pCtx, false);

	/* There are no green contexts here. */
	if (!rc && pGreenCtx)
		*pGreenCtx = NULL;
	SI_RETF(rc, "%p", (void *)hStream);
}

CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags)
{
	SI_RETF(si_api_stream_get_flags(hStream, flags, false), "%p", (void *)hStream);
}

CUresult cuStreamGetPriority(CUstream hStream, int *priority)
{
	SI_RETF(si_api_stream_get_priority(hStream, priority, false), "%p", (void *)hStream);
}
