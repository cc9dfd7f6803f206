/*
 * report.c - results as CSV and as a markdown table, each rate beside the
 * ceiling it cannot beat: a checkpoint is a device-to-host copy followed by a
 * write, so it is bounded by the slower of pinned device-to-host bandwidth and
 * the storage's own write bandwidth; a restore likewise by the read and the
 * host-to-device copy. The storage's rate is the better of one writer and
 * several (the runtime writes with several threads). The driver's checkpoint
 * moves device memory into host memory only, so its ceiling is the copy alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "throughput.h"

struct tp_result *tp_add(struct tp_report *rep, uint64_t size, const char *metric,
			 const char *target, uint64_t bytes, double seconds, const char *note)
{
	struct tp_result *r;

	if (rep->n == TP_MAX_RESULTS)
		return NULL;
	r = &rep->r[rep->n++];
	r->size = size;
	snprintf(r->metric, sizeof(r->metric), "%s", metric);
	snprintf(r->target, sizeof(r->target), "%s", target ? target : "");
	r->bytes = bytes;
	r->seconds = seconds;
	snprintf(r->note, sizeof(r->note), "%s", note ? note : "");
	return r;
}

static int by_seconds(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * A measurement that failed in any pass stays failed (with that pass's note):
 * a median over the passes that worked would hide the failure. Otherwise the
 * median (the lower middle for an even count, a time that was measured).
 */
void tp_median_of(const struct tp_report *passes, int n, struct tp_report *out)
{
	out->n = 0;
	for (int i = 0; i < passes[0].n; i++) {
		const struct tp_result *r = &passes[0].r[i];
		struct tp_result *m = tp_add(out, r->size, r->metric, r->target, r->bytes,
					     r->seconds, r->note);
		double t[64];
		int k = 0, bad = 0;

		if (!m)
			return;
		for (int p = 0; p < n && k < 64; p++)
			for (int j = 0; j < passes[p].n; j++) {
				const struct tp_result *q = &passes[p].r[j];

				if (q->size != r->size || strcmp(q->metric, r->metric) ||
				    strcmp(q->target, r->target))
					continue;
				if (q->seconds < 0 && !bad) {
					bad = 1;
					*m = *q;
				}
				/* A check that failed in one pass ("N words differ")
				 * is what the note must say. */
				if (!bad && strcmp(q->note, "verified") && q->note[0])
					snprintf(m->note, sizeof(m->note), "%s", q->note);
				t[k++] = q->seconds;
				break;
			}
		if (bad || k < 2)
			continue;
		qsort(t, (size_t)k, sizeof(t[0]), by_seconds);
		m->seconds = t[(k - 1) / 2];
		if (m->note[0])
			snprintf(m->note + strlen(m->note), sizeof(m->note) - strlen(m->note),
				 "; ");
		snprintf(m->note + strlen(m->note), sizeof(m->note) - strlen(m->note),
			 "median of %d: %.3f..%.3f s", k, t[0], t[k - 1]);
	}
}

static const struct tp_result *find(const struct tp_report *rep, uint64_t size, const char *metric,
				    const char *target)
{
	int i;

	for (i = 0; i < rep->n; i++) {
		const struct tp_result *r = &rep->r[i];

		if (r->size == size && !strcmp(r->metric, metric) &&
		    !strcmp(r->target, target ? target : "") && r->seconds > 0)
			return r;
	}
	return NULL;
}

static double gbps(const struct tp_result *r)
{
	return r && r->seconds > 0 && r->bytes ? (double)r->bytes / r->seconds / 1e9 : -1.0;
}

/* The faster of the one-stream measurement `metric` and its _parallel twin. */
static const struct tp_result *best_storage(const struct tp_report *rep, uint64_t size,
					    const char *metric, const char *target)
{
	const struct tp_result *one = find(rep, size, metric, target);
	char par[40];
	const struct tp_result *many;

	snprintf(par, sizeof(par), "%s_parallel", metric);
	many = find(rep, size, par, target);
	return gbps(many) > gbps(one) ? many : one;
}

/* The ceiling of r, its description in `what`; < 0 when it has none. A
 * variant's row (<metric>:<variant>) has its metric's ceiling. */
