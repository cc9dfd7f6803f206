/*
 * test-events - the event line (runtime/common/events.h) written and read
 * back, every malformed line refused (root reads what a user could write),
 * and a job's events summed up (jobstats.h): distinct checkpoints over
 * tasks, restores per run, the newest checkpoint's size, the GPU time a
 * restore saved, the AdminComment text.
 */
#include "config.h"
#include "common/events.h"
#include "common/jobstats.h"
#include "tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(const char *line, struct gk_event *e)
{
	return gk_event_parse(line, strlen(line), e);
}

static void roundtrip(void)
{
	struct gk_event e = {0}, back;
	char line[GK_EVENT_LINE_MAX + 1];
	int n;

	e.kind = GK_EV_CHECKPOINT;
	e.result = GK_EV_OK;
	e.time = 1732400000.125;
	e.pid = 4242;
	e.pstart = 987654321;
	e.ckpt = 7;
	e.bytes = 1ull << 40;
	e.seconds = 0.52;
	e.elapsed = 3600.25;
	e.gpus = 2;
	e.restart = 3;
	snprintf(e.node, sizeof(e.node), "gk1.example-site");
	snprintf(e.step, sizeof(e.step), "batch");
	e.task = 5;
	e.have = GK_EVF_PID | GK_EVF_PSTART | GK_EVF_CKPT | GK_EVF_BYTES | GK_EVF_SECONDS |
		 GK_EVF_ELAPSED | GK_EVF_GPUS | GK_EVF_RESTART | GK_EVF_NODE | GK_EVF_STEP |
		 GK_EVF_TASK;
	n = gk_event_format(&e, line, sizeof(line));
	ok(n > 0 && line[n - 1] == '\n', "format: a line with its newline (%d bytes)", n);
	line[n - 1] = '\0';
	is_str(
	    line,
	    "gpuckpt-event 1 kind=checkpoint result=ok time=1732400000.125 node=gk1.example-site "
	    "step=batch task=5 pid=4242 pstart=987654321 restart=3 ckpt=7 bytes=1099511627776 "
	    "seconds=0.520 elapsed=3600.250 gpus=2",
	    "format: the fields in their order");
	is_int(gk_event_parse(line, (size_t)n - 1, &back), 0, "parse: the line reads back");
	line[n - 1] = '\n';
	ok(back.kind == e.kind && back.result == e.result && back.have == e.have &&
	       back.pid == e.pid && back.pstart == e.pstart && back.ckpt == e.ckpt &&
	       back.bytes == e.bytes && back.gpus == e.gpus && back.restart == e.restart &&
	       back.task == e.task && !strcmp(back.node, e.node) && !strcmp(back.step, e.step),
	   "parse: every field as written");
	ok(back.time > 1732400000.12 && back.time < 1732400000.13 && back.seconds > 0.519 &&
	       back.seconds < 0.521 && back.elapsed > 3600.24 && back.elapsed < 3600.26,
	   "parse: times to the millisecond");

	e.have = 0;
	e.kind = GK_EV_START;
	n = gk_event_format(&e, line, sizeof(line));
	ok(n > 0 && parse(strtok(line, "\n"), &back) == 0 && back.have == 0 &&
	       back.kind == GK_EV_START,
	   "an event with only the required fields");

	snprintf(e.node, sizeof(e.node), "a b");
	e.have = GK_EVF_NODE;
	is_int(gk_event_format(&e, line, sizeof(line)), -EINVAL,
	       "format: a node name with a blank is refused");
	e.have = 0;
	is_int(gk_event_format(&e, line, 20), -ENOSPC, "format: a buffer too small is -ENOSPC");
}

