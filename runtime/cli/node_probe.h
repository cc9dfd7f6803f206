/*
 * node_probe.h - `gpuckpt checkpoint --on-node JOB`: what a node knows of a
 * job's checkpoints, run there by `gpuckpt checkpoint` through
 * `srun --overlap --jobid=JOB` (one task per node, as the user), since the
 * checkpoints live on each node's own burst buffer.
 *
 * The job's folder, BB_ROOT/JOB, is --bb-root's, or found from the job's own
 * processes on the node: the plugin gives every task of a job with
 * checkpointing on GPUCKPT_DIR=BB_ROOT/JOB/step.S/task.T, and the user may
 * read the environment of their own processes. So the tool needs no copy of
 * plugstack.conf. Each task folder is read through descriptors, no link
 * followed (runtime/common/jobdir.h): its event file (who runs the runtime
 * now, each checkpoint taken, failed or refused) and its newest committed
 * checkpoint.
 *
 * One line of JSON on stdout:
 *	{"node", "job_dir" (null: the job has no folder here), "tasks": [{"step",
 *	 "task", "dir", "live" (processes of the task whose runtime answers a
 *	 checkpoint signal, still running), "ok", "failed", "refused" (checkpoint
 *	 events so far), "newest" (N of the newest committed ckpt.N, or -1),
 *	 "newest_bytes", "last_ok": {"ckpt", "bytes", "seconds"} or null,
 *	 "last_failure": {"result", "errno"} or null}]}
 */
#ifndef GK_NODE_PROBE_H
#define GK_NODE_PROBE_H

/* Print the node's line for job `job` (digits); bb_root may be NULL.
 * Returns a GK_EXIT_* status. */
int node_probe(const char *job, const char *bb_root);

#endif
