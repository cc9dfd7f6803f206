/*
 * gpuckpt_spank.c - the SPANK plugin's entry points. Each callback looks at the
 * context it runs in and hands the work to a module that knows nothing of
 * Slurm (site_args, job_options, task_env, ckpt_dir, stage_run, transparent).
 *
 *	sbatch, salloc, srun (allocator and local contexts): the options, checked
 *	    at submission; their values exported as GPUCKPT_* variables so that
 *	    what runs inside the job (srun steps, salloc's shell) inherits them.
 *	slurmstepd (remote context), once per task, as root before the task
 *	    starts: the runtime and its settings put into the task (task_env);
 *	    in transparent mode the task is started under, or restored by,
 *	    gpuckpt-shepherd (transparent).
 *	slurmd prolog and epilog (job-script context), as root: the staging
 *	    script moves checkpoints between the node's burst buffer and the
 *	    shared root (scheduler-hooks/gpuckpt-stage).
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/spank.h>

#include "ckpt_dir.h"
#include "job_options.h"
#include "site_args.h"
#include "stage_run.h"
#include "task_env.h"
#include "transparent.h"

/* Only Slurm's interface leaves the plugin (see spank_gpuckpt.map). */
#pragma GCC visibility push(default)
SPANK_PLUGIN(gpuckpt, 1);
int slurm_spank_init(spank_t sp, int ac, char **av);
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av);
int slurm_spank_task_init_privileged(spank_t sp, int ac, char **av);
int slurm_spank_task_init(spank_t sp, int ac, char **av);
int slurm_spank_job_prolog(spank_t sp, int ac, char **av);
int slurm_spank_job_epilog(spank_t sp, int ac, char **av);
#pragma GCC visibility pop

static struct gk_site site;
static struct gk_opts opts;

static int option_cb(int val, const char *optarg, int remote);

static struct spank_option options[] = {
    {"gpu-checkpoint", "on|off",
     "Checkpoint the job's GPU state when it is preempted or requeued and restore it when "
     "it runs again [env: GPUCKPT_CHECKPOINT]",
     1, GK_OPT_CHECKPOINT, option_cb},
    {"gpu-checkpoint-interval", "SECONDS",
     "With --gpu-checkpoint=on, also checkpoint every SECONDS (0: only when signalled) "
     "[env: GPUCKPT_INTERVAL]",
     1, GK_OPT_INTERVAL, option_cb},
    {"gpu-checkpoint-on-bad", "fail|fresh",
     "On restart, when no checkpoint passes its checks: fail, or start afresh "
     "[env: GPUCKPT_ON_BAD_CHECKPOINT]",
     1, GK_OPT_ON_BAD, option_cb},
    {"gpu-checkpoint-mode", "auto|app|transparent",
     "How programs are checkpointed: auto (transparently when they do not use the gpuckpt "
     "API and the node can), app (only through the API), transparent [env: GPUCKPT_MODE]",
     1, GK_OPT_MODE, option_cb},
    SPANK_OPTIONS_TABLE_END,
};

