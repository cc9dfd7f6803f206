/*
 * gpuckpt_spank.c - the SPANK plugin's entry points. Each callback looks at the
 * context it runs in and hands the work to a module that knows nothing of
 * Slurm (site_args, job_options, task_env, ckpt_dir, stage_run, transparent).
 *
 *	sbatch, salloc, srun (allocator and local contexts): the options, checked
 *	    at submission; their values exported as GPUCKPT_* variables so that
 *	    what runs inside the job (srun steps, salloc's shell) inherits them;
 *	    in srun, GPUCKPT_CONTAINER when pyxis will run the step in a container.
 *	slurmstepd (remote context), once per task, as root before the task
 *	    starts: the runtime and its settings put into the task (task_env),
 *	    and what containers need to pass them on (container_env); in
 *	    transparent mode the task is started under, or restored by,
 *	    gpuckpt-shepherd (transparent). Then, as the user, just before the
 *	    program starts: in a container that pyxis entered (listed before
 *	    gpuckpt in plugstack.conf), whether its userland can load the
 *	    runtime (container_check); transparent mode is refused there; the
 *	    task becomes a child subreaper, so that what its program leaves
 *	    behind (podman's conmon) stays in the step.
 *	slurmd prolog and epilog (job-script context), as root: gpuckpt-stage
 *	    moves checkpoints between the node's burst buffer and the shared
 *	    root (scheduler-hooks/stage/), within the site's stage_timeout;
 *	    the staging and what is left of the tasks' records go into the
 *	    job's record and the node's metrics (job_record, metrics).
 *	As each task ends (slurmstepd, root), what its runtime recorded goes
 *	    the same way; the batch script's end sets the job's AdminComment,
 *	    and, before Slurm 24.05, requeues the job when it was preempted
 *	    and checkpointed (so that job scripts need no line that waits for
 *	    Slurm's requeue; 24.05 and later requeue it themselves).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "ckpt_dir.h"
#include "container_check.h"
#include "container_env.h"
#include "container_owner.h"
#include "common/fsafe.h"
#include "job_options.h"
#include "common/jobdir.h"
#include "job_record.h"
#include "metrics.h"
#include "site_args.h"
#include "stage_run.h"
#include "task_env.h"
#include "task_program.h"
#include "shepherd_launch.h"
#include "common/settings_env.h"

/* Only Slurm's interface leaves the plugin (see spank_gpuckpt.map). */
#pragma GCC visibility push(default)
SPANK_PLUGIN(gpuckpt, 1);
int slurm_spank_init(spank_t sp, int ac, char **av);
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av);
int slurm_spank_local_user_init(spank_t sp, int ac, char **av);
int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av);
int slurm_spank_task_init(spank_t sp, int ac, char **av);
int slurm_spank_task_exit(spank_t sp, int ac, char **av);
int slurm_spank_job_prolog(spank_t sp, int ac, char **av);
int slurm_spank_job_epilog(spank_t sp, int ac, char **av);
#pragma GCC visibility pop

static struct gk_site site;
static struct gk_opts opts;

static int option_cb(int val, const char *optarg, int remote);

/* --gpu-checkpoint's value is optional (has_arg 2): alone it means on, and only
 * --gpu-checkpoint=off gives it one, so it never takes the next word of the
 * command line (a partition, the script) for its value. */
static struct spank_option options[] = {
    {"gpu-checkpoint", "on|off",
     "Checkpoint the job's GPU state when it is preempted or requeued and restore it when "
     "it runs again; alone: on [env: " GK_ENV(CHECKPOINT) "]",
     2, GK_OPT_CHECKPOINT, option_cb},
    {"gpu-checkpoint-interval", "SECONDS",
     "With --gpu-checkpoint=on, also checkpoint every SECONDS (0: only when signalled) "
     "[env: " GK_ENV(INTERVAL) "]",
     1, GK_OPT_INTERVAL, option_cb},
    {"gpu-checkpoint-on-bad", "fail|fresh",
     "On restart, when no checkpoint passes its checks: fail, or start afresh "
     "[env: " GK_ENV(ON_BAD_CHECKPOINT) "]",
     1, GK_OPT_ON_BAD, option_cb},
    {"gpu-checkpoint-mode", "auto|app|transparent",
     "How programs are checkpointed: auto (transparently when they do not use the gpuckpt "
     "API and the node can), app (only through the API), transparent [env: " GK_ENV(MODE) "]",
     1, GK_OPT_MODE, option_cb},
    SPANK_OPTIONS_TABLE_END,
};

static int option_cb(int val, const char *optarg, int remote)
{
	enum gk_option_id id = (enum gk_option_id)val;
	gk_error_t err;

	if (gk_opts_set(&opts, id, optarg, &err) < 0) {
		/* Slurm itself then says "Invalid --OPTION argument: VALUE": say
		 * only what it leaves out, so that nothing is said twice. */
		slurm_error("gpuckpt: --%s takes %s", gk_option_name(id), gk_option_expected(id));
		return -1;
	}
	return 0;
}

/*
 * slurmd's own configuration, as it read slurm.conf: Slurm's global of that
 * name in libslurmfull (slurmd and slurmstepd), of the type slurm.h declares
 * for the release the plugin was built for (its loader refuses any other).
 * Not an interface Slurm documents: weak, so that a Slurm without it only
 * loses the check below.
 */
