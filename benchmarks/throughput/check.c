/*
 * check.c - what checking a checkpoint's data costs with each checksum of
 * the image formats: XXH64 (formats 1 and 2, gpuckpt's own code before
 * format 3, now libxxhash's) and XXH3-64 (format 3, libxxhash). The data
 * files of a checkpoint are read by several threads in 8 MiB chunks and
 * hashed, as the runtime's check before a restore does (runtime/image/
 * verify.c): the same files, the same threads, so the difference between the
 * two rows is the hash alone.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "throughput.h"

#define UNIT (8ul << 20)
#define MAX_FILES 4096

struct unit {
	int fd;
	uint64_t off, len;
};

struct job {
	struct unit *units;
	size_t n, next; /* next: atomic */
	int xxh3;
	int failed;
	uint64_t sink;
};

static void *worker(void *arg)
{
	struct job *j = arg;
	char *buf = malloc(UNIT);
	uint64_t h = 0;

	if (!buf) {
		__atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		ssize_t r;

		if (i >= j->n)
			break;
		r = pread(j->units[i].fd, buf, j->units[i].len, (off_t)j->units[i].off);
		if (r != (ssize_t)j->units[i].len) {
			__atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
			break;
		}
		h ^= j->xxh3 ? XXH3_64bits(buf, (size_t)r) : XXH64(buf, (size_t)r, 0);
	}
	__atomic_fetch_xor(&j->sink, h, __ATOMIC_RELAXED);
	free(buf);
	return NULL;
}

int tp_check_files(const char *dir, int xxh3, int threads, uint64_t *bytes, double *seconds,
		   gk_error_t *err)
{
	int fds[MAX_FILES], nf = 0, rc = 0;
	struct job j = {0};
	size_t cap = 0;
	pthread_t tid[256];
	struct dirent *e;
	double t0;
	DIR *d = opendir(dir);

	*bytes = 0;
	if (!d) {
		gk_errprintf(err, "check: %s: %s", dir, strerror(errno));
		return -errno;
	}
	while ((e = readdir(d)) && nf < MAX_FILES) {
		size_t len = strlen(e->d_name);
		struct stat st;
		int fd;

		if (len < 5 || strcmp(e->d_name + len - 5, ".data"))
			continue;
		fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		fds[nf++] = fd;
		for (uint64_t off = 0; off < (uint64_t)st.st_size; off += UNIT) {
			if (j.n == cap) {
				struct unit *u;

				cap = cap ? cap * 2 : 1024;
				u = realloc(j.units, cap * sizeof(*u));
				if (!u) {
					rc = -ENOMEM;
					gk_errprintf(err, "check: out of memory");
					goto out;
				}
				j.units = u;
			}
			j.units[j.n].fd = fd;
			j.units[j.n].off = off;
			j.units[j.n].len = (uint64_t)st.st_size - off < UNIT ? (uint64_t)st.st_size - off
									 : UNIT;
			*bytes += j.units[j.n].len;
			j.n++;
		}
	}
	if (!j.n) {
		rc = -ENOENT;
		gk_errprintf(err, "check: %s: no data files", dir);
		goto out;
	}
	if (threads < 1)
		threads = 1;
	if (threads > 256)
		threads = 256;
	j.xxh3 = xxh3;
	t0 = tp_now();
	for (int t = 0; t < threads; t++)
		if (pthread_create(&tid[t], NULL, worker, &j)) {
			threads = t;
			break;
		}
	for (int t = 0; t < threads; t++)
		pthread_join(tid[t], NULL);
	*seconds = tp_now() - t0;
	if (j.failed || !threads) {
		rc = -EIO;
		gk_errprintf(err, "check: %s: a read failed", dir);
	}
out:
	for (int i = 0; i < nf; i++)
		close(fds[i]);
	free(j.units);
	closedir(d);
	return rc;
}
