/*
 * slowio.so - a test-only preload that freezes a checkpoint writer at a chosen
 * moment, so that a test can kill it there with SIGKILL:
 *   GK_SLOWIO_AT=write   the first pwrite() into a checkpoint being written
 *   GK_SLOWIO_AT=fsync   the first fsync() (data all written, not committed)
 * It creates the file GK_SLOWIO_MARK when it stops (holding its pid), then
 * sleeps. GK_SLOWIO_SKIP=N lets the first N checkpoints through (a test that
 * needs a good one before the one it kills).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off);
int fsync(int fd);
int fdatasync(int fd);

/* Is fd a file of a checkpoint being written? *which gets that checkpoint's
 * folder name, so that checkpoints can be counted. */
static int in_checkpoint(int fd, char *which, size_t len)
{
	char link[64], path[4096], *p, *slash;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0)
		return 0;
	path[n] = 0;
	p = strstr(path, "/.tmp.ckpt.");
	if (!p)
		return 0;
	slash = strchr(p + 1, '/');
	if (slash)
		*slash = 0;
	snprintf(which, len, "%s", p);
	return 1;
}

static void maybe_stop(const char *at, int fd)
{
	const char *want = getenv("GK_SLOWIO_AT"), *mark = getenv("GK_SLOWIO_MARK");
	const char *skip = getenv("GK_SLOWIO_SKIP");
	static char last[4096];
	static long seen;
	char which[4096];

	if (!want || strcmp(want, at) || !in_checkpoint(fd, which, sizeof(which)))
		return;
	if (strcmp(which, last) != 0) {
		snprintf(last, sizeof(last), "%s", which);
		seen++;
	}
	if (skip && seen <= atol(skip))
		return;
	if (mark) {
		int m = open(mark, O_CREAT | O_WRONLY | O_TRUNC, 0644);

		if (m >= 0) {
			dprintf(m, "%d\n", (int)getpid());
			close(m);
		}
	}
	for (;;)
		pause();
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	static ssize_t (*real)(int, const void *, size_t, off_t);

	if (!real)
		real = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite");
	maybe_stop("write", fd);
	return real(fd, buf, n, off);
}

int fsync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
	maybe_stop("fsync", fd);
	return real(fd);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	return pwrite(fd, buf, n, off);
}

int fdatasync(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
	maybe_stop("fsync", fd);
	return real(fd);
}
