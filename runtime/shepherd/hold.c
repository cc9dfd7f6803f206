/*
 * hold.c - a restored tree held stopped while the driver restores it.
 *
 * Until cuCheckpointProcessRestore has mapped a process's device memory
 * back, the addresses of its device mappings are placeholders: a thread that
 * touches one dies of SIGSEGV. CRIU's restore wakes every thread that was
 * asleep in a timed wait at the dump (the wait's restart cannot be restored,
 * so it returns EINTR), and a woken thread of libcuda can read such an
 * address at once. That is how a JAX job under Slurm on the H200s died, in
 * libcuda, before the shepherd reached the driver (runtime/shepherd/README.md,
 * "Restore"). CRIU's own CUDA plugin keeps the process frozen for the same
 * reason.
 *
 * So CRIU restores the tree with --leave-stopped (every process in group
 * stop). The driver does its restore in one thread of the process, the one
 * cuCheckpointProcessGetRestoreThreadId names; that thread alone is let run,
 * traced, with its signals blocked, and is stopped and detached again before
 * the whole tree gets SIGCONT.
 */
#include "config.h"

#include "common/error.h"
#include "common/log.h"
#include "common/clock.h"
#include "common/procstat.h"
#include "shepherd/shepherd.h"

#include <dirent.h>
#include <linux/kcmp.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* How long a thread may take to stop for the tracer, or a tree for the
 * checkpoint. A thread in uninterruptible sleep (inside a driver call) stops
 * when it leaves it. */
#define GK_HOLD_STOP_WAIT_S 10.0
/*
 * A process in vfork(2) does not stop until its child has called exec or
 * ended, and a SIGSTOP that reaches that child first, before its exec,
 * stops the pair for good. dash runs each command through vfork: a
 * checkpoint of a shell loop under load (stdio-criu.sh in CI) stopped the
 * child in that moment, waited its 10 s for the parent, failed, and left both
 * stopped, the job hung with them. Such a child shares its parent's address
 * space (kcmp KCMP_VM says so); it alone is let go on until it has left it,
 * and the tree is stopped again. Every GK_HOLD_VFORK_LOOK_S of the wait.
 */
#define GK_HOLD_VFORK_LOOK_S 0.05

/* The process (thread group) that thread tid belongs to; -1 when it is
 * gone. */
static pid_t thread_group(pid_t tid)
{
	char field[32];

	if (gk_pid_status_field(tid, "\nTgid:", field, sizeof(field)) < 0)
		return -1;
	return (pid_t)strtol(field, NULL, 10);
}

/* What a waitpid status of the traced thread says: 0 stopped (*sig as
 * below), -ESRCH ended. */
static int stop_of(int status, int *sig)
{
	*sig = 0;
	if (!WIFSTOPPED(status))
		return -ESRCH;
	/* PTRACE_EVENT_STOP: a group or interrupt stop; any other stop is a
	 * signal the thread was about to take. */
	if ((status >> 16) != PTRACE_EVENT_STOP)
		*sig = WSTOPSIG(status);
	return 0;
}

/* Wait until the traced thread is in a ptrace stop. 0 when it is (*sig: the
 * signal of a signal-delivery stop, to hand on when it goes on; 0 for a
 * group or interrupt stop), or -errno. */
static int wait_stopped(pid_t tid, int *sig)
{
	double deadline = gk_now() + GK_HOLD_STOP_WAIT_S;
	int status;

	*sig = 0;
	for (;;) {
		pid_t r = waitpid(tid, &status, __WALL | WNOHANG);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == tid)
			return stop_of(status, sig);
		if (gk_now() >= deadline)
			return -ETIMEDOUT;
		usleep(1000);
	}
}

