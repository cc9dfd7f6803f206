/*
 * slurm.c - asking the controller, through squeue (the one configure found,
 * or --squeue: never a path from the environment). No shell: argv is built
 * here; its output is read from a pipe and parsed word by word.
 */
#include "config.h"

#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A few hundred thousand jobs at ~30 bytes a line, with room. */
#define OUT_MAX (64u << 20)

static int run_squeue(const struct stage *st, const char *const *args, char **out, gk_error_t *err)
{
	const char *argv[16];
	size_t n = 0, len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	int pfd[2], status;
	pid_t pid;

	if (!buf)
		return -ENOMEM;
	argv[n++] = st->squeue;
	for (; *args && n < 15; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		free(buf);
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		free(buf);
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(pfd[1], 1);
		dup2(null, 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		ssize_t r;

		if (len + 1 == cap) {
			char *grown = cap < OUT_MAX ? realloc(buf, cap * 2) : NULL;

			if (!grown)
				break;
			buf = grown;
			cap *= 2;
		}
		r = read(pfd[0], buf + len, cap - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	buf[len] = 0;
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			break;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		gk_errprintf(err, "%s failed (%s %d)", st->squeue,
			     WIFEXITED(status) ? "exit" : "signal",
			     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		free(buf);
		return -EIO;
	}
	*out = buf;
	return 0;
}

int job_ident(const struct stage *st, struct job_ident *id, gk_error_t *err)
{
	char job[16], *out = NULL, uid[32], restarts[32];
	const char *who[] = {"-h", "-a", "-t", "all", "-j", job, "-o", "%U %V", NULL};
	const char *runs[] = {"-h", "-a", "-t", "all", "-j", job, "-O", "RestartCnt", NULL};
	char *end;
	int ret, n;

	memset(id, 0, sizeof(*id));
	snprintf(job, sizeof(job), "%u", st->job);
	ret = run_squeue(st, who, &out, err);
	if (ret < 0)
		return ret;
	n = sscanf(out, "%31s %31s", uid, id->submit);
	free(out);
	if (n == 2) {
		ret = run_squeue(st, runs, &out, err);
		if (ret < 0)
			return ret;
		n = sscanf(out, "%31s", restarts) == 1 ? 3 : 0;
		free(out);
	}
	if (n != 3) {
		gk_errprintf(err, "%s: no answer for job %u", st->squeue, st->job);
		return -EIO;
	}
	errno = 0;
	id->uid = (uid_t)strtoul(uid, &end, 10);
	if (errno || *end)
		return -EIO;
	id->restarts = (unsigned)strtoul(restarts, &end, 10);
	if (errno || *end)
		return -EIO;
	id->known = 1;
	return 0;
}

int job_states(const struct stage *st, char **text, gk_error_t *err)
{
	const char *args[] = {"-h", "-a", "-t", "all", "-o", "%A %T", NULL};

	return run_squeue(st, args, text, err);
}

struct job_line {
	uint32_t id;
	uint32_t order; /* the line's place in squeue's answer: the first wins */
	const char *state;
	size_t len;
};

struct job_table {
	size_t n;
	struct job_line *v;
};

static int line_cmp(const void *a, const void *b)
{
	const struct job_line *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

int job_table_parse(const char *text, struct job_table **out)
{
	struct job_table *t = calloc(1, sizeof(*t));
	size_t cap = 0;
	const char *p = text;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	/* A line is "ID STATE": the number, one space, the state's word; any
	 * other line names no job. */
	while (p && *p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end != p && v <= UINT32_MAX && *end == ' ') {
			if (t->n == cap) {
				struct job_line *grown =
				    realloc(t->v, (cap = cap ? cap * 2 : 1024) * sizeof(*grown));

				if (!grown) {
					job_table_free(t);
					return -ENOMEM;
				}
				t->v = grown;
			}
			t->v[t->n].id = (uint32_t)v;
			t->v[t->n].order = (uint32_t)t->n;
			t->v[t->n].state = end + 1;
			t->v[t->n].len = strcspn(end + 1, " \n");
			t->n++;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (t->n)
		qsort(t->v, t->n, sizeof(*t->v), line_cmp);
	*out = t;
	return 0;
}

const char *job_table_state(const struct job_table *t, uint32_t id, char *buf, size_t len)
{
	size_t lo = 0, hi = t->n, n;

	/* The first entry whose id is not below id. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->n || t->v[lo].id != id || len == 0)
		return NULL;
	n = t->v[lo].len < len - 1 ? t->v[lo].len : len - 1;
	memcpy(buf, t->v[lo].state, n);
	buf[n] = 0;
	return buf;
}

void job_table_free(struct job_table *t)
{
	if (!t)
		return;
	free(t->v);
	free(t);
}
