/*
 * test-stepset - a step's checkpoint sets: the set record and restore plan as
 * text (every malformed one refused), writing members under an agreed number,
 * withdrawing and pruning by number, and choosing the set to restore from a
 * step folder: only a recorded set whose every member is there, good, and
 * written for that very set as that task; a damaged member makes the whole
 * set fall back; no complete set is "fresh", complete ones all bad is "bad".
 */
#include "config.h"
#include "image/image.h"
#include "common/log.h"
#include "image/stepset.h"
#include "tap.h"
#include "common/error.h"
#include "fixture-manifest.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char step[4096];
static gk_error_t err;

static int exists(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int exists(const char *fmt, ...)
{
	char path[4400];
	struct stat st;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return lstat(path, &st) == 0;
}

static void text_formats(void)
{
	struct gk_set_record r = {7, 0x0123456789abcdefull, 4, 120, "mpi", 1763942400}, back;
	struct gk_plan_entry e, f;
	char buf[512];
	uint64_t seq;
	int n;
	static const char *const bad[] = {
	    "gpuckpt-set 1 sequence=7 id=0123456789abcdef members=4 step=1 agreement=mpi\n",
	    "gpuckpt-set 1 sequence=7 id=0123456789abcdef members=4 step=1 agreement=mpi created=1",
	    "gpuckpt-set 1 sequence=7 sequence=8 id=0123456789abcdef members=4 step=1 agreement=mpi created=1\n",
	    "gpuckpt-set 1 sequence=7 id=0123456789abcde members=4 step=1 agreement=mpi created=1\n",
	    "gpuckpt-set 1 sequence=7 id=0123456789abcdeg members=4 step=1 agreement=mpi created=1\n",
	    "gpuckpt-set 1 sequence=0 id=0123456789abcdef members=4 step=1 agreement=mpi created=1\n",
	    "gpuckpt-set 1 sequence=7 id=0123456789abcdef members=0 step=1 agreement=mpi created=1\n",
	    "gpuckpt-set 1 sequence=7 id=0123456789abcdef members=4 step=1 agreement=M/I created=1\n",
	    "gpuckpt-set 1 sequence=7 id=0123456789abcdef members=4 step=1 agreement=mpi created=1 x=1\n",
	    "gpuckpt-set 2 sequence=7 id=0123456789abcdef members=4 step=1 agreement=mpi created=1\n",
	    "gpuckpt-set 1 sequence=7 id=0123456789abcdef members=4 step=1 agreement=mpi created=1\nmore\n",
	    "gpuckpt-set 1 sequence=7  id=0123456789abcdef members=4 step=1 agreement=mpi created=1\n",
	};

	n = gk_set_record_format(&r, buf, sizeof(buf));
	ok(n > 0 && buf[n - 1] == '\n' && !strchr(buf, '\n')[1], "a set record is one line");
	is_int(gk_set_record_parse(buf, (size_t)n, &back, &err), 0, "and reads back");
	ok(back.sequence == 7 && back.id == r.id && back.members == 4 && back.step == 120 &&
	       !strcmp(back.agreement, "mpi") && back.created == r.created,
	   "with every field");
	r.step = -5;
	n = gk_set_record_format(&r, buf, sizeof(buf));
	ok(gk_set_record_parse(buf, (size_t)n, &back, &err) == 0 && back.step == -5,
	   "a negative step label reads back");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret = gk_set_record_parse(bad[i], strlen(bad[i]), &back, &err);

		if (!ok(ret == -EINVAL && err.text[0], "malformed record %zu refused (%s)", i,
			err.text))
			printf("#   %s", bad[i]);
	}
	ok(gk_set_name(7, buf, sizeof(buf)) == 0 && !strcmp(buf, "set.000007"), "set.000007");
	ok(gk_set_name_parse("set.000007", &seq) == 0 && seq == 7, "its number");
	ok(gk_set_name_parse("set.7", &seq) < 0 && gk_set_name_parse("set.0000007", &seq) < 0 &&
	       gk_set_name_parse("set.000007x", &seq) < 0 && gk_set_name_parse("ckpt.000007", &seq) < 0,
	   "only the one spelling is a set record");
	/* The NCCL ranks' rendezvous files: the names nccl.c writes, and only those. */
	ok(gk_nccl_rendezvous_name_is("gpuckpt-nccl.85c99d88c8bf8f9a.g1.count0.r0") &&
	       gk_nccl_rendezvous_name_is("gpuckpt-nccl.85c99d88c8bf8f9a.g12.id0.r0") &&
	       gk_nccl_rendezvous_name_is("gpuckpt-nccl.0000000000000000.g3.count63.r127"),
	   "the NCCL rendezvous files are known by name");
	ok(!gk_nccl_rendezvous_name_is("gpuckpt-nccl.85c99d88c8bf8f9.g1.count0.r0") &&
	       !gk_nccl_rendezvous_name_is("gpuckpt-nccl.85C99D88C8BF8F9A.g1.count0.r0") &&
	       !gk_nccl_rendezvous_name_is("gpuckpt-nccl.85c99d88c8bf8f9a.g1.count0.r0x") &&
	       !gk_nccl_rendezvous_name_is("gpuckpt-nccl.85c99d88c8bf8f9a.g.count0.r0") &&
	       !gk_nccl_rendezvous_name_is("gpuckpt-nccl.85c99d88c8bf8f9a.g1.other0.r0") &&
	       !gk_nccl_rendezvous_name_is(".gpuckpt-nccl.85c99d88c8bf8f9a.g1.count0.r0.77") &&
	       !gk_nccl_rendezvous_name_is("gpuckpt-nccl.85c99d88c8bf8f9a.g1.count0.r") &&
	       !gk_nccl_rendezvous_name_is("task.0"),
	   "... and nothing else is");

	memset(&e, 0, sizeof(e));
	strcpy(e.step, "step.0");
	e.kind = GK_PLAN_SET;
	e.sequence = 9;
	e.id = 0xfeedull;
	e.members = 4;
	n = gk_plan_format(&e, buf, sizeof(buf));
	ok(n > 0 && !strcmp(buf, "step.0 set sequence=9 id=000000000000feed members=4\n"),
	   "a plan line for a set: %s", buf);
	{
		char plan[GK_SETFILE_MAX + 256];

		snprintf(plan, sizeof(plan), "%s\n%sstep.1 bad set 5: task 3: damaged\n"
			 "step.batch fresh no set\n", GK_PLAN_MAGIC, buf);
		ok(gk_plan_find(plan, strlen(plan), "step.0", &f, &err) == 1 &&
		       f.kind == GK_PLAN_SET && f.sequence == 9 && f.id == 0xfeed && f.members == 4,
		   "found in a plan");
		ok(gk_plan_find(plan, strlen(plan), "step.1", &f, &err) == 1 &&
		       f.kind == GK_PLAN_BAD && !strcmp(f.reason, "set 5: task 3: damaged"),
		   "a bad step, with its reason");
		ok(gk_plan_find(plan, strlen(plan), "step.batch", &f, &err) == 1 &&
		       f.kind == GK_PLAN_FRESH,
		   "a fresh step");
		is_int(gk_plan_find(plan, strlen(plan), "step.7", &f, &err), 0,
		       "a step without a line");
		ok(gk_plan_find(plan, strlen(plan) - 1, "step.0", &f, &err) == -EINVAL,
		   "a plan cut short is refused (%s)", err.text);
		snprintf(plan, sizeof(plan), "%s\nstep.0 set sequence=9 id=feed members=4\n",
			 GK_PLAN_MAGIC);
		ok(gk_plan_find(plan, strlen(plan), "step.0", &f, &err) == -EINVAL,
		   "a short id is refused");
		snprintf(plan, sizeof(plan), "%s\nstep.0 fresh a\nstep.0 fresh b\n", GK_PLAN_MAGIC);
		ok(gk_plan_find(plan, strlen(plan), "step.0", &f, &err) == -EINVAL,
		   "a step named twice is refused");
		snprintf(plan, sizeof(plan), "%s\nstep.0 fresh a\nstep.1 maybe\n", GK_PLAN_MAGIC);
		ok(gk_plan_find(plan, strlen(plan), "step.0", &f, &err) == -EINVAL,
		   "a malformed line anywhere makes the plan untrusted");
	}
	memset(&e, 0, sizeof(e));
	strcpy(e.step, "step.2");
	e.kind = GK_PLAN_FRESH;
	strcpy(e.reason, "two\nlines\033[2J");
	n = gk_plan_format(&e, buf, sizeof(buf));
	ok(n > 0 && !strcmp(buf, "step.2 fresh two lines [2J\n"),
	   "control characters in a reason become spaces");
}

