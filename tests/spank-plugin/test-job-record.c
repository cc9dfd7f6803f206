/*
 * Unit tests: what the plugin keeps about a job as root (spank-plugin/
 * job_record.c, metrics.c, root_path.c): the staging lines as events, the
 * node's Prometheus file (format, read back, updated in place), folders root
 * may write into (links, group-writable folders refused), the runtime's
 * event files collected through descriptors (a link, a FIFO, someone else's
 * file, garbage lines: none followed, waited on or trusted), the job's
 * record appended and read back, the AdminComment command.
 *
 * The parts that open folders as root need root (root-owned temporary
 * folders); run as another user they are skipped, with the reason.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spank-plugin/job_record.h"
#include "spank-plugin/metrics.h"
#include "spank-plugin/root_path.h"
#include "tap.h"

/* Tests that need root, and the others. */
#define NROOT 36
#define NPLAIN 27

static char tmp[] = "/tmp/gk-test-record.XXXXXX";

static void put_file(const char *path, const char *text, uid_t uid)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
	if (chown(path, uid, uid) < 0)
		perror(path);
}

static void mkdir_as(const char *path, uid_t uid, mode_t mode)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		perror(path);
	if (chown(path, uid, uid) < 0 || chmod(path, mode) < 0)
		perror(path);
}

static void stage_lines(void)
{
	struct gk_event e;

	is_int(gk_stage_line_event("out",
				   "staged out step.0/task.1/ckpt.000003: 12345 bytes in 0.52 s to "
				   "/shared/7/step.0/task.1/ckpt.000003",
				   "gk1", 100, &e),
	       1, "stage: a 'staged out' line is an event");
	ok(e.kind == GK_EV_STAGE_OUT && e.result == GK_EV_OK && e.bytes == 12345 &&
	       e.seconds > 0.51 && e.seconds < 0.53 && !strcmp(e.step, "0") && e.task == 1 &&
	       e.ckpt == 3 && !strcmp(e.node, "gk1"),
	   "stage: its bytes, seconds, step, task, ckpt and node");
	is_int(gk_stage_line_event(
		   "in", "staged in step.batch/task.0/ckpt.000001: 5 bytes in 0.00 s from /x",
		   "gk2", 100, &e),
	       1, "stage: a 'staged in' line");
	ok(e.kind == GK_EV_STAGE_IN && !strcmp(e.step, "batch"), "stage: in, step batch");
	is_int(gk_stage_line_event("out", "error: /bb/7/step.0/task.0/ckpt.000001: copy failed",
				   "gk1", 100, &e),
	       1, "stage: an error line");
	ok(e.result == GK_EV_FAILED, "stage: is a failed copy");
	is_int(gk_stage_line_event("out", "kept /bb/7: not every checkpoint reached /shared", "gk1",
				   100, &e),
	       0, "stage: other lines are no event");
	is_int(gk_stage_line_event("out", "staged out ../../etc/task.0/ckpt.1: 5 bytes in 1 s",
				   "gk1", 100, &e),
	       0, "stage: a path that is not step.S/task.T/ckpt.N is no event");
}

