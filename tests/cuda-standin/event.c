/*
 * event.c - events. A record is an operation of its stream that stamps the
 * time when it runs; the event then stands for "that operation completed".
 * An event never recorded counts as completed, as with the real driver.
 */
#include <stdlib.h>

#include "standin.h"

struct record_op {
	struct si_op op;
	struct CUevent_st *event; /* holds a reference */
	uint64_t gen;
};

static void event_release(struct si_obj *obj)
{
	struct CUevent_st *e = (struct CUevent_st *)obj;

	si_stream_put(e->stream);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

struct si_dep si_event_snapshot(struct CUevent_st *e)
{
	struct si_dep dep;

	pthread_mutex_lock(&e->lock);
	dep.stream = e->stream;
	dep.seq = e->seq;
	if (dep.stream)
		si_obj_ref(&dep.stream->obj);
	pthread_mutex_unlock(&e->lock);
	return dep;
}

static void record_run(struct si_op *op)
{
	struct record_op *r = (struct record_op *)op;
	struct CUevent_st *e = r->event;
	uint64_t now = si_now_ns();

	pthread_mutex_lock(&e->lock);
	/* Records on different streams may complete out of order: keep the latest. */
	if (r->gen > e->time_gen) {
		e->time_gen = r->gen;
		e->time_ns = now;
	}
	pthread_mutex_unlock(&e->lock);
}

static void record_fini(struct si_op *op)
{
	struct record_op *r = (struct record_op *)op;

	si_obj_put(&r->event->obj);
	free(r);
}

static CUresult event_get(CUevent h, struct CUevent_st **out)
{
	CUresult rc = si_check_init();
	struct si_obj *obj;

	if (rc)
		return rc;
	obj = si_handle_get(h, SI_T_EVENT);
	if (!obj)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct CUevent_st *)obj;
	return CUDA_SUCCESS;
}

static bool dep_done(struct si_dep *dep)
{
	bool done = true;

	if (dep->stream) {
		pthread_mutex_lock(&dep->stream->lock);
		done = dep->stream->completed >= dep->seq;
		pthread_mutex_unlock(&dep->stream->lock);
		si_stream_put(dep->stream);
	}
	return done;
}

void si_event_ctx_teardown(struct CUctx_st *ctx)
{
	struct si_obj **objs;
	size_t n = si_handle_take_owned(ctx, SI_T_EVENT, &objs);

	for (size_t i = 0; i < n; i++)
		si_obj_put(objs[i]);
	free(objs);
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	const unsigned valid =
	    CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
	struct CUctx_st *ctx;
	struct CUevent_st *e;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RETF(rc, "flags=%#x", Flags);
	if (!phEvent || (Flags & ~valid) ||
	    ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING)))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "flags=%#x", Flags);
	e = calloc(1, sizeof(*e));
	if (!e)
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "flags=%#x", Flags);
	si_obj_init(&e->obj, SI_T_EVENT, ctx, event_release);
	e->flags = Flags;
	pthread_mutex_init(&e->lock, NULL);
	if (si_handle_add(&e->obj)) {
		si_obj_put(&e->obj);
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "flags=%#x", Flags);
	}
	*phEvent = e;
	SI_RETF(CUDA_SUCCESS, "flags=%#x -> %p", Flags, (void *)e);
}

CUresult cuEventDestroy(CUevent hEvent)
{
	struct CUevent_st *e;
	CUresult rc = event_get(hEvent, &e);

	if (rc)
		SI_RETF(rc, "%p", (void *)hEvent);
	/* A record still queued keeps the event alive until it ran. */
	if (si_handle_del(&e->obj))
		si_obj_put(&e->obj);
	si_obj_put(&e->obj);
	SI_RETF(CUDA_SUCCESS, "%p", (void *)hEvent);
}

