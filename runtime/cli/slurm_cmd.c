/*
 * slurm_cmd.c - running Slurm's commands for the tool, and reading what
 * `scontrol show job -o` says (slurm_cmd.h).
 */
#include "config.h"
#include "cli/slurm_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUT_MAX (4u << 20)

extern char **environ;

/*
 * Root's PATH for Slurm's commands: only absolute folders that are root's
 * and that no one else can write (checked with stat, links followed), so
 * that a PATH holding ".", "" or a user's folder, with root working in a
 * folder a user can write, never runs a user's `scontrol`. Into buf as
 * "PATH=...". Others' PATH is theirs to trust.
 */
static void root_path(char *buf, size_t len)
{
	const char *path = getenv("PATH");
	size_t used;

	used = (size_t)snprintf(buf, len, "PATH=");
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t n = strcspn(p, ":");
		char dir[4096];
		struct stat st;

		if (n && n < sizeof(dir) && p[0] == '/') {
			memcpy(dir, p, n);
			dir[n] = '\0';
			if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
			    !(st.st_mode & 022) && used + n + 2 < len) {
				used += (size_t)snprintf(buf + used, len - used, "%s%s",
							 used > 5 ? ":" : "", dir);
			}
		}
		p += n + (p[n] == ':');
	}
}

/* The environment for a Slurm command: ours without SLURM_* (but
 * SLURM_CONF), plus extra; root's PATH cleaned (root_path). malloc'ed
 * array of pointers into them. */
static char **child_env(char *const extra[])
{
	static char rootpath[8192];

	size_t n = 0, k = 0, nextra = 0;
	char **env;

	while (environ[n])
		n++;
	while (extra && extra[nextra])
		nextra++;
	env = calloc(n + nextra + 2, sizeof(*env));
	if (!env)
		return NULL;
	if (getuid() == 0) {
		root_path(rootpath, sizeof(rootpath));
		env[k++] = rootpath;
	}
	for (size_t i = 0; i < n; i++) {
		int replaced = 0;

		if (strncmp(environ[i], "SLURM_", 6) == 0 &&
		    strncmp(environ[i], "SLURM_CONF=", 11) != 0)
			continue;
		if (getuid() == 0 && strncmp(environ[i], "PATH=", 5) == 0)
			continue;
		for (size_t x = 0; x < nextra; x++) {
			const char *eq = strchr(extra[x], '=');

			if (eq && strncmp(environ[i], extra[x], (size_t)(eq - extra[x]) + 1) == 0)
				replaced = 1;
		}
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t x = 0; x < nextra; x++)
		env[k++] = extra[x];
	env[k] = NULL;
	return env;
}

static int append(char **buf, size_t *len, const char *data, size_t n)
{
	char *b;

	if (*len >= OUT_MAX)
		return 0;
	if (n > OUT_MAX - *len)
		n = OUT_MAX - *len;
	b = realloc(*buf, *len + n + 1);
	if (!b)
		return -ENOMEM;
	memcpy(b + *len, data, n);
	*len += n;
	b[*len] = '\0';
	*buf = b;
	return 0;
}

int cmd_run(char *const argv[], char *const extra_env[], unsigned timeout, struct cmd_result *r)
{
	return cmd_run_as(argv, extra_env, timeout, getuid(), getgid(), NULL, r);
}

