/*
 * kernels.c - interruptible long kernels, the runtime's side
 * (include/gpuckpt_kernel.h; the checks inside a kernel are
 * gpuckpt_kernel.cuh).
 *
 * The stop word (state/kstop.c) is made here at the first marked kernel:
 * mapped pinned host memory, which a kernel reads without a copy and a
 * signal handler writes with a plain store. Every place that asks for a
 * checkpoint raises it (gk_due_checkpoint); the checkpoint point lowers it.
 *
 * A kernel's record is device memory allocated through the interposed
 * cuMemAlloc, like the program's own: placed, captured by every checkpoint,
 * re-created at the same address by a restart's setup and loaded by its
 * first point. Its status word says whether a run of the kernel is
 * unfinished: gpuckpt_kernel_run then resumes it instead of starting over.
 *
 * The run: launch, wait for the stream; blocks (threads, in loop mode) that
 * returned early were counted in the record; while any did, the checkpoint
 * is taken (gpuckpt_point: the usual pipeline, which drains, writes, and for
 * SIGTERM ends the process) and the kernel launched again.
 */
#include "config.h"

#include "include/gpuckpt.h"
#include "include/gpuckpt_kernel.h"
#include "core/control/coord.h"
#include "core/driver/driver.h"
#include "core/state/kstop.h"
#include "core/state/runtime.h"
#include "common/export.h"
#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gpuckpt_kernel_record {
	char name[64];
	void *function;
	CUdeviceptr dev;
	size_t bytes;
	unsigned long long nblocks, npos, total;
};

static CUdeviceptr stop_dev;
static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The stop word, once per process, in the current context. */
static int stop_word_make(void)
{
	void *p = NULL;
	CUdeviceptr d = 0;
	CUresult r;
	int ret = 0;

	pthread_mutex_lock(&stop_lock);
	if (__atomic_load_n(&gk_kstop_word, __ATOMIC_ACQUIRE))
		goto out;
	if (!gk_real.cuMemHostAlloc || !gk_real.cuMemHostGetDevicePointer_v2) {
		gk_error("kernel: the driver lacks cuMemHostAlloc or cuMemHostGetDevicePointer: no "
			 "stop word for interruptible kernels");
		ret = -ENOTSUP;
		goto out;
	}
	r = gk_real.cuMemHostAlloc(&p, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE);
	if (r != CUDA_SUCCESS) {
		ret = gk_cu_check(r, "cuMemHostAlloc", "kernel", "the stop word");
		goto out;
	}
	r = gk_real.cuMemHostGetDevicePointer_v2(&d, p, 0);
	if (r != CUDA_SUCCESS) {
		ret = gk_cu_check(r, "cuMemHostGetDevicePointer", "kernel", "the stop word");
		if (gk_real.cuMemFreeHost)
			gk_real.cuMemFreeHost(p);
		goto out;
	}
	memset(p, 0, 64);
	stop_dev = d;
	{
		CUcontext cur = NULL;

		gk_kstop_ctx = gk_real.cuCtxGetCurrent(&cur) == CUDA_SUCCESS ? (void *)cur : NULL;
	}
	__atomic_store_n(&gk_kstop_word, (unsigned int *)p, __ATOMIC_RELEASE);
	/* Asked for before the word existed: raised now. */
	if (__atomic_load_n(&gk_rt.due, __ATOMIC_ACQUIRE) & GK_DUE_CHECKPOINT)
		__atomic_store_n((unsigned int *)p, 1u, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&stop_lock);
	return ret;
}

static int valid_name(const char *name)
{
	size_t n;

	if (!name || !*name)
		return 0;
	n = strlen(name);
	if (n > 63)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (name[i] < 0x21 || name[i] > 0x7e)
			return 0;
	return 1;
}

static const char *unit(const struct gpuckpt_kernel_record *rec)
{
	return rec->npos ? "threads" : "blocks";
}