CUresult si_api_event_record(CUevent h, CUstream hs, unsigned flags, bool ptds)
{
	struct CUevent_st *e;
	struct CUstream_st *s;
	struct record_op *r;
	uint64_t seq;
	CUresult rc = event_get(h, &e);

	if (rc)
		return rc;
	if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out_event;
	}
	rc = si_stream_resolve(hs, ptds, &s);
	if (rc)
		goto out_event;
	r = calloc(1, sizeof(*r));
	if (!r) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_stream;
	}
	r->op.run = record_run;
	r->op.fini = record_fini;
	r->event = e;
	si_obj_ref(&e->obj);
	pthread_mutex_lock(&e->lock);
	r->gen = e->gen + 1;
	rc = si_stream_submit(s, &r->op, NULL, &seq);
	if (!rc) {
		e->gen = r->gen;
		si_stream_put(e->stream);
		si_obj_ref(&s->obj);
		e->stream = s;
		e->seq = seq;
	}
	pthread_mutex_unlock(&e->lock);
	if (rc) {
		si_obj_put(&e->obj);
		free(r);
	}
out_stream:
	si_stream_put(s);
out_event:
	si_obj_put(&e->obj);
	return rc;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	SI_RETF(si_api_event_record(hEvent, hStream, 0, false), "%p, %p", (void *)hEvent,
		(void *)hStream);
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	SI_RETF(si_api_event_record(hEvent, hStream, flags, false), "%p, %p, %#x", (void *)hEvent,
		(void *)hStream, flags);
}

CUresult cuEventQuery(CUevent hEvent)
{
	struct CUevent_st *e;
	struct si_dep dep;
	CUresult rc = event_get(hEvent, &e);

	if (rc)
		SI_RETF(rc, "%p", (void *)hEvent);
	dep = si_event_snapshot(e);
	si_obj_put(&e->obj);
	SI_RETF(dep_done(&dep) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY, "%p", (void *)hEvent);
}

CUresult cuEventSynchronize(CUevent hEvent)
{
	struct CUevent_st *e;
	struct si_dep dep;
	CUresult rc = event_get(hEvent, &e);

	if (rc)
		SI_RETF(rc, "%p", (void *)hEvent);
	dep = si_event_snapshot(e);
	si_obj_put(&e->obj);
	if (dep.stream) {
		si_stream_wait_seq(dep.stream, dep.seq);
		/* A kernel before the event faulted: the context is broken. */
		rc = si_ctx_sticky(dep.stream->ctx);
		si_stream_put(dep.stream);
	}
	SI_RETF(rc, "%p", (void *)hEvent);
}

static CUresult event_time(CUevent h, uint64_t *ns)
{
	struct CUevent_st *e;
	struct si_dep dep;
	uint64_t gen, time_gen;
	CUresult rc = event_get(h, &e);

	if (rc)
		return rc;
	dep = si_event_snapshot(e);
	pthread_mutex_lock(&e->lock);
	gen = e->gen;
	time_gen = e->time_gen;
	*ns = e->time_ns;
	rc = e->flags & CU_EVENT_DISABLE_TIMING ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
	pthread_mutex_unlock(&e->lock);
	si_obj_put(&e->obj);
	if (!dep_done(&dep) && !rc)
		rc = CUDA_ERROR_NOT_READY;
	if (!rc && gen == 0)
		rc = CUDA_ERROR_INVALID_HANDLE; /* never recorded */
	else if (!rc && time_gen != gen)
		rc = CUDA_ERROR_NOT_READY; /* completed an instant ago; time not stamped yet */
	return rc;
}

static CUresult elapsed(float *ms, CUevent start, CUevent end)
{
	uint64_t t0, t1;
	CUresult rc;

	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	rc = event_time(start, &t0);
	if (rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_READY) {
		CUresult rc1 = event_time(end, &t1);

		/* A handle error outranks "not ready". */
		if (rc1 != CUDA_SUCCESS && rc1 != CUDA_ERROR_NOT_READY)
			return rc1;
		if (rc == CUDA_SUCCESS)
			rc = rc1;
	}
	if (rc)
		return rc;
	*ms = (float)((double)((int64_t)(t1 - t0)) / 1e6);
	return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	SI_RETF(elapsed(pMilliseconds, hStart, hEnd), "%p, %p", (void *)hStart, (void *)hEnd);
}

/* The CUDA 2.0 symbol, same behaviour here. */
CUresult cuEventElapsedTime_v1(float *pMilliseconds, CUevent hStart,
			       CUevent hEnd) __asm__("cuEventElapsedTime");
CUresult cuEventElapsedTime_v1(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	SI_RETF(elapsed(pMilliseconds, hStart, hEnd), "%p, %p", (void *)hStart, (void *)hEnd);
}
