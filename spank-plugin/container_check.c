#include "config.h"

#include "container_check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define OUT_MAX 65536

/* "2.34" > "2.9": compare version strings part by part. */
static int vercmp(const char *a, const char *b)
{
	while (*a || *b) {
		char *ea, *eb;
		unsigned long x = strtoul(a, &ea, 10), y = strtoul(b, &eb, 10);

		if (x != y)
			return x < y ? -1 : 1;
		a = *ea == '.' ? ea + 1 : ea;
		b = *eb == '.' ? eb + 1 : eb;
		if (ea == a && eb == b && !(*a == '.' || *b == '.'))
			break;
	}
	return 0;
}

int gk_loader_problem(const char *out, char *reason, size_t len)
{
	char glibc[32] = "", lib[256] = "", sym[256] = "";
	const char *line = out;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		const char *v = strstr(line, "version `GLIBC_");
		const char *arrow = strstr(line, "=> not found");

		if (v && v < line + n) {
			char ver[32];
			size_t k = strcspn(v + 15, "'\n");

			if (k < sizeof(ver)) {
				snprintf(ver, sizeof(ver), "%.*s", (int)k, v + 15);
				if (!glibc[0] || vercmp(ver, glibc) > 0)
					snprintf(glibc, sizeof(glibc), "%s", ver);
			}
		} else if (arrow && arrow < line + n && !lib[0]) {
			const char *s = line;

			while (*s == '\t' || *s == ' ')
				s++;
			snprintf(lib, sizeof(lib), "%.*s", (int)(arrow - s), s);
			while (lib[0] && lib[strlen(lib) - 1] == ' ')
				lib[strlen(lib) - 1] = '\0';
		} else if (!sym[0] && strncmp(line, "undefined symbol: ", 18) == 0) {
			snprintf(sym, sizeof(sym), "%.*s", (int)(n < 255 ? n : 255), line);
			for (char *t = sym; *t; t++)
				if (*t == '\t')
					*t = ' ';
		}
		line = nl ? nl + 1 : NULL;
	}
	if (glibc[0])
		snprintf(reason, len,
			 "its C library is older than the runtime needs: GLIBC_%s not found "
			 "(glibc %s or later is needed)",
			 glibc, glibc);
	else if (lib[0])
		snprintf(reason, len, "the runtime needs %s, which neither the container nor the "
				      "runtime's bundle folder holds", lib);
	else if (sym[0])
		snprintf(reason, len, "the runtime cannot be linked: %s", sym);
	else
		return 0;
	return 1;
}

/* Run the loader on the runtime in trace mode; its output (stdout and stderr) in out. */
static int trace(const char *runtime, char *out, size_t len, int *status, char *reason,
		 size_t rlen)
{
	char *const argv[] = {(char *)GK_LDSO, (char *)runtime, NULL};
	char *const envp[] = {"LD_TRACE_LOADED_OBJECTS=1", "LD_BIND_NOW=yes", "LD_WARN=yes", NULL};
	size_t used = 0;
	int fds[2];
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(reason, rlen, "cannot make a pipe: %s", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(fds[0]);
		close(fds[1]);
		snprintf(reason, rlen, "cannot fork: %s", strerror(e));
		return -e;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		if (null >= 0)
			dup2(null, 0);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		execve(GK_LDSO, argv, envp);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		ssize_t n = read(fds[0], out + used, len - 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used == len - 1) {
			/* Keep draining so the loader never blocks on a full pipe. */
			char sink[4096];

			while (read(fds[0], sink, sizeof(sink)) > 0)
				;
			break;
		}
	}
	out[used] = '\0';
	close(fds[0]);
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR) {
			snprintf(reason, rlen, "cannot wait for %s: %s", GK_LDSO, strerror(errno));
			return -errno;
		}
	}
	return 0;
}

int gk_container_check(const char *runtime, const char *dir, int *loads, char *reason, size_t len)
{
	char *out;
	int status = 0, rc;

	*loads = 0;
	if (access(runtime, R_OK) < 0) {
		snprintf(reason, len,
			 "the runtime %s is not visible in it (%s): the site's container hook "
			 "mounts the runtime's bundle folder",
			 runtime, strerror(errno));
		return 0;
	}
	if (access(GK_LDSO, X_OK) < 0) {
		snprintf(reason, len,
			 "it has no glibc dynamic loader (%s: %s); the runtime needs glibc", GK_LDSO,
			 strerror(errno));
		return 0;
	}
	out = malloc(OUT_MAX);
	if (!out) {
		snprintf(reason, len, "out of memory");
		return -ENOMEM;
	}
	rc = trace(runtime, out, OUT_MAX, &status, reason, len);
	if (rc < 0)
		goto out_free;
	if (gk_loader_problem(out, reason, len)) {
		rc = 0;
		goto out_free;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		char first[200];

		snprintf(first, sizeof(first), "%.*s", (int)strcspn(out, "\n"), out);
		if (WIFEXITED(status))
			snprintf(reason, len, "its loader %s could not load the runtime (status %d%s%s)",
				 GK_LDSO, WEXITSTATUS(status), first[0] ? ": " : "", first);
		else
			snprintf(reason, len, "its loader %s was killed by signal %d", GK_LDSO,
				 WTERMSIG(status));
		rc = 0;
		goto out_free;
	}
	*loads = 1;
	if (dir && access(dir, W_OK | X_OK) < 0) {
		snprintf(reason, len,
			 "the task's checkpoint folder %s is not %s in it (%s): the site's container "
			 "hook mounts it",
			 dir, errno == ENOENT ? "visible" : "writable", strerror(errno));
		rc = 0;
		goto out_free;
	}
	rc = 1;

out_free:
	free(out);
	return rc;
}
