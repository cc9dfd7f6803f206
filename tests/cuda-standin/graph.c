/*
 * graph.c - stream capture and the graphs it makes, as far as a framework
 * that captures launches into a CUDA graph ("command buffers": XLA, PyTorch's
 * CUDA graphs) needs them: cuStreamBeginCapture, cuStreamEndCapture,
 * cuStreamIsCapturing, cuGraphInstantiateWithFlags, cuGraphLaunch and the
 * destroys.
 *
 * While a stream captures, a kernel launch (or an asynchronous memset) on it
 * is recorded as a node of the capture's graph instead of running; other
 * work on it is refused with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and
 * invalidates the capture, as the driver does with what it cannot capture.
 * The rules that matter to a checkpoint follow the driver: cuCtxSynchronize
 * while a stream of the context captures fails and invalidates every capture
 * of the context, cuStreamSynchronize or cuStreamQuery of a capturing stream
 * that capture; an invalidated capture ends with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph. A graph is a list of
 * nodes in capture order, launched in that order on one stream.
 */
#include <stdlib.h>

#include "standin.h"

struct si_capture {
	CUstreamCaptureMode mode;
	pthread_t thread; /* began it: the one that must end it, unless relaxed */
	bool invalidated;
	struct CUgraph_st *graph; /* not a handle until the capture ends */
};

struct CUgraph_st {
	struct si_obj obj;
	struct si_node *head, *tail;
	size_t nnodes;
};

struct CUgraphExec_st {
	struct si_obj obj;
	struct CUgraph_st *graph; /* a reference: a graph does not change once captured */
};

/* The calling thread's mode for unsafe calls (cuThreadExchangeStreamCaptureMode);
 * only remembered: the stand-in prohibits no call for it. */
static _Thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static void graph_release(struct si_obj *obj)
{
	struct CUgraph_st *g = (struct CUgraph_st *)obj;

	while (g->head) {
		struct si_node *n = g->head;

		g->head = n->next;
		n->fini(n);
	}
	free(g);
}

static void exec_release(struct si_obj *obj)
{
	struct CUgraphExec_st *x = (struct CUgraphExec_st *)obj;

	si_obj_put(&x->graph->obj);
	free(x);
}

void si_capture_free(struct si_capture *c)
{
	if (!c)
		return;
	si_obj_put(&c->graph->obj);
	free(c);
}

bool si_stream_capturing(struct CUstream_st *s)
{
	bool capturing;

	pthread_mutex_lock(&s->lock);
	capturing = s->capture != NULL;
	pthread_mutex_unlock(&s->lock);
	return capturing;
}

CUresult si_capture_record(struct CUstream_st *s, struct si_node *n)
{
	CUresult rc = CUDA_SUCCESS;

	n->next = NULL;
	pthread_mutex_lock(&s->lock);
	if (!s->capture) {
		rc = CUDA_ERROR_ILLEGAL_STATE;
	} else if (s->capture->invalidated) {
		rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	} else {
		struct CUgraph_st *g = s->capture->graph;

		if (g->tail)
			g->tail->next = n;
		else
			g->head = n;
		g->tail = n;
		g->nnodes++;
	}
	pthread_mutex_unlock(&s->lock);
	if (rc)
		n->fini(n);
	return rc;
}

