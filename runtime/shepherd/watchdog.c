/*
 * watchdog.c - a deadline for calls that may never return (shepherd.h).
 *
 * The driver's checkpoint calls of a restore (GetRestoreThreadId, GetState,
 * Restore, Unlock) wait for the restored process to answer. A process that
 * cannot (stopped, or never to answer) held `gpuckpt-shepherd restore`, and
 * with it the job, in one read of a pipe for as long as anyone waited: the
 * torch case of make check-gpu-frameworks did that twice on an H200. A thread
 * of the watchdog's own waits for the deadline: if the calls are not done
 * by then it says which one was under way, calls `expire` (the restore kills
 * the tree, which ends whatever the driver waits on), and if the call still
 * has not returned `grace` seconds later, it ends the shepherd, saying so.
 * The checkpoint is left as it was.
 */
#include "config.h"

#include "common/clock.h"
#include "common/log.h"
#include "shepherd/shepherd.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void at(struct timespec *ts, double secs)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += (time_t)secs;
	ts->tv_nsec += (long)((secs - (double)(time_t)secs) * 1e9);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Waits until done or the time; 1 when done. */
static int wait_done(struct gk_watchdog *w, double secs)
{
	struct timespec ts;
	int done;

	at(&ts, secs);
	pthread_mutex_lock(&w->mu);
	while (!w->done && pthread_cond_timedwait(&w->cv, &w->mu, &ts) != ETIMEDOUT)
		;
	done = w->done;
	pthread_mutex_unlock(&w->mu);
	return done;
}

static void *watch(void *arg)
{
	struct gk_watchdog *w = arg;
	char what[sizeof(w->what)];

	if (wait_done(w, w->secs))
		return NULL;
	pthread_mutex_lock(&w->mu);
	w->fired = 1;
	memcpy(what, w->what, sizeof(what));
	pthread_mutex_unlock(&w->mu);
	gk_error("%s: %s did not return within %g s; %s", w->name, what, w->secs,
		 w->on_expire);
	if (w->expire)
		w->expire(w->arg);
	if (wait_done(w, w->grace))
		return NULL;
	gk_error("%s: %s still had not returned %g s later; gpuckpt-shepherd ends here "
		 "(status 1), the checkpoint as it was",
		 w->name, what, w->grace);
	_exit(1);
}

int gk_watchdog_start(struct gk_watchdog *w, const char *name, double secs, double grace,
		      void (*expire)(void *), void *arg, const char *on_expire)
{
	int ret;

	memset(w, 0, sizeof(*w));
	snprintf(w->name, sizeof(w->name), "%s", name);
	snprintf(w->what, sizeof(w->what), "a call");
	snprintf(w->on_expire, sizeof(w->on_expire), "%s", on_expire);
	w->secs = secs;
	w->grace = grace;
	w->expire = expire;
	w->arg = arg;
	pthread_mutex_init(&w->mu, NULL);
	pthread_condattr_init(&w->ca);
	pthread_condattr_setclock(&w->ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &w->ca);
	ret = pthread_create(&w->thread, NULL, watch, w);
	if (ret) {
		pthread_cond_destroy(&w->cv);
		pthread_condattr_destroy(&w->ca);
		pthread_mutex_destroy(&w->mu);
		return -ret;
	}
	w->running = 1;
	return 0;
}

void gk_watchdog_note(struct gk_watchdog *w, const char *fmt, ...)
{
	va_list ap;

	if (!w->running)
		return;
	pthread_mutex_lock(&w->mu);
	va_start(ap, fmt);
	vsnprintf(w->what, sizeof(w->what), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&w->mu);
}

int gk_watchdog_stop(struct gk_watchdog *w)
{
	int fired;

	if (!w->running)
		return 0;
	pthread_mutex_lock(&w->mu);
	w->done = 1;
	fired = w->fired;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	pthread_cond_destroy(&w->cv);
	pthread_condattr_destroy(&w->ca);
	pthread_mutex_destroy(&w->mu);
	w->running = 0;
	return fired;
}
