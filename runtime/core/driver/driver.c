#include "config.h"

#include "core/driver/driver.h"
#include "common/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

struct gk_driver gk_real;
int gk_driver_state;

/* Every entry point of hooks.def: its symbol and its place in gk_real. What
 * each is replaced with when handed to the program is interpose.c's, which
 * calls this module, never the other way round. */
static const struct {
	const char *symbol;
	size_t offset;
} entries[] = {
#define GK_OWN(name, params, args) {#name, offsetof(struct gk_driver, name)},
#define GK_GATED(name, params, args) {#name, offsetof(struct gk_driver, name)},
#define GK_REAL(name) {#name, offsetof(struct gk_driver, name)},
#include "core/driver/hooks.def"
};

#define NENTRIES (sizeof(entries) / sizeof(entries[0]))
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

gk_dlsym_fn gk_glibc_dlsym(void)
{
	static gk_dlsym_fn real;
	gk_dlsym_fn p = __atomic_load_n(&real, __ATOMIC_ACQUIRE);

	if (!p) {
		/* dlvsym is not interposed; ask for glibc's own dlsym by version. */
		void *v = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");

		if (!v)
			v = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
		p = (gk_dlsym_fn)v;
		__atomic_store_n(&real, p, __ATOMIC_RELEASE);
	}
	return p;
}

void *gk_real_dlsym(void *handle, const char *symbol)
{
	gk_dlsym_fn real = gk_glibc_dlsym();

	return real ? real(handle, symbol) : NULL;
}

int gk_driver_load_slow(void)
{
	void *lib;
	int ret = 0;

	pthread_mutex_lock(&load_lock);
	if (gk_driver_state != 0) {
		ret = gk_driver_state == 1 ? 0 : -ENOENT;
		goto out;
	}
	/* RTLD_NODELETE: the table must stay valid even if the program dlclose()s
	 * its own handle on the driver. */
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!lib) {
		gk_error("driver: libcuda.so.1: cannot load the CUDA driver: %s", dlerror());
		__atomic_store_n(&gk_driver_state, -1, __ATOMIC_RELEASE);
		ret = -ENOENT;
		goto out;
	}
	for (size_t i = 0; i < NENTRIES; i++) {
		void *p = gk_real_dlsym(lib, entries[i].symbol);

		/* Entry points a driver lacks stay NULL: their hooks then report
		 * CUDA_ERROR_NOT_SUPPORTED, and nothing hands them out. */
		memcpy((char *)&gk_real + entries[i].offset, &p, sizeof(p));
	}
	if (!gk_real.cuGetErrorName || !gk_real.cuCtxGetCurrent || !gk_real.cuMemAddressReserve ||
	    !gk_real.cuMemCreate || !gk_real.cuMemMap) {
		gk_error("driver: libcuda.so.1 lacks the virtual memory management API "
			 "(cuMemAddressReserve, cuMemCreate, cuMemMap): it is older than gpuckpt "
			 "supports");
		__atomic_store_n(&gk_driver_state, -1, __ATOMIC_RELEASE);
		ret = -ENOENT;
		goto out;
	}
	__atomic_store_n(&gk_driver_state, 1, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&load_lock);
	return ret;
}

const char *gk_cu_name(CUresult r)
{
	const char *name = NULL;

	if (gk_real.cuGetErrorName && gk_real.cuGetErrorName(r, &name) == CUDA_SUCCESS && name)
		return name;
	return "unknown CUDA error";
}

CUstreamCaptureMode gk_driver_capture_mode(CUstreamCaptureMode mode)
{
	CUstreamCaptureMode m = mode;

	if (gk_driver_ensure() == 0 && gk_real.cuThreadExchangeStreamCaptureMode &&
	    gk_real.cuThreadExchangeStreamCaptureMode(&m) == CUDA_SUCCESS)
		return m;
	return mode;
}

int gk_cu_broken(CUresult r)
{
	/* By number: CUDA_ERROR_CONTAINED and CUDA_ERROR_TENSOR_MEMORY_LEAK are
	 * newer than the oldest cuda.h gpuckpt builds with (12.0). */
	static const int sticky[] = {
	    700, /* CUDA_ERROR_ILLEGAL_ADDRESS */
	    702, /* CUDA_ERROR_LAUNCH_TIMEOUT */
	    710, /* CUDA_ERROR_ASSERT: "the context cannot be used anymore" */
	    714, /* CUDA_ERROR_HARDWARE_STACK_ERROR */
	    715, /* CUDA_ERROR_ILLEGAL_INSTRUCTION */
	    716, /* CUDA_ERROR_MISALIGNED_ADDRESS */
	    717, /* CUDA_ERROR_INVALID_ADDRESS_SPACE */
	    718, /* CUDA_ERROR_INVALID_PC */
	    719, /* CUDA_ERROR_LAUNCH_FAILED */
	    721, /* CUDA_ERROR_TENSOR_MEMORY_LEAK */
	    226, /* CUDA_ERROR_CONTAINED */
	    911, /* CUDA_ERROR_EXTERNAL_DEVICE */
	};

	for (size_t i = 0; i < sizeof(sticky) / sizeof(sticky[0]); i++)
		if ((int)r == sticky[i])
			return 1;
	return 0;
}

int gk_cu_check(CUresult r, const char *call, const char *op, const char *object)
{
	const char *text = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	if (gk_real.cuGetErrorString)
		gk_real.cuGetErrorString(r, &text);
	gk_error("%s: %s: %s failed: %s (%s)", op, object, call, gk_cu_name(r),
		 text ? text : "no description");
	return r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO;
}