/* In the child: become uid/gid with the user's groups (only root changes). */
static int become(uid_t uid, gid_t gid, const char *user)
{
	if (uid == getuid() && gid == getgid())
		return 0;
	if (!user || initgroups(user, gid) < 0)
		if (setgroups(1, &gid) < 0)
			return -1;
	if (setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -1;
	/* root's folder may be closed to the user; srun starts the step there. */
	if (chdir("/") < 0)
		return -1;
	return getuid() == uid && geteuid() == uid ? 0 : -1;
}

int cmd_run_as(char *const argv[], char *const extra_env[], unsigned timeout, uid_t uid,
	       gid_t gid, const char *user, struct cmd_result *r)
{
	int out[2] = {-1, -1}, err[2] = {-1, -1}, status;
	char **env;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	r->out = calloc(1, 1);
	r->err = calloc(1, 1);
	env = child_env(extra_env);
	if (!r->out || !r->err || !env || pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0) {
		r->status = -ENOMEM;
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		r->status = -errno;
		goto out;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(127);
		if (become(uid, gid, user) < 0) {
			dprintf(2, "cannot run %s as uid %u: %s\n", argv[0], (unsigned)uid,
				strerror(errno));
			_exit(127);
		}
		if (timeout)
			alarm(timeout);
		environ = env;
		execvp(argv[0], argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	out[1] = err[1] = -1;
	for (;;) {
		struct pollfd p[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
		char buf[8192];
		int open_fds = 0;

		for (int i = 0; i < 2; i++)
			open_fds += p[i].fd >= 0;
		if (!open_fds)
			break;
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			ssize_t n;

			if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = read(p[i].fd, buf, sizeof(buf));
			if (n > 0) {
				if (i == 0)
					append(&r->out, &r->outlen, buf, (size_t)n);
				else
					append(&r->err, &r->errlen, buf, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				close(i == 0 ? out[0] : err[0]);
				if (i == 0)
					out[0] = -1;
				else
					err[0] = -1;
			}
		}
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			r->status = -errno;
			goto out;
		}
	if (WIFEXITED(status))
		r->status = WEXITSTATUS(status);
	else
		r->status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -ECHILD;
out:
	for (int i = 0; i < 2; i++) {
		if (out[i] >= 0)
			close(out[i]);
		if (err[i] >= 0)
			close(err[i]);
	}
	free(env);
	return r->status < 0 ? r->status : 0;
}

void cmd_result_free(struct cmd_result *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

void cmd_last_line(const char *text, char *buf, size_t len)
{
	const char *end = text + strlen(text), *start;

	while (end > text && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	start = end;
	while (start > text && start[-1] != '\n')
		start--;
	snprintf(buf, len, "%.*s", (int)(end - start), start);
}

int job_field(const char *line, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);
	const char *p = line;

	/* Keys start the line or follow a blank; values end at a blank. Values
	 * that hold blanks (Comment=, JobName=) are never asked for. */
	for (;;) {
		p = strstr(p, key);
		if (!p)
			return -ENOENT;
		if ((p == line || p[-1] == ' ' || p[-1] == '\n') && p[kl] == '=')
			break;
		p += kl;
	}
	p += kl + 1;
	snprintf(buf, len, "%.*s", (int)strcspn(p, " \n"), p);
	return 0;
}

int job_info_parse(const char *text, struct job_info *j)
{
	char v[256], *open, *end;
	unsigned long n;

	memset(j, 0, sizeof(*j));
	if (job_field(text, "JobId", j->id, sizeof(j->id)) < 0 || !j->id[0] ||
	    job_field(text, "UserId", v, sizeof(v)) < 0 ||
	    job_field(text, "JobState", j->state, sizeof(j->state)) < 0)
		return -EINVAL;
	/* UserId=alice(1000) */
	open = strchr(v, '(');
	if (!open || open == v)
		return -EINVAL;
	snprintf(j->user, sizeof(j->user), "%.*s", (int)(open - v), v);
	errno = 0;
	n = strtoul(open + 1, &end, 10);
	if (errno || *end != ')' || end == open + 1 || n > 0xfffffffeUL)
		return -EINVAL;
	j->uid = (uid_t)n;
	/* GroupId=alice(1000): the job's group, for running as its user. */
	j->gid = (gid_t)-1;
	if (job_field(text, "GroupId", v, sizeof(v)) == 0 && (open = strchr(v, '('))) {
		errno = 0;
		n = strtoul(open + 1, &end, 10);
		if (!errno && *end == ')' && end != open + 1 && n <= 0xfffffffeUL)
			j->gid = (gid_t)n;
	}
	if (job_field(text, "Requeue", v, sizeof(v)) == 0)
		j->requeue = strcmp(v, "1") == 0;
	if (job_field(text, "BatchFlag", v, sizeof(v)) == 0)
		j->batch = strcmp(v, "1") == 0;
	if (job_field(text, "NumNodes", v, sizeof(v)) == 0)
		j->nnodes = (unsigned)strtoul(v, NULL, 10);
	if (job_field(text, "NodeList", j->nodes, sizeof(j->nodes)) < 0)
		j->nodes[0] = '\0';
	return 0;
}

int job_steps_parse(const char *text, char *buf, size_t len)
{
	size_t used = 0;

	if (!len)
		return -ENOSPC;
	buf[0] = '\0';
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *dot = NULL, *p;
		size_t n;

		while (end > line && (end[-1] == ' ' || end[-1] == '\r'))
			end--;
		for (p = line; p < end; p++)
			if (*p == '.')
				dot = p;
		if (dot) {
			n = (size_t)(end - dot - 1);
			for (p = dot + 1; p < end; p++)
				if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
				      (*p >= 'A' && *p <= 'Z')))
					n = 0;
			if (n >= 1 && n <= 15) {
				if (used + n + 2 > len)
					return -ENOSPC;
				if (used)
					buf[used++] = ',';
				memcpy(buf + used, dot + 1, n);
				used += n;
				buf[used] = '\0';
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

int config_field(const char *text, const char *key, char *buf, size_t len)
{
	size_t kl = strlen(key);

	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n'), *p = line + kl;

		if (strncmp(line, key, kl) == 0 && (*p == ' ' || *p == '=')) {
			while (*p == ' ')
				p++;
			if (*p == '=') {
				p++;
				while (*p == ' ')
					p++;
				snprintf(buf, len, "%.*s", (int)(nl ? (size_t)(nl - p) : strlen(p)), p);
				return 0;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* Is word (n bytes) a path to gpuckpt's plugin? */
static int is_gpuckpt_plugin(const char *w, size_t n)
{
	static const char name[] = "spank_gpuckpt.so";
	size_t k = sizeof(name) - 1;

	return n >= k && memcmp(w + n - k, name, k) == 0 && (n == k || w[n - k - 1] == '/');
}

int plugstack_bb_root(const char *text, char *buf, size_t len)
{
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n'), *end = nl ? nl : line + strlen(line);
		const char *hash = memchr(line, '#', (size_t)(end - line)), *p = line;
		const char *w[64];
		size_t wl[64], nw = 0;

		if (hash)
			end = hash;
		while (p < end && nw < 64) {
			while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
				p++;
			if (p == end)
				break;
			w[nw] = p;
			while (p < end && *p != ' ' && *p != '\t' && *p != '\r')
				p++;
			wl[nw] = (size_t)(p - w[nw]);
			nw++;
		}
		/* required|optional PLUGIN [args...] */
		if (nw >= 2 &&
		    ((wl[0] == 8 && !memcmp(w[0], "required", 8)) ||
		     (wl[0] == 8 && !memcmp(w[0], "optional", 8))) &&
		    is_gpuckpt_plugin(w[1], wl[1])) {
			for (size_t i = nw; i-- > 2;)
				if (wl[i] > 8 && !memcmp(w[i], "bb_root=", 8)) {
					if (wl[i] - 8 >= len)
						return -ENAMETOOLONG;
					snprintf(buf, len, "%.*s", (int)(wl[i] - 8), w[i] + 8);
					return 0;
				}
			return 1;
		}
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}
