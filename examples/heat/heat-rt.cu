/*
 * heat-rt - 2-D heat diffusion through the CUDA runtime API, checkpointed by
 * gpuckpt when libgpuckpt.so is preloaded (see heat_app.h for the options and
 * the output, heat_kernels.h for the numerics).
 *
 * The same computation as heat-drv, reached the way most applications reach
 * the GPU: the CUDA runtime (linked statically, nvcc's default), which finds
 * the driver by itself through libcuda.so.1 and cuGetProcAddress. Streams,
 * an event between them, stream-ordered allocation of a per-step scratch
 * buffer, asynchronous copies, and the table of device pointers in device
 * memory that the kernels follow.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpuckpt_optional.h"
#include "heat_app.h"
/* The kernels themselves, so that both variants run exactly the same code. */
#include "heat_kernels.cu"

#define PROG "heat-rt"

struct heat_rt {
	cudaStream_t compute, diag;
	cudaEvent_t stepped;
	float *host_total; /* pinned: the diagnostics copy is asynchronous */
	float *grid[2];
	struct heat_pair *pairs;
	float *total;
	long n;
	char name[256];
	char uuid[HEAT_UUID_LEN];
};

/* Report a failed runtime call by its text, with the runtime's name for the error. */
static int rt_failed(cudaError_t e, const char *call)
{
	if (e == cudaSuccess)
		return 0;
	fprintf(stderr, "%s: %s failed: %s (%d: %s)\n", PROG, call, cudaGetErrorName(e), (int)e,
		cudaGetErrorString(e));
	return -EIO;
}

#define RT(call) rt_failed((call), #call)

static int rt_open(struct heat_rt *h)
{
	struct cudaDeviceProp prop;
	int count = 0;

	if (RT(cudaGetDeviceCount(&count)))
		return -EIO;
	if (count < 1) {
		fprintf(stderr, "%s: cudaGetDeviceCount: no CUDA device is visible\n", PROG);
		return -ENODEV;
	}
	if (RT(cudaSetDevice(0)) || RT(cudaGetDeviceProperties(&prop, 0)))
		return -EIO;
	snprintf(h->name, sizeof(h->name), "%s", prop.name);
	heat_format_uuid((const unsigned char *)prop.uuid.bytes, h->uuid);

	if (RT(cudaStreamCreateWithFlags(&h->compute, cudaStreamNonBlocking)))
		return -EIO;
	if (RT(cudaStreamCreateWithFlags(&h->diag, cudaStreamNonBlocking)))
		goto out_compute;
	if (RT(cudaEventCreateWithFlags(&h->stepped, cudaEventDisableTiming)))
		goto out_diag;
	if (RT(cudaMallocHost((void **)&h->host_total, sizeof(float))))
		goto out_event;
	return 0;

out_event:
	cudaEventDestroy(h->stepped);
out_diag:
	cudaStreamDestroy(h->diag);
out_compute:
	cudaStreamDestroy(h->compute);
	return -EIO;
}

static void rt_close(struct heat_rt *h)
{
	cudaFreeHost(h->host_total);
	cudaEventDestroy(h->stepped);
	cudaStreamDestroy(h->diag);
	cudaStreamDestroy(h->compute);
}

/*
 * The grids, the pointer table and the diagnostics value, always allocated in
 * this order: on a restart the runtime hands the same addresses back to the
 * same sequence of allocations.
 */
static int grids_alloc(struct heat_rt *h, long n)
{
	size_t bytes = (size_t)n * (size_t)n * sizeof(float);
	struct heat_pair table[2];
	float zero = 0.0f;
	float *init;

	h->n = n;
	init = (float *)malloc(bytes);
	if (!init) {
		fprintf(stderr, "%s: initial grid: out of host memory (%zu bytes)\n", PROG, bytes);
		return -ENOMEM;
	}
	heat_fill_initial(init, n);

	if (RT(cudaMalloc((void **)&h->grid[0], bytes)))
		goto out_init;
	if (RT(cudaMalloc((void **)&h->grid[1], bytes)))
		goto out_grid0;
	if (RT(cudaMalloc((void **)&h->pairs, sizeof(table))))
		goto out_grid1;
	if (RT(cudaMalloc((void **)&h->total, sizeof(float))))
		goto out_pairs;

	table[0].src = h->grid[0];
	table[0].dst = h->grid[1];
	table[1].src = h->grid[1];
	table[1].dst = h->grid[0];
	/* Both grids hold the boundary: steps never write it. */
	if (RT(cudaMemcpyAsync(h->grid[0], init, bytes, cudaMemcpyHostToDevice, h->compute)) ||
	    RT(cudaMemcpyAsync(h->grid[1], init, bytes, cudaMemcpyHostToDevice, h->compute)) ||
	    RT(cudaMemcpyAsync(h->pairs, table, sizeof(table), cudaMemcpyHostToDevice,
			       h->compute)) ||
	    RT(cudaMemcpyAsync(h->total, &zero, sizeof(zero), cudaMemcpyHostToDevice,
			       h->compute)) ||
	    RT(cudaStreamSynchronize(h->compute)))
		goto out_total;
	free(init);
	return 0;

out_total:
	cudaFree(h->total);
out_pairs:
	cudaFree(h->pairs);
out_grid1:
	cudaFree(h->grid[1]);
out_grid0:
	cudaFree(h->grid[0]);
out_init:
	free(init);
	return -EIO;
}

