/*
 * cmd_report.c - `gpuckpt report`: what gpuckpt did, per job and in total,
 * from the job records the plugin keeps in the shared root
 * (SHARED_ROOT/records/JOB, runtime/common/events.h).
 */
#include "config.h"
#include "cli/cli.h"
#include "image/ckptname.h"
#include "common/events.h"
#include "common/jobstats.h"
#include "common/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char report_help[] =
    "NAME\n"
    "    gpuckpt report - what gpuckpt did, per job and in total\n"
    "\n"
    "SYNOPSIS\n"
    "    gpuckpt report [--job ID]... [--json] SHARED_ROOT\n"
    "\n"
    "DESCRIPTION\n"
    "    The Slurm plugin keeps a record of each job's checkpoints in the shared\n"
    "    checkpoint root (plugstack.conf: shared_root=), SHARED_ROOT/records/JOB:\n"
    "    its epilog adds what the job's tasks reported on each node (every\n"
    "    checkpoint and restore, taken, failed or refused) and what staging\n"
    "    copied. The record outlives the job's checkpoints, which are removed\n"
    "    when the job is over. The records are root's: run this as root.\n"
    "\n"
    "    For each job, and in total, it prints:\n"
    "      CKPTS      checkpoints committed (one per step and ckpt.N, however\n"
    "                 many tasks wrote a part of it)\n"
    "      RESTORES   runs of the job that resumed from a checkpoint\n"
    "      FAILED     checkpoints, restores and copies that failed or were\n"
    "                 refused (such as a process holding CUDA IPC memory)\n"
    "      WRITTEN    bytes of the committed checkpoints, all tasks\n"
    "      RESTORED   bytes loaded by restores\n"
    "      STAGED     bytes copied from the burst buffers to the shared root\n"
    "      LAST       the newest checkpoint and its size over the step's tasks\n"
    "      SAVED      GPU time saved by resuming rather than starting over: for\n"
    "                 each restore, how long the job had run when that checkpoint\n"
    "                 was taken (counting what earlier restores had saved), times\n"
    "                 its GPUs; the programs' own setup counts as work, so it is\n"
    "                 an estimate\n"
    "\n"
    "OPTIONS\n"
    "    --job ID\n"
    "        Only this job (may be given several times).\n"
    "    --json\n"
    "        Print one JSON object: {\"shared_root\", \"jobs\": [{\"job\",\n"
    "        \"checkpoints\", \"restores\", \"failures\", \"events\": {KIND: {\"ok\",\n"
    "        \"failed\", \"refused\"}}, \"bytes_written\", \"bytes_restored\",\n"
    "        \"bytes_staged_out\", \"bytes_staged_in\", \"checkpoint_seconds\",\n"
    "        \"restore_seconds\", \"last_checkpoint\": {\"ckpt\", \"step\", \"bytes\",\n"
    "        \"time\"} or null, \"gpu_seconds_saved\", \"first_event\", \"last_event\",\n"
    "        \"rejected_lines\", \"dropped_events\"}, ...], \"total\": {the same\n"
    "        sums}}. Times are seconds since 1970. dropped_events: events not\n"
    "        kept because the job's record had reached its size limit (4 MiB).\n"
    "    -h, --help\n"
    "        Show this text.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   the report was printed (also when there are no records yet)\n"
    "    1   the records cannot be read (for example, not run as root)\n"
    "    2   the command line is wrong\n"
    "\n"
    "EXAMPLES\n"
    "    sudo gpuckpt report /shared/gpuckpt\n"
    "    sudo gpuckpt report --job 1234 /shared/gpuckpt\n"
    "    sudo gpuckpt report --json /shared/gpuckpt | jq '.total.gpu_seconds_saved / 3600'\n";

enum { OPT_JOB = 1, OPT_JSON };

static const struct cli_opt report_opts[] = {
    {"job", 'j', 1, OPT_JOB},
    {"json", 0, 0, OPT_JSON},
    {NULL, 0, 0, 0},
};

