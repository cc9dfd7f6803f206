/*
 * gpuckpt.h - application interface of the gpuckpt checkpoint runtime.
 *
 * Device memory never needs registering: the runtime captures every live CUDA
 * allocation by itself. The application registers the host state it needs to
 * resume (its loop counter, scalars, arrays of host pointers to device memory)
 * and calls gpuckpt_point() once per iteration of its main loop.
 *
 *	long step = 0;
 *	gpuckpt_protect("step", &step, sizeof(step));
 *	... set up: allocate device memory, load input ...
 *	for (; step < nsteps; step++) {
 *		gpuckpt_point(step);   // checkpoints here when one is due;
 *		                       // on a restart, loads the state here
 *		... one iteration ...
 *	}
 *
 * On a restart the program runs its setup again; the runtime gives its device
 * allocations the addresses they had, and the first gpuckpt_point() loads the
 * device memory and the registered host regions (so `step` jumps to the step
 * the checkpoint was taken at) before it returns GPUCKPT_RESTORED.
 *
 * Every function returns 0 (or a positive status) on success and a negative
 * errno value on failure; gpuckpt_strerror() describes it.
 */
#ifndef GPUCKPT_H
#define GPUCKPT_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPUCKPT_VERSION_MAJOR 0
#define GPUCKPT_VERSION_MINOR 1
#define GPUCKPT_VERSION_PATCH 0
/* One number that grows with every release: (major << 16) | (minor << 8) | patch. */
#define GPUCKPT_VERSION                                                                            \
	((GPUCKPT_VERSION_MAJOR << 16) | (GPUCKPT_VERSION_MINOR << 8) | GPUCKPT_VERSION_PATCH)

/*
 * What gpuckpt_point() did. A checkpoint that could not be written (a full or
 * read-only burst buffer, state gpuckpt cannot checkpoint) is GPUCKPT_NOT_SAVED,
 * not an error: the runtime has said why on stderr, the previous checkpoints
 * are kept, and the program is as it was, so it goes on. Checkpoints are
 * mostly asked for from outside (the scheduler's signals, the interval), and
 * a program that ends on any negative result must not be ended by one that
 * failed.
 */
enum gpuckpt_point_result {
	GPUCKPT_NOTHING = 0,   /* no checkpoint was due: the common, cheap case */
	GPUCKPT_SAVED = 1,     /* a checkpoint was written and committed */
	GPUCKPT_RESTORED = 2,  /* this run is a restart: the state was loaded here */
	GPUCKPT_NOT_SAVED = 3, /* one was due but none was written (see above) */
};

/*
 * Register `size` bytes of host memory at `addr` under `name` (at most 63
 * characters: letters, digits, '_', '-', '.'; names starting with "gpuckpt."
 * are the runtime's). The region is saved with every checkpoint and loaded
 * back on restart. Registering a name again replaces it. Managed memory
 * (cudaMallocManaged) needs no registration: the runtime saves it, and a
 * restarted run gets it back at the same addresses if it allocates it again
 * in the same order before its first checkpoint point.
 */
int gpuckpt_protect(const char *name, void *addr, size_t size);

/* Forget a region registered under `name`. */
int gpuckpt_unprotect(const char *name);

/*
 * The checkpoint point: returns GPUCKPT_NOTHING at once (one atomic load)
 * unless a checkpoint is due (a signal, the periodic interval, or
 * gpuckpt_request()) or a restore is pending. `step` is the application's
 * progress label (its iteration), recorded in the checkpoint and reported on
 * restart. A checkpoint requested by SIGTERM ends the process after it is
 * committed (or, when it could not be written, right after the attempt), the
 * way SIGTERM would have. Returns one of enum gpuckpt_point_result, never a
 * negative value: a restore that fails while loading ends the process with a
 * message, since its state would be half old, half new.
 */
int gpuckpt_point(long step);

/* Ask for a checkpoint at the next gpuckpt_point(). Safe in a signal handler. */
int gpuckpt_request(void);

/*
 * Is this run a restart? Returns 1 and stores the step the checkpoint was
 * taken at in *step (if step is not NULL) when a checkpoint will be (or was)
 * loaded, 0 on a fresh start, a negative errno value when the checkpoint to
 * restore was refused and the runtime was told to fail rather than start fresh.
 */
int gpuckpt_restarting(long *step);

/* The runtime's version, GPUCKPT_VERSION of the library actually loaded. */
int gpuckpt_version(void);

/* A description of a value returned by the functions above. */
const char *gpuckpt_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* GPUCKPT_H */
