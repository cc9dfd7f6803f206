/*
 * gate.h - holding application threads back from the driver while a
 * checkpoint is written. Every interposed call that can change device memory
 * passes the gate: on the way in a thread marks itself busy and looks whether
 * the gate is closed; the checkpointing thread closes it and waits until no
 * thread is busy. The way in costs a thread-local store and a load: the full
 * memory barrier that this handshake needs is paid by the closing side only,
 * through membarrier(2), which makes every running thread of the process
 * execute one (the asymmetric-fence technique).
 *
 * Stream captures. A thread that has begun a stream capture (XLA's command
 * buffers, CUDA graphs captured by PyTorch) passes a closed gate: what it
 * launches into the capture only records into a graph, and holding it
 * there would keep the capture open. A capture that is open when the
 * checkpoint drains is lost: the driver refuses cuCtxSynchronize while a
 * stream of the context captures and invalidates the capture, and the
 * program's graph is gone (JAX on an H200: "Failed to destroy CUDA graph",
 * then a failed launch). So beginning a capture passes the gate like a
 * launch, and closing the gate waits until every open capture has ended.
 */
#ifndef GK_GATE_H
#define GK_GATE_H

struct gk_gate_slot {
	int busy;
	int in_use;
	int capturing; /* stream captures this thread began and has not ended */
	struct gk_gate_slot *next;
};

extern int gk_gate_closed;
extern int gk_gate_cheap; /* membarrier available: the way in needs no fence */
extern __thread struct gk_gate_slot *gk_gate_tls __attribute__((tls_model("initial-exec")));

struct gk_gate_slot *gk_gate_register(void);
void gk_gate_wait_open(struct gk_gate_slot *slot);

static inline void gk_gate_enter(void)
{
	struct gk_gate_slot *s = gk_gate_tls;

	if (__builtin_expect(!s, 0))
		s = gk_gate_register();
	for (;;) {
		__atomic_store_n(&s->busy, 1, __ATOMIC_RELAXED);
		if (__builtin_expect(gk_gate_cheap, 1))
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
		else
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (__builtin_expect(!__atomic_load_n(&gk_gate_closed, __ATOMIC_RELAXED), 1))
			return;
		if (__atomic_load_n(&s->capturing, __ATOMIC_RELAXED))
			return; /* its capture must end before the drain */
		gk_gate_wait_open(s);
	}
}

static inline void gk_gate_leave(void)
{
	__atomic_store_n(&gk_gate_tls->busy, 0, __ATOMIC_RELEASE);
}

/* Set up membarrier (once, at start). */
void gk_gate_init(void);

/* How long closing the gate waits for open stream captures to end. Captures
 * last milliseconds (a framework records a few launches); one open for this
 * long is stuck, and the checkpoint is not taken. */
#define GK_GATE_CAPTURE_WAIT_S 5.0

/*
 * Close the gate and wait until no other thread is inside a gated call and
 * no stream capture is open (GK_GATE_CAPTURE_WAIT_S at most). Returns the
 * number of captures still open (0: the device may be drained), with the
 * time waited for captures in *waited and how many were open when the gate
 * closed in *were_open (either may be NULL).
 */
int gk_gate_close(double *waited, int *were_open);

/* The calling thread began a capture on STREAM (a CUstream), or one on
 * STREAM ended (in any thread: a relaxed capture may end elsewhere). */
void gk_gate_capture_begun(void *stream);
void gk_gate_capture_ended(void *stream);

/* Captures open now (the agent's refusal message, tests). */
int gk_gate_captures_open(void);

/* Open it again and wake the threads waiting at it. */
void gk_gate_open(void);

#endif
