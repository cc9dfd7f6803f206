/*
 * storage.c - what the storage itself sustains, for the same amounts the
 * checkpoints move: a file written in 64 MiB write()s and fsync()ed, then read
 * back after its pages were dropped from the page cache (posix_fadvise
 * DONTNEED works on clean pages, so the read comes from the device; on tmpfs
 * the pages are the storage and stay). Once by one writer, once by several
 * threads each with its own file and share (as the runtime's writers do): one
 * stream seldom reaches what the storage sustains in parallel.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "throughput.h"

#define IO_CHUNK (64ul << 20)

double tp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static pthread_once_t buf_once = PTHREAD_ONCE_INIT;
static void *shared_buf;

static void make_buffer(void)
{
	void *buf;
	size_t i;

	if (posix_memalign(&buf, 4096, IO_CHUNK))
		return;
	/* Not zeros: a file system that compresses or skips zero pages would flatter itself. */
	for (i = 0; i < IO_CHUNK / sizeof(uint64_t); i++)
		((uint64_t *)buf)[i] = i * 0x9e3779b97f4a7c15ull;
	shared_buf = buf;
}

/* Written once, then only read (writers) or overwritten with the same file data (readers). */
static void *io_buffer(void)
{
	pthread_once(&buf_once, make_buffer);
	return shared_buf;
}

int tp_storage_write(const char *path, uint64_t bytes, double *seconds, gk_error_t *err)
{
	void *buf = io_buffer();
	uint64_t done = 0;
	double t0;
	int fd, rc;

	if (!buf) {
		gk_errprintf(err, "write: out of memory for the I/O buffer");
		return -ENOMEM;
	}
	t0 = tp_now();
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		rc = -errno;
		gk_errprintf(err, "write: %s: %s", path, strerror(errno));
		return rc;
	}
	while (done < bytes) {
		size_t len = bytes - done < IO_CHUNK ? (size_t)(bytes - done) : IO_CHUNK;
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			rc = n < 0 ? -errno : -EIO;
			gk_errprintf(err, "write: %s: %s after %llu bytes", path,
				     n < 0 ? strerror(errno) : "no progress",
				     (unsigned long long)done);
			goto out_close;
		}
		done += (uint64_t)n;
	}
	if (fsync(fd)) {
		rc = -errno;
		gk_errprintf(err, "write: %s: fsync: %s", path, strerror(errno));
		goto out_close;
	}
	if (close(fd)) {
		rc = -errno;
		gk_errprintf(err, "write: %s: close: %s", path, strerror(errno));
		return rc;
	}
	*seconds = tp_now() - t0;
	return 0;

out_close:
	close(fd);
	return rc;
}

static int evict_file(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	/* Only clean pages can be dropped: make sure nothing is still dirty. */
	if (fdatasync(fd))
		rc = -errno;
	else
		rc = -posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return rc;
}

int tp_storage_read(const char *path, uint64_t bytes, double *seconds, gk_error_t *err)
{
	void *buf = io_buffer();
	uint64_t done = 0;
	double t0;
	int fd, rc;

	if (!buf) {
		gk_errprintf(err, "read: out of memory for the I/O buffer");
		return -ENOMEM;
	}
	rc = evict_file(path);
	if (rc < 0) {
		gk_errprintf(err, "read: %s: dropping cached pages: %s", path, strerror(-rc));
		return rc;
	}
	t0 = tp_now();
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		gk_errprintf(err, "read: %s: %s", path, strerror(errno));
		return rc;
	}
	for (;;) {
		ssize_t n = read(fd, buf, IO_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			gk_errprintf(err, "read: %s: %s after %llu bytes", path, strerror(errno),
				     (unsigned long long)done);
			goto out_close;
		}
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	close(fd);
	*seconds = tp_now() - t0;
	if (done != bytes) {
		gk_errprintf(err, "read: %s: %llu bytes, expected %llu", path,
			     (unsigned long long)done, (unsigned long long)bytes);
		return -EIO;
	}
	return 0;

out_close:
	close(fd);
	return rc;
}

/* ---- several writers: one file and one thread each ---- */

struct io_job {
	pthread_t thread;
	char path[4096];
	uint64_t bytes;
	int write;
	void *buf; /* readers: their own, so that they do not share cache lines with each other */
	const char *src; /* writers from memory: their share of a host buffer, read once */
	int rc;
	gk_error_t err;
};

static void *io_thread(void *arg)
{
	struct io_job *j = arg;
	uint64_t done = 0;
	int fd;

	fd = j->write ? open(j->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)
		      : open(j->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		j->rc = -errno;
		gk_errprintf(&j->err, "%s: %s", j->path, strerror(errno));
		return NULL;
	}
	while (done < j->bytes) {
		size_t len = j->bytes - done < IO_CHUNK ? (size_t)(j->bytes - done) : IO_CHUNK;
		ssize_t n = j->src ? write(fd, j->src + done, len)
			  : j->write ? write(fd, j->buf, len) : read(fd, j->buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			j->rc = n < 0 ? -errno : -EIO;
			gk_errprintf(&j->err, "%s: %s after %llu bytes", j->path,
				     n < 0 ? strerror(errno)
					   : (j->write ? "no progress" : "short file"),
				     (unsigned long long)done);
			goto out_close;
		}
		done += (uint64_t)n;
	}
	if (j->write && fsync(fd)) {
		j->rc = -errno;
		gk_errprintf(&j->err, "%s: fsync: %s", j->path, strerror(errno));
	}
out_close:
	if (close(fd) && !j->rc && j->write) {
		j->rc = -errno;
		gk_errprintf(&j->err, "%s: close: %s", j->path, strerror(errno));
	}
	return NULL;
}

