/*
 * slowio.so - a test-only preload that freezes or slows a checkpoint writer
 * at a chosen moment, so that a test can kill or signal it there:
 *   GK_SLOWIO_AT=write   the first pwrite() into a checkpoint being written
 *   GK_SLOWIO_AT=fsync   the first fsync() (data all written, not committed)
 *   GK_SLOWIO_AT=slow    every pwrite() into a checkpoint waits
 *                        GK_SLOWIO_DELAY_MS (default 20) milliseconds
 * It creates the file GK_SLOWIO_MARK, holding its pid, when it stops (or
 * first slows down).
 * GK_SLOWIO_SKIP=N leaves the first N checkpoints alone (told apart by their
 * .tmp.ckpt.NNNNNN folder), so that a later one, a background write, is hit.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off);
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off);
int fsync(int fd);
int fdatasync(int fd);

/* The sequence of the checkpoint being written that fd belongs to, or 0. */
static unsigned long in_checkpoint(int fd)
{
	char link[64], path[4096], *p;
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, path, sizeof(path) - 1);
	if (len <= 0)
		return 0;
	path[len] = 0;
	p = strstr(path, "/.tmp.ckpt.");
	return p ? strtoul(p + strlen("/.tmp.ckpt."), NULL, 10) : 0;
}

/* Whether the checkpoint `seq` is past the first GK_SLOWIO_SKIP ones seen. */
static int past_skip(unsigned long seq)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	static unsigned long seen[64];
	static int nseen;
	const char *skip = getenv("GK_SLOWIO_SKIP");
	int n = skip ? atoi(skip) : 0, i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nseen; i++)
		if (seen[i] == seq)
			break;
	if (i == nseen && nseen < 64)
		seen[nseen++] = seq;
	pthread_mutex_unlock(&lock);
	return i >= n;
}

static void maybe_stop(const char *at, int fd)
{
	const char *want = getenv("GK_SLOWIO_AT"), *mark = getenv("GK_SLOWIO_MARK");
	const char *delay = getenv("GK_SLOWIO_DELAY_MS");
	unsigned long seq;

	if (!want || (strcmp(want, at) && !(strcmp(want, "slow") == 0 && strcmp(at, "write") == 0)))
		return;
	seq = in_checkpoint(fd);
	if (!seq || !past_skip(seq))
		return;
	if (mark && access(mark, F_OK) != 0) {
		/* Holding the pid: a test of several processes kills this one. */
		int m = open(mark, O_CREAT | O_WRONLY | O_TRUNC, 0644);

		if (m >= 0) {
			dprintf(m, "%d\n", (int)getpid());
			close(m);
		}
	}
	if (!strcmp(want, "slow")) {
		long ms = delay ? atol(delay) : 20;
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

		nanosleep(&ts, NULL);
		return;
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
