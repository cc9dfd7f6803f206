/*
 * kstop.c - the stop word of interruptible kernels and the notes of launches
 * (kstop.h).
 */
#include "config.h"

#include "core/state/kstop.h"
#include "core/state/runtime.h"

#include "core/driver/driver.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

unsigned int *gk_kstop_word;
void *gk_kstop_ctx;
int64_t gk_kstop_raised_ns;

static int64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void gk_kstop_raise(void)
{
	unsigned int *w = __atomic_load_n(&gk_kstop_word, __ATOMIC_ACQUIRE);

	__atomic_store_n(&gk_kstop_raised_ns, now_ns(), __ATOMIC_RELEASE);
	if (w)
		__atomic_store_n(w, 1u, __ATOMIC_RELEASE);
}

void gk_kstop_context_gone(void *ctx)
{
	if (ctx && ctx == gk_kstop_ctx) {
		__atomic_store_n(&gk_kstop_word, NULL, __ATOMIC_RELEASE);
		gk_kstop_ctx = NULL;
	}
}

void gk_kstop_clear(void)
{
	unsigned int *w = __atomic_load_n(&gk_kstop_word, __ATOMIC_ACQUIRE);

	if (w)
		__atomic_store_n(w, 0u, __ATOMIC_RELEASE);
}

void gk_due_checkpoint(void)
{
	__atomic_or_fetch(&gk_rt.due, GK_DUE_CHECKPOINT, __ATOMIC_RELEASE);
	gk_kstop_raise();
}

/* Few marked kernels in a program: a small table, searched linearly. */
#define MARKED_MAX 256
static void *marked[MARKED_MAX];
static char marked_name[MARKED_MAX][64];
static int nmarked;
static pthread_mutex_t marked_lock = PTHREAD_MUTEX_INITIALIZER;

int gk_kstop_mark(void *function, const char *name)
{
	int ret = 0;

	if (!function)
		return 0;
	pthread_mutex_lock(&marked_lock);
	for (int i = 0; i < nmarked; i++)
		if (marked[i] == function)
			goto out;
	if (nmarked == MARKED_MAX) {
		ret = -ENOSPC;
	} else {
		snprintf(marked_name[nmarked], sizeof(marked_name[0]), "%s", name ? name : "");
		__atomic_store_n(&marked[nmarked++], function, __ATOMIC_RELEASE);
	}
out:
	pthread_mutex_unlock(&marked_lock);
	return ret;
}

void gk_kstop_unmark(void *function)
{
	pthread_mutex_lock(&marked_lock);
	for (int i = 0; i < nmarked; i++)
		if (marked[i] == function) {
			marked[i] = marked[--nmarked];
			memcpy(marked_name[i], marked_name[nmarked], sizeof(marked_name[0]));
			marked[nmarked] = NULL;
			break;
		}
	pthread_mutex_unlock(&marked_lock);
}

/* Whether function is in the table; its marked name into buf if it is. */
static int marked_find(void *function, char *buf, size_t len)
{
	int found = 0;

	pthread_mutex_lock(&marked_lock);
	for (int i = 0; i < nmarked && !found; i++)
		if (marked[i] == function) {
			found = 1;
			if (buf)
				snprintf(buf, len, "%s", marked_name[i]);
		}
	pthread_mutex_unlock(&marked_lock);
	return found;
}

/*
 * A launch handle may be a CUkernel, not a CUfunction: the CUDA runtime
 * (cudart 12 and later) loads its kernels as libraries and passes the
 * context-independent CUkernel (cuLibraryGetKernel), cast to CUfunction, to
 * cuLaunchKernel, cuLaunchKernelEx and cuLaunchCooperativeKernel, while
 * cudaGetFuncBySymbol (gpuckpt_kernel_function) gives the kernel's CUfunction
 * in the context, which is what gets marked. On an H200 with driver 580, a
 * cooperative launch of a marked kernel went through, and the drain named it
 * "kernel 0x...". The handles are told apart only here, for a cooperative
 * launch and the drain's messages, never on the plain launch path:
 * cuFuncGetName refuses a CUkernel (CUDA_ERROR_INVALID_HANDLE), and only
 * then is the handle taken for a CUkernel (cuKernelGetFunction,
 * cuKernelGetName). A driver without cuFuncGetName (before 12.3) cannot be
 * asked which kind a handle is: its CUkernels are not resolved.
 */
