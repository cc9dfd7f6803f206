#include "config.h"

#include "core/capture/writer.h"
#include "common/error.h"
#include "core/driver/driver.h"
#include "image/image.h"
#include "common/log.h"
#include "core/state/runtime.h"
#include "core/capture/snapshot.h"
#include "core/capture/staging.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum task_kind {
	TASK_WRITE,
	TASK_GROW,
	TASK_STAGING,
};

struct task {
	enum task_kind kind;
	void (*run)(void *arg); /* WRITE: the rest of a checkpoint (pipeline.c) */
	void *arg;
	uint64_t target; /* GROW: bytes; STAGING: bytes per buffer */
	unsigned count;  /* STAGING: buffers */
	CUcontext ctx;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t idle;
	int busy; /* atomic */
	int growing;
	char what[64];
} W = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, ""};

int gk_writer_busy(void)
{
	return __atomic_load_n(&W.busy, __ATOMIC_ACQUIRE);
}

static void done(void)
{
	pthread_mutex_lock(&W.lock);
	W.what[0] = 0;
	W.growing = 0;
	__atomic_store_n(&W.busy, 0, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&W.idle);
	pthread_mutex_unlock(&W.lock);
}

static void *thread_main(void *arg)
{
	struct task *t = arg;

	gk_driver_relax();
	if (t->kind == TASK_WRITE)
		t->run(t->arg);
	else if (t->kind == TASK_GROW)
		gk_snapshot_grow(t->target, t->ctx);
	else
		gk_staging_fill(t->ctx, t->count, t->target);
	free(t);
	done();
	return NULL;
}

static void after_fork_child(void)
{
	/* Only the forking thread lives on in the child: nothing is in flight
	 * there, and its locks are fresh. */
	pthread_mutex_init(&W.lock, NULL);
	pthread_cond_init(&W.idle, NULL);
	W.busy = 0;
	W.growing = 0;
	W.what[0] = 0;
}

static void writer_at_exit(void);

static int start(struct task *t, const char *what)
{
	static int registered;
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t tid;
	int ret;

	if (!__atomic_exchange_n(&registered, 1, __ATOMIC_ACQ_REL)) {
		char hex[65];

		pthread_atfork(NULL, NULL, after_fork_child);
		/*
		 * The wait at exit must come before libcrypto's cleanup, which it
		 * registers with atexit() when it first initialises itself, and
		 * which frees what the commit's signature needs. atexit handlers
		 * run newest first: so libcrypto is made to initialise now (one
		 * digest), and ours registered after it. (A destructor would run
		 * after every atexit handler: too late.)
		 */
		gk_sha256_hex("", 0, hex);
		atexit(writer_at_exit);
	}
	pthread_mutex_lock(&W.lock);
	__atomic_store_n(&W.busy, 1, __ATOMIC_RELEASE);
	W.growing = t->kind == TASK_GROW;
	snprintf(W.what, sizeof(W.what), "%s", what);
	pthread_mutex_unlock(&W.lock);
	/* The writer must never take the program's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&tid, &attr, thread_main, t);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		done();
		return -ret;
	}
	return 0;
}

int gk_writer_submit(const char *what, void (*run)(void *arg), void *arg)
{
	struct task *t = calloc(1, sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
	t->kind = TASK_WRITE;
	t->run = run;
	t->arg = arg;
	ret = start(t, what);
	if (ret < 0)
		free(t);
	return ret;
}

void gk_writer_grow(uint64_t target, CUcontext ctx)
{
	struct task *t = calloc(1, sizeof(*t));

	if (!t)
		return;
	t->kind = TASK_GROW;
	t->target = target;
	t->ctx = ctx;
	if (start(t, "host memory for snapshots is being pinned") < 0)
		free(t);
}

void gk_writer_staging(unsigned count, uint64_t size, CUcontext ctx)
{
	struct task *t = calloc(1, sizeof(*t));

	if (!t)
		return;
	t->kind = TASK_STAGING;
	t->target = size;
	t->count = count;
	t->ctx = ctx;
	if (start(t, "the copy threads' staging buffers are being pinned") < 0)
		free(t);
}

void gk_writer_wait(void)
{
	pthread_mutex_lock(&W.lock);
	if (W.growing)
		gk_snapshot_stop_growing();
	while (__atomic_load_n(&W.busy, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&W.idle, &W.lock);
	pthread_mutex_unlock(&W.lock);
}

int gk_writer_what(char *buf, size_t len)
{
	int writing;

	pthread_mutex_lock(&W.lock);
	snprintf(buf, len, "%s", W.what);
	writing = W.busy && !W.growing;
	pthread_mutex_unlock(&W.lock);
	return writing;
}

/* A program that ends while a checkpoint is written in the background lets
 * it finish: it was told the checkpoint was taken. */
static void writer_at_exit(void)
{
	char what[64];

	if (!gk_writer_busy())
		return;
	if (gk_writer_what(what, sizeof(what)))
		gk_notice("checkpoint: the program ends while %s is written in the background; "
			  "waiting for it",
			  what);
	gk_writer_wait();
}