/* A member: STEP/task.T/ckpt.N with one small allocation, written for set
 * (id, members) as task `as` (as < 0: not a member of any set). */
static int member(uint32_t t, uint64_t seq, uint64_t id, uint32_t members, int as, uint8_t fill)
{
	char root[4200];
	struct gk_store_txn txn;
	struct gk_manifest *m = empty_manifest("step 1");
	struct gk_alloc_rec *a;
	uint8_t data[8192];
	int fd, is_signed, ret;

	memset(data, fill, sizeof(data));
	snprintf(root, sizeof(root), "%s/task.%u", step, t);
	m->ndevices = 1;
	m->devices = calloc(1, sizeof(*m->devices));
	strcpy(m->devices[0].name, "Test GPU");
	strcpy(m->devices[0].uuid, "GPU-00000000-0000-0000-0000-000000000000");
	m->devices[0].va_base = m->va_base;
	m->devices[0].va_size = m->va_size;
	m->devices[0].next_order = 1;
	m->nallocs = 1;
	m->allocs = a = calloc(1, sizeof(*m->allocs));
	a->address = m->va_base;
	a->size = sizeof(data);
	strcpy(a->kind, "alloc");
	a->nparts = 1;
	a->parts = calloc(1, sizeof(*a->parts));
	strcpy(a->parts[0].file, "device0.data");
	a->parts[0].size = sizeof(data);
	a->nchunks = 2;
	a->chunks = calloc(2, sizeof(*a->chunks));
	a->chunks[0].sum = a->chunks[1].sum = gk_sum(gk_sum_algo_of(m->version), data, 4096);
	if (as >= 0) {
		m->set_id = id;
		m->set_members = members;
		m->set_member = (uint32_t)as;
		strcpy(m->set_agreement, "mpi");
	}
	ret = gk_store_begin_seq(root, seq, &txn, &err);
	if (ret == 0)
		ret = gk_store_create(&txn, "device0.data", &fd, &err);
	if (ret == 0) {
		if (write(fd, data, sizeof(data)) != (ssize_t)sizeof(data))
			ret = -EIO;
		close(fd);
	}
	if (ret == 0)
		ret = gk_store_commit(&txn, m, 0, &is_signed, &err);
	else
		gk_store_abort(&txn);
	gk_manifest_free(m);
	return ret;
}