static double ceiling(const struct tp_report *rep, const struct tp_result *r, char *what,
		      size_t len)
{
	const struct tp_result *a = NULL, *b = NULL;
	const char *an = "", *bn = "", *metric = r->metric;
	char base[sizeof(r->metric)];
	double x, y;

	what[0] = 0;
	if (strchr(metric, ':')) {
		snprintf(base, sizeof(base), "%.*s", (int)(strchr(metric, ':') - metric), metric);
		metric = base;
	}
	if (!strcmp(metric, "gpuckpt_checkpoint") || !strcmp(metric, "direct_dma")) {
		a = find(rep, r->size, "d2h_pinned", "");
		b = best_storage(rep, r->size, "write", r->target);
		an = "pinned D2H";
		bn = b ? b->metric : "write";
	} else if (!strcmp(metric, "gpuckpt_async_pause")) {
		/* The pause copies the state to pinned host memory: that copy's
		 * rate is its ceiling. */
		a = find(rep, r->size, "d2h_pinned", "");
		an = "pinned D2H";
	} else if (!strcmp(metric, "gpuckpt_restore") || !strcmp(metric, "gpuckpt_restart") ||
		   !strcmp(metric, "gpuckpt_incr_restore") ||
		   !strcmp(metric, "gpuckpt_incr_restart") ||
		   !strcmp(metric, "gpuckpt_async_restore") ||
		   !strcmp(metric, "gpuckpt_async_restart")) {
		a = find(rep, r->size, "h2d_pinned", "");
		b = best_storage(rep, r->size, "read", r->target);
		an = "pinned H2D";
		bn = b ? b->metric : "read";
	} else if (!strcmp(metric, "driver_checkpoint") || !strcmp(metric, "d2h_pageable")) {
		a = find(rep, r->size, "d2h_pinned", "");
		an = "pinned D2H";
	} else if (!strcmp(metric, "driver_restore") || !strcmp(metric, "h2d_pageable")) {
		a = find(rep, r->size, "h2d_pinned", "");
		an = "pinned H2D";
	} else {
		return -1.0;
	}
	x = gbps(a);
	y = gbps(b);
	if (x < 0 && y < 0)
		return -1.0;
	if (y < 0 || (x >= 0 && x <= y)) {
		snprintf(what, len, "%s", an);
		return x;
	}
	snprintf(what, len, "%s %s", r->target, bn);
	return y;
}

static double secs_of(const struct tp_report *rep, uint64_t size, const char *metric,
		      const char *target)
{
	const struct tp_result *r = find(rep, size, metric, target);

	return r ? r->seconds : -1.0;
}

/* "a / b" of two times, or "-" when either is missing. */
static void ratio(char *buf, size_t len, double a, double b)
{
	if (a > 0 && b > 0)
		snprintf(buf, len, "%.2f", a / b);
	else
		snprintf(buf, len, "-");
}

/* "a %" of b, or "-". */
static void percent(char *buf, size_t len, double a, double b)
{
	if (a > 0 && b > 0)
		snprintf(buf, len, "%.0f %%", 100 * a / b);
	else
		snprintf(buf, len, "-");
}

/* The variants measured at `size`: the names after "gpuckpt_checkpoint:". */
static int variants_of(const struct tp_report *rep, uint64_t size, const char *names[], int max)
{
	static const char prefix[] = "gpuckpt_checkpoint:";
	int n = 0;

	for (int i = 0; i < rep->n && n < max; i++)
		if (rep->r[i].size == size && !strncmp(rep->r[i].metric, prefix, sizeof(prefix) - 1))
			names[n++] = rep->r[i].metric + sizeof(prefix) - 1;
	return n;
}

/* The exit checkpoint (or a variant's: suffix ":NAME") against tmpfs with the
 * default writers and with more. */
static void goal_exit(FILE *md, const struct tp_report *rep, uint64_t s, const char *suffix,
		      const char *label)
{
	char metric[40], p8[16], pw[16];
	const struct tp_result *ck, *w8, *ww;

	snprintf(metric, sizeof(metric), "gpuckpt_checkpoint%s", suffix);
	ck = find(rep, s, metric, "tmpfs");
	w8 = find(rep, s, "write_parallel", "tmpfs");
	ww = find(rep, s, "write_parallel_wide", "tmpfs");
	percent(p8, sizeof(p8), gbps(ck), gbps(w8));
	percent(pw, sizeof(pw), gbps(ck), gbps(ww));
	/* The notes of the parallel rows begin with their number of writers. */
	fprintf(md, "| %g | %s >= 90 %% of tmpfs with 8 writers | %.2f GB/s | %.2f GB/s "
		    "(%d writers: %.2f GB/s, %s) | %s |\n",
		(double)s / (1ull << 30), label, gbps(ck), gbps(w8), ww ? atoi(ww->note) : 0,
		gbps(ww), pw, p8);
}

/* The restart (or a variant's) against the load, and against what a
 * program that only starts CUDA and allocates the same memory takes. */
