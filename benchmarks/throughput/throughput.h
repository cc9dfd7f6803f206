/*
 * throughput.h - the checkpoint-throughput benchmark's controller (README.md):
 * it runs the device-side work in worker processes (throughput-worker), the
 * storage measurements itself, and drives the CUDA driver's checkpoint API on
 * a worker from outside, as that API is meant to be used.
 */
#ifndef TP_THROUGHPUT_H
#define TP_THROUGHPUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h" /* gk_error_t, from runtime/common */

#define TP_MAX_RESULTS 256

/* One measurement: `bytes` moved in `seconds` (seconds < 0: failed or skipped, see note). */
struct tp_result {
	uint64_t size;	 /* device state of the run */
	char metric[32]; /* d2h_pinned, write, gpuckpt_checkpoint, driver_restore, ... */
	char target[16]; /* tmpfs, disk, or "" */
	uint64_t bytes;
	double seconds;
	char note[160];
};

struct tp_report {
	struct tp_result r[TP_MAX_RESULTS];
	int n;
};

/* report.c */
struct tp_result *tp_add(struct tp_report *rep, uint64_t size, const char *metric,
			 const char *target, uint64_t bytes, double seconds, const char *note);
/* Into `out`: each measurement of the passes (the same plan run n times) once,
 * with the median of its times and their range in its note. */
void tp_median_of(const struct tp_report *passes, int n, struct tp_report *out);
int tp_write_reports(const struct tp_report *rep, const char *base, const char *header,
		     gk_error_t *err);

/* storage.c: files written and read through the page cache, synced; 0 or -errno. */
int tp_storage_write(const char *path, uint64_t bytes, double *seconds, gk_error_t *err);
int tp_storage_read(const char *path, uint64_t bytes, double *seconds, gk_error_t *err);
/* The same by n threads, thread i on <prefix>.<i> with its share of the bytes. */
int tp_storage_write_parallel(const char *prefix, uint64_t bytes, int writers, double *seconds,
			      gk_error_t *err);
/* Like tp_storage_write_parallel, but thread i writes its share of `from`
 * (bytes long, faulted in and cold) instead of one small buffer that stays in
 * the cache: what copying a checkpoint out of host memory into files costs. */
int tp_storage_write_parallel_from(const char *prefix, const void *from, uint64_t bytes,
				   int writers, double *seconds, gk_error_t *err);
int tp_storage_read_parallel(const char *prefix, uint64_t bytes, int readers, double *seconds,
			     gk_error_t *err);
void tp_storage_remove_parallel(const char *prefix, int n);
int tp_dir_bytes(const char *dir, uint64_t *bytes);
int tp_dir_evict(const char *dir);
int tp_dir_remove(const char *dir);
int tp_free_space(const char *dir, uint64_t *bytes);

/* spawn.c: a worker process with pipes on its stdin and stdout. */
struct tp_worker {
	pid_t pid;
	int in_fd, out_fd;
	char buf[4096];
	size_t len;
};

int tp_worker_start(struct tp_worker *w, const char *path, char *const argv[],
		    char *const extra_env[], gk_error_t *err);
/* The next line of the worker's stdout (without the newline); -ETIMEDOUT, -EPIPE at EOF. */
int tp_worker_line(struct tp_worker *w, char *line, size_t len, int timeout_s);
int tp_worker_send(struct tp_worker *w, const char *text);
/* Close its stdin, wait for it (killing it after timeout_s); its exit status or -errno. */
int tp_worker_wait(struct tp_worker *w, int timeout_s);

/* driver.c: the CUDA driver's process checkpoint API, reached through dlopen. */
int tp_driver_open(gk_error_t *err);
int tp_driver_lock(int pid, unsigned timeout_ms, gk_error_t *err);
int tp_driver_checkpoint(int pid, gk_error_t *err);
int tp_driver_restore(int pid, gk_error_t *err);
int tp_driver_unlock(int pid, gk_error_t *err);
/* "running", "locked", "checkpointed", "failed" or "unknown". */
const char *tp_driver_state(int pid);

double tp_now(void);

/* check.c: read the *.data files of a checkpoint folder with `threads`
 * threads in 8 MiB chunks, hashing each with XXH3-64 (xxh3) or XXH64;
 * *bytes read in *seconds. 0 or -errno. */
int tp_check_files(const char *dir, int xxh3, int threads, uint64_t *bytes, double *seconds,
		   gk_error_t *err);

#endif
