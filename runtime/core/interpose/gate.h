/*
 * gate.h - holding application threads back from the driver while a
 * checkpoint is written. Every interposed call that can change device memory
 * passes the gate: on the way in a thread marks itself busy and looks whether
 * the gate is closed; the checkpointing thread closes it and waits until no
 * thread is busy. The way in costs a thread-local store and a load: the full
 * memory barrier that this handshake needs is paid by the closing side only,
 * through membarrier(2), which makes every running thread of the process
 * execute one (the asymmetric-fence technique).
 */
#ifndef GK_GATE_H
#define GK_GATE_H

struct gk_gate_slot {
	int busy;
	int in_use;
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
		gk_gate_wait_open(s);
	}
}

static inline void gk_gate_leave(void)
{
	__atomic_store_n(&gk_gate_tls->busy, 0, __ATOMIC_RELEASE);
}

/* Set up membarrier (once, at start). */
void gk_gate_init(void);

/* Close the gate and wait until no other thread is inside a gated call. */
void gk_gate_close(void);

/* Open it again and wake the threads waiting at it. */
void gk_gate_open(void);

#endif