static void goal_restart(FILE *md, const struct tp_report *rep, uint64_t s, const char *suffix,
			 const char *label)
{
	char m1[40], m2[40], r1[32], r2[32];
	double restart, load, cuda = secs_of(rep, s, "cuda_start", "");

	snprintf(m1, sizeof(m1), "gpuckpt_restart%s", suffix);
	snprintf(m2, sizeof(m2), "gpuckpt_restore%s", suffix);
	restart = secs_of(rep, s, m1, "tmpfs");
	load = secs_of(rep, s, m2, "tmpfs");
	ratio(r1, sizeof(r1), restart, load);
	ratio(r2, sizeof(r2), restart, cuda > 0 && load > 0 ? cuda + load : -1);
	fprintf(md, "| %g | %s (main to going on, with the check) <= 1.2 x the load | %.3f s | "
		    "load %.3f s; CUDA's start and allocations alone %.3f s, + load = %.3f s "
		    "(restart / that: %s) | %s |\n",
		(double)s / (1ull << 30), label, restart, load, cuda,
		cuda > 0 && load > 0 ? cuda + load : -1.0, r2, r1);
}

/*
 * The goals of the checkpoint-pause work (issue 16), each beside what it is
 * measured against in the same run: written under the table, one line per
 * goal and state size; then the variants (--variants) and what the restart
 * is made of.
 */
static void write_goals(FILE *md, const struct tp_report *rep)
{
	uint64_t sizes[64];
	int nsizes = 0;

	for (int i = 0; i < rep->n && nsizes < 64; i++) {
		int k = 0;

		while (k < nsizes && sizes[k] != rep->r[i].size)
			k++;
		if (k == nsizes)
			sizes[nsizes++] = rep->r[i].size;
	}
	fprintf(md, "\n## Against the goals (same run)\n\n");
	fprintf(md, "| state GiB | goal | measured | against | ratio |\n");
	fprintf(md, "| ---: | --- | --- | --- | ---: |\n");
	for (int k = 0; k < nsizes; k++) {
		uint64_t s = sizes[k];
		double gib = (double)s / (1ull << 30);
		const struct tp_result *img = NULL, *ck, *w8;
		const char *names[16];
		int nv = variants_of(rep, s, names, 16);
		char r1[32], label[64], suffix[16];
		double a, b;

		a = secs_of(rep, s, "gpuckpt_async_pause", "tmpfs");
		b = secs_of(rep, s, "d2h_pinned", "");
		ratio(r1, sizeof(r1), a, b);
		fprintf(md, "| %g | background checkpoint: pause <= 1.5 x the pinned D2H copy | %.3f s "
			    "| D2H %.3f s | %s |\n",
			gib, a, b, r1);
		for (int i = 0; i < rep->n; i++)
			if (rep->r[i].size == s && !strcmp(rep->r[i].metric, "gpuckpt_incr_image"))
				img = &rep->r[i];
		a = secs_of(rep, s, "gpuckpt_incr_pause", "tmpfs");
		fprintf(md, "| %g | increment, 10 %% of chunks changed: writes <= 1/8 of the state, "
			    "pauses <= 0.15 s (16 GiB) | %.3f s, %.2f GiB written | %.2f GiB state | "
			    "%s |\n",
			gib, a, img ? (double)img->bytes / (1ull << 30) : -1.0, gib,
			img ? (snprintf(r1, sizeof(r1), "%.3f", (double)img->bytes / (double)s), r1)
			    : "-");
		a = secs_of(rep, s, "gpuckpt_incr_restore", "tmpfs");
		b = secs_of(rep, s, "gpuckpt_restore", "tmpfs");
		ratio(r1, sizeof(r1), a, b);
		fprintf(md, "| %g | restore of the increment no slower than of a whole checkpoint | "
			    "%.3f s | whole %.3f s | %s |\n",
			gib, a, b, r1);
		goal_exit(md, rep, s, "", "exit checkpoint");
		for (int v = 0; v < nv; v++) {
			snprintf(suffix, sizeof(suffix), ":%s", names[v]);
			snprintf(label, sizeof(label), "exit checkpoint, variant %s", names[v]);
			goal_exit(md, rep, s, suffix, label);
		}
		ck = find(rep, s, "gpuckpt_checkpoint", "disk");
		w8 = find(rep, s, "write_parallel", "disk");
		if (ck && w8)
			fprintf(md, "| %g | disk checkpoint >= 90 %% of the disk with 8 writers | "
				    "%.2f GB/s | %.2f GB/s | %.0f %% |\n",
				gib, gbps(ck), gbps(w8), 100 * gbps(ck) / gbps(w8));
		goal_restart(md, rep, s, "", "restart");
		for (int v = 0; v < nv; v++) {
			snprintf(suffix, sizeof(suffix), ":%s", names[v]);
			snprintf(label, sizeof(label), "restart, variant %s", names[v]);
			goal_restart(md, rep, s, suffix, label);
		}
		a = secs_of(rep, s, "check_xxh3", "tmpfs");
		b = secs_of(rep, s, "check_xxh64", "tmpfs");
		ratio(r1, sizeof(r1), a, b);
		fprintf(md, "| %g | check of every checksum: XXH3 (format 3) against XXH64 (before) | "
			    "%.3f s | %.3f s | %s |\n",
			gib, a, b, r1);
	}
	fprintf(md, "\n## What the restart is made of (seconds from main)\n\n");
	fprintf(md, "| state GiB | | CUDA's context | allocations made and cleared | going on |\n");
	fprintf(md, "| ---: | --- | ---: | ---: | ---: |\n");
	for (int k = 0; k < nsizes; k++) {
		uint64_t s = sizes[k];
		double gib = (double)s / (1ull << 30);

		fprintf(md, "| %g | natively (no runtime) | %.3f | %.3f | |\n", gib,
			secs_of(rep, s, "cuda_start_context", ""), secs_of(rep, s, "cuda_start", ""));
		fprintf(md, "| %g | the runtime, nothing to restore | %.3f | %.3f | |\n", gib,
			secs_of(rep, s, "runtime_start_context", ""),
			secs_of(rep, s, "runtime_start", ""));
		fprintf(md, "| %g | the restart (its check meanwhile, then the load) | %.3f | %.3f | "
			    "%.3f |\n",
			gib, secs_of(rep, s, "gpuckpt_restart_context", "tmpfs"),
			secs_of(rep, s, "gpuckpt_restart_setup", "tmpfs"),
			secs_of(rep, s, "gpuckpt_restart", "tmpfs"));
	}
	fprintf(md, "\n(-1 or -: not measured in this run.)\n");
}

