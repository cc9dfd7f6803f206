/*
 * gpuckpt_coord.h - for layers that make the tasks of a step checkpoint
 * together (gpuckpt_mpi.h is one). Applications use gpuckpt.h or
 * gpuckpt_mpi.h, not this.
 *
 * A step of several tasks (srun -n T) checkpoints as a set: every task at
 * the same point of the program, under the same number N; the set counts only
 * once every task has committed its part, and a restart restores the same set
 * in every task, or none (runtime/image/setfile.h). The runtime writes each
 * task's part and the set's record; what it cannot do alone is talk to the
 * other tasks. A layer that can (an MPI communicator, ...) calls, in every
 * task, at the same points of the program:
 *
 *	gpuckpt_coord_attach("mpi", ntasks, mytask);          once, collectively
 *	at each point:
 *		rc = gpuckpt_coord_poll(step, &due);          local: restore, due?
 *		agree on due among the tasks (logical or)
 *		if agreed:
 *			agree on a set: sequence = max of gpuckpt_coord_next(),
 *			                id = one random number for all
 *			ok = gpuckpt_coord_write(step, &set) == 0
 *			agree on ok (logical and), within a time limit
 *			task 0: recorded = all_ok && gpuckpt_coord_record(&set) == 0
 *			tell every task task 0's `recorded`, within a time limit
 *			gpuckpt_coord_settle(&set, recorded)
 *			gpuckpt_coord_finish(due_bits_agreed)
 *
 * A task that gives up waiting (a task died, one is too slow) calls neither
 * record nor settle: its part stays, neither pruned nor withdrawn, since it
 * cannot know whether the set was recorded.
 *
 * All functions return 0 (or a positive status) or a negative errno value.
 */
#ifndef GPUCKPT_COORD_H
#define GPUCKPT_COORD_H

#ifdef __cplusplus
extern "C" {
#endif

/* Bits of the "due" word a layer agrees on (a bitwise or across tasks). */
#define GPUCKPT_DUE_CHECKPOINT 1 /* a checkpoint is due here */
#define GPUCKPT_DUE_EXIT 2       /* ... and the task ends after it (SIGTERM) */

struct gpuckpt_set {
	unsigned long long sequence; /* the same in every task: max of gpuckpt_coord_next() */
	unsigned long long id;       /* the same in every task, random, not 0 */
	long long step;              /* the application's step label */
};

/*
 * Take over the checkpoints of this task: from now on gpuckpt_point() no
 * longer checkpoints on its own, the layer does. `agreement` names the layer
 * in the set records ([a-z0-9_-], at most 15 characters). -EINVAL when ntasks
 * or mytask do not match the step the runtime was started in (the set must
 * cover every task of the step), -ENOTSUP when the runtime is disabled or has
 * no checkpoint directory (the layer then does nothing at its points).
 */
int gpuckpt_coord_attach(const char *agreement, int ntasks, int mytask);

/* Give the checkpoints back to gpuckpt_point() (a layer that could not
 * start on every task). */
int gpuckpt_coord_detach(void);

/*
 * What gpuckpt_point() does besides checkpointing: marks the program as
 * checkpoint-aware, loads a pending restore (GPUCKPT_RESTORED), and says in
 * *due (GPUCKPT_DUE_* bits) whether this task has a checkpoint due. One
 * atomic load when nothing is pending.
 */
int gpuckpt_coord_poll(long step, int *due);

/* The number this task would give its next checkpoint on its own. */
int gpuckpt_coord_next(unsigned long long *sequence);

/*
 * Write this task's part of the set (quiesce, copy, commit ckpt.N), and
 * clear the checkpoint this task had due. Nothing older is pruned yet.
 */
int gpuckpt_coord_write(long step, const struct gpuckpt_set *set);

/* Task 0, once every task committed its part: write the set's record (the
 * set's commit). */
int gpuckpt_coord_record(const struct gpuckpt_set *set);

/*
 * Every task, once it knows whether task 0 recorded the set: recorded, it
 * prunes what is older than the sets it keeps (GPUCKPT_KEEP sets); not, it
 * withdraws its part, so that the set never looks complete anywhere.
 */
int gpuckpt_coord_settle(const struct gpuckpt_set *set, int recorded);

/*
 * After the set was settled: end the process the way the signal that asked
 * for the checkpoint would have, when this task got one with an exit action,
 * or by SIGTERM when the agreed due bits hold GPUCKPT_DUE_EXIT (another task
 * is ending, so the step is). Returns otherwise.
 */
void gpuckpt_coord_finish(int agreed_due);

/* 1 and the set's id and number when this run restored a set, else 0. */
int gpuckpt_coord_restored(unsigned long long *id, unsigned long long *sequence);

/*
 * A layer that must also run where the runtime is not loaded (the Slurm
 * plugin preloads libgpuckpt; nothing links against it) defines
 * GPUCKPT_COORD_WEAK before including this header: the functions above are
 * then bound weakly, NULL without the runtime; test gpuckpt_coord_attach
 * before calling any of them.
 */
#ifdef GPUCKPT_COORD_WEAK
#pragma weak gpuckpt_coord_attach
#pragma weak gpuckpt_coord_detach
#pragma weak gpuckpt_coord_poll
#pragma weak gpuckpt_coord_next
#pragma weak gpuckpt_coord_write
#pragma weak gpuckpt_coord_record
#pragma weak gpuckpt_coord_settle
#pragma weak gpuckpt_coord_finish
#pragma weak gpuckpt_coord_restored
#endif

#ifdef __cplusplus
}
#endif

#endif /* GPUCKPT_COORD_H */
