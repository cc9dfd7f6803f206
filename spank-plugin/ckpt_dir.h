/*
 * ckpt_dir.h - where a task's checkpoints live, and making that folder safely.
 *
 *	<root>/<job id>/step.<step>/task.<global task id>/ckpt.NNNNNN/manifest.json
 *
 * <step> is the step number, or batch / interactive for those steps. A
 * requeued job keeps its id and its batch script numbers its srun steps the
 * same way again, so each task of each step finds its own images. The job,
 * step and task folders belong to the job's user, mode 0700: no other user can
 * read, list or plant a checkpoint there. They are made by root (the plugin
 * runs privileged) one level at a time without following symbolic links,
 * because the levels below the root belong to the user.
 */
#ifndef GK_CKPT_DIR_H
#define GK_CKPT_DIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h" /* gk_error_t (runtime/common) */

/* Slurm's special step ids (slurm.h), kept here so the module needs no Slurm. */
#define GK_STEP_INTERACTIVE 0xfffffffaU
#define GK_STEP_BATCH 0xfffffffbU
#define GK_STEP_EXTERN 0xfffffffcU
#define GK_STEP_PENDING 0xfffffffdU

struct gk_task_ids {
	uint32_t job_id;
	uint32_t step_id;
	uint32_t task_id; /* global task id (SLURM_PROCID) */
	uid_t uid;
	gid_t gid;
	uint32_t ntasks; /* the step's tasks (0: unknown, taken as 1) */
};

/* "step.0", "step.batch", "step.interactive". */
int gk_step_dirname(uint32_t step_id, char *buf, size_t len);

/* The inverse, for names found on disk: only the spelling gk_step_dirname
 * writes (step.7, not step.07), task.<n>, and a job id. -EINVAL otherwise. */
int gk_step_parse(const char *name, uint32_t *step_id);
int gk_task_parse(const char *name, uint32_t *task_id);
int gk_job_parse(const char *name, uint32_t *job_id);

/* The task's checkpoint folder under root. -ENAMETOOLONG if it does not fit. */
int gk_task_dir_path(const char *root, const struct gk_task_ids *ids, char *buf, size_t len);

/*
 * Make (or check) root/job/step/task, each level owned by ids->uid:gid, mode
 * 0700. root must exist and be a folder only root can change
 * (gk_open_trusted_dir: root's, writable by nobody else, on a path of such
 * folders), else -EPERM naming the setting bb_root. A level that exists but
 * is not a folder, is a symbolic link, or belongs to someone else is refused
 * (-ENOTDIR, -ELOOP, -EPERM) and left alone. Errors name the path in err.
 * Returns the task folder's descriptor (the caller closes it) or a negative
 * errno.
 */
int gk_task_dir_make(const char *root, const char *setting, const struct gk_task_ids *ids,
		     gk_error_t *err);

/* The same below an open root (rootfd, checked by the caller; root names it
 * in messages). */
int gk_task_dir_open(int rootfd, const char *root, const struct gk_task_ids *ids, gk_error_t *err);

/*
 * The newest committed checkpoint in dir: a folder ckpt.N holding a regular
 * manifest.json (folders being written are .tmp.* and are skipped). Returns 1
 * and its name in newest, 0 when there is none, or a negative errno.
 */
int gk_find_committed(const char *dir, char *newest, size_t len);
/* The same in an open folder. */
int gk_find_committed_at(int fd, char *newest, size_t len);

#endif
