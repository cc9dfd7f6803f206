#include "config.h"

#include "core/control/trigger.h"
#include "core/driver/driver.h"
#include "common/log.h"
#include "core/state/kstop.h"
#include "core/state/runtime.h"
#include "common/export.h"
#include "common/shepherd_protocol.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

/* The program's own disposition of each signal the runtime has taken over. */
static struct sigaction app_action[NSIG];
static uint64_t taken; /* bit n: signal n is the runtime's */
static int action_of[NSIG];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int as_usual[NSIG]; /* the next delivery bypasses checkpointing */
static const struct gk_trigger_taker *taker; /* set once its thread runs */
static int follower; /* a child forked without exec (gk_triggers_follow) */

static sigaction_fn real_sigaction(void)
{
	static sigaction_fn fn;

	if (!fn)
		fn = (sigaction_fn)gk_real_dlsym(RTLD_NEXT, "sigaction");
	return fn;
}

static int is_taken(int sig)
{
	return sig > 0 && sig < 64 && (__atomic_load_n(&taken, __ATOMIC_ACQUIRE) >> sig) & 1;
}

const char *gk_signal_name(int signo)
{
	switch (signo) {
	case SIGTERM:
		return "SIGTERM";
	case SIGUSR1:
		return "SIGUSR1";
	case SIGUSR2:
		return "SIGUSR2";
	case SIGINT:
		return "SIGINT";
	case SIGHUP:
		return "SIGHUP";
	case SIGQUIT:
		return "SIGQUIT";
	case SIGXCPU:
		return "SIGXCPU";
	case SIGALRM:
		return "SIGALRM";
	default:
		return "a signal";
	}
}

/* Async-signal-safe message assembly: no stdio in a handler. */
static void raw_line5(const char *a, const char *b, const char *c, const char *d, const char *e)
{
	char line[1024];
	size_t n = 0;
	const char *parts[] = {"gpuckpt: checkpoint: ", a, b, c, d, e, "\n"};

	for (unsigned i = 0; i < 7; i++)
		for (const char *p = parts[i]; p && *p && n < sizeof(line) - 1; p++)
			line[n++] = *p;
	line[n] = 0;
	gk_log_raw(line);
}

static void raw_line(const char *a, const char *b, const char *c)
{
	raw_line5(a, b, c, NULL, NULL);
}

/* What sig does without gpuckpt: the program's handler, or for SIG_DFL the
 * default action (the runtime's handler goes, and sig is raised again, to be
 * delivered when this handler returns). SIG_IGN: nothing. */
static void usual_course(int sig, const struct sigaction *app, siginfo_t *info, void *uc)
{
	struct sigaction def;

	if (app->sa_flags & SA_SIGINFO) {
		app->sa_sigaction(sig, info, uc);
	} else if (app->sa_handler == SIG_DFL) {
		memset(&def, 0, sizeof(def));
		def.sa_handler = SIG_DFL;
		real_sigaction()(sig, &def, NULL);
		raise(sig);
	} else if (app->sa_handler != SIG_IGN) {
		app->sa_handler(sig);
	}
}

/*
 * 1 in a process started under gpuckpt-shepherd for transparent mode whose
 * runtime thread does not run (t NULL: it starts at the first CUDA call) and
 * which is not checkpoint-aware. Its signal is the shepherd's to decide: it
 * passes triggers on only to the processes whose thread runs, checkpoints
 * the tree, and sends the others theirs "as usual" when it takes none
 * (runtime/shepherd/README.md). Such a process that took its course at once
 * (torchrun's launcher stopping its workers, a shell ending) broke the
 * checkpoint of the whole task: CRIU found it gone.
 */
static int shepherded_without_thread(const struct gk_trigger_taker *t)
{
	return !t && gk_rt_shepherded() && !__atomic_load_n(&gk_rt.aware, __ATOMIC_ACQUIRE);
}

