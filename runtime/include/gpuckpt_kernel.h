/*
 * gpuckpt_kernel.h - interruptible long kernels (host side, plain C).
 *
 * A checkpoint is taken between kernels: the runtime drains the GPU's work
 * first. A kernel that runs for minutes therefore delays a checkpoint by
 * minutes, longer than the time the scheduler leaves after SIGTERM. A kernel
 * *marked* interruptible instead returns early when a checkpoint is due
 * (after FTI's soft kernel interrupts): its blocks check a stop word the
 * runtime raises, the blocks that ran are recorded in device memory (which
 * every checkpoint captures), and gpuckpt_kernel_run() below takes the
 * checkpoint and launches the kernel again for the work not yet done, until
 * all of it is, in this run or, after a restore, in the restarted one.
 *
 * The device side (the checks inside the kernel) is gpuckpt_kernel.cuh, for
 * CUDA C++; docs/api.md ("Long kernels") says how to mark a kernel and
 * what is safe. In short:
 *
 *	// setup, before the first gpuckpt_point(): same order on a restart
 *	gpuckpt_kernel_record *rec;
 *	gpuckpt_kernel_create("mc_step", fn, nblocks, 0, &rec);
 *	for (; step < nsteps; step++) {
 *		gpuckpt_point(step);
 *		// the marked kernel first: nothing that changes the state the
 *		// checkpoint holds between the point and the run
 *		gpuckpt_kernel_run(rec, step, stream, launch_mc, &args);
 *		...
 *	}
 *
 * where launch_mc(arg, k) launches the kernel once, asynchronously on
 * `stream`, with k among its arguments, and returns 0 (or a negative errno).
 */
#ifndef GPUCKPT_KERNEL_H
#define GPUCKPT_KERNEL_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The record of one marked kernel in device memory, as 64-bit words. The
 * header, then (block mode) one bit per block of the grid, set when a block
 * passed its check and so runs to its end, or (loop mode) one word per
 * thread, the next iteration of its loop when it stopped.
 */
#define GPUCKPT_KREC_STATUS 0	   /* GPUCKPT_KREC_RUNNING while unfinished */
#define GPUCKPT_KREC_EXECUTED 1	   /* blocks (loop mode: threads) done */
#define GPUCKPT_KREC_INTERRUPTED 2 /* blocks or threads that returned early */
#define GPUCKPT_KREC_TOTAL 3	   /* blocks (loop mode: threads) in all */
#define GPUCKPT_KREC_HEADER 4	   /* words before the bitmap or the positions */
#define GPUCKPT_KREC_RUNNING 0x474b52554e4e4e47ull

/*
 * What a marked kernel takes as an argument (by value). stop: the device
 * address of the stop word (non-zero: return at the next check), NULL when
 * the kernel must never stop (no runtime, or a step that agrees its
 * checkpoints through gpuckpt_mpi.h: see docs/api.md). state: the record
 * above, NULL without the runtime (the checks then do nothing). npos: 0 in
 * block mode, else the number of threads with a saved loop position.
 */
struct gpuckpt_kernel {
	const volatile unsigned int *stop;
	unsigned long long *state;
	unsigned long long nblocks;
	unsigned long long npos;
};

typedef struct gpuckpt_kernel_record gpuckpt_kernel_record;

/* Launch the kernel once, asynchronously, on the stream given to
 * gpuckpt_kernel_run, with k as its argument: 0 or a negative errno. */
typedef int (*gpuckpt_launch_fn)(void *arg, struct gpuckpt_kernel k);

/*
 * Make the record of a marked kernel, in device memory of the current
 * context: `name` (1-63 characters, for the log), `function` (the
 * CUfunction, or NULL when unknown: a cooperative launch of it is then not
 * refused), `nblocks` (the grid's blocks), `npos` (0: block mode; else loop
 * mode with this many threads). Call it in the program's setup, before the
 * first gpuckpt_point(), in the same order on a restart, like any other
 * allocation: the restore loads the record of an interrupted kernel into it.
 * 0 or a negative errno.
 */
int gpuckpt_kernel_create(const char *name, void *function, unsigned long long nblocks,
			  unsigned long long npos, gpuckpt_kernel_record **rec);

/*
 * Run the marked kernel to its end: launch (launch(arg, k)), wait for the
 * stream (a CUstream, NULL for the legacy default stream), and while blocks
 * returned early because a checkpoint is due, take it (gpuckpt_point(step):
 * after SIGTERM the process ends there) and launch again; only the work not
 * done runs. After a restore it resumes the interrupted kernel from its
 * record. 0 when the kernel ran to its end, else a negative errno (the log
 * says why).
 */
int gpuckpt_kernel_run(gpuckpt_kernel_record *rec, long step, void *stream,
		       gpuckpt_launch_fn launch, void *arg);

/* Free a record (its device memory too). */
void gpuckpt_kernel_destroy(gpuckpt_kernel_record *rec);

#ifdef __cplusplus
}
#endif

#endif /* GPUCKPT_KERNEL_H */