static void metrics_text(void)
{
	struct gk_metrics m = {0}, back = {0};
	char text[8192];
	int n;

	m.checkpoints[GK_EV_OK] = 7;
	m.checkpoints[GK_EV_REFUSED] = 1;
	m.checkpoint_bytes = 1ull << 33;
	m.checkpoint_seconds = 12.5;
	m.restores[GK_EV_FAILED] = 2;
	m.stage[1][0] = 3;
	m.stage_bytes[1] = 99;
	m.stage_seconds[0] = 0.25;
	m.jobs = 4;
	m.rejected = 5;
	n = gk_metrics_format(&m, 1732400000.5, text, sizeof(text));
	ok(n > 0, "metrics: formatted (%d bytes)", n);
	ok(strstr(text, "# TYPE gpuckpt_checkpoints_total counter\n") &&
	       strstr(text, "gpuckpt_checkpoints_total{result=\"ok\"} 7\n") &&
	       strstr(text, "gpuckpt_checkpoint_bytes_total 8589934592\n") &&
	       strstr(text, "gpuckpt_stage_bytes_total{direction=\"out\"} 99\n") &&
	       strstr(text, "gpuckpt_metrics_updated_timestamp_seconds 1732400000.500\n"),
	   "metrics: series in the Prometheus text format");
	gk_metrics_parse(text, (size_t)n, &back);
	ok(!memcmp(back.checkpoints, m.checkpoints, sizeof(m.checkpoints)) &&
	       back.checkpoint_bytes == m.checkpoint_bytes && back.checkpoint_seconds == 12.5 &&
	       back.restores[GK_EV_FAILED] == 2 && back.stage[1][0] == 3 &&
	       back.stage_seconds[0] == 0.25 && back.jobs == 4 && back.rejected == 5,
	   "metrics: every counter reads back");
	memset(&back, 0, sizeof(back));
	gk_metrics_parse("gpuckpt_checkpoints_total{result=\"ok\"} -5\n"
			 "gpuckpt_checkpoints_total{result=\"ok\"}7\n"
			 "gpuckpt_jobs_total 12x\n"
			 "other_metric 4\n"
			 "gpuckpt_jobs_total 3",
			 strlen("gpuckpt_checkpoints_total{result=\"ok\"} -5\n"
				"gpuckpt_checkpoints_total{result=\"ok\"}7\n"
				"gpuckpt_jobs_total 12x\n"
				"other_metric 4\n"
				"gpuckpt_jobs_total 3"),
			 &back);
	ok(back.checkpoints[GK_EV_OK] == 0 && back.jobs == 3,
	   "metrics: malformed lines and other series are skipped");
	is_int(gk_metrics_format(&m, 0, text, 100), -ENOSPC, "metrics: too small a buffer");
}

static void record_text(void)
{
	const char *text = "gpuckpt-event 1 kind=checkpoint result=ok time=1732400000.5 ckpt=1\n"
			   "gpuckpt-dropped 00000000000000000005\n";
	struct gk_job_events ev = {0};
	uint64_t n = 0;

	ok(gk_record_dropped_line("gpuckpt-dropped 00000000000000000012", 36, &n) == 1 && n == 12,
	   "record: the dropped-events line read");
	ok(gk_record_dropped_line("gpuckpt-dropped 12x", 19, &n) == 0,
	   "record: a malformed dropped-events line is not one");
	gk_record_parse(text, strlen(text), &ev);
	ok(ev.n == 1 && ev.dropped == 5 && ev.bad_lines == 0,
	   "record: its events and the dropped count (n=%zu dropped=%llu bad=%llu)", ev.n,
	   (unsigned long long)ev.dropped, (unsigned long long)ev.bad_lines);
	gk_job_events_free(&ev);
}

static void record_limit(void)
{
	struct gk_job_events add = {0}, all = {0};
	struct gk_event e = {0};
	gk_error_t err;
	char shared[PATH_MAX], p[PATH_MAX + 32];
	struct stat sb;
	int fd;

	snprintf(shared, sizeof(shared), "%s/shared", tmp);
	e.kind = GK_EV_CHECKPOINT;
	e.time = 1732400000.5;
	/* A record left with a cut-off last line (a writer killed half-way). */
	snprintf(p, sizeof(p), "%s/" GK_RECORDS_DIR "/70", shared);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, "gpuckpt-event 1 kind=chec", 25) != 25)
		perror(p);
	if (fd >= 0)
		close(fd);
	gk_job_events_add(&add, &e);
	is_int(gk_record_append(shared, 70, &add, &all, &err), 0,
	       "record: appended after a cut-off line");
	ok(all.n == 1 && all.bad_lines == 1,
	   "record: the cut-off line stays apart, the new event whole");
	gk_job_events_free(&all);
	/* More events than fit: counted. */
	for (int i = 0; i < 70000; i++)
		gk_job_events_add(&add, &e);
	gk_record_append(shared, 71, &add, NULL, &err);
	gk_record_append(shared, 71, &add, &all, &err);
	snprintf(p, sizeof(p), "%s/" GK_RECORDS_DIR "/71", shared);
	if (stat(p, &sb) < 0)
		sb.st_size = -1;
	ok(sb.st_size >= 0 && sb.st_size <= (off_t)GK_RECORD_LIMIT && all.n > 0 &&
	       all.n + all.dropped == 2 * add.n,
	   "record: within the limit (%lld bytes), every event kept or counted (%zu + %llu)",
	   (long long)sb.st_size, all.n, (unsigned long long)all.dropped);
	gk_job_events_free(&add);
	gk_job_events_free(&all);
}

