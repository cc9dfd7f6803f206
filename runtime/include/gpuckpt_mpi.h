/*
 * gpuckpt_mpi.h - checkpoints of an MPI program, taken by all its ranks
 * together (libgpuckpt-mpi: link with -lgpuckpt-mpi).
 *
 * Each rank of a Slurm step is a task with its own checkpoint folder. For the
 * step to be restorable, every rank must checkpoint at the same iteration,
 * and a checkpoint counts only once every rank has committed its part. The
 * collective checkpoint point does both:
 *
 *	MPI_Init(&argc, &argv);
 *	gpuckpt_mpi_init(MPI_COMM_WORLD);
 *	gpuckpt_protect("step", &step, sizeof(step));
 *	... setup ...
 *	for (; step < nsteps; step++) {
 *		gpuckpt_mpi_point(step);   // instead of gpuckpt_point()
 *		... one iteration: halo exchange, kernels, MPI_Allreduce ...
 *	}
 *	gpuckpt_mpi_finalize();
 *	MPI_Finalize();
 *
 * gpuckpt_mpi_point() is collective: every rank calls it the same number of
 * times, once per iteration, like any MPI collective. At each call the ranks
 * agree, with one non-blocking all-reduce of a flag started at the previous
 * call, whether a checkpoint is due anywhere (SIGTERM, SIGUSR1, the periodic
 * interval, gpuckpt_request() on any rank); if so, every rank writes its part
 * at this same call, under one number, and rank 0 records the set once every
 * rank said it committed. A rank that got SIGTERM ends after the set, and so
 * does every other rank of the step. When nothing is due a call costs the
 * completion of one all-reduce started an iteration earlier.
 *
 * Launch one rank per Slurm task with srun (srun --mpi=pmix): the
 * communicator must hold every task of the step, in Slurm's rank order.
 * Without the runtime (no LD_PRELOAD of libgpuckpt, no -lgpuckpt) every call
 * does nothing, so the same binary runs without gpuckpt.
 */
#ifndef GPUCKPT_MPI_H
#define GPUCKPT_MPI_H

#include <mpi.h>

#include "gpuckpt.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Collective over comm, after MPI_Init: the ranks of comm agree on their
 * checkpoints from now on (the layer works on a duplicate of comm). Returns
 * 0, or -EINVAL on every rank when comm does not cover the Slurm step one
 * rank per task (the runtime says why; gpuckpt_mpi_point() then checkpoints
 * nothing, and says so when a checkpoint is asked for).
 */
int gpuckpt_mpi_init(MPI_Comm comm);

/*
 * The collective checkpoint point. Returns as gpuckpt_point() does:
 * GPUCKPT_NOTHING, GPUCKPT_SAVED (this rank's part is written and the set is
 * complete), GPUCKPT_RESTORED (first call of a restart: the state of the set
 * every rank restored is loaded), or a negative errno: -ECANCELED when the set
 * fell short on some rank (nothing of it is kept), -ETIMEDOUT when the other
 * ranks did not answer within GPUCKPT_AGREE_TIMEOUT seconds (no more
 * checkpoints are agreed after that). Stops the job (MPI_Abort) when the ranks
 * did not all restore the same set: they would otherwise run on mixed steps.
 */
int gpuckpt_mpi_point(long step);

/* Collective, before MPI_Finalize. */
int gpuckpt_mpi_finalize(void);

#ifdef __cplusplus
}
#endif

#endif /* GPUCKPT_MPI_H */
