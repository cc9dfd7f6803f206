/*
 * test-watchdog - the deadline a restore puts on the driver's calls
 * (runtime/shepherd/watchdog.c): a call that returns in time is left alone;
 * one blocked in a read of a pipe whose other end is held by a process that
 * will never write (as the shepherd was, in the driver, on an H200) is named
 * in an error and ended by expire killing that process; one that does
 * not return even then ends the process with status 1; and a watchdog
 * stopped in time stays silent after its deadline.
 */
#include "config.h"
#include "shepherd/shepherd.h"
#include "tap.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int expired;

static void kill_pid(void *arg)
{
	expired++;
	kill(*(pid_t *)arg, SIGKILL);
}

static void count_only(void *arg)
{
	(void)arg;
	expired++;
}

/* The status of child pid within secs, or -1. */
static int status_within(pid_t pid, double secs)
{
	int status;

	for (int i = 0; i < (int)(secs * 100); i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

int main(void)
{
	struct gk_watchdog w;
	char log[] = "/tmp/gk-watchdog-XXXXXX", buf[4096] = "";
	int pfd[2], fd, saved, st;
	ssize_t n;
	pid_t child;

	plan(6);

	/* In time. */
	ok(gk_watchdog_start(&w, "test", 5.0, 1.0, kill_pid, &(pid_t){0}, "nothing") == 0,
	   "started");
	gk_watchdog_note(&w, "a quick call");
	ok(gk_watchdog_stop(&w) == 0 && expired == 0,
	   "a call done in time: not fired, expire not run");

	/* A read that only the other end's death ends. */
	if (pipe(pfd) < 0) {
		perror("pipe");
		return 1;
	}
	child = fork();
	if (child == 0) {
		close(pfd[0]);
		for (;;)
			pause();
	}
	close(pfd[1]);
	fd = mkstemp(log);
	saved = dup(2);
	dup2(fd, 2);
	gk_watchdog_start(&w, "test: restore", 0.3, 5.0, kill_pid, &child, "the tree is killed");
	gk_watchdog_note(&w, "cuCheckpointProcessGetState of pid %d", (int)child);
	n = read(pfd[0], buf, sizeof(buf));
	st = gk_watchdog_stop(&w);
	dup2(saved, 2);
	ok(n == 0 && st == 1 && expired == 1,
	   "a read held by a silent process: the deadline kills it, the read ends (EOF), stop says "
	   "it fired (read %zd, stop %d, expire ran %d time(s))",
	   n, st, expired);
	waitpid(child, NULL, 0);
	lseek(fd, 0, SEEK_SET);
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	close(fd);
	unlink(log);
	ok(strstr(buf, "test: restore: cuCheckpointProcessGetState of pid") &&
	       strstr(buf, "did not return within 0.3 s; the tree is killed"),
	   "the error names the call under way and what was done: %s", strtok(buf, "\n"));

	/* A call that does not return even then. */
	child = fork();
	if (child == 0) {
		dup2(open("/dev/null", O_WRONLY), 2);
		gk_watchdog_start(&w, "test", 0.2, 0.2, NULL, NULL, "nothing");
		for (;;)
			pause();
	}
	st = status_within(child, 10.0);
	ok(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 1,
	   "a call that never returns: the process ends with status 1 after the grace (status %#x)",
	   st);
	/* Stopped before its deadline: the time passing afterwards does
	 * nothing (the watch ended with stop, not at the deadline), and a
	 * watchdog never started stops as a no-op. */
	saved = expired;
	st = gk_watchdog_start(&w, "test", 0.1, 0.1, count_only, NULL, "nothing");
	st = st == 0 ? gk_watchdog_stop(&w) : -1;
	usleep(400000);
	ok(st == 0 && expired == saved && gk_watchdog_stop(&(struct gk_watchdog){0}) == 0,
	   "stopped before its deadline, it never fires after it (stop %d, expire ran %d more "
	   "time(s)); one never started stops as a no-op",
	   st, expired - saved);
	return done_testing();
}
