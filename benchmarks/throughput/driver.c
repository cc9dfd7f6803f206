/*
 * driver.c - the CUDA driver's process checkpoint API (cuda.h, CUDA 12.8+,
 * driver 570+) applied to a worker from this process, the way the
 * cuda-checkpoint utility does: lock, checkpoint (device memory moves into the
 * worker's host memory), restore, unlock. libcuda.so.1 is opened at run time,
 * so that this program starts anywhere and an older driver is reported, not
 * a missing symbol.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <cuda.h>

#include "throughput.h"

static struct {
	void *lib;
	CUresult (*init)(unsigned);
	CUresult (*error_name)(CUresult, const char **);
	CUresult (*lock)(int, CUcheckpointLockArgs *);
	CUresult (*checkpoint)(int, CUcheckpointCheckpointArgs *);
	CUresult (*restore)(int, CUcheckpointRestoreArgs *);
	CUresult (*unlock)(int, CUcheckpointUnlockArgs *);
	CUresult (*get_state)(int, CUprocessState *);
} drv;

static int failed(CUresult r, const char *call, int pid, gk_error_t *err)
{
	const char *name = NULL;

	if (drv.error_name)
		drv.error_name(r, &name);
	gk_errprintf(err, "%s(pid %d): %s", call, pid, name ? name : "unknown CUDA error");
	return r == CUDA_ERROR_NOT_SUPPORTED ? -ENOTSUP : -EIO;
}

int tp_driver_open(gk_error_t *err)
{
	static const struct {
		const char *name;
		void **slot;
	} syms[] = {
	    {"cuInit", (void **)&drv.init},
	    {"cuGetErrorName", (void **)&drv.error_name},
	    {"cuCheckpointProcessLock", (void **)&drv.lock},
	    {"cuCheckpointProcessCheckpoint", (void **)&drv.checkpoint},
	    {"cuCheckpointProcessRestore", (void **)&drv.restore},
	    {"cuCheckpointProcessUnlock", (void **)&drv.unlock},
	    {"cuCheckpointProcessGetState", (void **)&drv.get_state},
	};
	CUresult r;
	size_t i;

	if (drv.lib)
		return 0;
	drv.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!drv.lib) {
		gk_errprintf(err, "driver: cannot open libcuda.so.1: %s", dlerror());
		return -ENOENT;
	}
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		*syms[i].slot = dlsym(drv.lib, syms[i].name);
		if (!*syms[i].slot) {
			gk_errprintf(
			    err,
			    "driver: libcuda.so.1 has no %s (the process checkpoint API needs "
			    "driver 570 or later)",
			    syms[i].name);
			dlclose(drv.lib);
			memset(&drv, 0, sizeof(drv));
			return -ENOTSUP;
		}
	}
	/* Restoring needs an initialised driver (or persistence mode) in the calling process. */
	r = drv.init(0);
	if (r != CUDA_SUCCESS)
		return failed(r, "cuInit", 0, err);
	return 0;
}

int tp_driver_lock(int pid, unsigned timeout_ms, gk_error_t *err)
{
	CUcheckpointLockArgs args;
	CUresult r;

	memset(&args, 0, sizeof(args));
	args.timeoutMs = timeout_ms;
	r = drv.lock(pid, &args);
	return r == CUDA_SUCCESS ? 0 : failed(r, "cuCheckpointProcessLock", pid, err);
}

int tp_driver_checkpoint(int pid, gk_error_t *err)
{
	CUcheckpointCheckpointArgs args;
	CUresult r;

	memset(&args, 0, sizeof(args));
	r = drv.checkpoint(pid, &args);
	return r == CUDA_SUCCESS ? 0 : failed(r, "cuCheckpointProcessCheckpoint", pid, err);
}

int tp_driver_restore(int pid, gk_error_t *err)
{
	CUcheckpointRestoreArgs args;
	CUresult r;

	/* No GPU pairs: back onto the GPU it was checkpointed from. */
	memset(&args, 0, sizeof(args));
	r = drv.restore(pid, &args);
	return r == CUDA_SUCCESS ? 0 : failed(r, "cuCheckpointProcessRestore", pid, err);
}

int tp_driver_unlock(int pid, gk_error_t *err)
{
	CUcheckpointUnlockArgs args;
	CUresult r;

	memset(&args, 0, sizeof(args));
	r = drv.unlock(pid, &args);
	return r == CUDA_SUCCESS ? 0 : failed(r, "cuCheckpointProcessUnlock", pid, err);
}

const char *tp_driver_state(int pid)
{
	CUprocessState s;

	if (!drv.get_state || drv.get_state(pid, &s) != CUDA_SUCCESS)
		return "unknown";
	switch (s) {
	case CU_PROCESS_STATE_RUNNING:
		return "running";
	case CU_PROCESS_STATE_LOCKED:
		return "locked";
	case CU_PROCESS_STATE_CHECKPOINTED:
		return "checkpointed";
	case CU_PROCESS_STATE_FAILED:
		return "failed";
	}
	return "unknown";
}
