#include "config.h"

#include "task_env.h"
#include "container_env.h"
#include "image/ckptname.h"
#include "common/settings_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ENV_MAX 8192

static int set_env(const struct gk_env *env, const char *name, const char *value, int overwrite,
		   gk_error_t *err)
{
	int rc = env->set(env->ctx, name, value, overwrite);

	if (rc < 0)
		gk_errprintf(err, "cannot set %s=%s: %s", name, value, strerror(-rc));
	return rc;
}

static int set_env_num(const struct gk_env *env, const char *name, long value, int overwrite,
		       gk_error_t *err)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%ld", value);
	return set_env(env, name, buf, overwrite, err);
}

static unsigned restart_count(const struct gk_env *env)
{
	char buf[32], *end;
	unsigned long v;

	if (env->get(env->ctx, "SLURM_RESTART_COUNT", buf, sizeof(buf)) <= 0)
		return 0;
	errno = 0;
	v = strtoul(buf, &end, 10);
	return errno || *end || end == buf || v > 1000000 ? 0 : (unsigned)v;
}

/* The settings that follow the site unless the user (or a command-line option) said otherwise. */
static int set_tunables(const struct gk_site *s, const struct gk_opts *o, const struct gk_env *env,
			gk_error_t *err)
{
	int rc;

	rc = set_env_num(env, GK_ENV(KEEP), (long)s->keep, 0, err);
	if (!rc && o->interval >= 0)
		rc = set_env_num(env, GK_ENV(INTERVAL), o->interval, 1, err);
	else if (!rc && s->interval >= 0)
		rc = set_env_num(env, GK_ENV(INTERVAL), s->interval, 0, err);
	if (!rc && o->on_bad_fresh >= 0)
		rc = set_env(env, GK_ENV(ON_BAD_CHECKPOINT), o->on_bad_fresh ? "fresh" : "fail", 1,
			     err);
	else if (!rc && s->on_bad_fresh >= 0)
		rc = set_env(env, GK_ENV(ON_BAD_CHECKPOINT), s->on_bad_fresh ? "fresh" : "fail", 0,
			     err);
	if (!rc && s->log_level[0])
		rc = set_env(env, GK_ENV(LOG_LEVEL), s->log_level, 0, err);
	if (!rc && s->config[0])
		rc = set_env(env, GK_ENV(CONFIG), s->config, 0, err);
	return rc;
}

/* GPUCKPT_TASKS=independent: the tasks checkpoint and restore one by one. */
static int tasks_independent(const struct gk_env *env)
{
	char buf[16];

	return env->get(env->ctx, GK_ENV(TASKS), buf, sizeof(buf)) == 1 &&
	       strcmp(buf, "independent") == 0;
}

/* --gpu-checkpoint-on-bad as the runtime will see it: the option, else the
 * job's variable, else the site's, else the runtime's default (fail). */
static int on_bad_fresh(const struct gk_site *s, const struct gk_opts *o, const struct gk_env *env)
{
	char buf[16];

	if (o->on_bad_fresh >= 0)
		return o->on_bad_fresh;
	if (env->get(env->ctx, GK_ENV(ON_BAD_CHECKPOINT), buf, sizeof(buf)) == 1)
		return strcmp(buf, "fresh") == 0;
	return s->on_bad_fresh > 0;
}

/* The restart of a step of several tasks: the step's set, or nothing. */
static int choose_set(const struct gk_site *s, const struct gk_opts *o,
		      const struct gk_task_ids *ids, const struct gk_env *env,
		      struct gk_inject_result *r, gk_error_t *err)
{
	struct gk_step_choice *c = &r->choice;
	int rc;

