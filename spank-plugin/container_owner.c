#include "config.h"

#include "container_owner.h"
#include "container_env.h"
#include "common/fsafe.h"
#include "common/io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECORD_MAX 16384

/* err set, rc returned: for the many ways out below. */
__attribute__((format(printf, 3, 4))) static int fail(gk_error_t *err, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (err)
		vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	return rc;
}

int gk_proc_start(pid_t pid, pid_t *ppid, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	unsigned long long st;
	int fd, pp, field;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = '\0';
	/* The name (field 2) may hold anything but ends at the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d", &pp) != 1)
		return -EINVAL;
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &st) != 1)
		return -EINVAL;
	*ppid = pp;
	*start = st;
	return 0;
}

/* Make dir (0700) and its parent (0755) if missing, then open it trusted. */
static int open_records(const char *dir, int create, gk_error_t *err)
{
	char parent[PATH_MAX], *slash;

	if (create) {
		if (snprintf(parent, sizeof(parent), "%s", dir) >= (int)sizeof(parent))
			return fail(err, -ENAMETOOLONG, "%s: path too long", dir);
		slash = strrchr(parent, '/');
		if (slash && slash != parent) {
			*slash = '\0';
			if (mkdir(parent, 0755) < 0 && errno != EEXIST)
				return fail(err, -errno, "%s: %s", parent, strerror(errno));
		}
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return fail(err, -errno, "%s: %s", dir, strerror(errno));
	}
	return gk_open_trusted_dir(dir, "task records", err);
}

/* Remove the records (and left-over temporary files) of processes gone. */
static void sweep(int dfd)
{
	struct dirent *d;
	DIR *dir;
	int fd = dup(dfd);

	if (fd < 0)
		return;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return;
	}
	while ((d = readdir(dir))) {
		const char *name = d->d_name + (d->d_name[0] == '.');
		unsigned long long start, now;
		pid_t pid, ppid;
		int ipid, used = 0;

		if (sscanf(name, "%d-%llu%n", &ipid, &start, &used) != 2 || ipid <= 0)
			continue;
		pid = ipid;
		if (gk_proc_start(pid, &ppid, &now) == 0 && now == start)
			continue;
		unlinkat(dirfd(dir), d->d_name, 0);
	}
	closedir(dir);
}

int gk_owner_record(const char *dir, const struct gk_env *env, const struct gk_task_ids *ids,
		    gk_error_t *err)
{
	char name[64], tmp[80], *binds, *text;
	unsigned long long start;
	pid_t self = getpid(), ppid;
	size_t len = 0;
	int dfd, fd, rc;

	rc = gk_proc_start(self, &ppid, &start);
	if (rc < 0)
		return fail(err, rc, "/proc/%d/stat: %s", (int)self, strerror(-rc));
	binds = malloc(RECORD_MAX);
	text = malloc(RECORD_MAX);
	if (!binds || !text) {
		rc = -ENOMEM;
		gk_errprintf(err, "out of memory");
		goto out_free;
	}
	rc = env->get(env->ctx, GK_ENV_BIND, binds, RECORD_MAX);
	if (rc < 0) {
		gk_errprintf(err, "%s: %s", GK_ENV_BIND, strerror(-rc));
		goto out_free;
	}
	if (rc == 0)
		binds[0] = '\0';
	len = (size_t)snprintf(text, RECORD_MAX,
			       "gpuckpt-task 1\npid %d\nstart %llu\njob %" PRIu32 "\nuid %u\n",
			       (int)self, start, ids->job_id, (unsigned)ids->uid);
	for (const char *p = binds; *p;) {
		size_t m = strcspn(p, ":");

		if (m)
			len += (size_t)snprintf(text + len, len < RECORD_MAX ? RECORD_MAX - len : 0,
						"bind %.*s\n", (int)m, p);
		p += m + (p[m] == ':');
	}
	if (len >= RECORD_MAX) {
		rc = -ENAMETOOLONG;
		gk_errprintf(err, "%s: too long for a task record", GK_ENV_BIND);
		goto out_free;
	}
	dfd = open_records(dir, 1, err);
	if (dfd < 0) {
		rc = dfd;
		goto out_free;
	}
	sweep(dfd);
	snprintf(name, sizeof(name), "%d-%llu", (int)self, start);
	snprintf(tmp, sizeof(tmp), ".%s", name);
	/* Root's folder, which only root can change: the name is ours. */
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		gk_errprintf(err, "%s/%s: %s", dir, tmp, strerror(-rc));
		goto out_close;
	}
	rc = gk_write_all(fd, text, len);
	if (close(fd) < 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0)
		rc = -errno;
	if (rc < 0) {
		gk_errprintf(err, "%s/%s: %s", dir, name, strerror(-rc));
		unlinkat(dfd, tmp, 0);
	}
out_close:
	close(dfd);
