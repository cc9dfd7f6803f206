/*
 * supervise.c - the shepherd's life between start (or restore) and the end
 * of the tree. The shepherd acts on a trigger signal by checkpointing.
 *
 * Who else hears of the signal depends on who sent it. Slurm's
 * proctrack/linuxproc and proctrack/pgid signal every process of the step;
 * proctrack/cgroup (Slurm's advice for production) signals only slurmstepd's
 * own children, that is the shepherd, and outside Slurm it is the shepherd
 * alone too. So the shepherd passes a trigger signal on to the processes
 * whose runtime acts on it (gpuckpt loaded, the signal caught: a repeat of
 * Slurm's is absorbed by the runtime), and to no other process before the
 * checkpoint: one without the runtime would die of it before CRIU dumps it
 * ("Unable to detach from PID: No such process"). When no checkpoint comes
 * of an exit trigger, those others get it after all, for its usual course.
 * Under linuxproc and pgid they already had it from Slurm: a program without
 * the runtime that does not handle it is gone before the dump, and nothing
 * here can change that (README.md, "Signals").
 */
#include "config.h"

#include "common/log.h"
#include "shepherd/shepherd.h"
#include "common/shepherd_protocol.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <unistd.h>

static int trigger_action(const struct gk_shepherd *sh, int signo)
{
	for (unsigned i = 0; i < sh->o->ntriggers; i++)
		if (sh->o->triggers[i].signo == signo)
			return (int)sh->o->triggers[i].action;
	return -1;
}

/* Reap; 1 with *code set when the program is gone. */
static int reap(struct gk_shepherd *sh, int *code)
{
	int status, done = 0;
	pid_t p;

	while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
		if (p != sh->prog)
			continue;
		*code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		done = 1;
	}
	return done;
}

/*
 * The program is gone; so, after a checkpoint, is the rest of its tree, which
 * CRIU killed. The shepherd is the tree's subreaper (shepherd_main.c), so those
 * processes are its zombies now: reap them before going, or they pass to init,
 * and an init that does not reap (the GPU machine's PID 1 is not a real init)
 * keeps their process ids taken - the ids a restore on this node must have
 * back ("Can't fork for N: File exists"). Live processes that outlast a short
 * wait (a daemon the program left behind) pass to init as before.
 */
static void reap_leftovers(void)
{
	double until = gk_now() + 2.0;
	int status;
	pid_t p;

	for (;;) {
		p = waitpid(-1, &status, WNOHANG);
		if (p > 0)
			continue;
		if (p < 0 && errno == EINTR)
			continue;
		if (p < 0 || gk_now() >= until)
			return;
		usleep(10000);
	}
}

/* A runtime that connected with no trigger signal reaching the shepherd
 * (someone signalled only the program) is told so, not left waiting. */
static void refuse_pending(struct gk_shepherd *sh)
{
	for (;;) {
		pid_t peer;
		int conn;

		if (gk_sock_accept(sh->listener, sh->o->uid, sh->prog, &conn, &peer) < 0)
			return;
		if (conn < 0) {
			struct pollfd pf = {.fd = sh->listener, .events = POLLIN};

			if (poll(&pf, 1, 0) <= 0)
				return;
			continue;
		}
		gk_sock_send(conn, GK_PROTO_ABORT, "the shepherd received no trigger signal");
		gk_sock_close(conn);
	}
}

int gk_supervise(struct gk_shepherd *sh)
{
	sigset_t set;
	double pending_since = 0;
	int sfd, code = 1, checkpointed_on = 0;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (unsigned i = 0; i < sh->o->ntriggers; i++)
		sigaddset(&set, sh->o->triggers[i].signo);
	sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0) {
		gk_error("transparent: signalfd: %s", strerror(errno));
		kill(sh->prog, SIGKILL);
	}
	for (;;) {
		struct signalfd_siginfo si;
		struct pollfd pf[2] = {{.fd = sfd, .events = POLLIN},
				       {.fd = sh->listener, .events = POLLIN}};
		int timeout = -1, action, told, ret;

		if (reap(sh, &code))
			break;
		if (pending_since) {
			double left = pending_since + sh->o->ready_timeout - gk_now();

			if (left <= 0) {
				refuse_pending(sh);
				pending_since = 0;
				continue;
			}
			timeout = (int)(left * 1000) + 1;
		}
		if (poll(pf, sh->listener >= 0 && !pending_since ? 2 : 1, timeout) < 0) {
			if (errno == EINTR)
				continue;
			gk_error("transparent: poll: %s", strerror(errno));
			break;
		}
		if (pf[1].revents & POLLIN && !pending_since)
			pending_since = gk_now();
		if (!(pf[0].revents & POLLIN) || read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		if (si.ssi_signo == SIGCHLD)
			continue;
		action = trigger_action(sh, (int)si.ssi_signo);
		/* After a checkpoint that ends the tree, only its end is awaited. */
		if (action < 0 || checkpointed_on)
			continue;
		pending_since = 0;
		told = gk_tree_signal(sh->prog, (int)si.ssi_signo, 1);
		gk_info("transparent: signal %d: checkpointing pid %d (passed on to %d process(es) "
			"with the runtime)",
			(int)si.ssi_signo, (int)sh->prog, told);
		sh->signo = (int)si.ssi_signo;
		ret = gk_checkpoint(sh, action == GK_ACTION_EXIT);
		if (ret == 0 && action == GK_ACTION_EXIT)
			checkpointed_on = (int)si.ssi_signo;
		/* No checkpoint on an exit trigger: the signal's usual course for
		 * the processes that did not hear it (the runtime's re-raise it
		 * themselves; one that checkpoints itself, -ECANCELED, ends on
		 * its own, and its parents must not go first). */
		else if (action == GK_ACTION_EXIT && ret != -ECANCELED)
			gk_tree_signal(sh->prog, (int)si.ssi_signo, 0);
	}
	if (sfd >= 0)
		close(sfd);
	reap_leftovers();
	/* Checkpointed on an exit trigger: CRIU ended the tree; end the way
	 * the signal would have ended the program. */
	return checkpointed_on ? 128 + checkpointed_on : code;
}