CUresult si_capture_refuse_locked(struct CUstream_st *s)
{
	if (!s->capture)
		return CUDA_SUCCESS;
	if (s->capture->invalidated)
		return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	s->capture->invalidated = true;
	if (si_tracing())
		si_msg("stream %p: capture invalidated by an operation it cannot capture",
		       (void *)s);
	return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUresult si_capture_refuse(struct CUstream_st *s)
{
	CUresult rc;

	pthread_mutex_lock(&s->lock);
	rc = si_capture_refuse_locked(s);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

CUresult si_ctx_refuse_if_capturing(struct CUctx_st *ctx)
{
	bool any = false;

	pthread_mutex_lock(&ctx->lock);
	for (struct CUstream_st *s = ctx->streams; s; s = s->ctx_next) {
		pthread_mutex_lock(&s->lock);
		if (s->capture) {
			any = true;
			s->capture->invalidated = true;
		}
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (any && si_tracing())
		si_msg("context %p: synchronised while capturing: every capture invalidated",
		       (void *)ctx);
	return any ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

static bool valid_mode(CUstreamCaptureMode mode)
{
	return mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
	       mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
	       mode == CU_STREAM_CAPTURE_MODE_RELAXED;
}

CUresult si_api_begin_capture(CUstream h, CUstreamCaptureMode mode, bool ptds)
{
	struct CUstream_st *s;
	struct si_capture *c;
	CUresult rc;

	if (!valid_mode(mode))
		return CUDA_ERROR_INVALID_VALUE;
	rc = si_stream_resolve(h, ptds, &s);
	if (rc)
		return rc;
	if (s->kind == SI_STREAM_LEGACY) {
		rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		goto out_stream;
	}
	c = calloc(1, sizeof(*c));
	if (c)
		c->graph = calloc(1, sizeof(*c->graph));
	if (!c || !c->graph) {
		free(c);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_stream;
	}
	si_obj_init(&c->graph->obj, SI_T_GRAPH, NULL, graph_release);
	c->mode = mode;
	c->thread = pthread_self();
	pthread_mutex_lock(&s->lock);
	if (s->capture)
		rc = CUDA_ERROR_ILLEGAL_STATE;
	else
		s->capture = c;
	pthread_mutex_unlock(&s->lock);
	if (rc)
		si_capture_free(c);
out_stream:
	si_stream_put(s);
	return rc;
}

CUresult si_api_end_capture(CUstream h, CUgraph *graph, bool ptds)
{
	struct CUstream_st *s;
	struct si_capture *c = NULL;
	CUresult rc;

	if (!graph)
		return CUDA_ERROR_INVALID_VALUE;
	rc = si_stream_resolve(h, ptds, &s);
	if (rc)
		return rc;
	pthread_mutex_lock(&s->lock);
	if (!s->capture)
		rc = CUDA_ERROR_ILLEGAL_STATE;
	else if (s->capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED &&
		 !pthread_equal(s->capture->thread, pthread_self()))
		rc = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
	else
		c = s->capture, s->capture = NULL;
	pthread_mutex_unlock(&s->lock);
	si_stream_put(s);
	if (!c)
		return rc;
	*graph = NULL;
	if (c->invalidated) {
		rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	} else if (si_handle_add(&c->graph->obj)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		*graph = c->graph;
		c->graph = NULL; /* the handle's reference now */
	}
	if (c->graph)
		si_obj_put(&c->graph->obj);
	free(c);
	return rc;
}

CUresult si_api_is_capturing(CUstream h, CUstreamCaptureStatus *status, bool ptds)
{
	struct CUstream_st *s;
	CUresult rc;

	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	rc = si_stream_resolve(h, ptds, &s);
	if (rc)
		return rc;
	*status = CU_STREAM_CAPTURE_STATUS_NONE;
	if (s->kind == SI_STREAM_LEGACY) {
		/* The legacy stream would wait for a capturing blocking stream. */
		pthread_mutex_lock(&s->ctx->lock);
		for (struct CUstream_st *t = s->ctx->streams; t && !rc; t = t->ctx_next)
			if (!(t->flags & CU_STREAM_NON_BLOCKING) && si_stream_capturing(t))
				rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
		pthread_mutex_unlock(&s->ctx->lock);
	} else {
		pthread_mutex_lock(&s->lock);
		if (s->capture)
			*status = s->capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
							  : CU_STREAM_CAPTURE_STATUS_ACTIVE;
		pthread_mutex_unlock(&s->lock);
	}
	si_stream_put(s);
	return rc;
}

CUresult si_api_graph_launch(CUgraphExec exec, CUstream h, bool ptds)
{
	struct CUgraphExec_st *x;
	struct CUstream_st *s;
	struct si_obj *obj;
	CUresult rc = si_check_init();

	if (rc)
		return rc;
	obj = si_handle_get(exec, SI_T_GRAPH_EXEC);
	if (!obj)
		return CUDA_ERROR_INVALID_HANDLE;
	x = (struct CUgraphExec_st *)obj;
	rc = si_stream_resolve(h, ptds, &s);
	if (rc)
		goto out_exec;
	/* A graph launched into a capture would be a child graph: not emulated. */
	rc = si_capture_refuse(s);
	for (struct si_node *n = x->graph->head; n && !rc; n = n->next)
		rc = n->submit(n, s);
	si_stream_put(s);
out_exec:
	si_obj_put(obj);
	return rc;
}

/* ---- entry points (the _ptsz variants are in ptds.c) ---- */

CUresult cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
	SI_RETF(si_api_begin_capture(hStream, mode, false), "%p mode=%d", (void *)hStream,
		(int)mode);
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	CUresult rc = si_api_end_capture(hStream, phGraph, false);

	SI_RETF(rc, "%p -> %p", (void *)hStream, rc ? NULL : (void *)*phGraph);
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	CUresult rc = si_api_is_capturing(hStream, captureStatus, false);

	SI_RETF(rc, "%p -> %d", (void *)hStream, rc ? -1 : (int)*captureStatus);
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	CUstreamCaptureMode old;
	CUresult rc = si_check_init();

	if (rc)
		SI_RET(rc);
	if (!mode || !valid_mode(*mode))
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	old = thread_mode;
	thread_mode = *mode;
	*mode = old;
	SI_RETF(CUDA_SUCCESS, "%d -> %d", (int)old, (int)thread_mode);
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
				     unsigned long long flags)
{
	struct CUgraphExec_st *x;
	struct si_obj *g;
	CUresult rc = si_check_init();

	if (rc)
		SI_RET(rc);
	if (!phGraphExec)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	/* Auto-free-on-launch, upload, device launch, priority: nothing to do here. */
	if (flags & ~(unsigned long long)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
					  CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
					  CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
					  CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "flags=%#llx", flags);
	g = si_handle_get(hGraph, SI_T_GRAPH);
	if (!g)
		SI_RETF(CUDA_ERROR_INVALID_HANDLE, "%p", (void *)hGraph);
	x = calloc(1, sizeof(*x));
	if (!x) {
		si_obj_put(g);
		SI_RET(CUDA_ERROR_OUT_OF_MEMORY);
	}
	si_obj_init(&x->obj, SI_T_GRAPH_EXEC, NULL, exec_release);
	x->graph = (struct CUgraph_st *)g; /* the reference taken above */
	if (si_handle_add(&x->obj)) {
		si_obj_put(&x->obj);
		SI_RET(CUDA_ERROR_OUT_OF_MEMORY);
	}
	*phGraphExec = x;
	SI_RETF(CUDA_SUCCESS, "%p (%zu nodes) -> %p", (void *)hGraph, x->graph->nnodes, (void *)x);
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	SI_RETF(si_api_graph_launch(hGraphExec, hStream, false), "%p stream=%p", (void *)hGraphExec,
		(void *)hStream);
}

/* Destroys the handle h of kind type; what is queued of it still runs. */
static CUresult destroy_handle(const void *h, enum si_type type)
{
	struct si_obj *obj;
	CUresult rc = si_check_init();

	if (rc)
		return rc;
	obj = si_handle_get(h, type);
	if (!obj)
		return CUDA_ERROR_INVALID_HANDLE;
	if (si_handle_del(obj))
		si_obj_put(obj);
	si_obj_put(obj);
	return CUDA_SUCCESS;
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	SI_RETF(destroy_handle(hGraphExec, SI_T_GRAPH_EXEC), "%p", (void *)hGraphExec);
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
	SI_RETF(destroy_handle(hGraph, SI_T_GRAPH), "%p", (void *)hGraph);
}