static void on_signal(int sig, siginfo_t *info, void *uc)
{
	int saved = errno;
	struct sigaction app = app_action[sig];
	int dfl = !(app.sa_flags & SA_SIGINFO) && app.sa_handler == SIG_DFL;
	int bypass = __atomic_exchange_n(&as_usual[sig], 0, __ATOMIC_ACQ_REL);
	const struct gk_trigger_taker *t = __atomic_load_n(&taker, __ATOMIC_ACQUIRE);

	/* The shepherd's "as usual": no checkpoint was taken. */
	if (info && info->si_code == SI_QUEUE && info->si_value.sival_int == GK_SIGVAL_AS_USUAL)
		bypass = 1;
	if (__atomic_load_n(&follower, __ATOMIC_ACQUIRE) || shepherded_without_thread(t)) {
		/* A child forked without exec, or a process under the shepherd
		 * in which the runtime's thread does not run (torchrun's
		 * launcher, a shell around the ranks: no CUDA). One sent by
		 * someone outside (Slurm signals every process of the step) is
		 * held: the shepherd's checkpoint dumps this process as it is,
		 * and a restored one goes on; with no checkpoint the shepherd
		 * sends it again, as usual. One from the process itself or its
		 * parent (a pool's terminate()) takes its course at once. */
		if (!bypass && info && info->si_code == SI_USER && info->si_pid != getpid() &&
		    info->si_pid != getppid()) {
			errno = saved;
			return;
		}
		usual_course(sig, &app, info, uc);
		errno = saved;
		return;
	}

	if (!bypass && t) {
		t->signal(sig);
		/* The runtime's thread checkpoints the whole process; if it
		 * cannot, it sends the signal again, to take its usual course. */
		if (t->takes()) {
			errno = saved;
			return;
		}
	}
	int held = !bypass && __atomic_load_n(&gk_rt.aware, __ATOMIC_ACQUIRE);

	if (held) {
		if (dfl && action_of[sig] == GK_ACTION_EXIT)
			__atomic_store_n(&gk_rt.exit_signo, sig, __ATOMIC_RELEASE);
		gk_due_checkpoint();
		if (gk_log_enabled(GK_LOG_NOTICE))
			raw_line(gk_signal_name(sig), " received: ",
				 "checkpointing at the next checkpoint point");
	} else if (dfl) {
		if (bypass)
			raw_line("no checkpoint taken on ", gk_signal_name(sig),
				 "; the program ends as it would without gpuckpt");
		else if (gk_rt.settings.no_transparent[0])
			raw_line5("no checkpoint taken on ", gk_signal_name(sig),
				  ": the program does not use the gpuckpt API, and this node "
				  "cannot checkpoint it transparently (",
				  gk_rt.settings.no_transparent,
				  "); it ends as it would without gpuckpt");
		else
			raw_line("no checkpoint taken on ", gk_signal_name(sig),
				 ": the program never reached a gpuckpt checkpoint point (it is not "
				 "checkpoint-aware); it ends as it would without gpuckpt");
	}
	/* A checkpoint-aware program ends after its checkpoint instead
	 * (gk_trigger_finish_exit); its own handler still runs now. */
	if (!held || !dfl)
		usual_course(sig, &app, info, uc);
	errno = saved;
}

void gk_trigger_set_taker(const struct gk_trigger_taker *t)
{
	__atomic_store_n(&taker, t, __ATOMIC_RELEASE);
}

void gk_triggers_install(void)
{
	static int done;
	struct gk_settings *s = &gk_rt.settings;

	pthread_mutex_lock(&lock);
	if (done || !real_sigaction())
		goto out;
	done = 1;
	for (unsigned i = 0; i < s->ntriggers; i++) {
		int sig = s->triggers[i].signo;
		struct sigaction act;

		memset(&act, 0, sizeof(act));
		act.sa_sigaction = on_signal;
		act.sa_flags = SA_SIGINFO | SA_RESTART;
		sigemptyset(&act.sa_mask);
		/* Whatever the program installed before is its disposition from
		 * now on; the runtime's handler calls it. */
		if (real_sigaction()(sig, &act, &app_action[sig]) < 0) {
			gk_warn("trigger: %s: cannot install the checkpoint handler: %s",
				gk_signal_name(sig), strerror(errno));
			continue;
		}
		action_of[sig] = s->triggers[i].action;
		__atomic_or_fetch(&taken, 1ull << sig, __ATOMIC_RELEASE);
	}
out:
	pthread_mutex_unlock(&lock);
}

