/*
 * jobdir.c - walking a job's task folders through descriptors (jobdir.h).
 */
#include "config.h"

#include "common/jobdir.h"
#include "common/events.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

int gk_parse_step_dirname(const char *name, char *step, size_t len)
{
	size_t n;

	if (strncmp(name, GK_STEP_PREFIX, GK_STEP_PREFIX_LEN) != 0)
		return -EINVAL;
	name += GK_STEP_PREFIX_LEN;
	n = strlen(name);
	if (n == 0 || n > 15 || n >= len)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= 'A' && name[i] <= 'Z')))
			return -EINVAL;
	memcpy(step, name, n + 1);
	return 0;
}

int gk_parse_task_dirname(const char *name, uint32_t *task)
{
	uint64_t v = 0;
	size_t n;

	if (strncmp(name, GK_TASK_PREFIX, GK_TASK_PREFIX_LEN) != 0)
		return -EINVAL;
	name += GK_TASK_PREFIX_LEN;
	n = strlen(name);
	if (n == 0 || n > 10 || (n > 1 && name[0] == '0'))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (name[i] < '0' || name[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(name[i] - '0');
	}
	if (v > UINT32_MAX)
		return -EINVAL;
	*task = (uint32_t)v;
	return 0;
}

/* name inside dirfd: a folder of uid's, not a link. */
static int open_owned(int dirfd, const char *name, uid_t uid)
{
	struct stat st;
	int fd = openat(dirfd, name, DIR_FLAGS);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != uid) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* The entries of dirfd, read through a duplicate so dirfd stays usable. */
static DIR *open_listing(int dirfd)
{
	int dup = openat(dirfd, ".", DIR_FLAGS);
	DIR *d;

	if (dup < 0)
		return NULL;
	d = fdopendir(dup);
	if (!d)
		close(dup);
	return d;
}

/* What a walk has looked at so far (GK_JOBDIR_*_MAX). */
struct budget {
	unsigned entries;
	unsigned tasks;
};

static int spend_entry(struct budget *b)
{
	return ++b->entries > GK_JOBDIR_ENTRIES_MAX ? -E2BIG : 0;
}

static int walk_step(int stepfd, const char *step, uid_t uid, gk_task_fn fn, void *arg,
		     struct budget *b)
{
	DIR *d = open_listing(stepfd);
	struct dirent *e;
	int ret = 0;

	if (!d)
		return 0;
	while (!ret && (e = readdir(d))) {
		uint32_t task;
		int taskfd;

		ret = spend_entry(b);
		if (ret < 0 || gk_parse_task_dirname(e->d_name, &task) < 0)
			continue;
		taskfd = open_owned(stepfd, e->d_name, uid);
		if (taskfd < 0)
			continue;
		if (++b->tasks > GK_JOBDIR_TASKS_MAX) {
			close(taskfd);
			ret = -E2BIG;
			continue;
		}
		ret = fn(arg, step, task, taskfd);
		close(taskfd);
	}
	closedir(d);
	return ret;
}

int gk_jobdir_walk(int jobfd, uid_t uid, gk_task_fn fn, void *arg)
{
	struct budget b = {0, 0};
	DIR *d = open_listing(jobfd);
	struct dirent *e;
	int ret = 0;

	if (!d)
		return -errno;
	while (!ret && (e = readdir(d))) {
		char step[16];
		int stepfd;

		ret = spend_entry(&b);
		if (ret < 0 || gk_parse_step_dirname(e->d_name, step, sizeof(step)) < 0)
			continue;
		stepfd = open_owned(jobfd, e->d_name, uid);
		if (stepfd < 0)
			continue;
		ret = walk_step(stepfd, step, uid, fn, arg, &b);
		close(stepfd);
	}
	closedir(d);
	return ret;
}

int gk_events_read_at(int taskfd, uid_t uid, char **bufp, size_t *lenp)
{
	struct stat st;
	size_t len = 0, want;
	char *buf;
	int fd, ret = 0;

	*bufp = NULL;
	*lenp = 0;
	fd = openat(taskfd, GK_EVENTS_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid || st.st_nlink != 1) {
		ret = -EPERM;
		goto out_close;
	}
	want = st.st_size > (off_t)GK_EVENTS_FILE_MAX ? GK_EVENTS_FILE_MAX : (size_t)st.st_size;
	buf = malloc(want + 1);
	if (!buf) {
		ret = -ENOMEM;
		goto out_close;
	}
	while (len < want) {
		ssize_t n = read(fd, buf + len, want - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*bufp = buf;
	*lenp = len;
out_close:
	close(fd);
	return ret;
}
