/*
 * metrics.h - the node's gpuckpt counters in the Prometheus text format, for
 * node_exporter's textfile collector (plugstack.conf: metrics=PATH, a file
 * ending in .prom in the collector's folder; default: none, no file).
 *
 * The prolog and epilog (root) add what they saw of each job on this node:
 * the runtime's checkpoints and restores (taken, failed, refused; bytes;
 * seconds), the staging in and out (bytes, seconds, failures). The file is
 * both the output and the state: the counters are read back from it, added
 * to, and the new file written beside it (".NAME.tmp", which the collector
 * does not read) and renamed over it, so readers never see half a file.
 * Two updates (epilogs, task exits) never lose each other's counts: each
 * holds a lock, ".NAME.lock" beside it, a file only root can open (0600, in
 * a folder that must be root's and writable by no one else, root_path.h),
 * so no user can take or hold it. An update waits at most
 * GK_METRICS_LOCK_WAIT_MS for another one; then its counts are left out and
 * it says so (a Slurm callback never waits without a bound).
 */
#ifndef GK_METRICS_H
#define GK_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h" /* gk_error_t (runtime/common) */
#include "common/events.h"
#include "common/jobstats.h"

#define GK_METRICS_LOCK_WAIT_MS 5000u

struct gk_metrics {
	uint64_t checkpoints[GK_EV_RESULTS];
	uint64_t checkpoint_bytes;
	double checkpoint_seconds;
	uint64_t restores[GK_EV_RESULTS];
	uint64_t restore_bytes;
	double restore_seconds;
	uint64_t stage[2][2]; /* [0 in, 1 out][0 ok, 1 failed] */
	uint64_t stage_bytes[2];
	double stage_seconds[2];
	uint64_t jobs;	   /* epilogs that found a job's event files here */
	uint64_t rejected; /* lines of the runtime's files that were refused */
};

/* Add the events (and rejected lines) of ev to m. */
void gk_metrics_add_events(struct gk_metrics *m, const struct gk_job_events *ev);

/* m += d */
void gk_metrics_add(struct gk_metrics *m, const struct gk_metrics *d);

/* The file's text, with the time of this update. Its length or -ENOSPC. */
int gk_metrics_format(const struct gk_metrics *m, double now, char *buf, size_t len);

/* Read the counters back from a file's text; series it does not know, and
 * malformed lines, are skipped. */
void gk_metrics_parse(const char *text, size_t len, struct gk_metrics *m);

/* Add d to the counters in the file at path (made when missing). 0 or a
 * negative errno (-ETIMEDOUT: another update held the lock too long, d is
 * left out); err says why. */
int gk_metrics_update(const char *path, const struct gk_metrics *d, gk_error_t *err);

#endif