	r->step_set = 1;
	rc = gk_step_choose(s, ids, ids->ntasks, r->dirfd, r->dir, c, err);
	if (rc < 0)
		return rc;
	if (c->kind == GK_PLAN_SET) {
		r->restore = 1;
		snprintf(r->newest, sizeof(r->newest), GK_CKPT_FMT, (uint64_t)c->sequence);
		return 0;
	}
	if (c->kind == GK_PLAN_BAD && !on_bad_fresh(s, o, env)) {
		gk_errprintf(
		    err,
		    "restart %u: no checkpoint set of this step passes every task's checks (%s); "
		    "the task is not started (--gpu-checkpoint-on-bad=fail; fresh would start "
		    "the step over)",
		    r->restart_count, c->reason);
		return -EBADMSG;
	}
	return 0;
}

int gk_inject(const struct gk_site *s, const struct gk_opts *o, const struct gk_task_ids *ids,
	      const struct gk_env *env, struct gk_inject_result *r, gk_error_t *err)
{
	char *cur, *preload, idtext[24];
	int rc, found, multi;

	memset(r, 0, sizeof(*r));
	r->dirfd = -1;
	r->restart_count = restart_count(env);
	rc = gk_task_dir_path(s->bb_root, ids, r->dir, sizeof(r->dir));
	if (rc < 0) {
		gk_errprintf(err, "%s: checkpoint folder path too long", s->bb_root);
		return rc;
	}
	rc = gk_task_dir_make(s->bb_root, "bb_root", ids, &r->dir_err);
	if (rc == -EPERM || rc == -ELOOP || rc == -ENOTDIR) {
		gk_errprintf(err, "%s", r->dir_err.text);
		return rc;
	}
	r->dir_rc = rc < 0 ? rc : 0;
	r->dirfd = rc < 0 ? -1 : rc;

	/* The task's folder on shared storage, for the runtime's flush: made
	 * like the burst buffer's, the user's below the site's root. Without
	 * it the job runs on; the epilog still stages its checkpoints. */
	if (s->flush_root[0] && r->dirfd >= 0) {
		rc = gk_task_dir_path(s->flush_root, ids, r->flush_dir, sizeof(r->flush_dir));
		if (rc == 0)
			rc = gk_task_dir_make(s->flush_root, "flush_root", ids, &r->flush_err);
		else
			gk_errprintf(&r->flush_err, "%.400s: path too long", s->flush_root);
		if (rc < 0)
			r->flush_dir[0] = '\0';
		else
			close(rc);
	}

	multi = ids->ntasks > 1 && !tasks_independent(env);
	if (r->dirfd >= 0 && r->restart_count > 0 && multi) {
		rc = choose_set(s, o, ids, env, r, err);
		if (rc < 0)
			return rc;
	} else if (r->dirfd >= 0 && r->restart_count > 0) {
		found = gk_find_committed_at(r->dirfd, r->newest, sizeof(r->newest));
		if (found < 0) {
			gk_errprintf(err, "%s: cannot look for checkpoints: %s", r->dir,
				     strerror(-found));
			return found;
		}
		r->restore = found;
	}

	cur = malloc(ENV_MAX);
	preload = malloc(ENV_MAX);
	if (!cur || !preload) {
		rc = -ENOMEM;
		gk_errprintf(err, "out of memory");
		goto out_free;
	}
	rc = env->get(env->ctx, "LD_PRELOAD", cur, ENV_MAX);
	if (rc < 0) {
		gk_errprintf(err, "cannot read LD_PRELOAD: %s", strerror(-rc));
		goto out_free;
	}
	if (rc == 0)
		cur[0] = '\0';
	rc = gk_preload_add(cur, s->runtime, preload, ENV_MAX);
	if (rc < 0) {
		gk_errprintf(err, "LD_PRELOAD too long to add %s", s->runtime);
		goto out_free;
	}
	rc = set_env(env, "LD_PRELOAD", preload, 1, err);
	if (!rc)
		rc = set_env(env, GK_ENV(CHECKPOINT), "on", 1, err);
	if (!rc)
		rc = set_env(env, GK_ENV(DIR), r->dir, 1, err);
	if (!rc && r->flush_dir[0])
		rc = set_env(env, GK_ENV(FLUSH_DIR), r->flush_dir, 1, err);
	else if (!rc)
		rc = env->unset(env->ctx, GK_ENV(FLUSH_DIR));
	if (!rc && r->restore && r->step_set)
		rc = set_env(env, GK_ENV(RESTORE), r->choice.ckpt, 1, err);
	else if (!rc && r->restore)
		rc = set_env(env, GK_ENV(RESTORE), "auto", 1, err);
	else if (!rc)
		rc = env->unset(env->ctx, GK_ENV(RESTORE));
	snprintf(idtext, sizeof(idtext), "%016llx", (unsigned long long)r->choice.id);
	if (!rc && r->restore && r->step_set)
		rc = set_env(env, GK_ENV(RESTORE_SET), idtext, 1, err);
	else if (!rc)
		rc = env->unset(env->ctx, GK_ENV(RESTORE_SET));
	if (!rc)
		rc = set_env_num(env, GK_ENV(STEP_TASKS), ids->ntasks ? (long)ids->ntasks : 1, 1,
				 err);
	if (!rc)
		rc = set_env_num(env, GK_ENV(TASK), ids->ntasks ? (long)ids->task_id : 0, 1, err);
	if (!rc)
		rc = set_env_num(env, GK_ENV(RESTART_COUNT), (long)r->restart_count, 1, err);
	if (!rc)
		rc = set_tunables(s, o, env, err);

out_free:
	free(cur);
	free(preload);
	return rc;
}