struct job_row {
	unsigned long job;
	struct gk_job_stats st;
};

static int parse_job(const char *s, unsigned long *job)
{
	char *end;

	if (!*s || *s < '0' || *s > '9' || strlen(s) > 10)
		return -1;
	errno = 0;
	*job = strtoul(s, &end, 10);
	return errno || *end || *job > 0xffffffffUL ? -1 : 0;
}

/* One record: read it (bounded) and sum it up. */
static int read_record(int dirfd, const char *name, struct gk_job_stats *st)
{
	struct gk_job_events ev = {0};
	struct stat sb;
	size_t len = 0, want;
	char *buf;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	want = sb.st_size > (off_t)GK_RECORD_MAX ? GK_RECORD_MAX : (size_t)sb.st_size;
	buf = malloc(want + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (len < want) {
		ssize_t n = read(fd, buf + len, want - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	gk_job_events_parse_record(buf, len, &ev);
	free(buf);
	gk_job_stats_compute(&ev, st);
	gk_job_events_free(&ev);
	return 0;
}

static int by_job(const void *a, const void *b)
{
	const struct job_row *x = a, *y = b;

	return (x->job > y->job) - (x->job < y->job);
}

static void add_stats(struct gk_job_stats *t, const struct gk_job_stats *s)
{
	for (int k = 0; k < GK_EV_KINDS; k++) {
		for (int r = 0; r < GK_EV_RESULTS; r++)
			t->n[k][r] += s->n[k][r];
		t->bytes[k] += s->bytes[k];
		t->seconds[k] += s->seconds[k];
	}
	t->checkpoints += s->checkpoints;
	t->restores += s->restores;
	t->failures += s->failures;
	t->gpu_seconds_saved += s->gpu_seconds_saved;
	t->bad_lines += s->bad_lines;
	t->dropped += s->dropped;
	if (s->first_time && (!t->first_time || s->first_time < t->first_time))
		t->first_time = s->first_time;
	if (s->end_time > t->end_time)
		t->end_time = s->end_time;
}

/* "1.25 GPU-h", "42 GPU-s" */
static void gpu_time_text(double s, char *buf, size_t len)
{
	if (s >= 3600)
		snprintf(buf, len, "%.2f GPU-h", s / 3600);
	else
		snprintf(buf, len, "%.0f GPU-s", s);
}

static void print_row(const char *name, const struct gk_job_stats *s, int total)
{
	char w[32], r[32], st[32], last[64], saved[32];

	gk_size_text(s->bytes[GK_EV_CHECKPOINT], w, sizeof(w));
	gk_size_text(s->bytes[GK_EV_RESTORE], r, sizeof(r));
	gk_size_text(s->bytes[GK_EV_STAGE_OUT], st, sizeof(st));
	gpu_time_text(s->gpu_seconds_saved, saved, sizeof(saved));
	if (total || !s->have_last) {
		snprintf(last, sizeof(last), "-");
	} else {
		char size[32];

		gk_size_text(s->last_bytes, size, sizeof(size));
		snprintf(last, sizeof(last), GK_CKPT_PREFIX "%llu (%s)", (unsigned long long)s->last_ckpt,
			 size);
	}
	printf("%-10s %6llu %8llu %6llu %11s %11s %11s  %-22s %s\n", name,
	       (unsigned long long)s->checkpoints, (unsigned long long)s->restores,
	       (unsigned long long)s->failures, w, r, st, last, saved);
}

static json_object *results_json(const uint64_t *n)
{
	json_object *o = json_object_new_object();

	for (int r = 0; r < GK_EV_RESULTS; r++)
		json_object_object_add(o, gk_event_result_name((enum gk_event_result)r),
				       json_object_new_int64((int64_t)n[r]));
	return o;
}

static json_object *stats_json(const struct gk_job_stats *s, int total)
{
	json_object *o = json_object_new_object(), *ev = json_object_new_object();

	json_object_object_add(o, "checkpoints", json_object_new_int64((int64_t)s->checkpoints));
	json_object_object_add(o, "restores", json_object_new_int64((int64_t)s->restores));
	json_object_object_add(o, "failures", json_object_new_int64((int64_t)s->failures));
	for (int k = GK_EV_CHECKPOINT; k < GK_EV_KINDS; k++)
		json_object_object_add(ev, gk_event_kind_name((enum gk_event_kind)k),
				       results_json(s->n[k]));
	json_object_object_add(o, "events", ev);
	json_object_object_add(o, "bytes_written",
			       json_object_new_int64((int64_t)s->bytes[GK_EV_CHECKPOINT]));
	json_object_object_add(o, "bytes_restored",
			       json_object_new_int64((int64_t)s->bytes[GK_EV_RESTORE]));
	json_object_object_add(o, "bytes_staged_out",
			       json_object_new_int64((int64_t)s->bytes[GK_EV_STAGE_OUT]));
	json_object_object_add(o, "bytes_staged_in",
			       json_object_new_int64((int64_t)s->bytes[GK_EV_STAGE_IN]));
	json_object_object_add(o, "checkpoint_seconds",
			       json_object_new_double(s->seconds[GK_EV_CHECKPOINT]));
	json_object_object_add(o, "restore_seconds",
			       json_object_new_double(s->seconds[GK_EV_RESTORE]));
	if (!total) {
		json_object *last = NULL;

		if (s->have_last) {
			last = json_object_new_object();
			json_object_object_add(last, "ckpt",
					       json_object_new_int64((int64_t)s->last_ckpt));
			json_object_object_add(last, "step", json_object_new_string(s->last_step));
			json_object_object_add(last, "bytes",
					       json_object_new_int64((int64_t)s->last_bytes));
			json_object_object_add(last, "time", json_object_new_double(s->last_time));
		}
		json_object_object_add(o, "last_checkpoint", last);
	}
	json_object_object_add(o, "gpu_seconds_saved",
			       json_object_new_double(s->gpu_seconds_saved));
	json_object_object_add(o, "first_event",
			       s->first_time ? json_object_new_double(s->first_time) : NULL);
	json_object_object_add(o, "last_event",
			       s->end_time ? json_object_new_double(s->end_time) : NULL);
	json_object_object_add(o, "rejected_lines", json_object_new_int64((int64_t)s->bad_lines));
	json_object_object_add(o, "dropped_events", json_object_new_int64((int64_t)s->dropped));
	return o;
}

static int wanted(unsigned long job, const unsigned long *jobs, size_t njobs)
{
	if (!njobs)
		return 1;
	for (size_t i = 0; i < njobs; i++)
		if (jobs[i] == job)
			return 1;
	return 0;
}

static int report_run(int argc, char **argv)
{
	const char *arg, *root = NULL;
	unsigned long jobs[64], job;
	size_t njobs = 0, nrows = 0, cap = 0;
	struct job_row *rows = NULL;
	struct gk_job_stats total = {0};
	struct cli_args a;
	struct dirent *e;
	char path[4200];
	int json = 0, id, dirfd, ret = GK_EXIT_OK;
	DIR *d;

	cli_args_init(&a, &gk_cmd_report, argc, argv);
	while ((id = cli_next(&a, report_opts, &arg)) != CLI_END) {
		switch (id) {
		case CLI_HELP:
			return cli_print_help(&gk_cmd_report);
		case CLI_ERROR:
			return GK_EXIT_USAGE;
		case CLI_POSITIONAL:
			if (root)
				return cli_usage_error(&gk_cmd_report,
						       "one shared root at a time ('%s' and '%s')",
						       root, arg);
			root = arg;
			break;
		case OPT_JOB:
			if (parse_job(arg, &job) < 0)
				return cli_usage_error(&gk_cmd_report,
						       "--job: '%s' is not a job id", arg);
			if (njobs == sizeof(jobs) / sizeof(jobs[0]))
				return cli_usage_error(&gk_cmd_report, "--job: at most %zu jobs",
						       sizeof(jobs) / sizeof(jobs[0]));
			jobs[njobs++] = job;
			break;
		case OPT_JSON:
			json = 1;
			break;
		}
	}
	if (!root)
		return cli_usage_error(&gk_cmd_report, "missing the shared root SHARED_ROOT");
	snprintf(path, sizeof(path), "%s/%s", root, GK_RECORDS_DIR);
	dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0 && errno == ENOENT) {
		struct stat sb;

		if (stat(root, &sb) < 0 || !S_ISDIR(sb.st_mode)) {
			gk_error("report: %s: %s", root,
				 stat(root, &sb) < 0 ? strerror(errno) : "not a folder");
			return GK_EXIT_BAD;
		}
		/* No job has finished a run with the plugin's records yet. */
		d = NULL;
	} else if (dirfd < 0) {
		gk_error("report: %s: %s%s", path, strerror(errno),
			 errno == EACCES
			     ? " (the job records are root's: run gpuckpt report as root)"
			     : "");
		return GK_EXIT_BAD;
	} else {
		d = fdopendir(dirfd);
		if (!d) {
			gk_error("report: %s: %s", path, strerror(errno));
			close(dirfd);
			return GK_EXIT_BAD;
		}
	}
	while (d && (e = readdir(d))) {
		struct job_row row;

		if (parse_job(e->d_name, &row.job) < 0 || !wanted(row.job, jobs, njobs))
			continue;
		if (read_record(dirfd, e->d_name, &row.st) < 0) {
			gk_warn("report: %s/%s: cannot be read; left out", path, e->d_name);
			ret = GK_EXIT_BAD;
			continue;
		}
		if (nrows == cap) {
			struct job_row *r;

			cap = cap ? cap * 2 : 32;
			r = realloc(rows, cap * sizeof(*rows));
			if (!r) {
				gk_error("report: out of memory");
				ret = GK_EXIT_BAD;
				break;
			}
			rows = r;
		}
		rows[nrows++] = row;
	}
	if (d)
		closedir(d);
	if (nrows)
		qsort(rows, nrows, sizeof(*rows), by_job);
	for (size_t i = 0; i < nrows; i++)
		add_stats(&total, &rows[i].st);
	for (size_t i = 0; i < njobs; i++) {
		size_t k;

		for (k = 0; k < nrows && rows[k].job != jobs[i]; k++)
			;
		if (k == nrows)
			gk_warn("report: job %lu: no record in %s", jobs[i], path);
	}

	if (json) {
		json_object *top = json_object_new_object(), *arr = json_object_new_array();

		json_object_object_add(top, "shared_root", json_object_new_string(root));
		for (size_t i = 0; i < nrows; i++) {
			json_object *o = stats_json(&rows[i].st, 0);

			json_object_object_add(o, "job",
					       json_object_new_int64((int64_t)rows[i].job));
			json_object_array_add(arr, o);
		}
		json_object_object_add(top, "jobs", arr);
		json_object_object_add(top, "total", stats_json(&total, 1));
		cli_print_json(top);
	} else {
		printf("%-10s %6s %8s %6s %11s %11s %11s  %-22s %s\n", "JOB", "CKPTS", "RESTORES",
		       "FAILED", "WRITTEN", "RESTORED", "STAGED", "LAST", "SAVED");
		for (size_t i = 0; i < nrows; i++) {
			char name[24];

			snprintf(name, sizeof(name), "%lu", rows[i].job);
			print_row(name, &rows[i].st, 0);
		}
		print_row("total", &total, 1);
		if (total.bad_lines)
			printf("(%llu lines of the records were not valid events and were left "
			       "out)\n",
			       (unsigned long long)total.bad_lines);
		if (total.dropped)
			printf("(%llu events were not kept: their records had reached their size "
			       "limit)\n",
			       (unsigned long long)total.dropped);
	}
	free(rows);
	return ret;
}

const struct gk_cmd gk_cmd_report = {
    .name = "report",
    .summary = "checkpoints, restores and GPU time saved, per job and in total",
    .help = report_help,
    .run = report_run,
};