out_free:
	free(binds);
	free(text);
	return rc;
}

/* Record `name` of dfd into o: root's regular file, well formed. 0, -ENOENT or -EINVAL. */
static int read_record(int dfd, const char *dir, const char *name, struct gk_owner *o,
		       gk_error_t *err)
{
	char *text = NULL, *line, *save = NULL;
	int fd, rc = 0, version = 0, have = 0;
	struct stat st;
	size_t used = 0;
	ssize_t n;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return -ENOENT;
	if (fd < 0)
		return fail(err, -errno, "%s/%s: %s", dir, name, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) ||
	    st.st_size >= RECORD_MAX) {
		rc = fail(err, -EINVAL, "%s/%s: not a task record of root's", dir, name);
		goto out;
	}
	text = malloc(RECORD_MAX);
	if (!text) {
		rc = fail(err, -ENOMEM, "out of memory");
		goto out;
	}
	while ((n = read(fd, text + used, RECORD_MAX - 1 - used)) > 0)
		used += (size_t)n;
	text[used] = '\0';
	memset(o, 0, sizeof(*o));
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long v;
		int end = 0;

		if (sscanf(line, "gpuckpt-task %d%n", &version, &end) == 1 && !line[end])
			continue;
		if (!strncmp(line, "bind /", 6) && !strchr(line + 5, ':')) {
			size_t b = strlen(o->binds);

			if (b + strlen(line + 5) + 2 > sizeof(o->binds)) {
				have = -1;
				break;
			}
			snprintf(o->binds + b, sizeof(o->binds) - b, "%s%s", b ? ":" : "",
				 line + 5);
			continue;
		}
		if (sscanf(line, "pid %llu%n", &v, &end) == 1 && !line[end] && v <= INT_MAX)
			o->pid = (pid_t)v, have |= 1;
		else if (sscanf(line, "start %llu%n", &v, &end) == 1 && !line[end])
			o->start = v, have |= 2;
		else if (sscanf(line, "job %llu%n", &v, &end) == 1 && !line[end] && v <= UINT32_MAX)
			o->job_id = (uint32_t)v, have |= 4;
		else if (sscanf(line, "uid %llu%n", &v, &end) == 1 && !line[end] && v < UINT32_MAX)
			o->uid = (uid_t)v, have |= 8;
		else {
			have = -1;
			break;
		}
	}
	if (version != 1 || have != 15)
		rc = fail(err, -EINVAL, "%s/%s: not a task record this hook reads", dir, name);
out:
	free(text);
	close(fd);
	return rc;
}

int gk_owner_find(const char *dir, struct gk_owner *o, gk_error_t *err)
{
	pid_t self = getpid(), child = self, parent = getppid(), pp, cpp;
	unsigned long long start, cstart = 0, cs;
	char name[64];
	int dfd, rc;

	dfd = open_records(dir, 0, err);
	if (dfd == -ENOENT)
		return fail(err, -ENOENT,
			    "%s does not exist: no task with checkpoints was started on this node",
			    dir);
	if (dfd < 0)
		return dfd;
	for (int depth = 0; depth < GK_OWNER_MAX_DEPTH && parent > 1; depth++) {
		rc = gk_proc_start(parent, &pp, &start);
		if (rc < 0) {
			gk_errprintf(err, "process %d, an ancestor of podman: %s", (int)parent,
				     strerror(-rc));
			goto out;
		}
		/*
		 * parent's start time was read after the child's parent pid: the
		 * child still being its child shows that the pid was not given to
		 * another process meanwhile (an orphan goes to a subreaper or init,
		 * whose pids are not that one).
		 */
		if (child == self
			? getppid() != parent
			: gk_proc_start(child, &cpp, &cs) < 0 || cpp != parent || cs != cstart) {
			rc = fail(err, -ESRCH,
				  "the processes above podman changed while they were read");
			goto out;
		}
		snprintf(name, sizeof(name), "%d-%llu", (int)parent, start);
		rc = read_record(dfd, dir, name, o, err);
		if (rc == 0 && (o->pid != parent || o->start != start))
			rc = fail(err, -EINVAL, "%s/%s: names another process", dir, name);
		if (rc != -ENOENT)
			goto out;
		child = parent;
		cstart = start;
		parent = pp;
	}
	rc = fail(err, -ENOENT,
		  "no process above podman (%d) is a Slurm task with checkpoints on (no record of "
		  "one in %s)",
		  (int)getppid(), dir);
out:
	close(dfd);
	return rc;
}

int gk_owner_lists(const struct gk_owner *o, const char *path)
{
	size_t n = strlen(path);

	for (const char *p = o->binds; *p;) {
		size_t m = strcspn(p, ":");

		if (m == n && strncmp(p, path, n) == 0)
			return 1;
		p += m + (p[m] == ':');
	}
	return 0;
}
