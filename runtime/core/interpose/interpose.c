/*
 * interpose.c - the entry points libgpuckpt exports in the driver's name, and
 * the two doors through which programs find driver functions without the
 * dynamic linker: dlsym() on libcuda (the CUDA runtime, static or shared, and
 * programs that dlopen the driver) and cuGetProcAddress() (what the CUDA
 * runtime uses for everything after the first symbol). Both doors hand out the
 * interposed function wherever the real one would have been handed out.
 */
#include "config.h"

#include "core/driver/driver.h"
#include "core/interpose/gate.h"
#include "core/interpose/handlers.h"
#include "core/state/runtime.h"
#include "core/control/start.h"
#include "common/export.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

/* Prototypes first: most _ptsz/_ptds variants have no declaration in cuda.h. */
#define GK_OWN(name, params, args) GK_EXPORT CUresult name params;
#define GK_GATED(name, params, args) GK_EXPORT CUresult name params;
#include "core/driver/hooks.def"

#define GK_OWN(name, params, args)                                                                 \
	CUresult name params                                                                       \
	{                                                                                          \
		return gk_on_##name args;                                                          \
	}

/* Work that writes device memory waits while a checkpoint is being written. */
#define GK_GATED(name, params, args)                                                               \
	CUresult name params                                                                       \
	{                                                                                          \
		CUresult r;                                                                        \
		if (gk_driver_ensure() < 0)                                                        \
			return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;                               \
		if (!gk_real.name)                                                                 \
			return CUDA_ERROR_NOT_SUPPORTED;                                           \
		if (!gk_enabled())                                                                 \
			return gk_real.name args;                                                  \
		gk_gate_enter();                                                                   \
		r = gk_real.name args;                                                             \
		gk_gate_leave();                                                                   \
		return r;                                                                          \
	}
#include "core/driver/hooks.def"

/* What each real entry point is replaced with when handed to the program:
 * its place in gk_real and the function above that interposes it. */
static const struct {
	size_t offset;
	void *hook;
} hooks[] = {
#define GK_OWN(name, params, args) {offsetof(struct gk_driver, name), (void *)name},
#define GK_GATED(name, params, args) {offsetof(struct gk_driver, name), (void *)name},
#include "core/driver/hooks.def"
};

/* The interposed function standing for a real driver entry point, or p itself. */
static void *hook_for(void *p)
{
	if (!p)
		return p;
	if (__atomic_load_n(&gk_driver_state, __ATOMIC_ACQUIRE) == 0) {
		/* Only a pointer into a loaded driver can need a hook: never load
		 * the driver for a process that merely looks up "cu..." symbols. */
		void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);

		if (!h)
			return p;
		dlclose(h);
	}
	if (gk_driver_ensure() < 0)
		return p;
	/* Entry points the driver lacks are NULL in gk_real, and p is not. */
	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		void *real;

		memcpy(&real, (const char *)&gk_real + hooks[i].offset, sizeof(real));
		if (real == p)
			return hooks[i].hook;
	}
	return p;
}

CUresult gk_on_cuInit(unsigned int Flags)
{
	CUresult r;

	if (gk_driver_ensure() < 0)
		return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
	r = gk_real.cuInit(Flags);
	if (r == CUDA_SUCCESS)
		__atomic_store_n(&gk_rt.cuda_inited, 1, __ATOMIC_RELEASE);
	if (r == CUDA_SUCCESS && gk_enabled())
		gk_runtime_start();
	return r;
}

CUresult gk_on_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
				   cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
	CUresult r;

	if (gk_driver_ensure() < 0)
		return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
	r = gk_real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, symbolStatus);
	if (r == CUDA_SUCCESS && pfn)
		*pfn = hook_for(*pfn);
	return r;
}

CUresult gk_on_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	CUresult r;

	if (gk_driver_ensure() < 0)
		return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
	if (!gk_real.cuGetProcAddress)
		return CUDA_ERROR_NOT_SUPPORTED;
	r = gk_real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
	if (r == CUDA_SUCCESS && pfn)
		*pfn = hook_for(*pfn);
	return r;
}

/*
 * dlsym: driver symbols ("cu...") are answered by the real dlsym and swapped
 * for their hook; everything else goes to glibc as a tail call, so that glibc
 * still sees the program's return address: dlsym(RTLD_NEXT, ...) is resolved
 * relative to its caller, and a normal call from here would make every such
 * lookup relative to libgpuckpt instead.
 */
__attribute__((optimize("O2", "omit-frame-pointer", "optimize-sibling-calls"),
	       no_sanitize_address, no_sanitize_undefined)) GK_EXPORT void *
dlsym(void *handle, const char *symbol)
{
	gk_dlsym_fn real = gk_glibc_dlsym();

	if (symbol[0] == 'c' && symbol[1] == 'u' && handle != RTLD_NEXT) {
		void *p = real(handle, symbol);

		return p && gk_driver_state >= 0 ? hook_for(p) : p;
	}
	return real(handle, symbol);
}
