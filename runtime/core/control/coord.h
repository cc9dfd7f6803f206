/*
 * coord.h - a task of a step of several tasks: its checkpoints are parts of
 * the step's sets (runtime/image/setfile.h), written at points the tasks
 * agreed on. The agreeing is done by a layer that can reach the other tasks
 * (libgpuckpt-mpi), through the exported gpuckpt_coord_* functions
 * (gpuckpt_coord.h); this module holds the task's side of it.
 */
#ifndef GK_COORD_H
#define GK_COORD_H

#include <stdint.h>

struct gk_manifest;

/* The step has several tasks that checkpoint together (not GPUCKPT_TASKS=independent). */
int gk_coord_multi(void);

/*
 * Task 0, for a transparent checkpoint cut through NCCL (interpose/nccl.h):
 * record set `sequence` with `id` in the step's folder before the parts
 * are dumped. Nobody could record it after: each task's process ends in its
 * dump. A record is not a commit here: the set is complete only when every
 * task's shepherd has published its ckpt.N too (image/stepset.h), which is
 * what the plugin checks before it restores a set. 0 or a negative errno
 * (said in the log).
 */
int gk_coord_record_cut(uint64_t sequence, uint64_t id);

/* A layer agrees on this task's checkpoints: gpuckpt_point() leaves them to it. */
int gk_coord_attached(void);

/* A checkpoint of a step of several tasks with no layer agreeing for this
 * task is refused in the pipeline's admit phase (coord.c's phase hook). */

/* gpuckpt_coord_attach() (api.c), up to starting the runtime: checks the
 * agreement's name and the tasks against the step's (logging what is
 * wrong), then attaches. 0, -EINVAL or -ENOTSUP. */
int gk_coord_attach(const char *agreement, int ntasks, int mytask);

/* restore.c: the checkpoint loaded in this run (a set's member or not). */
void gk_coord_restored_from(const struct gk_manifest *m);

#endif