void gk_inject_release(struct gk_inject_result *r)
{
	if (r->dirfd >= 0)
		close(r->dirfd);
	r->dirfd = -1;
}

int gk_uninject(const struct gk_site *s, const struct gk_env *env, gk_error_t *err)
{
	char *cur, *preload, dir[8];
	int rc, has_runtime, has_dir;

	err->text[0] = '\0';
	cur = malloc(ENV_MAX);
	preload = malloc(ENV_MAX);
	if (!cur || !preload) {
		rc = -ENOMEM;
		gk_errprintf(err, "out of memory");
		goto out_free;
	}
	rc = env->get(env->ctx, "LD_PRELOAD", cur, ENV_MAX);
	if (rc < 0) {
		gk_errprintf(err, "cannot read LD_PRELOAD: %s", strerror(-rc));
		goto out_free;
	}
	has_runtime = rc == 1 && gk_preload_has(cur, s->runtime);
	/* Only whether it is set matters, so a short buffer is enough. */
	has_dir = env->get(env->ctx, GK_ENV(DIR), dir, sizeof(dir)) != 0;
	rc = 0;
	/* Nothing inherited: the task stays exactly as the user made it. */
	if (!has_runtime && !has_dir)
		goto out_free;
	if (has_runtime) {
		rc = gk_preload_remove(cur, s->runtime, preload, ENV_MAX);
		if (!rc)
			rc = preload[0] ? set_env(env, "LD_PRELOAD", preload, 1, err)
					: env->unset(env->ctx, "LD_PRELOAD");
	}
	if (!rc)
		rc = env->unset(env->ctx, GK_ENV(DIR));
	if (!rc)
		rc = env->unset(env->ctx, GK_ENV(RESTORE));
	if (!rc)
		rc = env->unset(env->ctx, GK_ENV(FLUSH_DIR));
	if (!rc)
		rc = env->unset(env->ctx, GK_ENV(RESTORE_SET));
	if (!rc)
		rc = set_env(env, GK_ENV(CHECKPOINT), "off", 1, err);
	if (!rc)
		rc = gk_container_uninject(s, env, err);
	if (rc < 0 && !err->text[0])
		gk_errprintf(err, "cannot change the environment: %s", strerror(-rc));

out_free:
	free(cur);
	free(preload);
	return rc < 0 ? rc : 0;
}