GK_EXPORT int gpuckpt_kernel_create(const char *name, void *function, unsigned long long nblocks,
				    unsigned long long npos, gpuckpt_kernel_record **out)
{
	struct gpuckpt_kernel_record *rec;
	unsigned long long words;
	CUresult r;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!valid_name(name)) {
		gk_error("kernel: '%s': a marked kernel's name is 1-63 printable characters, no space",
			 name ? name : "(null)");
		return -EINVAL;
	}
	if (!nblocks || nblocks > (1ull << 40) || npos > (1ull << 36)) {
		gk_error("kernel: %s: %llu blocks, %llu loop positions: out of range (1 to 2^40 blocks, "
			 "at most 2^36 positions)",
			 name, nblocks, npos);
		return -EINVAL;
	}
	if (!gk_enabled())
		return -ENOTSUP;
	if (gk_driver_ensure() < 0)
		return -ENOENT;
	ret = stop_word_make();
	if (ret < 0)
		return ret;
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	snprintf(rec->name, sizeof(rec->name), "%s", name);
	rec->function = function;
	rec->nblocks = nblocks;
	rec->npos = npos;
	rec->total = npos ? npos : nblocks;
	words = GPUCKPT_KREC_HEADER + (npos ? npos : (nblocks + 63) / 64);
	rec->bytes = (size_t)words * 8;
	/* Through the interposed entry point: placed and checkpointed like
	 * the program's own memory, and re-created at its address on restart. */
	r = cuMemAlloc(&rec->dev, rec->bytes);
	if (r != CUDA_SUCCESS) {
		ret = gk_cu_check(r, "cuMemAlloc", "kernel", rec->name);
		free(rec);
		return ret;
	}
	ret = gk_kstop_mark(function, rec->name);
	if (ret < 0)
		gk_warn("kernel: %s: too many marked kernels: a cooperative launch of it is not "
			"refused",
			rec->name);
	gk_info("kernel: %s marked interruptible: %llu %s, a record of %zu bytes at 0x%llx", rec->name,
		rec->total, unit(rec), rec->bytes, (unsigned long long)rec->dev);
	*out = rec;
	return 0;
}

GK_EXPORT void gpuckpt_kernel_destroy(gpuckpt_kernel_record *rec)
{
	if (!rec)
		return;
	gk_kstop_unmark(rec->function);
	if (rec->dev)
		cuMemFree(rec->dev);
	free(rec);
}

static int read_header(const struct gpuckpt_kernel_record *rec, unsigned long long h[4])
{
	CUresult r;

	if (!gk_real.cuMemcpyDtoH_v2)
		return -ENOTSUP;
	r = gk_real.cuMemcpyDtoH_v2(h, rec->dev, 4 * sizeof(h[0]));
	return gk_cu_check(r, "cuMemcpyDtoH", "kernel", rec->name);
}

/* The program's own route for writes to device memory (gated), in the
 * order of the kernel's stream: a launch on it sees them, whatever kind of
 * stream it is (a copy on the legacy stream would not be ordered before a
 * kernel on a non-blocking one). The source is pageable: staged before the
 * call returns. */
static int write_words(const struct gpuckpt_kernel_record *rec, CUstream s, unsigned idx,
		       const unsigned long long *v, unsigned n)
{
	CUresult r = cuMemcpyHtoDAsync(rec->dev + idx * 8, v, n * 8, s);

	return gk_cu_check(r, "cuMemcpyHtoDAsync", "kernel", rec->name);
}

/* A fresh run: the record cleared, the status and total set. */
static int start_fresh(const struct gpuckpt_kernel_record *rec, CUstream s)
{
	unsigned long long h[4] = {GPUCKPT_KREC_RUNNING, 0, 0, rec->total};
	CUresult r = cuMemsetD8Async(rec->dev, 0, rec->bytes, s);

	if (r != CUDA_SUCCESS)
		return gk_cu_check(r, "cuMemsetD8Async", "kernel", rec->name);
	return write_words(rec, s, 0, h, 4);
}

