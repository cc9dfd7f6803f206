/*
 * jobstats.h - a job's events (events.h) summed up: what the job's
 * AdminComment says, what `gpuckpt report` prints per job.
 *
 * A job's checkpoint is counted once however many tasks wrote their part of
 * it: "checkpoints" counts distinct (step, ckpt.N) committed, "restores"
 * distinct (step, restart) runs that restored. The GPU time a restore saved
 * is what the job would have redone from the beginning: the checkpoint's
 * `elapsed` (from its process's start), plus what that process had itself
 * restored, times the checkpoint's GPUs. It counts the program's setup as
 * work too; it is an estimate, never less than zero.
 */
#ifndef GK_JOBSTATS_H
#define GK_JOBSTATS_H

#include <stddef.h>
#include <stdint.h>

#include "common/events.h"

/* At most this many events are kept per job; more are counted in `dropped`. */
#define GK_JOB_EVENTS_MAX 100000u

struct gk_job_events {
	struct gk_event *ev;
	size_t n, cap;
	uint64_t bad_lines; /* lines that were not valid events */
	uint64_t dropped;   /* valid events past GK_JOB_EVENTS_MAX */
};

struct gk_job_stats {
	uint64_t n[GK_EV_KINDS][GK_EV_RESULTS]; /* events by kind and result */
	uint64_t bytes[GK_EV_KINDS];		/* of the ok ones */
	double seconds[GK_EV_KINDS];		/* of the ok ones */
	uint64_t checkpoints;			/* distinct (step, ckpt.N) committed */
	uint64_t restores;			/* distinct (step, restart) restored */
	uint64_t failures;			/* events failed or refused */
	int have_last;
	char last_step[16];
	uint64_t last_ckpt;  /* N of the newest committed checkpoint */
	uint64_t last_bytes; /* its size over the tasks of its step */
	double last_time;
	double gpu_seconds_saved;
	double first_time, end_time; /* of any event; 0 when there is none */
	uint64_t bad_lines, dropped;
};

/* Append a copy of e. 0, -ENOMEM, or -E2BIG past GK_JOB_EVENTS_MAX (counted). */
int gk_job_events_add(struct gk_job_events *j, const struct gk_event *e);

/* For gk_events_each: adds valid events, counts invalid lines. Never stops. */
int gk_job_events_collect(void *job_events, const struct gk_event *e);

/* A job record's text (events.h): its events into j, invalid lines counted,
 * and each "gpuckpt-dropped N" line's N added to j->dropped. */
void gk_job_events_parse_record(const char *buf, size_t len, struct gk_job_events *j);

/* 1 and *n when line[0..len) (without its newline) is a "gpuckpt-dropped N"
 * line, else 0. */
int gk_record_dropped_line(const char *line, size_t len, uint64_t *n);

void gk_job_events_free(struct gk_job_events *j);

void gk_job_stats_compute(const struct gk_job_events *j, struct gk_job_stats *s);

/* "gpuckpt: 3 checkpoints, 1 restore, last ckpt.4 (1.5 GiB)" and ", 2 failed"
 * when some failed. Returns the length, or -ENOSPC. */
int gk_job_stats_comment(const struct gk_job_stats *s, char *buf, size_t len);

/* "512 B", "1.5 GiB" */
void gk_size_text(uint64_t bytes, char *buf, size_t len);

#endif
