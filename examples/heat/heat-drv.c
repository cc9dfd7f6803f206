/*
 * heat-drv - 2-D heat diffusion through the CUDA driver API, checkpointed by
 * gpuckpt when libgpuckpt.so is preloaded (see heat_app.h for the options and
 * the output, heat_kernels.h for the numerics).
 *
 * It exercises what a driver-API application brings to a checkpoint: a
 * module loaded from a file, two streams ordered by an event, stream-ordered
 * allocation (a scratch buffer allocated and freed on the stream every step),
 * pinned host memory, and a table of device pointers stored in device memory
 * that the kernels follow to find the grids. After a restore nothing rewrites
 * that table: it is only correct if every allocation came back at its old
 * address.
 *
 * It runs on a GPU with heat_kernels.cubin, and without one on the host-memory
 * driver stand-in (tests/cuda-standin) with heat_kernels_host.so.
 */
#include <cuda.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpuckpt_optional.h"
#include "heat_app.h"
#include "heat_kernels.h"

#define PROG "heat-drv"
#define HEAT_MODULE_NAME "heat_kernels.cubin"

struct heat_drv {
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction step_fn, rows_fn, total_fn;
	CUstream compute, diag;
	CUevent stepped;
	float *host_total; /* pinned: the diagnostics copy is asynchronous */
	CUdeviceptr grid[2];
	CUdeviceptr pairs; /* struct heat_pair[2] */
	CUdeviceptr total; /* float */
	long n;
	char name[256];
	char uuid[HEAT_UUID_LEN];
};

/* Report a failed driver call by its text, with the driver's name for the error. */
static int cu_failed(CUresult r, const char *call)
{
	const char *name = NULL, *desc = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	/* Either may fail itself when the driver is not initialised. */
	if (cuGetErrorName(r, &name) != CUDA_SUCCESS)
		name = NULL;
	if (cuGetErrorString(r, &desc) != CUDA_SUCCESS)
		desc = NULL;
	fprintf(stderr, "%s: %s failed: %s (%d: %s)\n", PROG, call, name ? name : "CUDA error",
		(int)r, desc ? desc : "no description");
	return -EIO;
}

#define CU(call) cu_failed((call), #call)

