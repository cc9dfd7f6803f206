#include "config.h"

#include "core/interpose/gate.h"
#include "common/clock.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int gk_gate_closed;
int gk_gate_cheap;
__thread struct gk_gate_slot *gk_gate_tls __attribute__((tls_model("initial-exec")));

static struct gk_gate_slot *slots;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t opened = PTHREAD_COND_INITIALIZER;
static pthread_key_t slot_key;

/* Open stream captures: which thread began each, so that it stops passing
 * a closed gate when its capture ends, wherever that happens. Captures are
 * begun and ended seldom (a framework captures a graph once and launches it
 * many times), so a list under the gate's lock is enough. */
struct capture {
	void *stream;
	struct gk_gate_slot *slot;
	struct capture *next;
};
static struct capture *captures;
static int ncaptures;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

void gk_gate_init(void)
{
	int cmds = membarrier(MEMBARRIER_CMD_QUERY);

	if (cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
		gk_gate_cheap = 1;
}

/* A thread that ends gives its slot back for the next one. */
static void release_slot(void *p)
{
	struct gk_gate_slot *s = p;

	__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&s->in_use, 0, __ATOMIC_RELEASE);
}

static void make_key(void)
{
	pthread_key_create(&slot_key, release_slot);
}

struct gk_gate_slot *gk_gate_register(void)
{
	struct gk_gate_slot *s;

	pthread_once(&key_once, make_key);
	pthread_mutex_lock(&lock);
	/* A slot whose thread ended with a capture open stays out of use:
	 * its next thread would pass a closed gate. */
	for (s = slots; s; s = s->next)
		if (!s->in_use && !__atomic_load_n(&s->capturing, __ATOMIC_RELAXED))
			break;
	if (!s) {
		s = calloc(1, sizeof(*s));
		if (!s)
			abort(); /* cannot track this thread: cannot ever checkpoint safely */
		s->next = slots;
		slots = s;
	}
	s->in_use = 1;
	s->busy = 0;
	pthread_mutex_unlock(&lock);
	gk_gate_tls = s;
	pthread_setspecific(slot_key, s);
	return s;
}

void gk_gate_wait_open(struct gk_gate_slot *s)
{
	__atomic_store_n(&s->busy, 0, __ATOMIC_RELEASE);
	pthread_mutex_lock(&lock);
	while (__atomic_load_n(&gk_gate_closed, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&opened, &lock);
	pthread_mutex_unlock(&lock);
}

/* Wait, with the lock held, until no thread but the caller is inside a
 * gated call. */
static void wait_not_busy(struct gk_gate_slot *self)
{
	struct timespec pause = {0, 50 * 1000};

	for (struct gk_gate_slot *s = slots; s; s = s->next) {
		if (s == self)
			continue;
		/* A thread inside a gated call finishes it (a launch returns at
		 * once; a synchronous copy when its data has moved) and then stops
		 * at the gate on its next call. */
		while (__atomic_load_n(&s->busy, __ATOMIC_ACQUIRE)) {
			pthread_mutex_unlock(&lock);
			nanosleep(&pause, NULL);
			pthread_mutex_lock(&lock);
		}
	}
}

int gk_gate_close(double *waited, int *were_open)
{
	struct gk_gate_slot *self = gk_gate_tls;
	struct timespec pause = {0, 500 * 1000};
	double t0, deadline;
	int open;

	__atomic_store_n(&gk_gate_closed, 1, __ATOMIC_SEQ_CST);
	if (gk_gate_cheap)
		membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&lock);
	wait_not_busy(self);
	/* No capture begins now (beginning one passes the gate); the threads
	 * with one open run on to its end, and then stop at the gate. */
	open = ncaptures;
	if (were_open)
		*were_open = open;
	t0 = gk_now();
	deadline = t0 + GK_GATE_CAPTURE_WAIT_S;
	while (ncaptures && gk_now() < deadline) {
		pthread_mutex_unlock(&lock);
		nanosleep(&pause, NULL);
		pthread_mutex_lock(&lock);
	}
	if (waited)
		*waited = open ? gk_now() - t0 : 0;
	/* A thread whose capture ended may be in a gated call it began while
	 * the capture was open. */
	if (open)
		wait_not_busy(self);
	open = ncaptures;
	pthread_mutex_unlock(&lock);
	return open;
}

void gk_gate_capture_begun(void *stream)
{
	struct capture *c = malloc(sizeof(*c));
	struct gk_gate_slot *s = gk_gate_tls;

	if (!s)
		s = gk_gate_register();
	pthread_mutex_lock(&lock);
	if (c) {
		/* Without memory the capture is not seen, and a checkpoint in
		 * the middle of it invalidates it: the program gets the
		 * driver's error at cuStreamEndCapture. */
		c->stream = stream;
		c->slot = s;
		c->next = captures;
		captures = c;
		ncaptures++;
		__atomic_add_fetch(&s->capturing, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&lock);
}

void gk_gate_capture_ended(void *stream)
{
	struct capture **pp, **found = NULL, *c = NULL;

	/* The calling thread's own capture first: CU_STREAM_PER_THREAD names
	 * a different stream in each thread. */
	pthread_mutex_lock(&lock);
	for (pp = &captures; *pp; pp = &(*pp)->next)
		if ((*pp)->stream == stream) {
			if ((*pp)->slot == gk_gate_tls || !found)
				found = pp;
			if ((*pp)->slot == gk_gate_tls)
				break;
		}
	if (found) {
		c = *found;
		*found = c->next;
		ncaptures--;
		__atomic_sub_fetch(&c->slot->capturing, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&lock);
	free(c);
}

int gk_gate_captures_open(void)
{
	int n;

	pthread_mutex_lock(&lock);
	n = ncaptures;
	pthread_mutex_unlock(&lock);
	return n;
}

void gk_gate_open(void)
{
	pthread_mutex_lock(&lock);
	__atomic_store_n(&gk_gate_closed, 0, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&opened);
	pthread_mutex_unlock(&lock);
}
