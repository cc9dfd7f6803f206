/*
 * node_probe.h - `gpuckpt checkpoint --on-node JOB`: what a node knows of a
 * job's checkpoints, run there by `gpuckpt checkpoint` through
 * `srun --overlap --jobid=JOB` (one task per node, as the user), since the
 * checkpoints live on each node's own burst buffer.
 *
 * Run by a user, the job's folder, BB_ROOT/JOB, is --bb-root's, or found
 * from the user's own processes on the node: the plugin gives every task of
 * a job with checkpointing on GPUCKPT_DIR=BB_ROOT/JOB/step.S/task.T, and a
 * user may read the environment of their own processes only. The folder
 * must be the user's. `gpuckpt checkpoint` run by root runs the probe as the
 * job's user too, with --uid, --bb-root and --steps taken from Slurm and
 * plugstack.conf.
 *
 * Run as root (by hand, or by an older `gpuckpt checkpoint`), the probe
 * trusts only what Slurm said (issue 24, hole 5): --uid (the job's user),
 * --bb-root (a folder only root can change, fsafe.h) and --steps are
 * required; nothing is taken from any process's environment, where any user
 * may write SLURM_JOB_ID and GPUCKPT_DIR. BB_ROOT/JOB must be the job's
 * user's; processes of another user that claim the job in their environment
 * are named, not read.
 *
 * Whoever runs it: only the steps of --steps are reported; a live process
 * in an event file counts only when it runs as the folder's user; each task
 * folder is read through descriptors, no link followed (jobdir.h): its event
 * file (who runs the runtime now, each checkpoint taken, failed or refused)
 * and its newest committed checkpoint. What it passes over is named, one
 * line each, in "ignored".
 *
 * One line of JSON on stdout:
 *	{"node", "job_dir" (null: the job has no folder here), "tasks": [{"step",
 *	 "task", "dir", "live" (processes of the task whose runtime answers a
 *	 checkpoint signal, still running), "ok", "failed", "refused" (checkpoint
 *	 events so far), "newest" (N of the newest committed ckpt.N, or -1),
 *	 "newest_bytes", "last_ok": {"ckpt", "bytes", "seconds"} or null,
 *	 "last_failure": {"result", "errno"} or null}], "ignored": ["what and
 *	 why", ...]}
 * and nothing else: srun hands the line on in labelled pieces of at most
 * 1024 bytes, which gpuckpt checkpoint joins again by label (issue 29), so
 * the line must be the only output and hold no newline (JSON has none).
 */
#ifndef GK_NODE_PROBE_H
#define GK_NODE_PROBE_H

#include <sys/types.h>

struct node_probe_args {
	const char *job;     /* digits */
	const char *bb_root; /* NULL: from the user's own processes (not as root) */
	uid_t uid;	     /* the job's user, (uid_t)-1 when not given */
	const char *steps;   /* "0,1,batch": the steps Slurm lists; NULL: all */
};

/* Print the node's line. Returns a GK_EXIT_* status. */
int node_probe(const struct node_probe_args *a);

#endif
