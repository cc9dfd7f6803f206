/*
 * supervise.c - the shepherd's life between start (or restore) and the end
 * of the tree. It forwards nothing: Slurm signals every process of the step
 * itself, and the runtime acts on the signal inside the program; the
 * shepherd acts on its own copy (a trigger signal) by checkpointing.
 */
#include "config.h"

#include "log.h"
#include "shepherd.h"

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
		gk_sock_send(conn, "ABORT", "the shepherd received no trigger signal");
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
		int timeout = -1, action;

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
		/* Slurm signals every process of the step itself; outside Slurm
		 * the program hears of it from here, and its runtime then joins. */
		if (!getenv("SLURM_JOB_ID"))
			kill(sh->prog, (int)si.ssi_signo);
		gk_info("transparent: signal %d: checkpointing pid %d", (int)si.ssi_signo,
			(int)sh->prog);
		if (gk_checkpoint(sh, action == GK_ACTION_EXIT) == 0 && action == GK_ACTION_EXIT)
			checkpointed_on = (int)si.ssi_signo;
	}
	if (sfd >= 0)
		close(sfd);
	/* Checkpointed on an exit trigger: CRIU ended the tree; end the way
	 * the signal would have ended the program. */
	return checkpointed_on ? 128 + checkpointed_on : code;
}
