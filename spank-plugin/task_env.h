/*
 * task_env.h - what the plugin puts into a task's environment when
 * checkpointing is on (remote context, once per task, as root before the task
 * runs), and takes out again when a step turns it off.
 *
 *	LD_PRELOAD                 the runtime, appended to the user's own (once)
 *	GPUCKPT_CHECKPOINT         on, so that srun steps in a batch script inherit it
 *	GPUCKPT_DIR                the task's checkpoint folder (ckpt_dir.h)
 *	GPUCKPT_RESTORE            auto when the job is a restart and a committed
 *	                           checkpoint exists for this task; unset otherwise
 *	GPUCKPT_RESTART_COUNT      SLURM_RESTART_COUNT, 0 when Slurm sets none
 *	GPUCKPT_STEP_TASKS, GPUCKPT_TASK
 *	                           the step's task count and this task's index: a
 *	                           step of several tasks checkpoints as sets
 *	GPUCKPT_RESTORE_SET        with GPUCKPT_RESTORE=<the task's ckpt.N>, on the
 *	                           restart of a step of several tasks: the set every
 *	                           task restores (step_restore.h); unset otherwise
 *	GPUCKPT_KEEP, _INTERVAL, _ON_BAD_CHECKPOINT, _LOG_LEVEL, _CONFIG
 *	                           site settings, unless the user set them; an
 *	                           option given on the command line always wins
 *
 * GPUCKPT_DIR and GPUCKPT_RESTORE belong to the plugin: values inherited from
 * an enclosing step (a batch script's) or set by the user are replaced, so a
 * task never restores anything but its own checkpoints.
 */
#ifndef GK_TASK_ENV_H
#define GK_TASK_ENV_H

#include <limits.h>
#include <stddef.h>

#include "ckpt_dir.h"
#include "env.h"
#include "job_options.h"
#include "site_args.h"
#include "step_restore.h"

struct gk_inject_result {
	char dir[PATH_MAX];
	int dir_rc; /* 0, or why the folder could not be made (the job runs on) */
	gk_error_t dir_err;
	char flush_dir[PATH_MAX]; /* GPUCKPT_FLUSH_DIR, "" = none */
	gk_error_t flush_err;	  /* why there is none although flush_root is set */
	unsigned restart_count;
	int restore;	 /* GPUCKPT_RESTORE was set (auto, or a set's member) */
	char newest[64]; /* the newest committed checkpoint seen, if any; for a set, its member */
	char container[16]; /* set by the caller after gk_inject: the container
			       the program will run in ("pyxis", "podman", ...;
			       gk_container_of), "" if none seen */
	int dirfd;	 /* dir, opened and checked, or -1: what the plugin looks
			  * at later is in this folder, not wherever the path
			  * leads by then (gk_inject_release closes it) */
	/* A step of several tasks (not GPUCKPT_TASKS=independent) restarting: */
	int step_set;			 /* decided as a step (step_restore.h) */
	struct gk_step_choice choice;	 /* what for */
};

/*
 * Put the runtime and its settings into the task's environment. On the restart
 * of a step of several tasks, the set to restore is the step's (step_restore.h):
 * a step whose complete sets all fail their checks starts afresh with
 * --gpu-checkpoint-on-bad=fresh, and otherwise fails here (err says why), as
 * does a task whose part of the chosen set is missing on this node. A folder that
 * cannot be made because the burst buffer is missing, full or read-only is
 * reported in r->dir_rc and the task still gets the runtime (which then says
 * at checkpoint time why none was written). A folder that exists but is not
 * the user's, or is a link, fails the call: that is tampering, and nothing is
 * restored from it; so does a bb_root that someone other than root could
 * change (the message names bb_root). Returns 0 or a negative errno with err
 * set; r->dirfd may be open either way (gk_inject_release).
 */
int gk_inject(const struct gk_site *s, const struct gk_opts *o, const struct gk_task_ids *ids,
	      const struct gk_env *env, struct gk_inject_result *r, gk_error_t *err);

/* Close what gk_inject left open in r (safe to call more than once). */
void gk_inject_release(struct gk_inject_result *r);

/* Checkpointing explicitly off for a step inside a job that has it on: take out
 * what an enclosing step put in (the runtime from LD_PRELOAD, GPUCKPT_DIR,
 * GPUCKPT_RESTORE) and set GPUCKPT_CHECKPOINT=off. Anything else is untouched. */
int gk_uninject(const struct gk_site *s, const struct gk_env *env, gk_error_t *err);

#endif
