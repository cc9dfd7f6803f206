/*
 * shepherd_launch.h - transparent mode on the Slurm side (runtime/shepherd/README.md):
 * which mode a task runs in, whether this node can do transparent mode (the
 * shepherd's probe), and starting the task under gpuckpt-shepherd.
 *
 * Mode: option --gpu-checkpoint-mode, else GPUCKPT_MODE, else the site's mode=.
 *
 *	app, or auto where the node cannot: no shepherd; GPUCKPT_NO_TRANSPARENT=<why>
 *	    in the task. The runtime prints it when a program that does not use the
 *	    API gets a checkpoint signal, in that program's output, saying that it
 *	    ends without a checkpoint and why; nothing is said at the job's start,
 *	    where it would alarm the programs that do use the API.
 *	transparent where the node cannot: the task does not start.
 *	otherwise, in a job step (srun): the task runs under the shepherd, or is
 *	    restored by it when the newest committed checkpoint holds criu/.
 *
 * A batch script (and an interactive step) is a shell whose srun children talk
 * to slurmctld over sockets that CRIU cannot dump, and whose steps have
 * shepherds of their own; it is never run under a shepherd. Programs started
 * directly in a batch script are checkpointed only if they use the API.
 *
 * The task's stdio is set up by slurmstepd only after task_init_privileged,
 * in the task's own process; the processes forked here get it from the one
 * that goes on to run the program, in task_init (gk_shepherd_task_start).
 */
#ifndef GK_SHEPHERD_LAUNCH_H
#define GK_SHEPHERD_LAUNCH_H

#include <limits.h>
#include <stddef.h>

#include "ckpt_dir.h"
#include "job_options.h"
#include "site_args.h"
#include "task_env.h"


enum gk_tplan_kind {
	GK_TPLAN_NONE,	  /* no shepherd (reason says why) */
	GK_TPLAN_ATTACH,  /* fork into a PID namespace under gpuckpt-shepherd attach */
	GK_TPLAN_RESTORE, /* gpuckpt-shepherd restore in the task's process */
};

struct gk_tplan {
	enum gk_tplan_kind kind;
	enum gk_mode mode;
	char reason[GK_ERRLEN]; /* NONE: why programs without the API are not checkpointed */
	char socket[96];	/* ATTACH: GPUCKPT_SHEPHERD (abstract socket name) */
	char shepherd[PATH_MAX + 32];
	char criu[PATH_MAX]; /* "" = the shepherd's default */
	char dir[PATH_MAX];
	char newest[64]; /* RESTORE: the checkpoint */
	char assist[8];	 /* GPUCKPT_ASSIST when the user set it, else "" */
	char tcp[8];	 /* GPUCKPT_TCP when the user set it (refuse, close), else "" */
	int nccl;	 /* GPUCKPT_TASKS=nccl: the shepherd gets --nccl */
	unsigned restart; /* SLURM_RESTART_COUNT, for the shepherd's events */
	unsigned keep;
	struct gk_task_ids ids;
	/* The task's CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER ("" and have_*
	 * 0 when unset), put into the shepherd's environment: it is started
	 * with slurmstepd's, and must see the GPUs the task was given, in the
	 * task's order. Without them a transparent restore under Slurm paired
	 * the node's GPUs by position, not the job's (the seal records the
	 * GPUs the shepherd sees). The plan is made before Slurm binds GPUs to
	 * the task; task_init sends the bound value (gk_shepherd_task_start). */
	char gpus[1024];
	char gpu_order[32];
	int have_gpus, have_gpu_order;
};

/*
 * Can this node do transparent mode for the jobs of uid? Runs
 * <shepherd>/gpuckpt-shepherd probe --uid UID [--criu PATH], without a shell
 * (the uid: root's capabilities CRIU needs depend on whose processes it
 * dumps). Returns 1 (it printed "ok"), or 0 with the reason: the lines it
 * printed, one per thing the node lacks, joined by "; " (a missing binary:
 * "gpuckpt-shepherd not installed at PATH").
 */
int gk_shepherd_probe(const struct gk_site *s, uid_t uid, char *reason, size_t len);

/*
 * Decide how the task runs and put GPUCKPT_MODE, GPUCKPT_SHEPHERD or
 * GPUCKPT_NO_TRANSPARENT into its environment; on a
 * transparent restore GPUCKPT_RESTORE is taken out again. r is what gk_inject
 * found. Returns 0, or a negative errno with err saying why the task must not
 * start (a bad GPUCKPT_MODE, transparent asked for where it cannot be had, a
 * transparent checkpoint this node cannot restore or that root did not write).
 */
int gk_shepherd_prepare(const struct gk_site *s, const struct gk_opts *o,
			const struct gk_task_ids *ids, const struct gk_env *env,
			const struct gk_inject_result *r, struct gk_tplan *p, gk_error_t *err);

/* The shepherd's arguments for an ATTACH (child = the namespace's init) or a
 * RESTORE plan, NULL-terminated, strings in buf. -ENAMETOOLONG if too small. */
#define GK_SHEPHERD_MAXARGS 32
/* attach: the descriptor on which the shepherd lets the program go (--go-fd). */
#define GK_SHEPHERD_GO_FD 3
#define GK_SHEPHERD_GO_FD_STR "3"
int gk_shepherd_argv(const struct gk_tplan *p, pid_t child, char *argv[], char *buf,
		     size_t buflen);

/*
 * Carry out an ATTACH or RESTORE plan in the task's process (root). Returns 0
 * in the one process that goes back to Slurm to become the program (ATTACH:
 * PID 2 of the new namespace; RESTORE: a short-lived helper that only hands
 * the stdio over); the task's own process becomes the shepherd and never
 * returns. A failure before the fork returns a negative errno with err set,
 * and nothing is left behind.
 */
int gk_shepherd_launch(const struct gk_tplan *p, gk_error_t *err);

/*
 * In task_init (stdio set up, privileges dropped): hand this process's stdin,
 * stdout and stderr to the shepherd's side, with gpus, the task's
 * CUDA_VISIBLE_DEVICES now (NULL: unset), which the shepherd then sees
 * instead of the plan's (Slurm binds GPUs to each task after the plan is
 * made), and wait until it is placed and, ATTACH, until gpuckpt-shepherd has
 * taken it as its child (--go-fd). The RESTORE helper exits here. 0 when
 * there is nothing to do or it went well, else a negative errno with err set
 * (the task must not run).
 */
int gk_shepherd_task_start(const char *gpus, gk_error_t *err);

/* 1 when task_init has a task to hand to the shepherd's side. */
int gk_shepherd_task_pending(void);

#endif
