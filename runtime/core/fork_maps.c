/*
 * fork_maps.c - a child forked after CUDA started does not inherit the
 * driver's mappings of its device files.
 *
 * Why: a transparent checkpoint dumps the whole process tree with CRIU, and
 * CRIU cannot dump a mapping of a character device ("Can't handle
 * non-regular mapping"). The driver's own checkpoint takes those mappings out
 * of the CUDA process, but not out of a child that fork() copied them into:
 * PyTorch's DataLoader workers, forked after the model went to the GPU, each
 * held a copy of one (seen on an H200: every dump of such a training loop
 * failed). A child cannot use the parent's CUDA state anyway (CUDA does not
 * work across fork), so the copies are of no use to it. Before each fork the
 * parent marks every /dev/nvidia* mapping MADV_DONTFORK: the child starts
 * without them, and the parent keeps them unchanged.
 *
 * Cost: one read of /proc/self/maps per fork, in transparent mode only.
 * The reading uses no stdio and no malloc, since other threads may hold
 * their locks while this process forks.
 */
#include "config.h"

#include "fork_maps.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* One line of /proc/PID/maps: "start-end perms offset dev inode   path". */
static void mark_line(const char *line, size_t len)
{
	static const char dev[] = "/dev/nvidia";
	const char *path = memchr(line, '/', len);
	uintptr_t start = 0, end = 0;
	const char *p = line, *stop = line + len;

	if (!path || (size_t)(stop - path) < sizeof(dev) - 1 ||
	    memcmp(path, dev, sizeof(dev) - 1) != 0)
		return;
	for (; p < stop && *p != '-'; p++) {
		int v = *p >= 'a' ? *p - 'a' + 10 : *p - '0';
		start = start * 16 + (uintptr_t)v;
	}
	for (p++; p < stop && *p != ' '; p++) {
		int v = *p >= 'a' ? *p - 'a' + 10 : *p - '0';
		end = end * 16 + (uintptr_t)v;
	}
	/* A mapping that refuses (none known) stays as it was: the dump then
	 * says which, as before. */
	if (end > start)
		(void)madvise((void *)start, end - start, MADV_DONTFORK);
}

static void before_fork(void)
{
	static char buf[8192];
	size_t have = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	while ((n = read(fd, buf + have, sizeof(buf) - have)) > 0) {
		char *line = buf, *nl;

		have += (size_t)n;
		while ((nl = memchr(line, '\n', (size_t)(buf + have - line)))) {
			mark_line(line, (size_t)(nl - line));
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof(buf)) /* a line longer than the buffer */
			have = 0;
	}
	close(fd);
}

static void register_handler(void)
{
	(void)pthread_atfork(before_fork, NULL, NULL);
}

void gk_fork_maps_guard(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	(void)pthread_once(&once, register_handler);
}