static void root_paths(void)
{
	gk_error_t err;
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/ok", tmp);
	mkdir_as(path, 0, 0755);
	fd = gk_root_dir_open(path, &err);
	ok(fd >= 0, "root_path: a root folder below sticky /tmp opens (%s)",
	   fd < 0 ? err.text : "");
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/gw", tmp);
	mkdir_as(path, 0, 0775);
	ok(gk_root_dir_open(path, &err) == -EPERM && strstr(err.text, "writable by others"),
	   "root_path: a group-writable folder is refused, and said so");
	snprintf(path, sizeof(path), "%s/link", tmp);
	if (symlink("ok", path) < 0)
		perror(path);
	ok(gk_root_dir_open(path, &err) == -ELOOP && strstr(err.text, "symbolic link"),
	   "root_path: a symbolic link is refused");
	snprintf(path, sizeof(path), "%s/user", tmp);
	mkdir_as(path, 1, 0755);
	ok(gk_root_dir_open(path, &err) == -EPERM,
	   "root_path: a folder of another user is refused");
	ok(gk_root_dir_open("relative/path", &err) == -EINVAL,
	   "root_path: a relative path is refused");
}

/* The burst buffer of a node: BB/7/step.0/task.{0,1,2} of uid 1 (as the
 * plugin makes them), with event files good and bad. */