extern slurm_conf_t slurm_conf __attribute__((weak));

/*
 * slurmd, once as it starts: without PrologFlags=Alloc (or a flag that
 * implies it, Contain or X11) slurmd runs the prolog, the stage-in, of a node
 * other than a job's first only at the job's first task launch there, after
 * the batch script started: a prolog of a first run there removes the flush
 * root's folder that the job's steps elsewhere may already have filled
 * (scheduler-hooks/README.md). Said in slurmd's log, to the admins.
 */
static void check_prolog_flags(void)
{
	if (!&slurm_conf)
		return;
	if (!(slurm_conf.prolog_flags & PROLOG_FLAG_ALLOC))
		slurm_error("gpuckpt: slurm.conf has no PrologFlags=Alloc: the prolog that stages "
			    "a job's checkpoints in runs, on every node but the job's first, only "
			    "when the job's first step starts there, after its batch script "
			    "started; set PrologFlags=Alloc (etc/slurm.conf.fragment)");
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	gk_error_t err;

	gk_opts_init(&opts);
	if (gk_site_parse(&site, ac, av, &err) < 0) {
		slurm_error("gpuckpt: plugstack.conf: %s", err.text);
		return -1;
	}
	if (ctx == S_CTX_SLURMD) {
		check_prolog_flags();
		return 0;
	}
	for (struct spank_option *o = options; o->name; o++) {
		spank_err_t rc = spank_option_register(sp, o);

		if (rc != ESPANK_SUCCESS) {
			slurm_error("gpuckpt: cannot register --%s: %s", o->name,
				    spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

/* sbatch, salloc, srun: refuse bad variables now, and pass options on as variables. */
static int submit_post_opt(spank_t sp)
{
	static const enum gk_option_id ids[] = {GK_OPT_CHECKPOINT, GK_OPT_INTERVAL, GK_OPT_ON_BAD,
						GK_OPT_MODE};
	const int given[] = {opts.checkpoint >= 0, opts.interval >= 0, opts.on_bad_fresh >= 0,
			     opts.mode >= 0};
	gk_error_t err;
	char num[24];
	int on, rc;

	for (unsigned i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		const char *v = gk_env_get(gk_option_var(ids[i]));

		if (!given[i] && v && gk_opts_check_env(ids[i], v, &err) < 0) {
			slurm_error("gpuckpt: %s", err.text);
			return -1;
		}
	}
	/* Slurm drops sbatch's own options from the job's environment; the variables
	 * stay, so the batch script's srun steps (and salloc's shell) see them. */
	if (opts.checkpoint >= 0)
		setenv(GK_ENV(CHECKPOINT), opts.checkpoint ? "on" : "off", 1);
	if (opts.interval >= 0) {
		snprintf(num, sizeof(num), "%ld", opts.interval);
		setenv(GK_ENV(INTERVAL), num, 1);
	}
	if (opts.on_bad_fresh >= 0)
		setenv(GK_ENV(ON_BAD_CHECKPOINT), opts.on_bad_fresh ? "fresh" : "fail", 1);
	if (opts.mode >= 0)
		setenv(GK_ENV(MODE), gk_mode_name((enum gk_mode)opts.mode), 1);
	rc = gk_opts_enabled(&opts, gk_getenv(CHECKPOINT), &site, &on, &err);
	/* An interval (or mode, or on-bad) for a job that is not checkpointed
	 * would be accepted and do nothing. */
	if (rc == 0 && gk_opts_check_given(&opts, on, &err) < 0) {
		slurm_error("gpuckpt: %s", err.text);
		return -1;
	}
	/* For job_submit.lua (job_desc.spank_job_env) and the prolog/epilog. */
	if (rc == 0)
		spank_job_control_setenv(sp, GK_ENV(CHECKPOINT), on ? "on" : "off", 1);
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
		return submit_post_opt(sp);
	return 0;
}

/*
 * srun, once the step exists and just before it is launched: will pyxis run
 * it in a container? That is, was its --container-image or --container-name
 * given, on the command line or through the SLURM_SPANK_ variables that
 * sbatch and salloc leave for the steps inside? Slurm looks options up by
 * name in the one table all plugins share, so another plugin's can be asked
 * for here (and only from this callback on); slurmstepd shows a plugin none
 * of another's, hence GPUCKPT_CONTAINER (container_env.h), which srun copies
 * into the step's environment after this callback. One inherited from an
 * enclosing step is emptied, not removed: srun may hold a copy already.
 */
int slurm_spank_local_user_init(spank_t sp, int ac, char **av)
{
	static struct spank_option image = {"container-image", "", "", 1, 0, NULL},
				   name = {"container-name", "", "", 1, 0, NULL};
	char *arg;

	if (spank_context() != S_CTX_LOCAL)
		return 0;
	if (spank_option_getopt(sp, &image, &arg) == ESPANK_SUCCESS ||
	    spank_option_getopt(sp, &name, &arg) == ESPANK_SUCCESS)
		setenv(GK_ENV(CONTAINER), "pyxis", 1);
	else if (gk_getenv(CONTAINER))
		setenv(GK_ENV(CONTAINER), "", 1);
	return 0;
}

static int env_get(void *ctx, const char *name, char *buf, size_t len)
{
	spank_err_t rc = spank_getenv(ctx, name, buf, (int)len);

	if (rc == ESPANK_SUCCESS)
		return 1;
	if (rc == ESPANK_ENV_NOEXIST)
		return 0;
	return rc == ESPANK_NOSPACE ? -ENAMETOOLONG : -EINVAL;
}

static int env_set(void *ctx, const char *name, const char *value, int overwrite)
{
	spank_err_t rc = spank_setenv(ctx, name, value, overwrite);

	return rc == ESPANK_SUCCESS || rc == ESPANK_ENV_EXISTS ? 0 : -EINVAL;
}

static int env_unset(void *ctx, const char *name)
{
	return spank_unsetenv(ctx, name) == ESPANK_SUCCESS ? 0 : -EINVAL;
}

/*
 * Lines for the user, in the task's own output, and for slurmd's log. The
 * task's stderr is set up only after task_init_privileged (a line written
 * there lands in task 0's output), so the lines wait in the forked task for
 * task_init, which runs just before the program starts.
 */
static char task_note[4 * GK_ERRLEN + 32];

enum tell_kind {
	TELL_INFO,	/* to the task's output and slurmd's log */
	TELL_ERROR,	/* the same, logged as an error; the task goes on */
	TELL_FATAL,	/* the task will not start: no task_init, so now */
	TELL_LOG,	/* slurmd's log only (tell_task) */
	TELL_LOG_ERROR, /* slurmd's log only, as an error (tell_task) */
};

static void tell(enum tell_kind kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tell(enum tell_kind kind, const char *fmt, ...)
{
	char line[2 * GK_ERRLEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	snprintf(task_note + strlen(task_note), sizeof(task_note) - strlen(task_note),
		 "gpuckpt: %s\n", line);
	/* slurmstepd copies its own errors into the job's output as well
	 * ("slurmstepd-NODE: error: ..."): the line would be there twice. So
	 * slurmd's log gets it at info level, marked as an error in the text. */
	slurm_info("gpuckpt: %s%s", kind == TELL_INFO ? "" : "error: ", line);
	if (kind == TELL_FATAL) {
		fputs(task_note, stderr);
		fflush(stderr);
		task_note[0] = '\0';
	}
}

/*
 * A line about one task, begun as every such line is: "job J step.S task T: ".
 * TELL_LOG and TELL_LOG_ERROR put it in slurmd's log alone; the other kinds
 * go through tell (which cuts a line at its own length, as it always has).
 */
static void tell_task(enum tell_kind kind, const struct gk_task_ids *ids, const char *step,
		      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void tell_task(enum tell_kind kind, const struct gk_task_ids *ids, const char *step,
		      const char *fmt, ...)
{
	char line[2 * GK_ERRLEN + PATH_MAX];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "job %u %s task %u: ", ids->job_id, step, ids->task_id);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (kind == TELL_LOG)
		slurm_info("gpuckpt: %s", line);
	else if (kind == TELL_LOG_ERROR)
		slurm_error("gpuckpt: %s", line);
	else
		tell(kind, "%s", line);
}

/* The task, as task_init_privileged saw it: its names for messages, and the
 * mount namespace slurmstepd gave it (another one in task_init means that a
 * plugin listed before this one, pyxis, moved the task into a container). */
static struct {
	int on;
	struct gk_task_ids ids;
	char step[32];
	ino_t mntns;
} task;

static ino_t mntns_ino(void)
{
	struct stat st;

	return stat("/proc/self/ns/mnt", &st) == 0 ? st.st_ino : 0;
}

/*
 * In a container, as the user, before the program: can its userland load the
 * runtime, and does it show the task's checkpoint folder? Said now, in the
 * job's output, rather than found out when the job is preempted.
 */
static int check_container(spank_t sp)
{
	char rt[PATH_MAX], dir[PATH_MAX], reason[GK_ERRLEN], *rest;
	int rc, loads;

	if (!task.on || task.mntns == 0 || mntns_ino() == task.mntns)
		return 0;
	/* CRIU has not been measured on a container's tree (its mounts and
	 * namespaces): the shepherd must not be left to find out at preemption. */
	if (env_get(sp, GK_ENV(SHEPHERD), reason, sizeof(reason)) == 1) {
		tell_task(
		    TELL_FATAL, &task.ids, task.step,
		    "transparent mode does not reach into containers yet: run "
		    "this step with --gpu-checkpoint-mode=app (programs that use the gpuckpt API "
		    "are checkpointed in containers)");
		return -1;
	}
	if (env_get(sp, GK_ENV(RUNTIME), rt, sizeof(rt)) != 1 ||
	    env_get(sp, GK_ENV(DIR), dir, sizeof(dir)) != 1)
		return 0;
	rc = gk_container_check(rt, dir, &loads, reason, sizeof(reason));
	if (rc > 0)
		return 0;
	tell_task(TELL_ERROR, &task.ids, task.step,
		  "this container cannot be checkpointed: %s; it runs without checkpoints", reason);
	/* The loader stops a program whose preloaded library asks for a newer glibc. */
	rest = malloc(8192);
	if (!loads && rest && env_get(sp, "LD_PRELOAD", dir, sizeof(dir)) == 1 &&
	    gk_preload_remove(dir, rt, rest, 8192) == 0) {
		if (rest[0])
			spank_setenv(sp, "LD_PRELOAD", rest, 1);
		else
			spank_unsetenv(sp, "LD_PRELOAD");
	}
	free(rest);
	return 0;
}

/*
 * Keep what the program starts in the step: the checkpoint signal (SIGTERM at
 * requeue and preemption) must reach it. A process that leaves its parent
 * behind (a double fork, as podman's conmon does with the container under it)
 * is handed to init, where Slurm's proctrack/linuxproc, which follows the
 * tree of parent pids, no longer sees it: the container would never be told
 * to checkpoint, nor be killed with the step. As a child subreaper (kept
 * across execve) the task takes such orphans in, so they stay in its tree.
 * Not under a shepherd, whose PID namespace already takes them in.
 */
static void keep_orphans(spank_t sp)
{
	char v[8];

	if (!task.on || env_get(sp, GK_ENV(SHEPHERD), v, sizeof(v)) != 0)
		return;
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		tell_task(TELL_LOG_ERROR, &task.ids, task.step,
			  "cannot keep the task's orphans in the step "
			  "(prctl PR_SET_CHILD_SUBREAPER: %s)",
			  strerror(errno));
}

/* task_init_privileged asks task_init to look at the program (as the user). */
static struct {
	int wanted;
	uint32_t job_id;
	char step[32];
} program_check;

/*
 * A step's program that the runtime cannot be loaded into (statically linked,
 * set-ID) is not checkpointed at all: say so when it starts, once per step
 * (task 0), not when its work is lost. Here, as the job's user: the path is
 * the user's to choose, root has no business opening it.
 */
static void tell_unpreloadable(spank_t sp)
{
	char path[PATH_MAX], cwd[PATH_MAX], exe[PATH_MAX], why[160];
	char **argv = NULL;
	int argc = 0;

	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1)
		return;
	if (spank_getenv(sp, "PATH", path, sizeof(path)) != ESPANK_SUCCESS)
		path[0] = '\0';
	if (spank_getenv(sp, "PWD", cwd, sizeof(cwd)) != ESPANK_SUCCESS)
		cwd[0] = '\0';
	if (gk_program_find(argv[0], path, cwd, exe, sizeof(exe)) < 0 ||
	    gk_program_preloadable(exe, why, sizeof(why)) != 0)
		return;
	tell(TELL_INFO,
	     "job %u %s: %s %s, so it will not be checkpointed: a SIGTERM (preemption, requeue) "
	     "ends it as it would without gpuckpt",
	     program_check.job_id, program_check.step, exe, why);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char gpus[sizeof(((struct gk_tplan *)0)->gpus)];
	spank_err_t gpus_rc;
	gk_error_t err;

	if (spank_context() != S_CTX_REMOTE)
		return 0;
	if (check_container(sp) < 0)
		return -1;
	keep_orphans(sp);
	if (program_check.wanted)
		tell_unpreloadable(sp);
	if (task_note[0]) {
		fputs(task_note, stderr);
		fflush(stderr);
		task_note[0] = '\0';
	}
	/* Transparent mode: the shepherd's side gets this stdio and places us,
	 * and the GPUs Slurm has bound to this task by now. */
	gpus_rc = ESPANK_ENV_NOEXIST;
	if (gk_shepherd_task_pending()) {
		gpus_rc = spank_getenv(sp, "CUDA_VISIBLE_DEVICES", gpus, sizeof(gpus));
		if (gpus_rc != ESPANK_SUCCESS && gpus_rc != ESPANK_ENV_NOEXIST) {
			slurm_error("gpuckpt: transparent: the task's CUDA_VISIBLE_DEVICES: %s",
				    spank_strerror(gpus_rc));
			return -1;
		}
	}
	if (gk_shepherd_task_start(gpus_rc == ESPANK_SUCCESS ? gpus : NULL, &err) < 0) {
		slurm_error("gpuckpt: %s", err.text);
		return -1;
	}
	return 0;
}

static int get_ids(spank_t sp, struct gk_task_ids *ids)
{
	if (spank_get_item(sp, S_JOB_ID, &ids->job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &ids->step_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &ids->task_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_UID, &ids->uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &ids->gid) != ESPANK_SUCCESS)
		return -EINVAL;
	/* In slurmstepd, the step's own task count. */
	if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &ids->ntasks) != ESPANK_SUCCESS)
		ids->ntasks = 0;
	return 0;
}

int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av)
{
	struct gk_env env = {env_get, env_set, env_unset, sp};
	struct gk_inject_result *r;
	struct gk_tplan *plan = NULL;
	struct gk_task_ids ids;
	gk_error_t err;
	char value[16], step[32], **argv;
	int on, rc, have, argc;

	if (spank_context() != S_CTX_REMOTE)
		return 0;
	if (get_ids(sp, &ids) < 0) {
		slurm_error("gpuckpt: cannot read the job's ids from Slurm");
		return -1;
	}
	if (ids.step_id == GK_STEP_EXTERN)
		return 0;
	gk_step_dirname(ids.step_id, step, sizeof(step));
	have = env_get(sp, GK_ENV(CHECKPOINT), value, sizeof(value));
	if (gk_opts_enabled(&opts, have == 1 ? value : NULL, &site, &on, &err) < 0 || have < 0) {
		if (have < 0)
			gk_errprintf(&err, "%s: value too long", GK_ENV(CHECKPOINT));
		tell_task(TELL_FATAL, &ids, step, "%s", err.text);
		return -1;
	}
	if (!on) {
		if (gk_uninject(&site, &env, &err) < 0) {
			tell_task(TELL_FATAL, &ids, step, "%s", err.text);
			return -1;
		}
		return 0;
	}

	r = malloc(sizeof(*r));
	if (!r) {
		slurm_error("gpuckpt: job %u: out of memory", ids.job_id);
		return -1;
	}
	rc = gk_inject(&site, &opts, &ids, &env, r, &err);
	if (rc < 0) {
		tell_task(TELL_FATAL, &ids, step, "%s", err.text);
		goto out_free;
	}
	if (r->flush_err.text[0])
		tell_task(TELL_ERROR, &ids, step,
			  "checkpoints are not flushed while the job runs: %s; "
			  "the epilog stages them",
			  r->flush_err.text);
	if (r->step_set && r->choice.note[0])
		tell_task(TELL_LOG, &ids, step,
			  "restart %u: the set chosen from this node's step folder: %s",
			  r->restart_count, r->choice.note);
	if (r->dir_rc < 0)
		tell_task(TELL_ERROR, &ids, step,
			  "no checkpoint can be written: %s; the job runs on, without checkpoints",
			  r->dir_err.text);
	else if (r->restore && r->step_set)
		tell_task(TELL_INFO, &ids, step,
			  "restart %u: restoring set %llu, as every one of the %u tasks "
			  "of the step does (%s): %s",
			  r->restart_count, (unsigned long long)r->choice.sequence, ids.ntasks,
			  r->choice.from_plan ? "the prolog's plan, from the shared root"
					      : "this node's step folder",
			  r->choice.ckpt);
	else if (r->step_set)
		tell_task(TELL_INFO, &ids, step,
			  "restart %u: no checkpoint set to restore (%s); every task of the step "
			  "starts afresh",
			  r->restart_count, r->choice.reason);
	else if (r->restore)
		tell_task(TELL_INFO, &ids, step, "restart %u: restoring from %s (newest: %s)",
			  r->restart_count, r->dir, r->newest);
	else if (r->restart_count == 0)
		tell_task(TELL_LOG, &ids, step, "checkpoints go to %s", r->dir);

	if (spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS || argc < 1)
		argv = NULL;
	gk_container_of(&env, argv ? argv[0] : NULL, r->container, sizeof(r->container));

	plan = malloc(sizeof(*plan));
	if (!plan) {
		rc = -ENOMEM;
		tell_task(TELL_FATAL, &ids, step, "out of memory");
		goto out_free;
	}
	rc = gk_shepherd_prepare(&site, &opts, &ids, &env, r, plan, &err);
	/* Nothing of the task folder's descriptor goes into the forks below. */
	gk_inject_release(r);
	if (rc < 0) {
		tell_task(TELL_FATAL, &ids, step, "%s", err.text);
		goto out_free;
	}
	/* After shepherd_launch.c's variables, so that Apptainer gets them too. */
	rc = gk_container_inject(&site, &ids, &env, &err);
	if (rc < 0) {
		tell_task(TELL_FATAL, &ids, step, "%s", err.text);
		goto out_free;
	}
	/* Whose job a rootful podman below this task serves: its OCI hook reads this. */
	if (gk_owner_record(GK_TASK_RECORDS, &env, &ids, &err) < 0)
		tell_task(TELL_LOG_ERROR, &ids, step,
			  "rootful podman will mount nothing of the job's into its containers: %s",
			  err.text);
	task.on = 1;
	task.ids = ids;
	snprintf(task.step, sizeof(task.step), "%s", step);
	task.mntns = mntns_ino();
	/*
	 * A restart with nothing to restore: the run before may have lost its
	 * work to what this node lacks too. The runtime said so when the signal
	 * came, but a step's last lines are often lost when Slurm stops srun at
	 * the same moment; this line, before the program starts, is not.
	 */
	if (r->dir_rc == 0 && !r->restore && r->restart_count > 0 && plan->kind != GK_TPLAN_NONE)
		tell_task(TELL_INFO, &ids, step,
			  "restart %u: no committed checkpoint in %s; starting afresh",
			  r->restart_count, r->dir);
	else if (r->dir_rc == 0 && !r->restore && r->restart_count > 0)
		tell_task(TELL_INFO, &ids, step,
			  "restart %u: no committed checkpoint in %s; starting "
			  "afresh (a program that does not use the gpuckpt API is not checkpointed "
			  "here: %s)",
			  r->restart_count, r->dir, plan->reason);
	if (plan->kind == GK_TPLAN_NONE)
		tell_task(TELL_LOG, &ids, step, "no transparent mode: %s", plan->reason);
	else if (plan->kind == GK_TPLAN_RESTORE)
		tell_task(TELL_INFO, &ids, step, "restart %u: restoring %s/%s transparently",
			  r->restart_count, r->dir, plan->newest);
	else if (plan->kind == GK_TPLAN_ATTACH)
		tell_task(TELL_LOG, &ids, step, "transparent mode, shepherd socket %s",
			  plan->socket);
	/* A batch script is a shell: what it starts is not known here. */
	program_check.wanted = plan->kind != GK_TPLAN_RESTORE && ids.task_id == 0 &&
			       ids.step_id != GK_STEP_BATCH && ids.step_id != GK_STEP_INTERACTIVE;
	program_check.job_id = ids.job_id;
	snprintf(program_check.step, sizeof(program_check.step), "%s", step);
	/* Returns in the process that runs the program; the task's own becomes the shepherd. */
	rc = gk_shepherd_launch(plan, &err);
	if (rc < 0)
		tell_task(TELL_FATAL, &ids, step, "%s", err.text);

out_free:
	free(plan);
	gk_inject_release(r);
	free(r);
	return rc < 0 ? -1 : 0;
}

struct stage_log {
	const char *verb;
	uint32_t job_id;
	const char *node;
	struct gk_job_events *events; /* the staging events go here too */
};

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void stage_line(void *arg, const char *line)
{
	const struct stage_log *l = arg;
	struct gk_event e;

	if (!line[0])
		return;
	slurm_info("gpuckpt: stage-%s: job %u: %s", l->verb, l->job_id, line);
	if (gk_stage_line_event(l->verb, line, l->node, wall_now(), &e) == 1)
		gk_job_events_add(l->events, &e);
}

static int env_u32(const char *name, uint32_t *out)
{
	const char *v = getenv(name);
	char *end;
	unsigned long n;

	if (!v || !*v)
		return -ENOENT;
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || n > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)n;
	return 0;
}

/* A site folder that someone other than root could change is never used:
 * root would copy into and out of whatever it was made to point at. */
static int root_ok(const char *path, const char *setting, const char *verb, uint32_t job)
{
	gk_error_t err;
	int fd = gk_open_trusted_dir(path, setting, &err);

	if (fd < 0) {
		slurm_error("gpuckpt: stage-%s: job %u: plugstack.conf: %s; nothing staged", verb,
			    job, err.text);
		return 0;
	}
	close(fd);
	return 1;
}

/* The staging script, its lines to slurmd's log and, as events, to l->events. */
static void run_stage(struct stage_log *l, uid_t uid, gid_t gid)
{
	char *argv[GK_STAGE_MAXARGS + 1];
	char buf[4 * PATH_MAX + 512];
	int rc;

	if (gk_stage_argv(&site, l->verb, l->job_id, uid, gid, argv, buf, sizeof(buf)) < 0) {
		slurm_error("gpuckpt: stage-%s: job %u: arguments too long", l->verb, l->job_id);
		return;
	}
	rc = gk_run_logged(argv, site.stage_timeout, stage_line, l);
	if (rc == -ETIME)
		slurm_error("gpuckpt: stage-%s: job %u: %s did not finish within stage_timeout=%u "
			    "s; stopped (what it had not published is not staged)",
			    l->verb, l->job_id, site.stage, site.stage_timeout);
	else if (rc < 0)
		slurm_error("gpuckpt: stage-%s: job %u: cannot run %s: %s", l->verb, l->job_id,
			    site.stage, strerror(-rc));
	else if (rc != 0)
		slurm_error("gpuckpt: stage-%s: job %u: %s exited with status %d", l->verb,
			    l->job_id, site.stage, rc);
}

struct comment_log {
	uint32_t job_id;
	int finished; /* scontrol said the job has ended */
};

static void comment_line(void *arg, const char *line)
{
	struct comment_log *c = arg;

	if (strstr(line, "already finished"))
		c->finished = 1;
	else if (line[0])
		slurm_error("gpuckpt: AdminComment of job %u: %s", c->job_id, line);
}

/* The job's summary into its AdminComment, by scontrol, bounded in time.
 * Slurm refuses it once the job has ended: said at info level only. */
static void set_admin_comment(uint32_t job_id, const struct gk_job_events *all)
{
	struct comment_log c = {job_id, 0};
	struct gk_job_stats st;
	char text[256], *argv[GK_COMMENT_ARGS];
	char buf[PATH_MAX + 512];
	int rc;

	gk_job_stats_compute(all, &st);
	if (gk_job_stats_comment(&st, text, sizeof(text)) < 0 ||
	    gk_admin_comment_argv(site.scontrol, job_id, text, argv, buf, sizeof(buf)) < 0)
		return;
	rc = gk_run_logged(argv, 30, comment_line, &c);
	if (rc == 0)
		slurm_info("gpuckpt: job %u: AdminComment: %s", job_id, text);
	else if (c.finished)
		slurm_info("gpuckpt: job %u: has ended; its AdminComment stays as its batch "
			   "script left it (the record has the rest)",
			   job_id);
	else
		slurm_error("gpuckpt: job %u: %s update failed (%s %d); AdminComment not set",
			    job_id, site.scontrol, rc < 0 ? "error" : "status", rc < 0 ? -rc : rc);
}

/*
 * What this node saw of a job (events), kept: appended to the job's record,
 * the node's metrics added to (jobs: a run of the job ended here), and with
 * `comment` the AdminComment set from the whole record.
 */
static void keep(uint32_t job_id, struct gk_job_events *events, int comment, int jobs)
{
	struct gk_job_events all = {0};
	struct gk_metrics delta = {0};
	gk_error_t err;
	int rc = 0;

	if (site.shared_root[0]) {
		/* Jobs without gpuckpt leave no events: no record is made for them. */
		if (events->n)
			rc = gk_record_append(site.shared_root, job_id, events,
					      comment ? &all : NULL, &err);
		else if (comment)
			rc = gk_record_read(site.shared_root, job_id, &all, &err);
		if (rc < 0)
			slurm_error("gpuckpt: job %u: record: %s", job_id, err.text);
		else if (comment && site.admin_comment && all.n)
			set_admin_comment(job_id, &all);
	}
	gk_metrics_add_events(&delta, events);
	delta.jobs = (uint64_t)jobs;
	if (site.metrics[0] && (events->n || events->bad_lines || jobs) &&
	    gk_metrics_update(site.metrics, &delta, &err) < 0)
		slurm_error("gpuckpt: job %u: %s", job_id, err.text);
	gk_job_events_free(&all);
}

/* Slurm 24.05 and later requeue a preempted job (PreemptMode=REQUEUE, the job
 * requeueable) whose batch script ends after GraceTime's SIGTERM themselves
 * (the job's GRACE_PREEMPT flag; SchedMD commit a689104d15, "Treat jobs
 * completing after being signalled for GraceTime as preempted"): the plugin
 * requeues such jobs only for the releases before, where the job would end.
 * The plugin is built against the release that loads it. */
#define GK_SLURM_REQUEUES_GRACE (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0))

static void show_line(void *arg, const char *line)
{
	gk_job_show_line(line, arg);
}

struct requeue_log {
	uint32_t job_id;
	int pending; /* Slurm had requeued it already */
};

static void requeue_line(void *arg, const char *line)
{
	struct requeue_log *r = arg;

	if (strstr(line, "pending") || strstr(line, "Pending"))
		r->pending = 1;
	else if (line[0])
		slurm_error("gpuckpt: job %u: scontrol requeue: %s", r->job_id, line);
}

/*
 * The batch script has ended (its task_exit, as root, in slurmstepd, before
 * the batch step reports the job's end). With PreemptMode=REQUEUE, Slurm
 * signals a preempted job's steps but not its batch shell, and requeues the
 * job only when GraceTime ends: a script that ended first (`srun ./app`, its
 * step checkpointed and ended by SIGTERM) would end the job. So when the job
 * was preempted (scontrol's PreemptTime) and is still running, and a step of
 * it was checkpointed in this run (its record), the plugin requeues it as
 * `scontrol requeue` would (the batch script's end then finds it requeued).
 * A job that was not checkpointed ends as it always did; `scontrol requeue`
 * needs nothing (Slurm has requeued the job by the time the script ends).
 * Needs shared_root (the record: the steps may have run on other nodes).
 * Slurm before 24.05 only (GK_SLURM_REQUEUES_GRACE).
 * Each scontrol run is bounded (30 s).
 */
static void requeue_preempted(spank_t sp, const struct gk_task_ids *ids)
{
	struct gk_job_events all = {0};
	struct gk_job_show show = {0};
	struct requeue_log r = {ids->job_id, 0};
	char *argv[GK_SCONTROL_ARGS], buf[PATH_MAX + 64], num[16];
	uint32_t restart = 0;
	gk_error_t err;
	int rc, done;

	if (!site.shared_root[0])
		return;
	if (spank_getenv(sp, "SLURM_RESTART_COUNT", num, sizeof(num)) == ESPANK_SUCCESS) {
		char *end;
		unsigned long v = strtoul(num, &end, 10);

		if (end != num && !*end && v <= UINT32_MAX)
			restart = (uint32_t)v;
	}
	/* Jobs without gpuckpt have no record: they cost no scontrol run. */
	if (gk_record_read(site.shared_root, ids->job_id, &all, &err) < 0) {
		slurm_error("gpuckpt: job %u: record: %s", ids->job_id, err.text);
		return;
	}
	done = gk_job_events_checkpointed(&all, restart);
	gk_job_events_free(&all);
	if (!done)
		return;
	if (gk_show_job_argv(site.scontrol, ids->job_id, argv, buf, sizeof(buf)) < 0)
		return;
	rc = gk_run_logged(argv, 30, show_line, &show);
	if (rc != 0 || !show.state_seen) {
		slurm_error("gpuckpt: job %u: %s show job failed (%s %d); not requeued by the plugin",
			    ids->job_id, site.scontrol, rc < 0 ? "error" : "status", rc < 0 ? -rc : rc);
		return;
	}
	if (!show.preempted || !show.running)
		return;
	if (gk_requeue_argv(site.scontrol, ids->job_id, argv, buf, sizeof(buf)) < 0)
		return;
	rc = gk_run_logged(argv, 30, requeue_line, &r);
	if (rc == 0)
		slurm_info("gpuckpt: job %u: preempted and checkpointed; requeued as its batch "
			   "script ended",
			   ids->job_id);
	else if (r.pending)
		slurm_info("gpuckpt: job %u: preempted and checkpointed; Slurm had requeued it",
			   ids->job_id);
	else
		slurm_error("gpuckpt: job %u: preempted and checkpointed, but %s requeue failed "
			    "(%s %d): the job ends",
			    ids->job_id, site.scontrol, rc < 0 ? "error" : "status",
			    rc < 0 ? -rc : rc);
}

/* This node's name, for the record: Slurm's, else the host's. */
static void node_name(const char *slurm_name, char *node, size_t len)
{
	if (slurm_name && gk_event_name_ok(slurm_name)) {
		snprintf(node, len, "%s", slurm_name);
		return;
	}
	if (gethostname(node, len) < 0 || !gk_event_name_ok(node))
		snprintf(node, len, "unknown");
	node[len - 1] = '\0';
}

/*
 * A task has ended (slurmstepd, as root, before the step reports it done,
 * while the job still runs): its runtime's events into the job's record and
 * the node's metrics. The batch script's end, after its srun steps, sets
 * the AdminComment; so does a step's task 0 (for jobs without a batch
 * script), when it had something to add.
 */
int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
	struct gk_job_events events = {0};
	struct gk_record_where where;
	struct gk_task_ids ids;
	gk_error_t err;
	char step[32], node[GK_EVENT_NAME_MAX], name[GK_EVENT_NAME_MAX];
	int rc;

	if (spank_context() != S_CTX_REMOTE || get_ids(sp, &ids) < 0 ||
	    ids.step_id == GK_STEP_EXTERN)
		return 0;
	gk_step_dirname(ids.step_id, step, sizeof(step));
	where.step = step + GK_STEP_PREFIX_LEN;
	where.task = ids.task_id;
	node_name(spank_getenv(sp, "SLURMD_NODENAME", name, sizeof(name)) == ESPANK_SUCCESS
		      ? name
		      : NULL,
		  node, sizeof(node));
	rc = gk_record_collect(site.bb_root, ids.job_id, ids.uid, node, &where, 1, &events, &err);
	if (rc < 0)
		tell_task(TELL_LOG_ERROR, &ids, step, "events not read: %s", err.text);
	else if (rc > 0)
		keep(ids.job_id, &events,
		     ids.step_id == GK_STEP_BATCH || (ids.task_id == 0 && events.n), 0);
	gk_job_events_free(&events);
	if (ids.step_id == GK_STEP_BATCH && !GK_SLURM_REQUEUES_GRACE)
		requeue_preempted(sp, &ids);
	return 0;
}