int gk_hold_run_thread(pid_t pid, pid_t tid, struct gk_held_thread *h, gk_error_t *err)
{
	uint64_t all = ~(uint64_t)0;
	int ret, status;

	memset(h, 0, sizeof(*h));
	h->tid = tid;
	if (thread_group(tid) != pid)
		goto not_its;
	/* SEIZE leaves it as it is; INTERRUPT traps it whether it was in the
	 * group stop (as CRIU left it) or not, so the wait below ends. */
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
		ret = -errno;
		gk_errprintf(err, "pid %d: its restore thread %d: ptrace: %s", (int)pid, (int)tid,
			     strerror(errno));
		return ret;
	}
	h->traced = 1;
	/* A thread in the group stop is trapped by the seize itself, before it
	 * returns; one still running (the tree was continued behind CRIU's
	 * back) is trapped by an interrupt. One trap either way: a second one
	 * pending would stop it again right after PTRACE_CONT. */
	ret = waitpid(tid, &status, __WALL | WNOHANG) == tid ? stop_of(status, &h->sig) : 1;
	if (ret == 1) {
		ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
		ret = wait_stopped(tid, &h->sig);
	}
	if (ret < 0) {
		gk_errprintf(err, "pid %d: its restore thread %d did not stop: %s", (int)pid,
			     (int)tid, strerror(-ret));
		h->traced = 0; /* gone, or never stopped: nothing to detach */
		return ret;
	}
	/* The driver named it, and it was pid's above; but only once it is
	 * traced can its number not be reused, so this is the check that root
	 * runs nothing but the job's own thread. */
	if (thread_group(tid) != pid) {
		gk_hold_stop_thread(h);
		goto not_its;
	}
	/* Blocked signals: a signal for the process must not run a handler
	 * of the program's while the rest of it is stopped. */
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(h->mask), &h->mask) < 0 ||
	    ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(all), &all) < 0 ||
	    ptrace(PTRACE_CONT, tid, NULL, NULL) < 0) {
		ret = -errno;
		gk_errprintf(err, "pid %d: its restore thread %d: ptrace: %s", (int)pid, (int)tid,
			     strerror(errno));
		gk_hold_stop_thread(h);
		return ret;
	}
	h->running = 1;
	return 0;
not_its:
	gk_errprintf(err,
		     "the driver named thread %d as pid %d's restore thread, but it is not one of "
		     "pid %d's threads",
		     (int)tid, (int)pid, (int)pid);
	return -EPERM;
}

/* A stop signal: dropped when it reaches a held thread (gk_hold_tend). */
static int is_stop_signal(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/*
 * A held thread can be trapped for its tracer again after it was let run:
 * for a signal it is about to take, or a stop the process gets anew. Nothing
 * let it go on then, and the driver call waiting on it never returned: 3 of
 * 10 torch restores on an H200 (2026-11-30) sat in
 * cuCheckpointProcessGetState, the restore thread in ptrace_stop, until the
 * restore's watchdog killed the job. With this, 14 of 14 went through, and
 * in 6 the thread had stopped once, for SIGCHLD: the DataLoader workers CRIU
 * restored, stopping. (The trapped threads' SigBlk read 0: the mask set in
 * gk_hold_run_thread did not hold there; why is not known yet.) A stop
 * signal is dropped (the rest of the tree is held stopped anyway, and
 * gk_hold_release continues it); any other is handed on as it would have
 * been, a fault of the thread's own included (dropping that would trap it
 * again at once). Only the tracing thread may continue it, so this runs in
 * the shepherd's main thread while another makes the driver
 * calls (restore_tree.c).
 */
void gk_hold_tend(struct gk_held_thread *h, size_t n, atomic_int *done)
{
	while (!atomic_load(done)) {
		for (size_t i = 0; i < n; i++) {
			int status, sig = 0;
			pid_t r;

			if (!h[i].running)
				continue;
			r = waitpid(h[i].tid, &status, __WALL | WNOHANG);
			if (r == 0 || (r < 0 && errno == EINTR))
				continue;
			if (r < 0 || stop_of(status, &sig) < 0) {
				/* Gone: the driver's call fails on its own. */
				h[i].running = h[i].traced = 0;
				continue;
			}
			if (is_stop_signal(sig))
				sig = 0;
			h[i].restarts++;
			gk_debug("transparent: restore: restore thread %d stopped again (%s); let go "
				 "on",
				 (int)h[i].tid, sig ? strsignal(sig) : "a stop");
			if (ptrace(PTRACE_CONT, h[i].tid, NULL, (void *)(long)sig) < 0)
				h[i].running = 0;
		}
		usleep(500);
	}
}

void gk_hold_stop_thread(struct gk_held_thread *h)
{
	int sig = 0;

	if (!h->traced)
		return;
	if (h->running) {
		ptrace(PTRACE_INTERRUPT, h->tid, NULL, NULL);
		if (wait_stopped(h->tid, &sig) < 0) {
			h->traced = 0;
			return;
		}
		ptrace(PTRACE_SETSIGMASK, h->tid, (void *)sizeof(h->mask), &h->mask);
	}
	/* Detached in the process's group stop, it stays stopped with the
	 * rest until SIGCONT; a signal it was taking goes with it. */
	ptrace(PTRACE_DETACH, h->tid, NULL, (void *)(long)(sig ? sig : h->sig));
	h->traced = h->running = 0;
}

/* 1 when every thread of pid is stopped (or gone); *tid and *state name
 * one that is not. */
static int all_stopped(pid_t pid, pid_t *tid, char *state)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int ok = 1;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 1; /* gone */
	while (ok && (e = readdir(d))) {
		char st;

		if (e->d_name[0] == '.')
			continue;
		if (gk_thread_state(pid, (pid_t)atoi(e->d_name), &st) < 0)
			continue; /* gone */
		if (st != 'T' && st != 't' && st != 'Z' && st != 'X') {
			ok = 0;
			*tid = (pid_t)atoi(e->d_name);
			*state = st;
		}
	}
	closedir(d);
	return ok;
}