/* --module, else $HEAT_MODULE, else heat_kernels.cubin in the program's own folder. */
static int module_path(const struct heat_opts *o, char *buf, size_t len)
{
	const char *env = getenv("HEAT_MODULE");
	char exe[PATH_MAX];
	char *slash;
	ssize_t got;

	if (o->module || (env && env[0])) {
		const char *path = o->module ? o->module : env;

		if (strlen(path) >= len) {
			fprintf(stderr, "%s: module path too long: %s\n", PROG, path);
			return -ENAMETOOLONG;
		}
		strcpy(buf, path);
		return 0;
	}
	got = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (got < 0) {
		fprintf(stderr, "%s: /proc/self/exe: %s (pass --module)\n", PROG, strerror(errno));
		return -errno;
	}
	exe[got] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		slash[1] = '\0';
	else
		exe[0] = '\0';
	if ((size_t)snprintf(buf, len, "%s%s", exe, HEAT_MODULE_NAME) >= len) {
		fprintf(stderr, "%s: module path too long in %s\n", PROG, exe);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Device 0 of those visible, its context, the kernels, streams and event. */
static int drv_open(struct heat_drv *h, const char *module)
{
	char call[PATH_MAX + 32];
	CUuuid uuid;
	CUresult r;
	int count = 0;

	if (CU(cuInit(0)) || CU(cuDeviceGetCount(&count)))
		return -EIO;
	if (count < 1) {
		fprintf(stderr, "%s: cuDeviceGetCount: no CUDA device is visible\n", PROG);
		return -ENODEV;
	}
	if (CU(cuDeviceGet(&h->dev, 0)) ||
	    CU(cuDeviceGetName(h->name, (int)sizeof(h->name), h->dev)) ||
	    CU(cuDeviceGetUuid(&uuid, h->dev)))
		return -EIO;
	heat_format_uuid((const unsigned char *)uuid.bytes, h->uuid);

	if (CU(cuDevicePrimaryCtxRetain(&h->ctx, h->dev)))
		return -EIO;
	if (CU(cuCtxSetCurrent(h->ctx)))
		goto out_ctx;
	r = cuModuleLoad(&h->mod, module);
	if (r != CUDA_SUCCESS) {
		/* Name the file: a missing cubin is the usual mistake. */
		snprintf(call, sizeof(call), "cuModuleLoad(%s)", module);
		cu_failed(r, call);
		fprintf(stderr, "%s: build the kernels with nvcc, or pass --module PATH\n", PROG);
		goto out_ctx;
	}
	if (CU(cuModuleGetFunction(&h->step_fn, h->mod, HEAT_KERNEL_STEP)) ||
	    CU(cuModuleGetFunction(&h->rows_fn, h->mod, HEAT_KERNEL_ROW_SUMS)) ||
	    CU(cuModuleGetFunction(&h->total_fn, h->mod, HEAT_KERNEL_TOTAL)))
		goto out_module;
	if (CU(cuStreamCreate(&h->compute, CU_STREAM_NON_BLOCKING)))
		goto out_module;
	if (CU(cuStreamCreate(&h->diag, CU_STREAM_NON_BLOCKING)))
		goto out_compute;
	if (CU(cuEventCreate(&h->stepped, CU_EVENT_DISABLE_TIMING)))
		goto out_diag;
	if (CU(cuMemAllocHost((void **)&h->host_total, sizeof(float))))
		goto out_event;
	return 0;

out_event:
	cuEventDestroy(h->stepped);
out_diag:
	cuStreamDestroy(h->diag);
out_compute:
	cuStreamDestroy(h->compute);
out_module:
	cuModuleUnload(h->mod);
out_ctx:
	cuDevicePrimaryCtxRelease(h->dev);
	return -EIO;
}

static void drv_close(struct heat_drv *h)
{
	cuMemFreeHost(h->host_total);
	cuEventDestroy(h->stepped);
	cuStreamDestroy(h->diag);
	cuStreamDestroy(h->compute);
	cuModuleUnload(h->mod);
	cuDevicePrimaryCtxRelease(h->dev);
}

/*
 * The grids, the pointer table and the diagnostics value, always allocated in
 * this order: on a restart the runtime hands the same addresses back to the
 * same sequence of allocations.
 */
static int grids_alloc(struct heat_drv *h, long n)
{
	size_t bytes = (size_t)n * (size_t)n * sizeof(float);
	struct heat_pair table[2];
	float zero = 0.0f;
	float *init;

	h->n = n;
	init = malloc(bytes);
	if (!init) {
		fprintf(stderr, "%s: initial grid: out of host memory (%zu bytes)\n", PROG, bytes);
		return -ENOMEM;
	}
	heat_fill_initial(init, n);

	if (CU(cuMemAlloc(&h->grid[0], bytes)))
		goto out_init;
	if (CU(cuMemAlloc(&h->grid[1], bytes)))
		goto out_grid0;
	if (CU(cuMemAlloc(&h->pairs, sizeof(table))))
		goto out_grid1;
	if (CU(cuMemAlloc(&h->total, sizeof(float))))
		goto out_pairs;

	table[0].src = (float *)(uintptr_t)h->grid[0];
	table[0].dst = (float *)(uintptr_t)h->grid[1];
	table[1].src = (float *)(uintptr_t)h->grid[1];
	table[1].dst = (float *)(uintptr_t)h->grid[0];
	/*
	 * Both grids hold the boundary: steps never write it. The copies go on
	 * the compute stream: a synchronous copy from pageable memory may still
	 * be in flight when it returns, and that stream would not wait for it.
	 */
	if (CU(cuMemcpyHtoDAsync(h->grid[0], init, bytes, h->compute)) ||
	    CU(cuMemcpyHtoDAsync(h->grid[1], init, bytes, h->compute)) ||
	    CU(cuMemcpyHtoDAsync(h->pairs, table, sizeof(table), h->compute)) ||
	    CU(cuMemcpyHtoDAsync(h->total, &zero, sizeof(zero), h->compute)) ||
	    CU(cuStreamSynchronize(h->compute)))
		goto out_total;
	free(init);
	return 0;

out_total:
	/* Copies already queued may still read init. */
	cuStreamSynchronize(h->compute);
	cuMemFree(h->total);
out_pairs:
	cuMemFree(h->pairs);
out_grid1:
	cuMemFree(h->grid[1]);
out_grid0:
	cuMemFree(h->grid[0]);
out_init:
	free(init);
	return -EIO;
}

static void grids_free(struct heat_drv *h)
{
	cuMemFree(h->total);
	cuMemFree(h->pairs);
	cuMemFree(h->grid[1]);
	cuMemFree(h->grid[0]);
}

/*
 * After a restore the table in device memory is what the checkpoint held.
 * Say so plainly if it no longer points at this run's grids, rather than
 * letting the kernels fault or compute garbage.
 */
static int pairs_check(struct heat_drv *h, long step)
{
	struct heat_pair table[2];

	if (CU(cuMemcpyDtoHAsync(table, h->pairs, sizeof(table), h->compute)) ||
	    CU(cuStreamSynchronize(h->compute)))
		return -EIO;
	for (int p = 0; p < 2; p++) {
		uintptr_t src = (uintptr_t)table[p].src, dst = (uintptr_t)table[p].dst;

		if (src != h->grid[p] || dst != h->grid[p ^ 1]) {
			fprintf(stderr,
				"%s: restore at step %ld: pointer table entry %d holds src=0x%llx "
				"dst=0x%llx, but the grids are at 0x%llx and 0x%llx\n",
				PROG, step, p, (unsigned long long)src, (unsigned long long)dst,
				(unsigned long long)h->grid[p], (unsigned long long)h->grid[p ^ 1]);
			return -EFAULT;
		}
	}
	return 0;
}

/* One time step, on the compute stream; the scratch buffer lives only for it. */
static int step_launch(struct heat_drv *h, long step)
{
	unsigned blocks2d = (unsigned)((h->n + HEAT_BLOCK - 1) / HEAT_BLOCK);
	unsigned blocks1d = (unsigned)((h->n + HEAT_ROW_BLOCK - 1) / HEAT_ROW_BLOCK);
	int parity = (int)(step & 1), n = (int)h->n;
	float alpha = HEAT_ALPHA;
	CUdeviceptr sums;
	void *step_args[] = {&h->pairs, &parity, &n, &alpha};
	void *rows_args[] = {&h->pairs, &parity, &n, &sums};
	void *total_args[] = {&sums, &n, &h->total};

	if (CU(cuMemAllocAsync(&sums, (size_t)h->n * sizeof(float), h->compute)))
		return -EIO;
	if (CU(cuLaunchKernel(h->step_fn, blocks2d, blocks2d, 1, HEAT_BLOCK, HEAT_BLOCK, 1, 0,
			      h->compute, step_args, NULL)) ||
	    CU(cuLaunchKernel(h->rows_fn, blocks1d, 1, 1, HEAT_ROW_BLOCK, 1, 1, 0, h->compute,
			      rows_args, NULL)) ||
	    CU(cuLaunchKernel(h->total_fn, 1, 1, 1, 1, 1, 1, 0, h->compute, total_args, NULL))) {
		cuMemFreeAsync(sums, h->compute);
		return -EIO;
	}
	if (CU(cuMemFreeAsync(sums, h->compute)))
		return -EIO;
	return 0;
}

/*
 * The report: the total heat after the previous step, copied on the second
 * stream once the compute stream has got that far. A value that is not
 * finite means the grids are corrupt (a bad restore shows up here first).
 */
static int report(struct heat_drv *h, long step)
{
	if (CU(cuEventRecord(h->stepped, h->compute)) ||
	    CU(cuStreamWaitEvent(h->diag, h->stepped, 0)) ||
	    CU(cuMemcpyDtoHAsync(h->host_total, h->total, sizeof(float), h->diag)) ||
	    CU(cuStreamSynchronize(h->diag)))
		return -EIO;
	if (!isfinite(*h->host_total)) {
		fprintf(stderr, "%s: step %ld: the total heat is %f: the grids are corrupt\n", PROG,
			step, (double)*h->host_total);
		return -EINVAL;
	}
	printf("%s: step %ld\n", PROG, step);
	fflush(stdout);
	return 0;
}

static int grid_checksum(struct heat_drv *h, long steps, uint64_t *sum)
{
	size_t bytes = (size_t)h->n * (size_t)h->n * sizeof(float);
	float *out = malloc(bytes);

	if (!out) {
		fprintf(stderr, "%s: checksum: out of host memory (%zu bytes)\n", PROG, bytes);
		return -ENOMEM;
	}
	if (CU(cuMemcpyDtoHAsync(out, h->grid[steps & 1], bytes, h->compute)) ||
	    CU(cuStreamSynchronize(h->compute))) {
		free(out);
		return -EIO;
	}
	*sum = heat_fnv1a(out, bytes);
	free(out);
	return 0;
}

static int heat_run(struct heat_drv *h, const struct heat_opts *o)
{
	long step = 0, from = 0;
	uint64_t sum;
	int rc;

	rc = ckpt_protect("step", &step, sizeof(step));
	if (rc < 0) {
		fprintf(stderr, "%s: gpuckpt_protect(step): %s\n", PROG, ckpt_strerror(rc));
		return rc;
	}
	rc = ckpt_restarting(&from);
	if (rc < 0) {
		fprintf(stderr, "%s: gpuckpt_restarting: %s\n", PROG, ckpt_strerror(rc));
		goto out_unprotect;
	}
	if (rc > 0)
		printf("%s: resumed from step %ld on device=%s (%s)\n", PROG, from, h->name,
		       h->uuid);
	else
		printf("%s: fresh start: size=%ld steps=%ld device=%s (%s)\n", PROG, o->size,
		       o->steps, h->name, h->uuid);
	fflush(stdout);

	for (; step < o->steps; step++) {
		rc = ckpt_point(step);
		if (rc < 0) {
			fprintf(stderr, "%s: gpuckpt_point(%ld): %s\n", PROG, step,
				ckpt_strerror(rc));
			goto out_unprotect;
		}
		/* Nothing was lost (the runtime said why): the run goes on. */
		if (rc == GPUCKPT_NOT_SAVED)
			fprintf(stderr, "%s: step %ld: no checkpoint written; going on\n", PROG,
				step);
		if (rc == GPUCKPT_RESTORED) {
			rc = pairs_check(h, step);
			if (rc)
				goto out_unprotect;
		}
		if (o->report_every && step % o->report_every == 0) {
			rc = report(h, step);
			if (rc)
				goto out_unprotect;
		}
		rc = step_launch(h, step);
		if (rc)
			goto out_unprotect;
		if (o->delay_ms)
			heat_sleep_ms(o->delay_ms);
	}

	rc = grid_checksum(h, o->steps, &sum);
	if (rc)
		goto out_unprotect;
	printf("%s: done: steps=%ld checksum=0x%016llx\n", PROG, o->steps, (unsigned long long)sum);
	fflush(stdout);
out_unprotect:
	ckpt_unprotect("step");
	return rc;
}

int main(int argc, char **argv)
{
	struct heat_drv h;
	struct heat_opts o;
	char module[PATH_MAX];
	int rc;

	rc = heat_parse_opts(&o, PROG, 1, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;
	if (module_path(&o, module, sizeof(module)))
		return 1;

	memset(&h, 0, sizeof(h));
	if (drv_open(&h, module))
		return 1;
	rc = grids_alloc(&h, o.size);
	if (rc)
		goto out_drv;
	rc = heat_run(&h, &o);
	grids_free(&h);
out_drv:
	drv_close(&h);
	return rc ? 1 : 0;
}
