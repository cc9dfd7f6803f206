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

int gk_kstop_marked(void *function)
{
	int n = __atomic_load_n(&nmarked, __ATOMIC_ACQUIRE);
	int found = 0;

	if (!function || !n)
		return 0;
	pthread_mutex_lock(&marked_lock);
	for (int i = 0; i < nmarked && !found; i++)
		found = marked[i] == function;
	pthread_mutex_unlock(&marked_lock);
	return found;
}

typedef CUresult (*func_get_name_fn)(const char **name, CUfunction f);

const char *gk_kernel_name(void *function, char *buf, size_t len)
{
	static func_get_name_fn get_name;
	static int looked;
	const char *name = NULL;

	buf[0] = 0;
	pthread_mutex_lock(&marked_lock);
	for (int i = 0; i < nmarked; i++)
		if (marked[i] == function && marked_name[i][0]) {
			snprintf(buf, len, "%s", marked_name[i]);
			break;
		}
	pthread_mutex_unlock(&marked_lock);
	if (buf[0])
		return buf;
	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

		if (lib) {
			get_name = (func_get_name_fn)gk_real_dlsym(lib, "cuFuncGetName");
			dlclose(lib);
		}
		__atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
	}
	if (function && get_name && get_name(&name, (CUfunction)function) == CUDA_SUCCESS && name)
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