GK_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!is_taken(sig))
		return real_sigaction()(sig, act, old);
	pthread_mutex_lock(&lock);
	if (old)
		*old = app_action[sig];
	if (act)
		app_action[sig] = *act;
	pthread_mutex_unlock(&lock);
	return 0;
}

GK_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction act, old;

	memset(&act, 0, sizeof(act));
	act.sa_handler = handler;
	act.sa_flags = SA_RESTART; /* glibc's signal() has BSD semantics */
	sigemptyset(&act.sa_mask);
	if (sig > 0 && sig < NSIG)
		sigaddset(&act.sa_mask, sig);
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return (old.sa_flags & SA_SIGINFO) ? (sighandler_t)(void *)old.sa_sigaction : old.sa_handler;
}

void gk_triggers_follow(void)
{
	__atomic_store_n(&taker, NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&follower, 1, __ATOMIC_RELEASE);
}

void gk_trigger_as_usual(int signo)
{
	struct sigaction app;

	pthread_mutex_lock(&lock);
	app = app_action[signo];
	pthread_mutex_unlock(&lock);
	/* A continue trigger asked for a checkpoint, never for the end of the
	 * job: left at its default (which would end the program), it ends
	 * nothing when no checkpoint was taken, as in application mode. An
	 * exit trigger, or the program's own handler, takes its course. */
	if (action_of[signo] != GK_ACTION_EXIT && !(app.sa_flags & SA_SIGINFO) &&
	    app.sa_handler == SIG_DFL) {
		gk_notice("checkpoint: no checkpoint taken on %s (a continue trigger); the program "
			  "goes on",
			  gk_signal_name(signo));
		return;
	}
	__atomic_store_n(&as_usual[signo], 1, __ATOMIC_RELEASE);
	/* To the process, not this thread: the runtime's threads block signals. */
	kill(getpid(), signo);
}

void gk_trigger_finish_exit(int signo)
{
	struct sigaction def;
	sigset_t set;

	memset(&def, 0, sizeof(def));
	def.sa_handler = SIG_DFL;
	if (real_sigaction())
		real_sigaction()(signo, &def, NULL);
	sigemptyset(&set);
	sigaddset(&set, signo);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(signo);
	_exit(128 + signo);
}

static void *interval_thread(void *arg)
{
	unsigned interval = gk_rt.settings.interval;
	struct timespec next;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (;;) {
		int64_t last, due_ns;

		next.tv_sec += interval;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
		/* A checkpoint since the last tick (a signal, or the step's other
		 * tasks, whose timers started a little apart): count from it. */
		last = __atomic_load_n(&gk_rt.last_checkpoint_ns, __ATOMIC_ACQUIRE);
		due_ns = (int64_t)next.tv_sec * 1000000000 + next.tv_nsec - (int64_t)interval * 1000000000;
		if (last > due_ns) {
			next.tv_sec = (time_t)(last / 1000000000);
			next.tv_nsec = (long)(last % 1000000000);
			continue;
		}
		gk_due_checkpoint();
	}
	return NULL;
}

void gk_trigger_interval_start(void)
{
	static int started;
	pthread_t t;
	pthread_attr_t attr;
	sigset_t all, old;

	if (!gk_rt.settings.interval || __atomic_exchange_n(&started, 1, __ATOMIC_ACQ_REL))
		return;
	/* The timer thread must never take the program's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, interval_thread, NULL) != 0)
		gk_warn("trigger: cannot start the periodic checkpoint timer: %s", strerror(errno));
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
