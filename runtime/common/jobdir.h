/*
 * jobdir.h - a job's folder on a node's burst buffer, walked through
 * descriptors: JOB/step.S/task.T (spank-plugin/ckpt_dir.h) and the event
 * file in each task folder. The levels belong to the job's user; whoever
 * walks them (the plugin's epilog as root, `gpuckpt checkpoint` on a node)
 * opens each with O_NOFOLLOW below the one before and checks its owner, so
 * that a link or someone else's folder planted there is never followed.
 */
#ifndef GK_JOBDIR_H
#define GK_JOBDIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The levels of a job's folder, on the burst buffer and under the shared
 * root: JOB/step.S/task.T, each task folder a checkpoint root (ckptname.h).
 * Spelled here once for the runtime, the tool, the plugin and gpuckpt-stage. */
#define GK_STEP_PREFIX "step."
#define GK_TASK_PREFIX "task."
#define GK_STEP_PREFIX_LEN (sizeof(GK_STEP_PREFIX) - 1)
#define GK_TASK_PREFIX_LEN (sizeof(GK_TASK_PREFIX) - 1)

/* Called for each task folder: its step ("0", "batch", ...), its task
 * number, an open descriptor of the folder (closed after the call). A
 * non-zero return stops the walk and is returned by gk_jobdir_walk. */
typedef int (*gk_task_fn)(void *arg, const char *step, uint32_t task, int taskfd);

/*
 * What one walk looks at, at most: the job's user makes the folders, and
 * root (the epilog) must not be held by how many (issue 24's review). A
 * node runs far fewer tasks of one job than this; the runtime's events of
 * each are taken at the task's end, so the epilog finds few left.
 */
#define GK_JOBDIR_TASKS_MAX 4096u    /* task folders handed to fn */
#define GK_JOBDIR_ENTRIES_MAX 65536u /* names read in the job and step folders */

/*
 * Every step.S/task.T folder under jobfd that is a real folder owned by
 * `uid` (others are skipped), in no particular order. Returns 0, fn's
 * non-zero value, -E2BIG when it stopped at GK_JOBDIR_TASKS_MAX folders or
 * GK_JOBDIR_ENTRIES_MAX names (fn saw those before), or a negative errno
 * when jobfd cannot be read.
 */
int gk_jobdir_walk(int jobfd, uid_t uid, gk_task_fn fn, void *arg);

/*
 * The event file (GK_EVENTS_FILE) of a task folder: a regular file owned by
 * `uid` with one link, opened without following a link and without blocking
 * (a FIFO planted there is refused, not waited on), at most
 * GK_EVENTS_FILE_MAX bytes read. *buf is malloc'ed (free it), *len its
 * length. -ENOENT when there is none, -EPERM when it is not a regular file
 * of uid's or has other links (one file linked into many task folders
 * would be read once per folder, for nothing).
 */
int gk_events_read_at(int taskfd, uid_t uid, char **buf, size_t *len);

/* "step.S" -> S (1-15 of [A-Za-z0-9]), "task.T" -> T. 0 or -EINVAL. */
int gk_parse_step_dirname(const char *name, char *step, size_t len);
int gk_parse_task_dirname(const char *name, uint32_t *task);

#endif
