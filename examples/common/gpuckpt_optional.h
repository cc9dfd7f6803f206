/*
 * gpuckpt_optional.h - the gpuckpt application interface, bound weakly.
 *
 * The examples and the GPU test programs are not linked against libgpuckpt:
 * one binary must run natively (the reference every checkpointed run is
 * compared with) and under the runtime, preloaded the way the Slurm plugin
 * injects it (LD_PRELOAD=libgpuckpt.so). A weak reference resolves to the
 * preloaded library when it is there and to NULL when it is not; the wrappers
 * below turn "no runtime" into "nothing to protect, never a checkpoint".
 */
#ifndef GPUCKPT_OPTIONAL_H
#define GPUCKPT_OPTIONAL_H

#include <stddef.h>
#include <string.h>

#include "gpuckpt.h"
#include "gpuckpt_kernel.h"

#ifdef __cplusplus
extern "C" {
#endif
int gpuckpt_protect(const char *name, void *addr, size_t size) __attribute__((weak));
int gpuckpt_unprotect(const char *name) __attribute__((weak));
int gpuckpt_point(long step) __attribute__((weak));
int gpuckpt_restarting(long *step) __attribute__((weak));
const char *gpuckpt_strerror(int err) __attribute__((weak));
/* Interruptible kernels (gpuckpt_kernel.h): absent without the runtime,
 * where gpuckpt_kernel.cuh's helper launches the kernel once, plainly. */
int gpuckpt_kernel_create(const char *name, void *function, unsigned long long nblocks,
			  unsigned long long npos, gpuckpt_kernel_record **rec) __attribute__((weak));
int gpuckpt_kernel_run(gpuckpt_kernel_record *rec, long step, void *stream,
		       gpuckpt_launch_fn launch, void *arg) __attribute__((weak));
void gpuckpt_kernel_destroy(gpuckpt_kernel_record *rec) __attribute__((weak));
#ifdef __cplusplus
}
#endif

/* Is the runtime loaded into this process? */
static inline int ckpt_present(void)
{
	return gpuckpt_point != NULL && gpuckpt_protect != NULL && gpuckpt_restarting != NULL;
}

/* Mark a kernel interruptible: 0 and *rec NULL without the runtime. */
static inline int ckpt_kernel_create(const char *name, void *function, unsigned long long nblocks,
				     unsigned long long npos, gpuckpt_kernel_record **rec)
{
	*rec = NULL;
	return ckpt_present() && gpuckpt_kernel_create != NULL
		   ? gpuckpt_kernel_create(name, function, nblocks, npos, rec)
		   : 0;
}

static inline int ckpt_protect(const char *name, void *addr, size_t size)
{
	return ckpt_present() ? gpuckpt_protect(name, addr, size) : 0;
}

static inline int ckpt_unprotect(const char *name)
{
	return ckpt_present() && gpuckpt_unprotect != NULL ? gpuckpt_unprotect(name) : 0;
}

static inline int ckpt_point(long step)
{
	return ckpt_present() ? gpuckpt_point(step) : GPUCKPT_NOTHING;
}

static inline int ckpt_restarting(long *step)
{
	return ckpt_present() ? gpuckpt_restarting(step) : 0;
}

static inline const char *ckpt_strerror(int err)
{
	if (gpuckpt_strerror != NULL)
		return gpuckpt_strerror(err);
	return strerror(err < 0 ? -err : err);
}

#endif
