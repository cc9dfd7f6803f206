/*
 * streamcap.c - stream captures (cuStreamBeginCapture, cuStreamEndCapture),
 * counted for the gate (gate.h says why a checkpoint must not land inside
 * one). Beginning a capture passes the gate, so that none begins while a
 * checkpoint is written; ending one never waits.
 */
#include "config.h"

#include "core/driver/driver.h"
#include "core/interpose/gate.h"
#include "core/interpose/handlers.h"
#include "core/state/runtime.h"

/* Through a _ptsz entry, the handle 0 is the calling thread's own stream. */
static CUstream per_thread(CUstream s)
{
	return s ? s : CU_STREAM_PER_THREAD;
}

/* The capture is seen before the thread leaves the gate: a checkpoint that
 * closes it afterwards waits for this capture. */
#define BEGIN(stream, expr)                                                                        \
	do {                                                                                       \
		CUresult r_;                                                                       \
		if (!gk_enabled())                                                                 \
			return expr;                                                               \
		gk_gate_enter();                                                                   \
		r_ = expr;                                                                         \
		if (r_ == CUDA_SUCCESS)                                                            \
			gk_gate_capture_begun((void *)(stream));                                   \
		gk_gate_leave();                                                                   \
		return r_;                                                                         \
	} while (0)

/* Whether the capture on STREAM is over after cuStreamEndCapture answered R:
 * a capture that was invalidated, or had an unjoined fork, ends with the
 * error; one ended from the wrong thread goes on. The driver is asked when
 * it can be. */
static int ended(CUstream stream, CUresult r)
{
	CUstreamCaptureStatus st;

	if (gk_real.cuStreamIsCapturing && gk_real.cuStreamIsCapturing(stream, &st) == CUDA_SUCCESS)
		return st == CU_STREAM_CAPTURE_STATUS_NONE;
	return r != CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
}

#define END(stream, expr)                                                                          \
	do {                                                                                       \
		CUresult r_ = expr;                                                                \
		if (gk_enabled() && ended(stream, r_))                                             \
			gk_gate_capture_ended((void *)(stream));                                   \
		return r_;                                                                         \
	} while (0)

CUresult gk_on_cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
	GK_NEED_REAL(cuStreamBeginCapture_v2);
	BEGIN(s, gk_real.cuStreamBeginCapture_v2(s, mode));
}

CUresult gk_on_cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
	GK_NEED_REAL(cuStreamBeginCapture_v2_ptsz);
	BEGIN(per_thread(s), gk_real.cuStreamBeginCapture_v2_ptsz(s, mode));
}

CUresult gk_on_cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
					   const CUgraphEdgeData *data, size_t ndeps,
					   CUstreamCaptureMode mode)
{
	GK_NEED_REAL(cuStreamBeginCaptureToGraph);
	BEGIN(s, gk_real.cuStreamBeginCaptureToGraph(s, g, deps, data, ndeps, mode));
}

CUresult gk_on_cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
						const CUgraphEdgeData *data, size_t ndeps,
						CUstreamCaptureMode mode)
{
	GK_NEED_REAL(cuStreamBeginCaptureToGraph_ptsz);
	BEGIN(per_thread(s),
	      gk_real.cuStreamBeginCaptureToGraph_ptsz(s, g, deps, data, ndeps, mode));
}

CUresult gk_on_cuStreamEndCapture(CUstream s, CUgraph *graph)
{
	GK_NEED_REAL(cuStreamEndCapture);
	END(s, gk_real.cuStreamEndCapture(s, graph));
}

CUresult gk_on_cuStreamEndCapture_ptsz(CUstream s, CUgraph *graph)
{
	GK_NEED_REAL(cuStreamEndCapture_ptsz);
	END(per_thread(s), gk_real.cuStreamEndCapture_ptsz(s, graph));
}