GK_EXPORT int gpuckpt_kernel_run(gpuckpt_kernel_record *rec, long step, void *stream,
				 gpuckpt_launch_fn launch, void *arg)
{
	unsigned long long h[4], zero = 0, idle = 0;
	struct gpuckpt_kernel k;
	int ret, launches = 0, interruptions = 0;
	double t0 = now();

	if (!rec || !launch)
		return -EINVAL;
	ret = read_header(rec, h);
	if (ret < 0)
		return ret;
	if (h[GPUCKPT_KREC_STATUS] == GPUCKPT_KREC_RUNNING) {
		gk_notice("kernel %s: resumed from its record: %llu of %llu %s executed before the "
			  "checkpoint; only the rest runs",
			  rec->name, h[GPUCKPT_KREC_EXECUTED], h[GPUCKPT_KREC_TOTAL], unit(rec));
	} else {
		ret = start_fresh(rec, (CUstream)stream);
		if (ret < 0)
			return ret;
	}
	memset(&k, 0, sizeof(k));
	k.state = (unsigned long long *)(uintptr_t)rec->dev;
	k.nblocks = rec->nblocks;
	k.npos = rec->npos;
	/* A step that agrees its checkpoints (gpuckpt_mpi.h) takes them at its
	 * agreed point, in every task at once: never here. */
	if (!__atomic_load_n(&gk_kstop_word, __ATOMIC_ACQUIRE) && stop_word_make() < 0)
		gk_warn("kernel %s: no stop word: it runs to its end", rec->name);
	if (!gk_coord_attached())
		k.stop = (const volatile unsigned int *)(uintptr_t)stop_dev;
	else
		gk_info("kernel %s: not interruptible in a step that agrees its checkpoints; it "
			"runs to its end",
			rec->name);
	for (;;) {
		CUresult r;
		double tl;

		ret = write_words(rec, (CUstream)stream, GPUCKPT_KREC_INTERRUPTED, &zero, 1);
		if (ret < 0)
			return ret;
		tl = now();
		ret = launch(arg, k);
		launches++;
		if (ret < 0) {
			gk_error("kernel %s: the program's launch failed: %s", rec->name,
				 strerror(-ret));
			return ret;
		}
		r = gk_real.cuStreamSynchronize((CUstream)stream);
		if (r != CUDA_SUCCESS)
			return gk_cu_check(r, "cuStreamSynchronize", "kernel", rec->name);
		ret = read_header(rec, h);
		if (ret < 0)
			return ret;
		if (!h[GPUCKPT_KREC_INTERRUPTED])
			break;
		interruptions++;
		{
			int64_t raised = __atomic_load_n(&gk_kstop_raised_ns, __ATOMIC_ACQUIRE);
			double since = raised ? now() - (double)raised * 1e-9 : 0;

			gk_notice("kernel %s: interrupted for a checkpoint %.3f s after it was asked for "
				  "(launch %d, %.3f s long): %llu of %llu %s executed, %llu returned "
				  "early",
				  rec->name, since, launches, now() - tl, h[GPUCKPT_KREC_EXECUTED],
				  h[GPUCKPT_KREC_TOTAL], unit(rec), h[GPUCKPT_KREC_INTERRUPTED]);
		}
		/* The checkpoint (after SIGTERM the process ends in there). A
		 * restart whose first point is this one loads the record here. */
		gpuckpt_point(step);
		gk_kstop_clear();
	}
	/* Finished: the next run starts fresh. Waited for, so that the next
	 * run's first look at the record (a copy on the legacy stream) sees it. */
	ret = write_words(rec, (CUstream)stream, GPUCKPT_KREC_STATUS, &idle, 1);
	if (ret < 0)
		return ret;
	{
		CUresult r = gk_real.cuStreamSynchronize((CUstream)stream);

		if (r != CUDA_SUCCESS)
			return gk_cu_check(r, "cuStreamSynchronize", "kernel", rec->name);
	}
	if (interruptions || launches > 1)
		gk_info("kernel %s: finished: %d launches, %d interrupted, %.3f s", rec->name, launches,
			interruptions, now() - t0);
	return 0;
}