static int option_cb(int val, const char *optarg, int remote)
{
	char err[GK_ERRLEN];

	if (gk_opts_set(&opts, (enum gk_option_id)val, optarg, err, sizeof(err)) < 0) {
		slurm_error("gpuckpt: %s", err);
		return -1;
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	char err[GK_ERRLEN];

	gk_opts_init(&opts);
	if (gk_site_parse(&site, ac, av, err, sizeof(err)) < 0) {
		slurm_error("gpuckpt: plugstack.conf: %s", err);
		return -1;
	}
	if (ctx == S_CTX_SLURMD)
		return 0;
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
	char err[GK_ERRLEN], num[24];
	int on;

	for (unsigned i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		const char *v = getenv(gk_option_env(ids[i]));

		if (!given[i] && v && gk_opts_check_env(ids[i], v, err, sizeof(err)) < 0) {
			slurm_error("gpuckpt: %s", err);
			return -1;
		}
	}
	/* Slurm drops sbatch's own options from the job's environment; the variables
	 * stay, so the batch script's srun steps (and salloc's shell) see them. */
	if (opts.checkpoint >= 0)
		setenv(GK_ENV_CHECKPOINT, opts.checkpoint ? "on" : "off", 1);
	if (opts.interval >= 0) {
		snprintf(num, sizeof(num), "%ld", opts.interval);
		setenv(GK_ENV_INTERVAL, num, 1);
	}
	if (opts.on_bad_fresh >= 0)
		setenv(GK_ENV_ON_BAD, opts.on_bad_fresh ? "fresh" : "fail", 1);
	if (opts.mode >= 0)
		setenv(GK_ENV_MODE, gk_mode_name((enum gk_mode)opts.mode), 1);
	/* For job_submit.lua (job_desc.spank_job_env) and the prolog/epilog. */
	if (gk_opts_enabled(&opts, getenv(GK_ENV_CHECKPOINT), &site, &on, err, sizeof(err)) == 0)
		spank_job_control_setenv(sp, GK_ENV_CHECKPOINT, on ? "on" : "off", 1);
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR)
		return submit_post_opt(sp);
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
	TELL_INFO,  /* to the task's output and slurmd's log */
	TELL_ERROR, /* the same, logged as an error; the task goes on */
	TELL_FATAL, /* the task will not start: no task_init, so now */
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
	if (kind == TELL_INFO) {
		slurm_info("gpuckpt: %s", line);
		return;
	}
	slurm_error("gpuckpt: %s", line);
	if (kind == TELL_FATAL) {
		fputs(task_note, stderr);
		fflush(stderr);
		task_note[0] = '\0';
	}
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	char err[GK_ERRLEN];

	if (spank_context() != S_CTX_REMOTE)
		return 0;
	if (task_note[0]) {
		fputs(task_note, stderr);
		fflush(stderr);
		task_note[0] = '\0';
	}
	/* Transparent mode: the shepherd's side gets this stdio and places us. */
	if (gk_transparent_task_start(err, sizeof(err)) < 0) {
		slurm_error("gpuckpt: %s", err);
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
	char err[GK_ERRLEN], value[16], step[32];
	int on, rc, have;

	if (spank_context() != S_CTX_REMOTE)
		return 0;
	if (get_ids(sp, &ids) < 0) {
		slurm_error("gpuckpt: cannot read the job's ids from Slurm");
		return -1;
	}
	if (ids.step_id == GK_STEP_EXTERN)
		return 0;
	gk_step_dirname(ids.step_id, step, sizeof(step));
	have = env_get(sp, GK_ENV_CHECKPOINT, value, sizeof(value));
	if (gk_opts_enabled(&opts, have == 1 ? value : NULL, &site, &on, err, sizeof(err)) < 0 ||
	    have < 0) {
		if (have < 0)
			snprintf(err, sizeof(err), "%s: value too long", GK_ENV_CHECKPOINT);
		tell(TELL_FATAL, "job %u %s task %u: %s", ids.job_id, step, ids.task_id, err);
		return -1;
	}
	if (!on) {
		if (gk_uninject(&site, &env, err, sizeof(err)) < 0) {
			tell(TELL_FATAL, "job %u %s task %u: %s", ids.job_id, step, ids.task_id,
			     err);
			return -1;
		}
		return 0;
	}

	r = malloc(sizeof(*r));
	if (!r) {
		slurm_error("gpuckpt: job %u: out of memory", ids.job_id);
		return -1;
	}
	rc = gk_inject(&site, &opts, &ids, &env, r, err, sizeof(err));
	if (rc < 0) {
		tell(TELL_FATAL, "job %u %s task %u: %s", ids.job_id, step, ids.task_id, err);
		goto out_free;
	}
	if (r->dir_rc < 0)
		tell(TELL_ERROR,
		     "job %u %s task %u: no checkpoint can be written: %s; the job runs on without",
		     ids.job_id, step, ids.task_id, r->dir_err);
	else if (r->restore && r->step_set)
		tell(TELL_INFO,
		     "job %u %s task %u: restart %u: restoring set %llu, as every one of the %u tasks "
		     "of the step does (%s): %s",
		     ids.job_id, step, ids.task_id, r->restart_count,
		     (unsigned long long)r->choice.sequence, ids.ntasks,
		     r->choice.from_plan ? "the prolog's plan, from the shared root" : "this node's step folder",
		     r->choice.ckpt);
	else if (r->step_set)
		tell(TELL_INFO, "job %u %s task %u: restart %u: no checkpoint set to restore (%s); "
		     "every task of the step starts afresh",
		     ids.job_id, step, ids.task_id, r->restart_count, r->choice.reason);
	else if (r->restore)
		tell(TELL_INFO, "job %u %s task %u: restart %u: restoring from %s (newest: %s)",
		     ids.job_id, step, ids.task_id, r->restart_count, r->dir, r->newest);
	else if (r->restart_count > 0)
		tell(
		    TELL_INFO,
		    "job %u %s task %u: restart %u: no committed checkpoint in %s; starting afresh",
		    ids.job_id, step, ids.task_id, r->restart_count, r->dir);
	else
		slurm_info("gpuckpt: job %u %s task %u: checkpoints go to %s", ids.job_id, step,
			   ids.task_id, r->dir);

	plan = malloc(sizeof(*plan));
	if (!plan) {
		rc = -ENOMEM;
		tell(TELL_FATAL, "job %u %s task %u: out of memory", ids.job_id, step, ids.task_id);
		goto out_free;
	}
	rc = gk_transparent_prepare(&site, &opts, &ids, &env, r, plan, err, sizeof(err));
	if (rc < 0) {
		tell(TELL_FATAL, "job %u %s task %u: %s", ids.job_id, step, ids.task_id, err);
		goto out_free;
	}
	if (plan->note)
		tell(TELL_INFO,
		     "job %u: programs that do not use the gpuckpt API will not be checkpointed on "
		     "this node: %s",
		     ids.job_id, plan->reason);
	else if (plan->kind == GK_TPLAN_RESTORE)
		tell(TELL_INFO, "job %u %s task %u: restart %u: restoring %s/%s transparently",
		     ids.job_id, step, ids.task_id, r->restart_count, r->dir, plan->newest);
	else if (plan->kind == GK_TPLAN_ATTACH)
		slurm_info("gpuckpt: job %u %s task %u: transparent mode, shepherd socket %s",
			   ids.job_id, step, ids.task_id, plan->socket);
	/* Returns in the process that runs the program; the task's own becomes the shepherd. */
	rc = gk_transparent_launch(plan, err, sizeof(err));
	if (rc < 0)
		tell(TELL_FATAL, "job %u %s task %u: %s", ids.job_id, step, ids.task_id, err);

out_free:
	free(plan);
	free(r);
	return rc < 0 ? -1 : 0;
}

struct stage_log {
	const char *verb;
	uint32_t job_id;
};

static void stage_line(void *arg, const char *line)
{
	const struct stage_log *l = arg;

	if (line[0])
		slurm_info("gpuckpt: stage-%s: job %u: %s", l->verb, l->job_id, line);
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

/*
 * Prolog and epilog: run the staging script. A failure is logged and the job
 * goes on: a failed prolog or epilog would drain the node, and the runtime
 * never trusts a checkpoint that did not arrive whole anyway.
 */
static int run_stage(const char *verb, int ac, char **av)
{
	struct stage_log l = {verb, 0};
	uint32_t uid, gid;
	char *argv[GK_STAGE_MAXARGS + 1];
	char buf[4 * PATH_MAX + 512], err[GK_ERRLEN];
	int rc;

	if (spank_context() != S_CTX_JOB_SCRIPT)
		return 0;
	/* Slurm does not call slurm_spank_init before the prolog and epilog. */
	if (gk_site_parse(&site, ac, av, err, sizeof(err)) < 0) {
		slurm_error("gpuckpt: plugstack.conf: %s", err);
		return 0;
	}
	if (!site.stage[0] || !site.shared_root[0])
		return 0;
	if (env_u32("SLURM_JOB_ID", &l.job_id) < 0 || env_u32("SLURM_JOB_UID", &uid) < 0) {
		slurm_error("gpuckpt: stage-%s: SLURM_JOB_ID or SLURM_JOB_UID missing", verb);
		return 0;
	}
	if (env_u32("SLURM_JOB_GID", &gid) < 0)
		gid = uid;
	if (gk_stage_argv(&site, verb, l.job_id, (uid_t)uid, (gid_t)gid, argv, buf, sizeof(buf)) <
	    0) {
		slurm_error("gpuckpt: stage-%s: job %u: arguments too long", verb, l.job_id);
		return 0;
	}
	rc = gk_run_logged(argv, stage_line, &l);
	if (rc < 0)
		slurm_error("gpuckpt: stage-%s: job %u: cannot run %s: %s", verb, l.job_id,
			    site.stage, strerror(-rc));
	else if (rc != 0)
		slurm_error("gpuckpt: stage-%s: job %u: %s exited with status %d", verb, l.job_id,
			    site.stage, rc);
	return 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	return run_stage("in", ac, av);
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	return run_stage("out", ac, av);
}