static void collect_and_record(void)
{
	gk_error_t err;
	char bb[256], shared[256], p[512], *argv[GK_COMMENT_ARGS];
	char buf[1024];
	struct gk_job_events ev = {0}, ev1 = {0}, all = {0};
	const struct gk_record_where one = {"0", 1};
	struct gk_job_stats st;
	struct stat sb;
	int n;

	snprintf(bb, sizeof(bb), "%s/bb", tmp);
	mkdir_as(bb, 0, 0755);
	snprintf(p, sizeof(p), "%s/7", bb);
	mkdir_as(p, 1, 0700);
	snprintf(p, sizeof(p), "%s/7/step.0", bb);
	mkdir_as(p, 1, 0700);
	for (int t = 0; t < 4; t++) {
		snprintf(p, sizeof(p), "%s/7/step.0/task.%d", bb, t);
		mkdir_as(p, 1, 0700);
	}
	snprintf(p, sizeof(p), "%s/7/step.0/task.0/" GK_EVENTS_FILE, bb);
	put_file(p,
		 "gpuckpt-event 1 kind=start result=ok time=10 pid=5 pstart=6\n"
		 "gpuckpt-event 1 kind=checkpoint result=ok time=20 pid=5 pstart=6 ckpt=1 "
		 "bytes=1000 seconds=0.5 elapsed=10.000 gpus=1 node=evil step=9 task=99\n"
		 "not an event\n"
		 "gpuckpt-event 1 kind=stage-out result=ok time=21 bytes=999999\n",
		 1);
	snprintf(p, sizeof(p), "%s/7/step.0/task.1/" GK_EVENTS_FILE, bb);
	put_file(p, "gpuckpt-event 1 kind=checkpoint result=ok time=21 ckpt=1 bytes=1000\n", 1);
	/* task.2: a link to a file of root's; task.3: a FIFO; step.x: root's. */
	snprintf(p, sizeof(p), "%s/secret", tmp);
	put_file(p, "gpuckpt-event 1 kind=checkpoint result=ok time=1 ckpt=9 bytes=1\n", 0);
	snprintf(buf, sizeof(buf), "%s/7/step.0/task.2/" GK_EVENTS_FILE, bb);
	if (symlink(p, buf) < 0)
		perror(buf);
	snprintf(p, sizeof(p), "%s/7/step.0/task.3/" GK_EVENTS_FILE, bb);
	if (mkfifo(p, 0600) < 0 || chown(p, 1, 1) < 0)
		perror(p);

	n = gk_record_collect(bb, 7, 1, "gk2", &one, 1, &ev1, &err);
	ok(n == 1 && ev1.n == 1 && ev1.ev[0].task == 1 && !strcmp(ev1.ev[0].node, "gk2"),
	   "collect: one task's folder only (a task's exit)");
	n = gk_record_collect(bb, 7, 1, "gk1", NULL, 1, &ev, &err);
	is_int(n, 4, "collect: the 4 task folders looked at (the link and the FIFO not read)");
	is_int(ev.n, 2, "collect: the rest, 2 events (start, checkpoint; task 1's was taken)");
	is_int(ev.bad_lines, 2,
	       "collect: the garbage line and the staging line from a user are refused");
	ok(ev.n == 2 && !strcmp(ev.ev[1].node, "gk1") && !strcmp(ev.ev[1].step, "0") &&
	       ev.ev[1].task == 0,
	   "collect: node, step and task are root's, not the line's");
	snprintf(p, sizeof(p), "%s/7/step.0/task.0/" GK_EVENTS_FILE, bb);
	ok(lstat(p, &sb) < 0 && errno == ENOENT, "collect: a file read is removed (counted once)");
	snprintf(p, sizeof(p), "%s/secret", tmp);
	ok(lstat(p, &sb) == 0, "collect: the file behind the link is untouched");
	is_int(gk_record_collect(bb, 8, 1, "gk1", NULL, 1, &ev, &err), 0,
	       "collect: a job with no folder here is 0 files");
	ok(gk_record_collect(bb, 7, 2, "gk1", NULL, 1, &ev, &err) < 0,
	   "collect: a job folder of another uid is refused");
	ok(gk_record_collect(bb, 7, 1, "a b", NULL, 1, &ev, &err) == -EINVAL,
	   "collect: a node name that cannot be recorded");

	snprintf(shared, sizeof(shared), "%s/shared", tmp);
	mkdir_as(shared, 0, 0755);
	is_int(gk_record_append(shared, 7, &ev, NULL, &err), 0, "record: appended");
	is_int(gk_record_append(shared, 7, &ev1, &all, &err), 0,
	       "record: appended again, read back");
	is_int(all.n, 3, "record: both appends read back, every line valid");
	gk_job_events_free(&all);
	ok(gk_record_read(shared, 7, &all, &err) == 0 && all.n == 3,
	   "record: read without appending");
	gk_job_events_free(&all);
	ok(gk_record_read(shared, 9, &all, &err) == 0 && all.n == 0,
	   "record: a job without one reads as none, and none is made");
	snprintf(p, sizeof(p), "%s/" GK_RECORDS_DIR "/9", shared);
	ok(lstat(p, &sb) < 0, "record: (none made)");
	gk_record_read(shared, 7, &all, &err);
	gk_job_stats_compute(&all, &st);
	is_int(st.checkpoints, 1, "record: ckpt.1 of step 0 counted once over its two tasks");
	snprintf(p, sizeof(p), "%s/" GK_RECORDS_DIR "/7", shared);
	ok(stat(p, &sb) == 0 && sb.st_uid == 0 && (sb.st_mode & 0777) == 0600,
	   "record: root's, 0600");
	snprintf(p, sizeof(p), "%s/" GK_RECORDS_DIR, shared);
	ok(stat(p, &sb) == 0 && (sb.st_mode & 0777) == 0700, "record: in a folder of root's, 0700");
	snprintf(p, sizeof(p), "%s/" GK_RECORDS_DIR "/8", shared);
	if (symlink("/etc/passwd", p) < 0)
		perror(p);
	ok(gk_record_append(shared, 8, &ev, NULL, &err) == -ELOOP,
	   "record: a link in place of a record is not followed");

	is_int(gk_admin_comment_argv("/usr/bin/scontrol", 7, "gpuckpt: 1 checkpoint, 0 restores",
				     argv, buf, sizeof(buf)),
	       0, "comment: argv built");
	ok(!strcmp(argv[0], "/usr/bin/scontrol") && !strcmp(argv[1], "update") &&
	       !strcmp(argv[2], "JobId=7") &&
	       !strcmp(argv[3], "AdminComment=gpuckpt: 1 checkpoint, 0 restores") && !argv[4],
	   "comment: scontrol update JobId=7 AdminComment=...");
	gk_job_events_free(&ev);
	gk_job_events_free(&ev1);
	gk_job_events_free(&all);
}