static int record(uint64_t seq, uint64_t id, uint32_t members)
{
	struct gk_set_record r = {seq, id, members, 10 * (int64_t)seq, "mpi", (int64_t)time(NULL)};

	return gk_set_record_write(step, &r, &err);
}

static char notes[8192];

static void note(void *arg, const char *line)
{
	(void)arg;
	snprintf(notes + strlen(notes), sizeof(notes) - strlen(notes), "%s\n", line);
}

static struct gk_load_opts opts(void)
{
	struct gk_load_opts lo = {.uid = geteuid(), .check_data = 1};

	return lo;
}

static void choosing(void)
{
	struct gk_load_opts lo = opts();
	struct gk_stepset *sets = NULL;
	struct gk_plan_entry e;
	char path[4400];
	uint32_t ntasks;
	uint64_t next;
	size_t n;
	int fd;

	/* Set 1: complete. Set 2: task 2 never committed. Set 3: all three
	 * committed, no record (task 0 never learned it). */
	for (uint32_t t = 0; t < 3; t++)
		member(t, 1, 0x11, 3, (int)t, (uint8_t)t);
	ok(record(1, 0x11, 3) == 0, "set record 1 written");
	ok(!exists("%s/.tmp.set.000001.%d", step, (int)getpid()), "no temporary left behind");
	is_int(record(1, 0x11, 3), -EEXIST, "a record is never replaced");
	for (uint32_t t = 0; t < 2; t++)
		member(t, 2, 0x22, 3, (int)t, 9);
	record(2, 0x22, 3);
	for (uint32_t t = 0; t < 3; t++)
		member(t, 3, 0x33, 3, (int)t, 7);
	is_int(member(0, 3, 0x33, 3, 0, 1), -EEXIST, "a member never takes a number already used");

	ok(gk_stepset_list(step, &sets, &n, &ntasks, &err) == 0 && n == 3 && ntasks == 3,
	   "three sets, three task folders");
	ok(n == 3 && sets[0].sequence == 3 && !sets[0].complete && !sets[0].has_record &&
	       sets[0].present == 3 && strstr(sets[0].why, "no set record"),
	   "set 3: every member, no record: not complete (%s)", n ? sets[0].why : "");
	ok(n == 3 && sets[1].sequence == 2 && !sets[1].complete && sets[1].present == 2 &&
	       strstr(sets[1].why, "task 2"),
	   "set 2: task 2's part missing (%s)", n > 1 ? sets[1].why : "");
	ok(n == 3 && sets[2].sequence == 1 && sets[2].complete, "set 1: complete");
	free(sets);

	ok(gk_stepset_plan(step, &lo, &e, NULL, NULL, &err) == 0 && e.kind == GK_PLAN_SET &&
	       e.sequence == 1 && e.id == 0x11 && e.members == 3,
	   "the plan restores set 1");

	/* Set 3 gets its record: now the newest complete set. */
	record(3, 0x33, 3);
	ok(gk_stepset_plan(step, &lo, &e, NULL, NULL, &err) == 0 && e.kind == GK_PLAN_SET &&
	       e.sequence == 3,
	   "recorded, set 3 is chosen");

	/* Task 1's part of set 3 damaged: every task falls back to set 1. */
	snprintf(path, sizeof(path), "%s/task.1/ckpt.000003/device0.data", step);
	fd = open(path, O_WRONLY);
	ok(fd >= 0 && pwrite(fd, "XXXX", 4, 100) == 4, "task 1's part of set 3 damaged");
	close(fd);
	notes[0] = 0;
	ok(gk_stepset_plan(step, &lo, &e, note, NULL, &err) == 0 && e.kind == GK_PLAN_SET &&
	       e.sequence == 1,
	   "the plan falls back to set 1 for every task");
	ok(strstr(notes, "set 3 refused: task 1: ckpt.000003: device0.data: checksum mismatch") &&
	       strstr(notes, "set 2 not used: 1 of 3 tasks lack ckpt.000002 (task 2)"),
	   "naming each set passed over, and why");
	lo.check_data = 0;
	ok(gk_stepset_plan(step, &lo, &e, NULL, NULL, &err) == 0 && e.sequence == 3,
	   "(without reading the data the damage is not seen)");
	lo.check_data = 1;

	/* Set 1's part of task 2 written for another set, then not as a member. */
	snprintf(path, sizeof(path), "%s/task.2", step);
	ok(gk_store_remove(path, 1, 1, &err) == 1, "task 2 withdraws its part of set 1");
	ok(!exists("%s/task.2/ckpt.000001", step) && exists("%s/task.2/ckpt.000003", step),
	   "only that one");
	/* Another step: task 1's part written for another set, then as no
	 * set's member at all. */
	{
		char saved[sizeof(step)];

		memcpy(saved, step, sizeof(step));
		strcat(step, "-b");
		mkdir(step, 0700);
		member(0, 1, 0x44, 2, 0, 1);
		member(1, 1, 0x45, 2, 1, 1);
		record(1, 0x44, 2);
		ok(gk_stepset_plan(step, &lo, &e, NULL, NULL, &err) == 0 && e.kind == GK_PLAN_BAD &&
		       strstr(e.reason, "task 1: ckpt.000001 belongs to another set"),
		   "a member written for another set: no good set (%s)", e.reason);
		strcat(step, "c");
		mkdir(step, 0700);
		member(0, 1, 0x44, 2, 0, 1);
		member(1, 1, 0, 0, -1, 1);
		record(1, 0x44, 2);
		ok(gk_stepset_plan(step, &lo, &e, NULL, NULL, &err) == 0 && e.kind == GK_PLAN_BAD &&
		       strstr(e.reason, "was not written as a member"),
		   "a checkpoint of no set in its place: no good set (%s)", e.reason);
		memcpy(step, saved, sizeof(step));
	}

	/* Pruning by number, numbering past every set. */
	ok(gk_store_next(path, &next, &err) == 0 && next == 4, "task 2's next number: 4");
	ok(gk_set_records_prune(step, 3, &err) == 0 && !exists("%s/set.000001", step) &&
	       !exists("%s/set.000002", step) && exists("%s/set.000003", step),
	   "set records below 3 pruned");
	ok(gk_stepset_plan(step, &lo, &e, NULL, NULL, &err) == 0 && e.kind == GK_PLAN_BAD,
	   "with set 3 damaged and no other record: bad (%s)", e.reason);
	gk_set_records_prune(step, 100, &err);
	ok(gk_stepset_plan(step, &lo, &e, NULL, NULL, &err) == 0 && e.kind == GK_PLAN_FRESH,
	   "without any record: fresh (%s)", e.reason);
	is_int(gk_stepset_plan("/nonexistent/step.0", &lo, &e, NULL, NULL, &err), -ENOENT,
	       "a step folder that is not there");
}

int main(void)
{
	char tmpl[] = "/tmp/gk-test-stepset.XXXXXX";

	plan(54);
	gk_log_set_level(GK_LOG_ERROR);
	if (!mkdtemp(tmpl)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(step, sizeof(step), "%s/step.0", tmpl);
	mkdir(step, 0700);
	text_formats();
	choosing();
	{
		char cmd[4200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpl);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpl);
	}
	return done_testing();
}