/* 1 when a and b are processes of one address space (a vfork child and its
 * parent before the exec); 0 when not, or when the kernel cannot say. */
static int same_vm(pid_t a, pid_t b)
{
	return syscall(SYS_kcmp, a, b, KCMP_VM, 0, 0) == 0;
}

/*
 * pid did not stop: when that is because a child of its vfork, in pids[],
 * was stopped before its exec, that child goes on alone until it has left
 * pid's address space (exec or end), or until the deadline. 1 when one was
 * let go (the tree must be stopped again: the child is a program of its own
 * now), else 0.
 */
static int let_vfork_child_go(pid_t pid, const pid_t *pids, size_t n, double deadline)
{
	for (size_t i = 0; i < n; i++) {
		char st = 0;

		if (pids[i] == pid || gk_thread_state(pids[i], pids[i], &st) < 0 ||
		    (st != 'T' && st != 't') || !same_vm(pid, pids[i]))
			continue;
		gk_debug("transparent: pid %d: its vfork child %d was stopped before its exec; "
			 "it goes on to it, then the tree is stopped again",
			 (int)pid, (int)pids[i]);
		kill(pids[i], SIGCONT);
		while (same_vm(pid, pids[i]) && gk_now() < deadline)
			usleep(1000);
		return 1;
	}
	return 0;
}

/* SIGSTOP to each process of the tree, listed again until no new one
 * appears (before: scratch of max). 0 or -errno. */
static int stop_all(pid_t prog, pid_t *before, pid_t *pids, size_t max, size_t *n,
		    gk_error_t *err)
{
	size_t nbefore = 0;
	int ret = gk_tree_list(prog, before, max, &nbefore, err);

	while (ret == 0) {
		for (size_t i = 0; i < nbefore; i++)
			kill(before[i], SIGSTOP);
		ret = gk_tree_list(prog, pids, max, n, err);
		if (ret < 0 || (*n == nbefore && !memcmp(pids, before, *n * sizeof(*pids))))
			break;
		memcpy(before, pids, *n * sizeof(*pids));
		nbefore = *n;
	}
	return ret;
}

int gk_hold_stop_tree(pid_t prog, pid_t *pids, size_t max, size_t *n, gk_error_t *err)
{
	double deadline = gk_now() + GK_HOLD_STOP_WAIT_S, look;
	pid_t *before = calloc(max, sizeof(*before)), tid = 0;
	char st = 0;
	int ret;

	if (!before)
		return -ENOMEM;
again:
	ret = stop_all(prog, before, pids, max, n, err);
	look = gk_now() + GK_HOLD_VFORK_LOOK_S;
	for (size_t i = 0; i < *n && ret == 0; i++) {
		while (!all_stopped(pids[i], &tid, &st)) {
			if (gk_now() >= deadline) {
				gk_errprintf(err,
					     "pid %d: its thread %d did not stop within %.0f s of "
					     "SIGSTOP (state %c)",
					     (int)pids[i], (int)tid, GK_HOLD_STOP_WAIT_S, st);
				ret = -ETIMEDOUT;
				break;
			}
			if (gk_now() >= look) {
				look = gk_now() + GK_HOLD_VFORK_LOOK_S;
				if (let_vfork_child_go(pids[i], pids, *n, deadline))
					goto again;
			}
			usleep(1000);
		}
	}
	/* A stop that failed leaves nothing stopped (the job hung so, for
	 * good, when it did). */
	if (ret < 0)
		gk_tree_kill(prog, SIGCONT);
	free(before);
	return ret;
}

void gk_hold_release(pid_t prog)
{
	int n = gk_tree_kill(prog, SIGCONT);

	gk_debug("transparent: restore: %d process(es) continued", n);
}

void gk_hold_kill(pid_t prog)
{
	gk_tree_kill(prog, SIGKILL);
}
