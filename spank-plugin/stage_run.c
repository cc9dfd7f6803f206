#include "config.h"

#include "stage_run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Seconds a killed program's output and end are waited for. */
#define GK_RUN_GRACE 5

int gk_stage_argv(const struct gk_site *s, const char *verb, uint32_t job_id, uid_t uid, gid_t gid,
		  char *argv[], char *buf, size_t buflen)
{
	char num[4][24];
	const char *items[GK_STAGE_MAXARGS];
	int n = 0;

	snprintf(num[0], sizeof(num[0]), "%u", job_id);
	snprintf(num[1], sizeof(num[1]), "%u", (unsigned)uid);
	snprintf(num[2], sizeof(num[2]), "%u", (unsigned)gid);
	snprintf(num[3], sizeof(num[3]), "%u", s->keep);
	items[n++] = s->stage;
	items[n++] = verb;
	items[n++] = "--job";
	items[n++] = num[0];
	items[n++] = "--uid";
	items[n++] = num[1];
	items[n++] = "--gid";
	items[n++] = num[2];
	items[n++] = "--bb-root";
	items[n++] = s->bb_root;
	items[n++] = "--shared-root";
	items[n++] = s->shared_root;
	items[n++] = "--keep";
	items[n++] = num[3];
	if (s->flush_root[0]) {
		items[n++] = "--flush-root";
		items[n++] = s->flush_root;
	}
	return gk_pack_argv(items, n, argv, buf, buflen);
}

int gk_pack_argv(const char *const *items, int n, char *argv[], char *buf, size_t buflen)
{
	size_t used = 0;

	for (int i = 0; i < n; i++) {
		size_t l = strlen(items[i]) + 1;

		if (used + l > buflen)
			return -ENAMETOOLONG;
		memcpy(buf + used, items[i], l);
		argv[i] = buf + used;
		used += l;
	}
	argv[n] = NULL;
	return 0;
}

/* Hand each complete line in buf[0..*len) to fn; keep the rest. */
static void flush_lines(char *buf, size_t *len, int final, gk_line_fn fn, void *arg)
{
	size_t start = 0;

	for (size_t i = 0; i < *len; i++) {
		if (buf[i] == '\n') {
			buf[i] = '\0';
			fn(arg, buf + start);
			start = i + 1;
		}
	}
	if (final && start < *len) {
		buf[*len] = '\0';
		fn(arg, buf + start);
		start = *len;
	}
	memmove(buf, buf + start, *len - start);
	*len -= start;
}

int gk_run_logged(char *const argv[], unsigned timeout, gk_line_fn fn, void *arg)
{
	char buf[4097];
	size_t len = 0;
	int fds[2], status, rc, timed_out = 0;
	struct timespec now;
	double deadline = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
		return -errno;
	if (timeout) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		deadline = (double)now.tv_sec + now.tv_nsec / 1e9 + timeout;
	}
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		goto out_close;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		/* A group of its own: on a timeout it goes with everything it
		 * started (a squeue holding the pipe open, say). */
		setpgid(0, 0);
		if (null < 0 || dup2(null, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[1], 2) < 0)
			_exit(127);
		execv(argv[0], argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(fds[1]);
	fds[1] = -1;
	for (;;) {
		struct pollfd pf = {.fd = fds[0], .events = POLLIN};
		int wait_ms = -1;
		ssize_t n;

		if (timeout) {
			double left;

			clock_gettime(CLOCK_MONOTONIC, &now);
			left = deadline - ((double)now.tv_sec + now.tv_nsec / 1e9);
			if (left <= 0 && !timed_out) {
				kill(-pid, SIGKILL);
				kill(pid, SIGKILL);
				timed_out = 1;
				/* What left the group (setsid) may hold the pipe
				 * open for ever: its end is waited for a little
				 * only, then the output is given up. */
				deadline += GK_RUN_GRACE;
				continue;
			}
			if (left <= 0)
				break;
			wait_ms = (int)(left * 1000) + 1;
		}
		if (poll(&pf, 1, wait_ms) == 0)
			continue;
		n = read(fds[0], buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		flush_lines(buf, &len, len == sizeof(buf) - 1, fn, arg);
	}
	flush_lines(buf, &len, 1, fn, arg);
	if (timed_out) {
		/* Killed: reaped when it is gone within the grace, else left
		 * (a process stuck in the kernel); the callback goes on. */
		for (int i = 0; i < GK_RUN_GRACE * 100; i++) {
			pid_t r = waitpid(pid, &status, WNOHANG);

			if (r != 0 && !(r < 0 && errno == EINTR))
				break;
			usleep(10000);
		}
		rc = -ETIME;
		goto out_close;
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			rc = -errno;
			goto out_close;
		}
	}
	if (WIFEXITED(status))
		rc = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		rc = 128 + WTERMSIG(status);
	else
		rc = -ECHILD;

out_close:
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return rc;
}