static void bad_lines(void)
{
	static const char *const bad[] = {
	    "",
	    "gpuckpt-event 1",
	    "gpuckpt-event 2 kind=start result=ok time=1",
	    "gpuckpt-event 1 kind=start result=ok", /* no time */
	    "gpuckpt-event 1 result=ok time=1",	    /* no kind */
	    "gpuckpt-event 1 kind=start time=1",    /* no result */
	    "gpuckpt-event 1 kind=explode result=ok time=1",
	    "gpuckpt-event 1 kind=start result=maybe time=1",
	    "gpuckpt-event 1 kind=start result=ok time=-1",
	    "gpuckpt-event 1 kind=start result=ok time=1e9",
	    "gpuckpt-event 1 kind=start result=ok time=1.",
	    "gpuckpt-event 1 kind=start result=ok time=99999999999999",
	    "gpuckpt-event 1 kind=start result=ok time=1 time=2", /* twice */
	    "gpuckpt-event 1 kind=start result=ok time=1 pid=+5",
	    "gpuckpt-event 1 kind=start result=ok time=1 pid=4294967296", /* > 32 bits */
	    "gpuckpt-event 1 kind=start result=ok time=1 bytes=99999999999999999999",
	    "gpuckpt-event 1 kind=start result=ok time=1 bytes=",
	    "gpuckpt-event 1 kind=start result=ok time=1 gpus=70000",
	    "gpuckpt-event 1 kind=start result=ok time=1 errno=5000",
	    "gpuckpt-event 1 kind=start result=ok time=1 node=../../etc",
	    "gpuckpt-event 1 kind=start result=ok time=1 node=a/b",
	    "gpuckpt-event 1 kind=start result=ok time=1 step=",
	    "gpuckpt-event 1 kind=start result=ok time=1  pid=1", /* two blanks */
	    "gpuckpt-event 1 kind=start result=ok time=1 ",	  /* trailing blank */
	    "gpuckpt-event 1 kind=start result=ok time=1 =5",
	    "gpuckpt-event 1 kind=start result=ok time=1 pid",
	    "gpuckpt-event 1 kind=start result=ok time=1 node=\x01",
	    "gpuckpt-event 1 kind=start result=ok time=1 node=\xc3\xa9",
	    "gpuckpt-event 1\tkind=start result=ok time=1",
	    "xgpuckpt-event 1 kind=start result=ok time=1",
	};
	char longline[GK_EVENT_LINE_MAX + 64];
	struct gk_event e;
	int refused = 0;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &e) == -EINVAL)
			refused++;
		else
			printf("#   accepted: '%s'\n", bad[i]);
	}
	is_int(refused, (int)(sizeof(bad) / sizeof(bad[0])), "every malformed line is refused");
	snprintf(longline, sizeof(longline), "gpuckpt-event 1 kind=start result=ok time=1 x=%0*d",
		 GK_EVENT_LINE_MAX, 0);
	is_int(parse(longline, &e), -EINVAL, "a line longer than %d bytes is refused",
	       GK_EVENT_LINE_MAX);
	is_int(parse("gpuckpt-event 1 kind=start result=ok time=1 colour=blue", &e), 0,
	       "an unknown key (a newer writer) is skipped, the line kept");
}

static int count_valid, count_bad;

static int count(void *arg, const struct gk_event *e)
{
	(void)arg;
	if (e)
		count_valid++;
	else
		count_bad++;
	return 0;
}

static void each(void)
{
	const char text[] = "gpuckpt-event 1 kind=start result=ok time=1\n"
			    "garbage\n"
			    "gpuckpt-event 1 kind=checkpoint result=ok time=2 ckpt=1\n"
			    "gpuckpt-event 1 kind=checkpoint result=ok time=3 ck"; /* cut off */

	gk_events_each(text, sizeof(text) - 1, count, NULL);
	ok(count_valid == 2 && count_bad == 2,
	   "each: 2 valid lines, a bad one and a cut-off last one (%d, %d)", count_valid,
	   count_bad);
}

static struct gk_event ev(enum gk_event_kind k, enum gk_event_result r, double time,
			  const char *step, unsigned task, unsigned long long ckpt)
{
	struct gk_event e = {0};

	e.kind = k;
	e.result = r;
	e.time = time;
	snprintf(e.step, sizeof(e.step), "%s", step);
	e.task = task;
	e.ckpt = ckpt;
	snprintf(e.node, sizeof(e.node), "gk1");
	e.have = GK_EVF_STEP | GK_EVF_TASK | GK_EVF_NODE | GK_EVF_PID | GK_EVF_PSTART;
	if (k == GK_EV_CHECKPOINT || k == GK_EV_RESTORE)
		e.have |= GK_EVF_CKPT;
	return e;
}

