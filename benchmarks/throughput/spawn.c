/*
 * spawn.c - worker processes: posix_spawn with the controller's environment
 * minus the variables it decides itself (the runtime's preload and the
 * GPUCKPT_* settings the measurement depends on), pipes on stdin and stdout,
 * stderr shared so the runtime's log lines show up in the terminal.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "throughput.h"
#include "common/settings_env.h"

extern char **environ;

static const char *const controlled[] = {
    "LD_PRELOAD=",	  GK_ENV(ENABLE) "=",   GK_ENV(DIR) "=",	   GK_ENV(RESTORE) "=",
    GK_ENV(LOG_LEVEL) "=", GK_ENV(INTERVAL) "=", GK_ENV(SIGNALS) "=", NULL,
};

static int is_controlled(const char *entry)
{
	int i;

	for (i = 0; controlled[i]; i++)
		if (!strncmp(entry, controlled[i], strlen(controlled[i])))
			return 1;
	return 0;
}

/* Whether extra sets the variable of entry (NAME=...): the inherited one is dropped. */
static int set_by(char *const extra[], const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t len = eq ? (size_t)(eq - entry) + 1 : strlen(entry);

	for (size_t i = 0; extra && extra[i]; i++)
		if (!strncmp(extra[i], entry, len))
			return 1;
	return 0;
}

/* The environment for a worker: inherited, minus the controlled variables and
 * those extra sets, plus extra. */
static char **worker_env(char *const extra[])
{
	size_t n = 0, k = 0, i;
	char **env;

	while (environ[n])
		n++;
	for (i = 0; extra && extra[i]; i++)
		n++;
	env = calloc(n + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; environ[i]; i++)
		if (!is_controlled(environ[i]) && !set_by(extra, environ[i]))
			env[k++] = environ[i];
	for (i = 0; extra && extra[i]; i++)
		env[k++] = extra[i];
	env[k] = NULL;
	return env;
}

int tp_worker_start(struct tp_worker *w, const char *path, char *const argv[],
		    char *const extra_env[], gk_error_t *err)
{
	posix_spawn_file_actions_t fa;
	int in[2], out[2], rc;
	char **env;

	memset(w, 0, sizeof(*w));
	w->pid = -1;
	w->in_fd = w->out_fd = -1;
	env = worker_env(extra_env);
	if (!env) {
		gk_errprintf(err, "spawn %s: out of memory", path);
		return -ENOMEM;
	}
	if (pipe2(in, O_CLOEXEC)) {
		rc = -errno;
		goto out_env;
	}
	if (pipe2(out, O_CLOEXEC)) {
		rc = -errno;
		goto out_in;
	}
	rc = -posix_spawn_file_actions_init(&fa);
	if (rc)
		goto out_out;
	rc = -posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	if (!rc)
		rc = -posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	if (!rc)
		rc = -posix_spawn(&w->pid, path, &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	if (rc)
		goto out_out;
	close(in[0]);
	close(out[1]);
	w->in_fd = in[1];
	w->out_fd = out[0];
	free(env);
	return 0;

out_out:
	close(out[0]);
	close(out[1]);
out_in:
	close(in[0]);
	close(in[1]);
out_env:
	free(env);
	gk_errprintf(err, "spawn %s: %s", path, strerror(-rc));
	w->pid = -1;
	return rc;
}

int tp_worker_line(struct tp_worker *w, char *line, size_t len, int timeout_s)
{
	double deadline = tp_now() + timeout_s;

	for (;;) {
		char *nl = memchr(w->buf, '\n', w->len);
		struct pollfd p = {.fd = w->out_fd, .events = POLLIN};
		double left;
		ssize_t n;
		int rc;

		if (nl) {
			size_t l = (size_t)(nl - w->buf);

			snprintf(line, len, "%.*s", (int)l, w->buf);
			memmove(w->buf, nl + 1, w->len - l - 1);
			w->len -= l + 1;
			return 0;
		}
		if (w->len == sizeof(w->buf) - 1)
			w->len = 0; /* an overlong line: drop it */
		left = deadline - tp_now();
		if (left <= 0)
			return -ETIMEDOUT;
		rc = poll(&p, 1, (int)(left * 1000) + 1);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return -errno;
		if (rc == 0)
			return -ETIMEDOUT;
		n = read(w->out_fd, w->buf + w->len, sizeof(w->buf) - 1 - w->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPIPE;
		w->len += (size_t)n;
	}
}

int tp_worker_send(struct tp_worker *w, const char *text)
{
	size_t len = strlen(text);

	while (len) {
		ssize_t n = write(w->in_fd, text, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		text += n;
		len -= (size_t)n;
	}
	return 0;
}

int tp_worker_wait(struct tp_worker *w, int timeout_s)
{
	double deadline = tp_now() + timeout_s;
	int status;
	pid_t r;

	if (w->pid < 0)
		return -ECHILD;
	if (w->in_fd >= 0) {
		close(w->in_fd);
		w->in_fd = -1;
	}
	for (;;) {
		r = waitpid(w->pid, &status, WNOHANG);
		if (r == w->pid)
			break;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (tp_now() > deadline) {
			kill(w->pid, SIGKILL);
			waitpid(w->pid, &status, 0);
			close(w->out_fd);
			w->pid = -1;
			return -ETIMEDOUT;
		}
		usleep(20000);
	}
	close(w->out_fd);
	w->pid = -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
