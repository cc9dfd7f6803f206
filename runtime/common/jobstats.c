/*
 * jobstats.c - a job's events summed up (jobstats.h).
 */
#include "config.h"

#include "common/jobstats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gk_job_events_add(struct gk_job_events *j, const struct gk_event *e)
{
	if (j->n >= GK_JOB_EVENTS_MAX) {
		j->dropped++;
		return -E2BIG;
	}
	if (j->n == j->cap) {
		size_t cap = j->cap ? j->cap * 2 : 64;
		struct gk_event *ev = realloc(j->ev, cap * sizeof(*ev));

		if (!ev)
			return -ENOMEM;
		j->ev = ev;
		j->cap = cap;
	}
	j->ev[j->n++] = *e;
	return 0;
}

int gk_job_events_collect(void *arg, const struct gk_event *e)
{
	struct gk_job_events *j = arg;

	if (!e)
		j->bad_lines++;
	else
		gk_job_events_add(j, e);
	return 0;
}

int gk_record_dropped_line(const char *line, size_t len, uint64_t *n)
{
	size_t p = sizeof(GK_RECORD_DROPPED) - 1;
	uint64_t v = 0;

	if (len <= p || len > p + 20 || memcmp(line, GK_RECORD_DROPPED, p) != 0)
		return 0;
	for (; p < len; p++) {
		if (line[p] < '0' || line[p] > '9' || v > (UINT64_MAX - 9) / 10)
			return 0;
		v = v * 10 + (uint64_t)(line[p] - '0');
	}
	*n = v;
	return 1;
}

void gk_job_events_parse_record(const char *buf, size_t len, struct gk_job_events *j)
{
	size_t i = 0;

	while (i < len) {
		const char *line = buf + i, *nl = memchr(line, '\n', len - i);
		size_t n = nl ? (size_t)(nl - line) : len - i;
		uint64_t d;

		if (nl && gk_record_dropped_line(line, n, &d))
			j->dropped += d;
		else
			gk_events_each(line, nl ? n + 1 : n, gk_job_events_collect, j);
		i += n + 1;
	}
}

void gk_job_events_free(struct gk_job_events *j)
{
	free(j->ev);
	memset(j, 0, sizeof(*j));
}

static int has(const struct gk_event *e, uint32_t f)
{
	return (e->have & f) == f;
}

static int same_step(const struct gk_event *a, const struct gk_event *b)
{
	return has(a, GK_EVF_STEP) == has(b, GK_EVF_STEP) &&
	       (!has(a, GK_EVF_STEP) || strcmp(a->step, b->step) == 0);
}

static int same_task(const struct gk_event *a, const struct gk_event *b)
{
	return same_step(a, b) && has(a, GK_EVF_TASK) == has(b, GK_EVF_TASK) &&
	       (!has(a, GK_EVF_TASK) || a->task == b->task);
}

/* The same process: same node, pid and start time. */
static int same_process(const struct gk_event *a, const struct gk_event *b)
{
	const uint32_t id = GK_EVF_PID | GK_EVF_PSTART;

	if (!has(a, id) || !has(b, id) || a->pid != b->pid || a->pstart != b->pstart)
		return 0;
	if (has(a, GK_EVF_NODE) != has(b, GK_EVF_NODE))
		return 0;
	return !has(a, GK_EVF_NODE) || strcmp(a->node, b->node) == 0;
}

static int is_ok(const struct gk_event *e, enum gk_event_kind k)
{
	return e->kind == k && e->result == GK_EV_OK;
}

static int by_time(const void *a, const void *b)
{
	const struct gk_event *x = *(const struct gk_event *const *)a;
	const struct gk_event *y = *(const struct gk_event *const *)b;

	return (x->time > y->time) - (x->time < y->time);
}

/*
 * What each checkpoint represents, in seconds of the job's work: its elapsed
 * time plus what its process had restored. Events in time order, so a
 * restore is seen before the checkpoints its process writes afterwards.
 */
static void gpu_time_saved(struct gk_event **ord, size_t n, double *progress, double *saved)
{
	*saved = 0;
	for (size_t i = 0; i < n; i++) {
		const struct gk_event *e = ord[i];

		progress[i] = 0;
		if (is_ok(e, GK_EV_CHECKPOINT) && has(e, GK_EVF_ELAPSED)) {
			double base = 0;

			/* The newest restore of this process before it. */
			for (size_t k = i; k-- > 0;)
				if (is_ok(ord[k], GK_EV_RESTORE) && same_process(ord[k], e) &&
				    same_task(ord[k], e)) {
					base = progress[k];
					break;
				}
			progress[i] = e->elapsed + base;
		} else if (is_ok(e, GK_EV_RESTORE) && has(e, GK_EVF_CKPT)) {
			/* The checkpoint it loaded: the newest one with that number. */
			for (size_t k = i; k-- > 0;)
				if (is_ok(ord[k], GK_EV_CHECKPOINT) && has(ord[k], GK_EVF_CKPT) &&
				    ord[k]->ckpt == e->ckpt && same_task(ord[k], e)) {
					progress[i] = progress[k];
					*saved += progress[k] *
						  (has(ord[k], GK_EVF_GPUS) ? ord[k]->gpus : 0);
					break;
				}
		}
	}
}