static void stats(void)
{
	struct gk_job_events j = {0};
	struct gk_job_stats s;
	struct gk_event e;
	char text[256];

	/* Run 0: a 2-task step checkpoints twice (ckpt.1, ckpt.2); each part
	 * 1 GiB on 1 GPU; the second after 100 s. One task's third fails. */
	for (unsigned t = 0; t < 2; t++) {
		e = ev(GK_EV_CHECKPOINT, GK_EV_OK, 50 + t, "0", t, 1);
		e.pid = 10 + t;
		e.pstart = 1;
		e.bytes = 1ull << 30;
		e.elapsed = 50;
		e.gpus = 1;
		e.restart = 0;
		e.have |= GK_EVF_BYTES | GK_EVF_ELAPSED | GK_EVF_GPUS | GK_EVF_RESTART;
		gk_job_events_add(&j, &e);
		e.ckpt = 2;
		e.time = 100 + t;
		e.elapsed = 100;
		gk_job_events_add(&j, &e);
	}
	e = ev(GK_EV_CHECKPOINT, GK_EV_FAILED, 120, "0", 1, 0);
	e.have &= ~(uint32_t)GK_EVF_CKPT;
	gk_job_events_add(&j, &e);
	/* Run 1 (restart 1): both tasks restore ckpt.2, run 30 s more, and
	 * checkpoint ckpt.3 (2 GiB each), which a run 2 restores. */
	for (unsigned t = 0; t < 2; t++) {
		e = ev(GK_EV_RESTORE, GK_EV_OK, 200 + t, "0", t, 2);
		e.pid = 20 + t;
		e.pstart = 2;
		e.restart = 1;
		e.bytes = 1ull << 30;
		e.have |= GK_EVF_RESTART | GK_EVF_BYTES;
		gk_job_events_add(&j, &e);
		e = ev(GK_EV_CHECKPOINT, GK_EV_OK, 240 + t, "0", t, 3);
		e.pid = 20 + t;
		e.pstart = 2;
		e.bytes = 2ull << 30;
		e.elapsed = 30;
		e.gpus = 1;
		e.have |= GK_EVF_BYTES | GK_EVF_ELAPSED | GK_EVF_GPUS;
		gk_job_events_add(&j, &e);
		e = ev(GK_EV_RESTORE, GK_EV_OK, 300 + t, "0", t, 3);
		e.pid = 30 + t;
		e.pstart = 3;
		e.restart = 2;
		e.have |= GK_EVF_RESTART;
		gk_job_events_add(&j, &e);
	}
	/* Staging: two copies out, one failed. */
	e = ev(GK_EV_STAGE_OUT, GK_EV_OK, 130, "0", 0, 2);
	e.bytes = 5;
	e.have |= GK_EVF_BYTES;
	gk_job_events_add(&j, &e);
	gk_job_events_add(&j, &e);
	e.result = GK_EV_FAILED;
	gk_job_events_add(&j, &e);
	j.bad_lines = 4;

	gk_job_stats_compute(&j, &s);
	is_int(s.checkpoints, 3, "checkpoints: ckpt.1, 2 and 3, once each over the 2 tasks");
	is_int(s.n[GK_EV_CHECKPOINT][GK_EV_OK], 6, "6 task checkpoints committed");
	is_int(s.restores, 2, "restores: one per run that restored (restart 1 and 2)");
	is_int(s.failures, 2, "failures: the failed checkpoint and the failed copy");
	ok(s.have_last && s.last_ckpt == 3 && !strcmp(s.last_step, "0"), "last: ckpt.3 of step 0");
	is_int(s.last_bytes, 4ull << 30, "its size: both tasks' parts (4 GiB)");
	is_int(s.bytes[GK_EV_CHECKPOINT], 8ull << 30, "bytes written: 8 GiB");
	is_int(s.bytes[GK_EV_STAGE_OUT], 10, "bytes staged out: the two good copies");
	/* Restore of ckpt.2 saves 100 s per task; of ckpt.3, 100 + 30 s per task. */
	ok(s.gpu_seconds_saved > 459.9 && s.gpu_seconds_saved < 460.1,
	   "GPU time saved: 2 x 100 + 2 x 130 = 460 GPU-seconds (%.1f)", s.gpu_seconds_saved);
	is_int(s.bad_lines, 4, "rejected lines carried through");
	is_int(gk_job_stats_comment(&s, text, sizeof(text)) > 0, 1, "comment formatted");
	is_str(text, "gpuckpt: 3 checkpoints, 2 restores, last ckpt.3 (4.0 GiB), 2 failed",
	       "the AdminComment text");
	is_int(gk_job_stats_comment(&s, text, 20), -ENOSPC,
	       "comment: too small a buffer is -ENOSPC");
	gk_job_events_free(&j);

	gk_job_stats_compute(&j, &s);
	gk_job_stats_comment(&s, text, sizeof(text));
	is_str(text, "gpuckpt: 0 checkpoints, 0 restores", "no events: the plain counts");

	/* One checkpoint, singular, no GPU: no GPU time saved by its restore. */
	e = ev(GK_EV_CHECKPOINT, GK_EV_OK, 10, "batch", 0, 1);
	e.bytes = 512;
	e.elapsed = 5;
	e.gpus = 0;
	e.have |= GK_EVF_BYTES | GK_EVF_ELAPSED | GK_EVF_GPUS;
	gk_job_events_add(&j, &e);
	e = ev(GK_EV_RESTORE, GK_EV_OK, 20, "batch", 0, 1);
	gk_job_events_add(&j, &e);
	gk_job_stats_compute(&j, &s);
	gk_job_stats_comment(&s, text, sizeof(text));
	is_str(text, "gpuckpt: 1 checkpoint, 1 restore, last ckpt.1 (512 B)", "singular, bytes");
	ok(s.gpu_seconds_saved == 0, "a checkpoint of no GPU saves no GPU time");
	gk_job_events_free(&j);
}

int main(void)
{
	plan(28);
	roundtrip();
	bad_lines();
	each();
	stats();
	return done_testing();
}