int tp_write_reports(const struct tp_report *rep, const char *base, const char *header,
		     gk_error_t *err)
{
	char path[4096], what[64];
	FILE *csv, *md;
	int i;

	snprintf(path, sizeof(path), "%s.csv", base);
	csv = fopen(path, "w");
	if (!csv) {
		gk_errprintf(err, "report: %s: %s", path, strerror(errno));
		return -errno;
	}
	snprintf(path, sizeof(path), "%s.md", base);
	md = fopen(path, "w");
	if (!md) {
		gk_errprintf(err, "report: %s: %s", path, strerror(errno));
		fclose(csv);
		return -errno;
	}
	fprintf(csv, "state_gib,metric,target,bytes,seconds,gb_per_s,ceiling,ceiling_gb_per_s,"
		     "pct_of_ceiling,note\n");
	fprintf(md, "%s\n\n", header);
	fprintf(md, "| state GiB | measurement | on | bytes | s | GB/s | ceiling | ceiling GB/s "
		    "| %% of ceiling | note |\n");
	fprintf(md, "| ---: | --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- |\n");
	for (i = 0; i < rep->n; i++) {
		const struct tp_result *r = &rep->r[i];
		double rate = gbps(r), c = ceiling(rep, r, what, sizeof(what));
		double gib = (double)r->size / (1ull << 30);
		char rs[32] = "", cs[32] = "", ps[32] = "", ss[32] = "";

		if (r->seconds > 0)
			snprintf(ss, sizeof(ss), "%.3f", r->seconds);
		if (rate > 0)
			snprintf(rs, sizeof(rs), "%.2f", rate);
		if (c > 0)
			snprintf(cs, sizeof(cs), "%.2f", c);
		if (rate > 0 && c > 0)
			snprintf(ps, sizeof(ps), "%.0f", 100.0 * rate / c);
		fprintf(csv, "%g,%s,%s,%llu,%s,%s,%s,%s,%s,\"%s\"\n", gib, r->metric, r->target,
			(unsigned long long)r->bytes, ss, rs, what, cs, ps, r->note);
		fprintf(md, "| %g | %s | %s | %llu | %s | %s | %s | %s | %s | %s |\n", gib,
			r->metric, r->target, (unsigned long long)r->bytes, ss, rs, what, cs, ps,
			r->note);
	}
	fprintf(md, "\nGB/s are 10^9 bytes per second. Storage rates include fsync; reads "
		    "start with the file's pages dropped from the page cache.\n");
	write_goals(md, rep);
	if (fclose(md) | fclose(csv)) {
		gk_errprintf(err, "report: %s: write failed", base);
		return -EIO;
	}
	return 0;
}
