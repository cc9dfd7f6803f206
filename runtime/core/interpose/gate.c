#include "config.h"

#include "core/interpose/gate.h"

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
	for (s = slots; s; s = s->next)
		if (!s->in_use)
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

void gk_gate_close(void)
{
	struct gk_gate_slot *self = gk_gate_tls, *s;
	struct timespec pause = {0, 50 * 1000};

	__atomic_store_n(&gk_gate_closed, 1, __ATOMIC_SEQ_CST);
	if (gk_gate_cheap)
		membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&lock);
	for (s = slots; s; s = s->next) {
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
	pthread_mutex_unlock(&lock);
}

void gk_gate_open(void)
{
	pthread_mutex_lock(&lock);
	__atomic_store_n(&gk_gate_closed, 0, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&opened);
	pthread_mutex_unlock(&lock);
}
