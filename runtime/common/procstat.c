/*
 * procstat.c - a process's start time from /proc (procstat.h).
 */
#include "config.h"

#include "procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int gk_proc_start(pid_t pid, uint64_t *ticks)
{
	char path[64], buf[1024], *p, *end;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
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
