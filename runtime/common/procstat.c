/*
 * procstat.c - a process's start time, state and uids from /proc (procstat.h).
 */
#include "config.h"

#include "common/procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* /proc/PID/NAME's first len-1 bytes, NUL-ended. 0 or -errno. */
static int read_proc(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	return 0;
}

int gk_proc_start(pid_t pid, uint64_t *ticks)
{
	char buf[1024], *p, *end;
	int ret = read_proc(pid, "stat", buf, sizeof(buf));

	if (ret < 0)
		return ret;
	/* The command name (field 2) may hold blanks and parentheses: count
	 * from the last ')'. Field 3 follows it; field 22 is 19 blanks on. */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	for (int field = 3; field <= 22; field++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return -EIO;
	}
	*ticks = strtoull(p + 1, &end, 10);
	return end == p + 1 ? -EIO : 0;
}

int gk_proc_alive(pid_t pid, uint64_t ticks)
{
	uint64_t now;

	return pid > 0 && gk_proc_start(pid, &now) == 0 && now == ticks;
}

/* The state letter and thread count of a stat line read into buf. */
static int parse_state(const char *buf, char *state, long *threads)
{
	const char *p = strrchr(buf, ')'); /* the command name may hold anything */

	if (!p || sscanf(p + 1,
			 " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u"
			 " %*d %*d %*d %*d %ld",
			 state, threads) != 2)
		return -EIO;
	return 0;
}

int gk_proc_state(pid_t pid, char *state, long *threads)
{
	char buf[1024];
	int ret = read_proc(pid, "stat", buf, sizeof(buf));

	return ret < 0 ? ret : parse_state(buf, state, threads);
}

int gk_thread_state(pid_t pid, pid_t tid, char *state)
{
	char name[48], buf[1024];
	long threads;
	int ret;

	snprintf(name, sizeof(name), "task/%d/stat", (int)tid);
	ret = read_proc(pid, name, buf, sizeof(buf));
	return ret < 0 ? ret : parse_state(buf, state, &threads);
}

int gk_proc_uids(pid_t pid, uid_t *ruid, uid_t *euid)
{
	char buf[4096], *u;
	unsigned long r, e;
	int ret = read_proc(pid, "status", buf, sizeof(buf));

	if (ret < 0)
		return ret;
	u = strstr(buf, "\nUid:");
	if (!u || sscanf(u + 5, "%lu %lu", &r, &e) != 2)
		return -EIO;
	*ruid = (uid_t)r;
	*euid = (uid_t)e;
	return 0;
}