void gk_job_stats_compute(const struct gk_job_events *j, struct gk_job_stats *s)
{
	struct gk_event **ord = NULL;
	double *progress = NULL;

	memset(s, 0, sizeof(*s));
	s->bad_lines = j->bad_lines;
	s->dropped = j->dropped;
	for (size_t i = 0; i < j->n; i++) {
		const struct gk_event *e = &j->ev[i];

		s->n[e->kind][e->result]++;
		if (e->result != GK_EV_OK) {
			s->failures++;
		} else {
			if (has(e, GK_EVF_BYTES))
				s->bytes[e->kind] += e->bytes;
			if (has(e, GK_EVF_SECONDS))
				s->seconds[e->kind] += e->seconds;
		}
		if (!s->first_time || e->time < s->first_time)
			s->first_time = e->time;
		if (e->time > s->end_time)
			s->end_time = e->time;

		if (is_ok(e, GK_EV_CHECKPOINT) && has(e, GK_EVF_CKPT)) {
			size_t k;

			/* Counted once per (step, N), at its first task. */
			for (k = 0; k < i; k++)
				if (is_ok(&j->ev[k], GK_EV_CHECKPOINT) &&
				    has(&j->ev[k], GK_EVF_CKPT) && j->ev[k].ckpt == e->ckpt &&
				    same_step(&j->ev[k], e))
					break;
			if (k == i)
				s->checkpoints++;
			if (!s->have_last || e->time >= s->last_time) {
				s->have_last = 1;
				s->last_time = e->time;
				s->last_ckpt = e->ckpt;
				snprintf(s->last_step, sizeof(s->last_step), "%s",
					 has(e, GK_EVF_STEP) ? e->step : "");
			}
		}
		if (is_ok(e, GK_EV_RESTORE)) {
			size_t k;

			for (k = 0; k < i; k++) {
				const struct gk_event *p = &j->ev[k];

				if (!is_ok(p, GK_EV_RESTORE) || !same_step(p, e))
					continue;
				if (has(e, GK_EVF_RESTART) && has(p, GK_EVF_RESTART)
					? p->restart == e->restart
					: same_process(p, e))
					break;
			}
			if (k == i)
				s->restores++;
		}
	}
	/* The newest checkpoint's size: each task's part of that (step, N),
	 * the newest one where a task wrote it twice. */
	if (s->have_last) {
		for (size_t i = 0; i < j->n; i++) {
			const struct gk_event *e = &j->ev[i];
			size_t k;

			if (!is_ok(e, GK_EV_CHECKPOINT) || !has(e, GK_EVF_CKPT | GK_EVF_BYTES) ||
			    e->ckpt != s->last_ckpt ||
			    strcmp(has(e, GK_EVF_STEP) ? e->step : "", s->last_step) != 0)
				continue;
			for (k = i + 1; k < j->n; k++)
				if (is_ok(&j->ev[k], GK_EV_CHECKPOINT) &&
				    has(&j->ev[k], GK_EVF_CKPT) && j->ev[k].ckpt == e->ckpt &&
				    same_task(&j->ev[k], e))
					break;
			if (k == j->n)
				s->last_bytes += e->bytes;
		}
	}
	if (j->n) {
		ord = malloc(j->n * sizeof(*ord));
		progress = malloc(j->n * sizeof(*progress));
	}
	if (ord && progress) {
		for (size_t i = 0; i < j->n; i++)
			ord[i] = &j->ev[i];
		qsort(ord, j->n, sizeof(*ord), by_time);
		gpu_time_saved(ord, j->n, progress, &s->gpu_seconds_saved);
	}
	free(ord);
	free(progress);
}

void gk_size_text(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
		return;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, "%.1f %s", v, units[u]);
}

int gk_job_stats_comment(const struct gk_job_stats *s, char *buf, size_t len)
{
	char size[32];
	int n;

	n = snprintf(buf, len, "gpuckpt: %llu checkpoint%s, %llu restore%s",
		     (unsigned long long)s->checkpoints, s->checkpoints == 1 ? "" : "s",
		     (unsigned long long)s->restores, s->restores == 1 ? "" : "s");
	if (n >= 0 && (size_t)n < len && s->have_last) {
		gk_size_text(s->last_bytes, size, sizeof(size));
		n += snprintf(buf + n, len - (size_t)n, ", last ckpt.%llu (%s)",
			      (unsigned long long)s->last_ckpt, size);
	}
	if (n >= 0 && (size_t)n < len && s->failures)
		n += snprintf(buf + n, len - (size_t)n, ", %llu failed",
			      (unsigned long long)s->failures);
	if (n < 0 || (size_t)n >= len)
		return -ENOSPC;
	return n;
}
