/*
 * test-step-restore - what the plugin gives a task of a step of several tasks
 * on a restart (step_restore.c, task_env.c): with staging, the prolog's plan
 * decides (missing, not root's or malformed: the task is refused; a set whose
 * part is not on this node: refused); without staging, the node's own step
 * folder; a bad step fails or starts afresh as --gpu-checkpoint-on-bad says;
 * GPUCKPT_TASKS=independent keeps the old per-task restore.
 */
#include "config.h"

#include "fake_env.h"
#include "spank-plugin/site_args.h"
#include "spank-plugin/step_restore.h"
#include "spank-plugin/task_env.h"
#include "tap.h"

#include <stdlib.h>

static char root[] = "/tmp/gk-test-step-restore.XXXXXX";
static gk_error_t err;

static void put(const char *text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(const char *text, const char *fmt, ...)
{
	char path[4200];
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* task.T/ckpt.N with a manifest, in step folder `step` of job 12. */
static void part(const char *step, unsigned t, unsigned n)
{
	char dir[3800], name[32];

	snprintf(dir, sizeof(dir), "%s/12/%s/task.%u", root, step, t);
	mkdir(dir, 0700);
	snprintf(name, sizeof(name), "ckpt.%06u", n);
	mkckpt(dir, name, 1);
}

int main(void)
{
	static struct fake_env fe;
	struct gk_env env = {fget, fset, funset, &fe};
	struct gk_inject_result r;
	struct gk_site site;
	struct gk_opts o;
	struct gk_task_ids ids = {12, 0, 1, getuid(), getgid(), 3};
	char path[4200], want[4400];
	int am_root = geteuid() == 0;

	plan(30);
	if (!mkdtemp(root)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	gk_site_defaults(&site);
	snprintf(site.bb_root, sizeof(site.bb_root), "%s", root);
	snprintf(site.runtime, sizeof(site.runtime), "/opt/gpuckpt/libgpuckpt.so");
	site.stage[0] = 0;
	gk_opts_init(&o);
	fset(&fe, "SLURM_RESTART_COUNT", "1", 1);

	/* The first run of a step of three tasks: who it is, nothing restored. */
	fset(&fe, "SLURM_RESTART_COUNT", "0", 1);
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), 0, "first run: injected");
	is_str(val(&fe, "GPUCKPT_STEP_TASKS"), "3", "GPUCKPT_STEP_TASKS is the step's task count");
	is_str(val(&fe, "GPUCKPT_TASK"), "1", "GPUCKPT_TASK is the task's index");
	ok(!val(&fe, "GPUCKPT_RESTORE") && !val(&fe, "GPUCKPT_RESTORE_SET"), "nothing to restore");
	fset(&fe, "SLURM_RESTART_COUNT", "1", 1);

	/* No staging: the node's step folder decides. */
	part("step.0", 0, 4);
	part("step.0", 1, 4);
	part("step.0", 2, 4);
	part("step.0", 0, 5);
	part("step.0", 1, 5);
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), 0, "restart without records");
	ok(r.step_set && r.choice.kind == GK_PLAN_FRESH && !val(&fe, "GPUCKPT_RESTORE"),
	   "no set record: every task starts afresh (%s)", r.choice.reason);
	put("gpuckpt-set 1 sequence=4 id=00000000000000aa members=3 step=40 agreement=mpi created=1\n",
	    "%s/12/step.0/set.000004", root);
	put("gpuckpt-set 1 sequence=5 id=00000000000000bb members=3 step=50 agreement=mpi created=1\n",
	    "%s/12/step.0/set.000005", root);
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), 0, "restart with records");
	snprintf(want, sizeof(want), "%s/12/step.0/task.1/ckpt.000004", root);
	is_str(val(&fe, "GPUCKPT_RESTORE"), want,
	       "set 5 lacks task 2's part: set 4 is restored, by its own folder's ckpt.4");
	is_str(val(&fe, "GPUCKPT_RESTORE_SET"), "00000000000000aa", "with the set's id");
	is_str(r.newest, "ckpt.000004", "named in the result");
	ids.ntasks = 4;
	gk_inject(&site, &o, &ids, &env, &r, &err);
	ok(r.choice.kind == GK_PLAN_FRESH && strstr(r.choice.reason, "has 3 tasks, this step 4") &&
	       !val(&fe, "GPUCKPT_RESTORE") && !val(&fe, "GPUCKPT_RESTORE_SET"),
	   "a step of another size does not restore a set of 3 (%s)", r.choice.reason);
	ids.ntasks = 3;

	/* The step folder is the user's: root's task_init_privileged reads only
	 * the newest GK_STEP_SETS_READ (32) set records of it, however many
	 * the user made. 40 newer records, none complete: set 4 is not reached
	 * and the reason says why. */
	for (unsigned n = 100; n < 140; n++) {
		char rec[200];

		snprintf(rec, sizeof(rec),
			 "gpuckpt-set 1 sequence=%u id=00000000000000cc members=3 step=1 "
			 "agreement=mpi created=1\n", n);
		put(rec, "%s/12/step.0/set.%06u", root, n);
	}
	gk_inject(&site, &o, &ids, &env, &r, &err);
	ok(r.choice.kind == GK_PLAN_FRESH && !val(&fe, "GPUCKPT_RESTORE") &&
	       strstr(r.choice.reason, "newest 32 of 42 set records"),
	   "42 set records: only the newest 32 are read, set 4 is not reached, and the "
	   "reason says so (%s)", r.choice.reason);
	for (unsigned n = 100; n < 140; n++) {
		snprintf(path, sizeof(path), "%s/12/step.0/set.%06u", root, n);
		unlink(path);
	}

	/* GPUCKPT_TASKS=independent: each task its own newest, as before sets. */
	fset(&fe, "GPUCKPT_TASKS", "independent", 1);
	gk_inject(&site, &o, &ids, &env, &r, &err);
	ok(!r.step_set && val(&fe, "GPUCKPT_RESTORE") && !strcmp(val(&fe, "GPUCKPT_RESTORE"), "auto") &&
	       !val(&fe, "GPUCKPT_RESTORE_SET"),
	   "independent tasks: GPUCKPT_RESTORE=auto, no set");
	funset(&fe, "GPUCKPT_TASKS");

	/* With staging: the prolog's plan decides, and nothing else. */
	snprintf(site.stage, sizeof(site.stage), "/usr/libexec/gpuckpt/gpuckpt-stage");
	snprintf(site.shared_root, sizeof(site.shared_root), "/shared");
	gk_plan_path(root, 12, path, sizeof(path));
	ok(gk_inject(&site, &o, &ids, &env, &r, &err) == -ENOENT &&
	       strstr(err.text, "no restore plan from the prolog"),
	   "no plan: the task is refused (%s)", err.text);
	put("gpuckpt-plan 1\nstep.0 set sequence=5 id=00000000000000bb members=3\n", "%s", path);
	chmod(path, 0644);
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), 0, "a plan for set 5");
	snprintf(want, sizeof(want), "%s/12/step.0/task.1/ckpt.000005", root);
	is_str(val(&fe, "GPUCKPT_RESTORE"), want, "the plan's set is restored");
	is_str(val(&fe, "GPUCKPT_RESTORE_SET"), "00000000000000bb", "with its id");
	ok(r.choice.from_plan, "and said to come from the plan");
	ids.task_id = 2;
	ok(gk_inject(&site, &o, &ids, &env, &r, &err) == -ENOENT &&
	       strstr(err.text, "not on this node"),
	   "task 2's part of set 5 is not here: refused, not an older set (%s)", err.text);
	ids.task_id = 1;
	chmod(path, 0666);
	ok(gk_inject(&site, &o, &ids, &env, &r, &err) == -EPERM,
	   "a plan others could write is refused (%s)", err.text);
	chmod(path, 0644);
	if (am_root) {
		ok(chown(path, 65534, 65534) == 0 &&
		       gk_inject(&site, &o, &ids, &env, &r, &err) == -EPERM,
		   "a plan that is not root's is refused (%s)", err.text);
		if (chown(path, 0, 0) < 0)
			printf("# chown back: %s\n", strerror(errno));
	} else {
		printf("ok %d # SKIP a plan that is not root's: needs root to chown\n", ++tap_n);
	}
	put("gpuckpt-plan 1\nstep.0 set sequence=5 id=bb members=3\n", "%s", path);
	ok(gk_inject(&site, &o, &ids, &env, &r, &err) == -EINVAL && strstr(err.text, "malformed"),
	   "a malformed plan is refused (%s)", err.text);
	put("gpuckpt-plan 1\nstep.1 set sequence=5 id=00000000000000bb members=3\n", "%s", path);
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), 0, "a plan without step.0");
	ok(r.choice.kind == GK_PLAN_FRESH && !val(&fe, "GPUCKPT_RESTORE"),
	   "no line for the step: it has no checkpoint on the shared root, afresh");

	/* Complete sets, none good: --gpu-checkpoint-on-bad decides. */
	put("gpuckpt-plan 1\nstep.0 bad set 5: task 2: checksum mismatch\n", "%s", path);
	o.on_bad_fresh = -1;
	funset(&fe, "GPUCKPT_ON_BAD_CHECKPOINT");
	ok(gk_inject(&site, &o, &ids, &env, &r, &err) == -EBADMSG &&
	       strstr(err.text, "set 5: task 2: checksum mismatch") &&
	       strstr(err.text, "not started"),
	   "bad, on-bad fail (the default): the task is refused (%s)", err.text);
	o.on_bad_fresh = 1;
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), 0, "bad, on-bad fresh");
	ok(r.choice.kind == GK_PLAN_BAD && !val(&fe, "GPUCKPT_RESTORE") &&
	       !val(&fe, "GPUCKPT_RESTORE_SET"),
	   "... every task starts afresh");
	o.on_bad_fresh = -1;
	fset(&fe, "GPUCKPT_ON_BAD_CHECKPOINT", "fresh", 1);
	is_int(gk_inject(&site, &o, &ids, &env, &r, &err), 0,
	       "bad, GPUCKPT_ON_BAD_CHECKPOINT=fresh in the job's environment: afresh too");

	/* A step of one task keeps the per-task restore. */
	ids.ntasks = 1;
	ids.task_id = 0;
	part("step.0", 0, 6);
	gk_inject(&site, &o, &ids, &env, &r, &err);
	ok(!r.step_set && val(&fe, "GPUCKPT_RESTORE") && !strcmp(val(&fe, "GPUCKPT_RESTORE"), "auto"),
	   "a step of one task: GPUCKPT_RESTORE=auto");
	is_str(val(&fe, "GPUCKPT_STEP_TASKS"), "1", "GPUCKPT_STEP_TASKS=1");
	{
		char cmd[4300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", root);
	}
	return done_testing();
}
