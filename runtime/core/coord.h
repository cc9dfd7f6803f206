/*
 * coord.h - a task of a step of several tasks: its checkpoints are parts of
 * the step's sets (runtime/image/setfile.h), written at points the tasks
 * agreed on. The agreeing is done by a layer that can reach the other tasks
 * (libgpuckpt-mpi), through the exported gpuckpt_coord_* functions
 * (gpuckpt_coord.h); this module holds the task's side of it.
 */
#ifndef GK_COORD_H
#define GK_COORD_H

struct gk_manifest;

/* The step has several tasks that checkpoint together (not GPUCKPT_TASKS=independent). */
int gk_coord_multi(void);

/* A layer agrees on this task's checkpoints: gpuckpt_point() leaves them to it. */
int gk_coord_attached(void);

/*
 * A checkpoint is due in a step of several tasks and no layer agrees for
 * this task: writing one alone could never be restored with the others (and
 * restoring it alone would mix steps). Logs why, once per request, and
 * returns -ENOTSUP; 0 when a checkpoint may be written.
 */
int gk_coord_refuse_alone(void);

/* gpuckpt_coord_attach() (api.c), up to starting the runtime: checks the
 * agreement's name and the tasks against the step's (logging what is
 * wrong), then attaches. 0, -EINVAL or -ENOTSUP. */
int gk_coord_attach(const char *agreement, int ntasks, int mytask);

/* restore.c: the checkpoint loaded in this run (a set's member or not). */
void gk_coord_restored_from(const struct gk_manifest *m);

#endif
