/*
 * bench-uvm - the checkpoint time of managed memory beside that of device
 * memory (benchmarks/managed/run). Holds --gib GiB of one kind (cudaMalloc or
 * cudaMallocManaged, in 1 GiB allocations), rewrites all of it with a kernel
 * before every checkpoint (managed memory prefetched to the GPU first, so that
 * it lies on the device as a GPU code's working set does), and times each
 * gpuckpt_point() that writes a checkpoint:
 *
 *   bench-uvm: kind=managed gib=4 rep=0 checkpoint_s=1.234 point=1 tries=1
 *
 * (point: what gpuckpt_point() returned, 1 = GPUCKPT_SAVED; tries: the points
 * asked until one took the checkpoint, the last one timed). A first, untimed
 * point comes before them.
 *
 * Run it with LD_PRELOAD=libgpuckpt.so and GPUCKPT_SNAPSHOT_MEMORY=off
 * (the point then returns once the checkpoint is committed) and
 * GPUCKPT_INCREMENTS=0 (every checkpoint whole).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpuckpt_optional.h"

extern "C" int gpuckpt_request(void) __attribute__((weak));

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "bench-uvm: %s: %s\n", #call, cudaGetErrorString(e_));     \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

__global__ void fill(uint64_t *p, size_t n, uint64_t seed)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = (i + seed) * 0x9e3779b97f4a7c15ULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	const char *kind = "device";
	int gib = 4, reps = 5;
	const size_t one = 1UL << 30, words = one / 8;
	uint64_t *buf[256];
	cudaMemLocation dev;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--kind"))
			kind = argv[i + 1];
		else if (!strcmp(argv[i], "--gib"))
			gib = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--reps"))
			reps = atoi(argv[i + 1]);
	}
	if (gib < 1 || gib > 256 || reps < 1 ||
	    (strcmp(kind, "device") && strcmp(kind, "managed"))) {
		fprintf(stderr, "usage: bench-uvm --kind device|managed --gib 1..256 --reps N\n");
		return 2;
	}
	if (!ckpt_present() || !gpuckpt_request)
		fprintf(stderr, "bench-uvm: the runtime is not preloaded: nothing is checkpointed\n");
	dev.type = cudaMemLocationTypeDevice;
	dev.id = 0;
	CK(cudaSetDevice(0));
	for (int g = 0; g < gib; g++) {
		if (!strcmp(kind, "managed"))
			CK(cudaMallocManaged((void **)&buf[g], one, cudaMemAttachGlobal));
		else
			CK(cudaMalloc((void **)&buf[g], one));
	}
	/* A program that has been running passed a point before: the runtime
	 * pins its copy threads' staging buffers there, in the background,
	 * once (as benchmarks/throughput's worker does), so that the timed
	 * checkpoints are not the first. */
	if (ckpt_point(0) < 0) {
		fprintf(stderr, "bench-uvm: the first gpuckpt_point failed\n");
		return 1;
	}
	for (int r = 0; r < reps; r++) {
		double t0, t = 0;
		int rc = 0, tries;

		for (int g = 0; g < gib; g++) {
			if (!strcmp(kind, "managed"))
				CK(cudaMemPrefetchAsync(buf[g], one, dev, 0, 0));
			fill<<<1024, 256>>>(buf[g], words, (uint64_t)r * 1000 + g);
			CK(cudaGetLastError());
		}
		CK(cudaDeviceSynchronize());
		/* Ask until one is taken: while memory is still being pinned
		 * for it the runtime answers GPUCKPT_NOTHING and takes it at a
		 * later point. The time of the point that took it. */
		for (tries = 0; tries < 6000 && ckpt_present() && gpuckpt_request; tries++) {
			if (gpuckpt_request() < 0) {
				fprintf(stderr, "bench-uvm: gpuckpt_request failed\n");
				return 1;
			}
			t0 = now();
			rc = ckpt_point(r + 1);
			t = now() - t0;
			if (rc != GPUCKPT_NOTHING)
				break;
			usleep(10000);
		}
		printf("bench-uvm: kind=%s gib=%d rep=%d checkpoint_s=%.3f point=%d tries=%d\n", kind,
		       gib, r, t, rc, tries + 1);
		fflush(stdout);
	}
	return 0;
}