/*
 * Prolog ("in") and epilog ("out"), as root on each node of the job: what
 * is left of the runtime's events of the job's tasks here (epilog; each
 * task's exit took its own), the staging, then the job's record, the
 * AdminComment (epilog: a requeued job can still take it) and the node's
 * metrics. A failure is logged and the job goes on: a failed prolog or
 * epilog would drain the node, and the runtime never trusts a checkpoint
 * that did not arrive whole anyway.
 */
static int job_script(const char *verb, int ac, char **av)
{
	struct gk_job_events events = {0};
	struct stage_log l = {verb, 0, NULL, &events};
	gk_error_t err;
	char node[GK_EVENT_NAME_MAX];
	int epilog = strcmp(verb, "out") == 0, folders = 0;
	uint32_t uid, gid;

	if (spank_context() != S_CTX_JOB_SCRIPT)
		return 0;
	/* Slurm does not call slurm_spank_init before the prolog and epilog. */
	if (gk_site_parse(&site, ac, av, &err) < 0) {
		slurm_error("gpuckpt: plugstack.conf: %s", err.text);
		return 0;
	}
	if (env_u32("SLURM_JOB_ID", &l.job_id) < 0 || env_u32("SLURM_JOB_UID", &uid) < 0) {
		slurm_error("gpuckpt: stage-%s: SLURM_JOB_ID or SLURM_JOB_UID missing", verb);
		return 0;
	}
	if (env_u32("SLURM_JOB_GID", &gid) < 0)
		gid = uid;
	node_name(getenv("SLURMD_NODENAME"), node, sizeof(node));
	l.node = node;

	/* Before staging out, which removes the job's folder from the node. */
	if (epilog) {
		folders = gk_record_collect(site.bb_root, l.job_id, (uid_t)uid, node, NULL, 1,
					    &events, &err);
		if (folders < 0)
			slurm_error("gpuckpt: job %u: events on this node not read: %s", l.job_id,
				    err.text);
	}
	if (site.stage[0] && site.shared_root[0] && root_ok(site.bb_root, "bb_root", verb, l.job_id) &&
	    root_ok(site.shared_root, "shared_root", verb, l.job_id)) {
		/* A flush root in doubt is left out: the stage then works
		 * between the burst buffer and shared_root alone. */
		if (site.flush_root[0] && !root_ok(site.flush_root, "flush_root", verb, l.job_id))
			site.flush_root[0] = '\0';
		run_stage(&l, (uid_t)uid, (gid_t)gid);
	}
	keep(l.job_id, &events, epilog && events.n, epilog && folders > 0);
	/* Records of jobs long over: a bounded number of names per epilog of
	 * a job that used gpuckpt here (as many as make records, so the sweep
	 * keeps up, and jobs without gpuckpt cost the shared file system
	 * nothing). */
	if (epilog && (events.n || folders > 0) && site.shared_root[0] && site.record_days) {
		int n = gk_record_sweep(site.shared_root, site.record_days, GK_SWEEP_PER_EPILOG,
					time(NULL), &err);

		if (n < 0)
			slurm_error("gpuckpt: records: %s", err.text);
		else if (n > 0)
			slurm_info("gpuckpt: records: %d not written for record_days=%u removed", n,
				   site.record_days);
	}
	gk_job_events_free(&events);
	return 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	return job_script("in", ac, av);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	return job_script("out", ac, av);
}
