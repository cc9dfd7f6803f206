/*
 * step_restore.h - on a restart, what a task of a step of several tasks
 * restores: the same checkpoint set as every other task of the step, or
 * nothing (runtime/image/setfile.h). The tasks of a step start on several
 * nodes, each plugin instance deciding for its own task, so the decision must
 * come from what every node sees alike:
 *
 *  - with a shared root, the prolog's restore plan (<bb_root>/.plan.<job>,
 *    root's): the prolog of every node makes it from the shared root, after
 *    checking every task's copy of every complete set (`gpuckpt plan`);
 *  - without one (no staging: the tasks must come back to the same node), the
 *    set records and members in the node's own step folder, which the
 *    runtime then checks fully as it restores. That folder is the user's:
 *    root reads only its newest GK_STEP_SETS_READ records, and logs that
 *    it left others unread.
 *
 * A missing plan where staging is configured means the prolog did not run or
 * failed: the task is refused rather than guessing, since a guess on one node
 * and the plan on another would mix steps.
 */
#ifndef GK_STEP_RESTORE_H
#define GK_STEP_RESTORE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt_dir.h"
#include "image/setfile.h"
#include "site_args.h"

struct gk_step_choice {
	enum gk_plan_kind kind; /* GK_PLAN_SET, GK_PLAN_FRESH or GK_PLAN_BAD */
	uint64_t sequence, id;  /* GK_PLAN_SET */
	char ckpt[PATH_MAX];    /* GK_PLAN_SET: this task's ckpt.N in its folder */
	char reason[600];       /* FRESH, BAD: why no set */
	int from_plan;          /* the prolog's plan decided */
	char note[300];         /* not empty: set records left unread (logged) */
};

/* Of a step folder's set records, the plugin (root) reads only this many,
 * the newest by number, when it chooses without a plan. */
#define GK_STEP_SETS_READ 32

/* <bb_root>/.plan.<job>. */
int gk_plan_path(const char *bb_root, uint32_t job_id, char *buf, size_t len);

/*
 * Decide for task ids->task_id of a step of ntasks tasks whose folder is
 * task_dir, open (and checked, gk_task_dir_make) as taskfd: the step's folder
 * is taken as its parent, on the descriptor, never by the path. Returns 0 and *c, or a negative errno with err set when the task
 * must not start: no plan where there must be one, a plan that is not root's
 * or is malformed, or a chosen set whose part for this task is not on this
 * node (staging it in failed).
 */
int gk_step_choose(const struct gk_site *s, const struct gk_task_ids *ids, uint32_t ntasks,
		   int taskfd, const char *task_dir, struct gk_step_choice *c, gk_error_t *err);

#endif
