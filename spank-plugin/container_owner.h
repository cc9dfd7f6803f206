/*
 * container_owner.h - which job a rootful podman's container is for.
 *
 * podman's OCI hook (oci_hook.c) runs as root on the host under rootful
 * podman, with the environment of podman's caller: neither its own uid nor
 * that environment says whose job it serves. What does is a record that
 * only root can have written: the plugin, as root in task_init_privileged,
 * records each task it starts with checkpoints on, in GK_TASK_RECORDS (a
 * folder only root can change), one file per task named PID-START:
 *
 *	gpuckpt-task 1
 *	pid PID           the task's process (it becomes the shepherd in
 *	                  transparent mode; the program is then its child)
 *	start START       its start time, field 22 of /proc/PID/stat: a pid
 *	                  used again by another process does not match
 *	job JOBID
 *	uid UID           the job's user
 *	bind PATH         one line for each path of GPUCKPT_BIND as the plugin
 *	                  made it (container_env.h)
 *
 * The hook walks from podman up its parent processes to the first one that
 * has a record: podman descends from its task, and a process cannot change
 * whose child it is (an orphan goes to a subreaper or init, never to
 * another job's task). A record whose process is gone is swept when the
 * next one is written; until then its start time keeps a new process of the
 * same pid from matching it.
 */
#ifndef GK_CONTAINER_OWNER_H
#define GK_CONTAINER_OWNER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"
#include "task_env.h"

/* On a tmpfs that boot empties: pids and start times are this boot's. */
#define GK_TASK_RECORDS "/run/gpuckpt/tasks"
/* Parents walked up from podman before giving up. */
#define GK_OWNER_MAX_DEPTH 64

struct gk_owner {
	pid_t pid;
	unsigned long long start;
	uint32_t job_id;
	uid_t uid;
	char binds[8192]; /* the bind lines, ':'-separated */
};

/*
 * The parent pid and start time (clock ticks after boot) of pid, from
 * /proc/PID/stat. 0 or a negative errno (-ESRCH when it is gone).
 */
int gk_proc_start(pid_t pid, pid_t *ppid, unsigned long long *start);

/*
 * As root: record the calling process (the task) as job ids->job_id's, of
 * ids->uid, with the GPUCKPT_BIND that env holds, in dir (made 0700 when
 * missing, its parent 0755; the whole path must be root's, fsafe.h).
 * Records of processes that are gone are removed first. 0 or a negative
 * errno with err set.
 */
int gk_owner_record(const char *dir, const struct gk_env *env, const struct gk_task_ids *ids,
		    gk_error_t *err);

/*
 * The record of the nearest of the caller's ancestors (its parent first) that
 * has one in dir, into o. -ENOENT with err saying why when none has (or dir
 * is missing); another negative errno when dir is not root's alone, a record
 * is not well formed, or the process tree changed while it was read.
 */
int gk_owner_find(const char *dir, struct gk_owner *o, gk_error_t *err);

/* 1 when path is one of o's bind paths, else 0. */
int gk_owner_lists(const struct gk_owner *o, const char *path);

#endif
