/*
 * driver.h - the real CUDA driver: libcuda.so.1 opened at first use, every
 * entry point of hooks.def looked up once into a table of typed pointers, and
 * the one helper through which every failed call is reported.
 */
#ifndef GK_DRIVER_H
#define GK_DRIVER_H

#include <cuda.h>

/* The device ordinals of a process the runtime handles: 0..63, so that a set
 * of devices fits one uint64_t (peer.h). Here, at the bottom, so that every
 * part can size its per-device tables without including placement. */
#define GK_MAX_DEVICES 64

/* cuda.h maps the plain name to _v2; the table needs both symbols apart. */
#undef cuGetProcAddress

struct gk_driver {
#define GK_OWN(name, params, args) CUresult(*name) params;
#define GK_GATED(name, params, args) CUresult(*name) params;
#define GK_REAL(name) __typeof__(&name) name;
#include "core/driver/hooks.def"
};

extern struct gk_driver gk_real;
extern int gk_driver_state; /* 0 not loaded, 1 loaded, -1 failed */

int gk_driver_load_slow(void);

/* Make sure the table is loaded (cheap after the first call). 0 or -ENOENT. */
static inline int gk_driver_ensure(void)
{
	if (__builtin_expect(__atomic_load_n(&gk_driver_state, __ATOMIC_ACQUIRE) == 1, 1))
		return 0;
	return gk_driver_load_slow();
}

/*
 * The calling thread's stream-capture interaction mode set to MODE; the one
 * it had is returned. The runtime's own threads run relaxed: while the
 * program captures a stream in the global mode, a call the driver counts as
 * unsafe (cuMemHostAlloc of staging memory, a synchronisation) from any
 * thread that is not relaxed invalidates the program's capture. A driver
 * without the call, or before cuInit: nothing, and MODE back.
 */
CUstreamCaptureMode gk_driver_capture_mode(CUstreamCaptureMode mode);

/* The same, to relaxed: the first line of every runtime thread that calls
 * the driver. */
static inline void gk_driver_relax(void)
{
	gk_driver_capture_mode(CU_STREAM_CAPTURE_MODE_RELAXED);
}

/* glibc's dlsym, behind the one libgpuckpt exports. */
typedef void *(*gk_dlsym_fn)(void *handle, const char *symbol);
gk_dlsym_fn gk_glibc_dlsym(void);
void *gk_real_dlsym(void *handle, const char *symbol);

/*
 * Report a failed driver call: "op: object: call failed: CUDA_ERROR_X (text)".
 * Returns 0 for CUDA_SUCCESS, else a negative errno (-ENOMEM for out-of-memory).
 */
int gk_cu_check(CUresult r, const char *call, const char *op, const char *object);

/* The name of a CUresult, for messages. */
const char *gk_cu_name(CUresult r);

/*
 * 1 when r is a sticky error: one after which, cuda.h says, "any further CUDA
 * work will return the same error" (a kernel faulted, trapped, timed out).
 * The program's context is broken for good: no checkpoint of it is possible.
 */
int gk_cu_broken(CUresult r);

#endif