static void grids_free(struct heat_rt *h)
{
	cudaFree(h->total);
	cudaFree(h->pairs);
	cudaFree(h->grid[1]);
	cudaFree(h->grid[0]);
}

/*
 * After a restore the table in device memory is what the checkpoint held.
 * Say so plainly if it no longer points at this run's grids, rather than
 * letting the kernels fault or compute garbage.
 */
static int pairs_check(struct heat_rt *h, long step)
{
	struct heat_pair table[2];

	if (RT(cudaMemcpyAsync(table, h->pairs, sizeof(table), cudaMemcpyDeviceToHost,
			       h->compute)) ||
	    RT(cudaStreamSynchronize(h->compute)))
		return -EIO;
	for (int p = 0; p < 2; p++) {
		if (table[p].src != h->grid[p] || table[p].dst != h->grid[p ^ 1]) {
			fprintf(stderr,
				"%s: restore at step %ld: pointer table entry %d holds src=%p "
				"dst=%p, but the grids are at %p and %p\n",
				PROG, step, p, (void *)table[p].src, (void *)table[p].dst,
				(void *)h->grid[p], (void *)h->grid[p ^ 1]);
			return -EFAULT;
		}
	}
	return 0;
}

/* One time step, on the compute stream; the scratch buffer lives only for it. */
static int step_launch(struct heat_rt *h, long step)
{
	unsigned blocks2d = (unsigned)((h->n + HEAT_BLOCK - 1) / HEAT_BLOCK);
	unsigned blocks1d = (unsigned)((h->n + HEAT_ROW_BLOCK - 1) / HEAT_ROW_BLOCK);
	int parity = (int)(step & 1), n = (int)h->n;
	float *sums;

	if (RT(cudaMallocAsync((void **)&sums, (size_t)h->n * sizeof(float), h->compute)))
		return -EIO;
	heat_step<<<dim3(blocks2d, blocks2d), dim3(HEAT_BLOCK, HEAT_BLOCK), 0, h->compute>>>(
	    h->pairs, parity, n, HEAT_ALPHA);
	heat_row_sums<<<blocks1d, HEAT_ROW_BLOCK, 0, h->compute>>>(h->pairs, parity, n, sums);
	heat_total<<<1, 1, 0, h->compute>>>(sums, n, h->total);
	if (RT(cudaGetLastError())) {
		cudaFreeAsync(sums, h->compute);
		return -EIO;
	}
	if (RT(cudaFreeAsync(sums, h->compute)))
		return -EIO;
	return 0;
}

/*
 * The report: the total heat after the previous step, copied on the second
 * stream once the compute stream has got that far. A value that is not
 * finite means the grids are corrupt (a bad restore shows up here first).
 */
static int report(struct heat_rt *h, long step)
{
	if (RT(cudaEventRecord(h->stepped, h->compute)) ||
	    RT(cudaStreamWaitEvent(h->diag, h->stepped, 0)) ||
	    RT(cudaMemcpyAsync(h->host_total, h->total, sizeof(float), cudaMemcpyDeviceToHost,
			       h->diag)) ||
	    RT(cudaStreamSynchronize(h->diag)))
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

static int grid_checksum(struct heat_rt *h, long steps, uint64_t *sum)
{
	size_t bytes = (size_t)h->n * (size_t)h->n * sizeof(float);
	float *out = (float *)malloc(bytes);

	if (!out) {
		fprintf(stderr, "%s: checksum: out of host memory (%zu bytes)\n", PROG, bytes);
		return -ENOMEM;
	}
	if (RT(cudaMemcpyAsync(out, h->grid[steps & 1], bytes, cudaMemcpyDeviceToHost,
			       h->compute)) ||
	    RT(cudaStreamSynchronize(h->compute))) {
		free(out);
		return -EIO;
	}
	*sum = heat_fnv1a(out, bytes);
	free(out);
	return 0;
}

static int heat_run(struct heat_rt *h, const struct heat_opts *o)
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
	struct heat_rt h;
	struct heat_opts o;
	int rc;

	rc = heat_parse_opts(&o, PROG, 0, argc, argv);
	if (rc)
		return rc > 0 ? 0 : 2;

	memset(&h, 0, sizeof(h));
	if (rt_open(&h))
		return 1;
	rc = grids_alloc(&h, o.size);
	if (rc)
		goto out_rt;
	rc = heat_run(&h, &o);
	grids_free(&h);
out_rt:
	rt_close(&h);
	return rc ? 1 : 0;
}