static void metrics_file(void)
{
	gk_error_t err;
	char path[PATH_MAX], text[8192];
	struct gk_metrics d = {0}, back = {0};
	struct stat sb;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/ok/gpuckpt.prom", tmp);
	d.checkpoints[GK_EV_OK] = 2;
	d.jobs = 1;
	is_int(gk_metrics_update(path, &d, &err), 0, "metrics file: made");
	is_int(gk_metrics_update(path, &d, &err), 0, "metrics file: updated");
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0)
		gk_metrics_parse(text, (size_t)n, &back);
	ok(back.checkpoints[GK_EV_OK] == 4 && back.jobs == 2,
	   "metrics file: the counters added up over the two updates");
	ok(stat(path, &sb) == 0 && (sb.st_mode & 0777) == 0644,
	   "metrics file: readable by node_exporter (0644)");
	snprintf(path, sizeof(path), "%s/ok/.gpuckpt.prom.tmp", tmp);
	ok(lstat(path, &sb) < 0, "metrics file: no temporary file left");
	snprintf(path, sizeof(path), "%s/gw/gpuckpt.prom", tmp);
	ok(gk_metrics_update(path, &d, &err) == -EPERM,
	   "metrics file: a folder others may write is refused");
}

/* The batch step's requeue of a preempted, checkpointed job: what it reads. */
static void requeue_rules(void)
{
	const char *text = "gpuckpt-event 1 kind=checkpoint result=failed time=1732400000.5 restart=1\n"
			   "gpuckpt-event 1 kind=checkpoint result=ok time=1732400001.5 ckpt=1\n"
			   "gpuckpt-event 1 kind=restore result=ok time=1732400002.5 ckpt=1 restart=1\n";
	struct gk_job_events ev = {0};
	struct gk_job_show s = {0};
	char *argv[GK_SCONTROL_ARGS], buf[256];

	gk_record_parse(text, strlen(text), &ev);
	ok(gk_job_events_checkpointed(&ev, 0) == 1,
	   "requeue: a checkpoint written in run 0 (no restart field) counts for run 0");
	ok(gk_job_events_checkpointed(&ev, 1) == 0,
	   "requeue: run 1 has only a failed checkpoint and a restore: not checkpointed");
	gk_job_events_free(&ev);

	gk_job_show_line("JobId=7 JobName=x JobState=RUNNING", &s);
	gk_job_show_line("   UserId=u(1) GroupId=g(1) PreemptEligibleTime=x PreemptTime=2026-01-01T00:00:00", &s);
	ok(!s.state_seen && !s.preempted,
	   "requeue: JobState and PreemptTime are not taken from inside a line (a job name)");
	gk_job_show_line("   JobState=RUNNING Reason=None Dependency=(null)", &s);
	gk_job_show_line("   PreemptEligibleTime=2026-01-01T00:00:00 PreemptTime=None", &s);
	ok(s.state_seen && s.running && !s.preempted, "requeue: running, not preempted");
	gk_job_show_line("   PreemptEligibleTime=2026-01-01T00:00:00 PreemptTime=2026-01-01T00:01:00", &s);
	ok(s.preempted, "requeue: PreemptTime set: preempted");
	gk_job_show_line("   JobState=COMPLETING Reason=None", &s);
	ok(!s.running, "requeue: COMPLETING is not running");
	gk_job_show_line("   JobState=RUNNINGX Reason=None", &s);
	ok(!s.running, "requeue: only RUNNING itself is running");
	is_int(gk_show_job_argv("/usr/bin/scontrol", 7, argv, buf, sizeof(buf)), 0, "requeue: show argv");
	ok(!strcmp(argv[0], "/usr/bin/scontrol") && !strcmp(argv[1], "show") &&
	       !strcmp(argv[2], "job") && !strcmp(argv[3], "7") && !argv[4],
	   "requeue: scontrol show job 7");
	is_int(gk_requeue_argv("/usr/bin/scontrol", 4294967294u, argv, buf, sizeof(buf)), 0,
	       "requeue: requeue argv");
	ok(!strcmp(argv[1], "requeue") && !strcmp(argv[2], "4294967294") && !argv[3],
	   "requeue: scontrol requeue 4294967294");
}

int main(void)
{
	char cmd[PATH_MAX + 16];

	plan(NPLAIN + NROOT);
	stage_lines();
	metrics_text();
	record_text();
	requeue_rules();
	if (geteuid() != 0) {
		for (int i = 0; i < NROOT; i++)
			skip("needs root (root-owned folders, files of another uid)");
		return done_testing();
	}
	if (!mkdtemp(tmp)) {
		perror(tmp);
		return 1;
	}
	chmod(tmp, 0755);
	root_paths();
	collect_and_record();
	metrics_file();
	record_limit();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", tmp);
	return done_testing();
}