/* Shares of `bytes` in 4 KiB units, the remainder on the last. */
static uint64_t share(uint64_t bytes, int n, int i)
{
	uint64_t per = bytes / (uint64_t)n / 4096 * 4096;

	return i == n - 1 ? bytes - per * (uint64_t)(n - 1) : per;
}

static int run_jobs(const char *prefix, uint64_t bytes, int n, int write, const char *from,
		    double *seconds, gk_error_t *err)
{
	uint64_t at = 0;
	struct io_job *jobs = calloc((size_t)n, sizeof(*jobs));
	int i, started = 0, rc = 0;
	double t0;

	if (!jobs) {
		gk_errprintf(err, "%s: out of memory", write ? "write" : "read");
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		struct io_job *j = &jobs[i];

		snprintf(j->path, sizeof(j->path), "%s.%d", prefix, i);
		j->bytes = share(bytes, n, i);
		j->write = write;
		if (from)
			j->src = from + at;
		at += j->bytes;
		if (write) {
			j->buf = io_buffer();
		} else if (posix_memalign(&j->buf, 4096, IO_CHUNK)) {
			j->buf = NULL;
		} else {
			/* Faulted in now: the first read into it must not pay for its pages. */
			memset(j->buf, 0, IO_CHUNK);
		}
		if (!j->buf) {
			gk_errprintf(err, "%s: out of memory for the I/O buffers",
				     write ? "write" : "read");
			rc = -ENOMEM;
			goto out_free;
		}
		if (!write) {
			rc = evict_file(j->path);
			if (rc < 0) {
				gk_errprintf(err, "read: %s: dropping cached pages: %s", j->path,
					     strerror(-rc));
				goto out_free;
			}
		}
	}
	t0 = tp_now();
	for (i = 0; i < n; i++) {
		rc = -pthread_create(&jobs[i].thread, NULL, io_thread, &jobs[i]);
		if (rc) {
			gk_errprintf(err, "%s: starting thread %d: %s", write ? "write" : "read", i,
				     strerror(-rc));
			break;
		}
		started++;
	}
	for (i = 0; i < started; i++)
		pthread_join(jobs[i].thread, NULL);
	*seconds = tp_now() - t0;
	for (i = 0; i < started && !rc; i++) {
		if (jobs[i].rc) {
			rc = jobs[i].rc;
			gk_errprintf(err, "%s: %s", write ? "write" : "read", jobs[i].err.text);
		}
	}
out_free:
	if (!write)
		for (i = 0; i < n; i++)
			free(jobs[i].buf);
	free(jobs);
	return rc;
}

int tp_storage_write_parallel(const char *prefix, uint64_t bytes, int writers, double *seconds,
			      gk_error_t *err)
{
	return run_jobs(prefix, bytes, writers, 1, NULL, seconds, err);
}

int tp_storage_write_parallel_from(const char *prefix, const void *from, uint64_t bytes,
				   int writers, double *seconds, gk_error_t *err)
{
	return run_jobs(prefix, bytes, writers, 1, from, seconds, err);
}

int tp_storage_read_parallel(const char *prefix, uint64_t bytes, int readers, double *seconds,
			     gk_error_t *err)
{
	return run_jobs(prefix, bytes, readers, 0, NULL, seconds, err);
}

void tp_storage_remove_parallel(const char *prefix, int n)
{
	char path[4096];
	int i;

	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s.%d", prefix, i);
		unlink(path);
	}
}

/* nftw() has no user pointer: the walks below are not reentrant, which is enough here. */
static uint64_t walk_bytes;
static int walk_rc;

static int add_size(const char *path, const struct stat *st, int type, struct FTW *f)
{
	if (type == FTW_F)
		walk_bytes += (uint64_t)st->st_size;
	return 0;
}

int tp_dir_bytes(const char *dir, uint64_t *bytes)
{
	walk_bytes = 0;
	if (nftw(dir, add_size, 16, FTW_PHYS))
		return -errno;
	*bytes = walk_bytes;
	return 0;
}

static int evict_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	int rc;

	if (type == FTW_F && (rc = evict_file(path)) < 0 && !walk_rc)
		walk_rc = rc;
	return 0;
}

int tp_dir_evict(const char *dir)
{
	walk_rc = 0;
	if (nftw(dir, evict_one, 16, FTW_PHYS))
		return -errno;
	return walk_rc;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *f)
{
	if (remove(path) && !walk_rc)
		walk_rc = -errno;
	return 0;
}

int tp_dir_remove(const char *dir)
{
	walk_rc = 0;
	if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		return -errno;
	return walk_rc;
}

int tp_free_space(const char *dir, uint64_t *bytes)
{
	struct statvfs s;

	if (statvfs(dir, &s))
		return -errno;
	*bytes = (uint64_t)s.f_bavail * s.f_frsize;
	return 0;
}
