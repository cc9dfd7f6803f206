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
 * The same holds for the driver's open device files, which a fork without
 * exec keeps: CRIU refuses to dump a child holding /dev/nvidiactl ("Can't
 * dump file 8 of that type (chr 195:255)", the next failure of the same
 * training loop). In the child each such descriptor is pointed at /dev/null
 * instead of closed, so that its number stays taken: a later open() in the
 * child cannot get it and have the driver's calls land on the child's file.
 *
 * Cost: one read of /proc/self/maps per fork, and one of /proc/self/fd in
 * the child, in transparent mode only. Neither uses stdio or malloc: other
 * threads may hold their locks while this process forks, and the child may
 * only make async-signal-safe calls.
 */
#include "config.h"

#include "core/control/fork_maps.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
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

/* The child's descriptor NAME (a decimal entry of /proc/self/fd): pointed
 * at DEVNULL when it is a /dev/nvidia* file, keeping its close-on-exec flag.
 * DIR is the descriptor being read. */
static void blank_fd(const char *name, int devnull, int dir)
{
	static const char dev[] = "/dev/nvidia";
	char link[32] = "/proc/self/fd/", target[64];
	size_t n = strlen(link);
	ssize_t len;
	int fd = 0, flags;

	for (const char *p = name; *p; p++) {
		if (*p < '0' || *p > '9' || n >= sizeof(link) - 1)
			return;
		fd = fd * 10 + (*p - '0');
		link[n++] = *p;
	}
	link[n] = '\0';
	if (fd == devnull || fd == dir)
		return;
	len = readlink(link, target, sizeof(target) - 1);
	if (len < (ssize_t)sizeof(dev) - 1 || memcmp(target, dev, sizeof(dev) - 1) != 0)
		return;
	flags = fcntl(fd, F_GETFD);
	(void)dup3(devnull, fd, flags >= 0 && (flags & FD_CLOEXEC) ? O_CLOEXEC : 0);
}

static void after_fork_child(void)
{
	char buf[4096];
	long n;
	int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (dir >= 0 && devnull >= 0)
		while ((n = syscall(SYS_getdents64, dir, buf, sizeof(buf))) > 0)
			for (long off = 0; off < n;) {
				struct dirent64 *d = (struct dirent64 *)(buf + off);

				if (d->d_name[0] != '.')
					blank_fd(d->d_name, devnull, dir);
				off += d->d_reclen;
			}
	if (dir >= 0)
		close(dir);
	if (devnull >= 0)
		close(devnull);
}

static void register_handler(void)
{
	(void)pthread_atfork(before_fork, NULL, after_fork_child);
}

void gk_fork_maps_guard(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	(void)pthread_once(&once, register_handler);
}
