/*
 * init.c - gpuckpt-init, PID 1 of a task's PID namespace, run as the job's
 * user. It waits for its child PID 2 (the program), reaps every orphan that
 * lands on it, and exits with PID 2's status. Nothing else: no signal
 * handlers (PID 1 of a namespace then ignores SIGTERM & co., so only the
 * program acts on what Slurm sends), no threads, no open files beyond its
 * stdio, so that CRIU dumps and restores it as plainly as possible.
 *
 *	gpuckpt-init [PID]      (PID to wait for, default 2)
 */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	pid_t child = 2;
	sigset_t none;

	if (argc > 2 || (argc == 2 && (child = (pid_t)atoi(argv[1])) <= 1)) {
		fprintf(stderr, "usage: gpuckpt-init [PID]\n");
		return 2;
	}
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (;;) {
		int status;
		pid_t p = wait(&status);

		if (p < 0) {
			if (errno == EINTR)
				continue;
			/* No child at all: PID 2 never started. */
			return 127;
		}
		if (p != child)
			continue;
		/* Leaving kills the rest of the namespace, as the end of the
		 * program ends a task that was not run under a shepherd. */
		if (WIFEXITED(status))
			return WEXITSTATUS(status);
		return 128 + WTERMSIG(status);
	}
}
