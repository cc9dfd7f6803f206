/*
 * slowio.so - a test-only preload that freezes a checkpoint writer at a chosen
 * moment, so that a test can kill it there with SIGKILL:
 *   GK_SLOWIO_AT=write   the first pwrite() into a checkpoint being written
 *   GK_SLOWIO_AT=fsync   the first fsync() (data all written, not committed)
 * It creates the file GK_SLOWIO_MARK when it stops, then sleeps.
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

static int in_checkpoint(int fd)
{
	char link[64], path[4096];
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, path, sizeof(path) - 1);
	if (len <= 0)
		return 0;
	path[len] = 0;
	return strstr(path, "/.tmp.ckpt.") != NULL;
}

static void maybe_stop(const char *at, int fd)
{
	const char *want = getenv("GK_SLOWIO_AT"), *mark = getenv("GK_SLOWIO_MARK");

	if (!want || strcmp(want, at) || !in_checkpoint(fd))
		return;
	if (mark)
		close(open(mark, O_CREAT | O_WRONLY, 0644));
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