typedef CUresult (*func_get_name_fn)(const char **name, CUfunction f);
typedef CUresult (*kernel_get_function_fn)(CUfunction *f, CUkernel k);
typedef CUresult (*kernel_get_name_fn)(const char **name, CUkernel k);

static struct {
	func_get_name_fn func_get_name;		    /* CUDA 12.3 */
	kernel_get_function_fn kernel_get_function; /* CUDA 12.0 */
	kernel_get_name_fn kernel_get_name;	    /* CUDA 12.3 */
} names;
static pthread_once_t names_once = PTHREAD_ONCE_INIT;

/* Straight from the driver (not through the interposed names); it is loaded
 * by then, the program's launches went through it. */
static void names_look(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (!lib)
		return;
	names.func_get_name = (func_get_name_fn)gk_real_dlsym(lib, "cuFuncGetName");
	names.kernel_get_function =
	    (kernel_get_function_fn)gk_real_dlsym(lib, "cuKernelGetFunction");
	names.kernel_get_name = (kernel_get_name_fn)gk_real_dlsym(lib, "cuKernelGetName");
	dlclose(lib);
}

/* 1 when the driver says f is no CUfunction (then it may be a CUkernel). */
static int not_a_function(void *f, const char **name)
{
	pthread_once(&names_once, names_look);
	*name = NULL;
	if (!f || !names.func_get_name)
		return 0;
	return names.func_get_name(name, (CUfunction)f) != CUDA_SUCCESS;
}

/* The CUfunction of CUkernel k in the calling thread's context or, in a
 * thread without one (the drain's watcher), in the stop word's, where the
 * marked kernels were created. NULL if the driver says none. */
static void *kernel_function(void *k)
{
	CUfunction fn = NULL;
	CUcontext cur = NULL, ctx = (CUcontext)gk_kstop_ctx;

	if (!names.kernel_get_function)
		return NULL;
	if (names.kernel_get_function(&fn, (CUkernel)k) == CUDA_SUCCESS)
		return fn;
	if (ctx && gk_real.cuCtxGetCurrent && gk_real.cuCtxPushCurrent_v2 &&
	    gk_real.cuCtxPopCurrent_v2 && gk_real.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && !cur &&
	    gk_real.cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS) {
		if (names.kernel_get_function(&fn, (CUkernel)k) != CUDA_SUCCESS)
			fn = NULL;
		gk_real.cuCtxPopCurrent_v2(&cur);
		return fn;
	}
	return NULL;
}

int gk_kstop_marked(void *function)
{
	int n = __atomic_load_n(&nmarked, __ATOMIC_ACQUIRE);
	const char *name;
	void *fn;

	if (!function || !n)
		return 0;
	if (marked_find(function, NULL, 0))
		return 1;
	if (!not_a_function(function, &name))
		return 0;
	fn = kernel_function(function);
	return fn && marked_find(fn, NULL, 0);
}

const char *gk_kernel_name(void *function, char *buf, size_t len)
{
	const char *name = NULL;
	void *fn;

	buf[0] = 0;
	if (marked_find(function, buf, len) && buf[0])
		return buf;
	if (not_a_function(function, &name)) {
		/* A CUkernel: its marked name, else the driver's. */
		if (__atomic_load_n(&nmarked, __ATOMIC_ACQUIRE) &&
		    (fn = kernel_function(function)) && marked_find(fn, buf, len) && buf[0])
			return buf;
		if (!names.kernel_get_name ||
		    names.kernel_get_name(&name, (CUkernel)function) != CUDA_SUCCESS)
			name = NULL;
	}
	if (name)
		snprintf(buf, len, "%s", name);
	else
		snprintf(buf, len, "kernel %p", function);
	return buf;
}

static void *last_fn;
static int64_t last_ns;

void gk_launch_note(void *function)
{
	struct timespec t;

	/* On every launch: the coarse clock (a few ns, a few ms of
	 * resolution) is enough to say how long ago a kernel was launched. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
	__atomic_store_n(&last_fn, function, __ATOMIC_RELAXED);
	__atomic_store_n(&last_ns, (int64_t)t.tv_sec * 1000000000 + t.tv_nsec, __ATOMIC_RELAXED);
}

void *gk_launch_last(int64_t *when_ns)
{
	if (when_ns)
		*when_ns = __atomic_load_n(&last_ns, __ATOMIC_RELAXED);
	return __atomic_load_n(&last_fn, __ATOMIC_RELAXED);
}
