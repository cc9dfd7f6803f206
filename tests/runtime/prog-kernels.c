/*
 * prog-kernels.c - a checkpoint-aware driver-API program with one long
 * kernel marked interruptible (gpuckpt_kernel.h), for the stand-in
 * (kernels.sh; its kernels are kern_kernels_host.c).
 *
 *   prog-kernels --module SO [--mode blocks|loop] [--steps S] [--blocks B]
 *                [--threads T] [--rounds R] [--delay-us D]
 *                [--coop] [--drain] [--unmarked [--host-ms MS]] [--via-kernel]
 *
 * Each step: gpuckpt_point(step), then the marked kernel through
 * gpuckpt_kernel_run. At the end: "done: checksum=0x... expected=0x...",
 * the expected sum computed on the host. --coop: after the setup, a
 * cooperative launch of the marked kernel and of an unmarked function
 * (each call's result printed), then exit. --drain: the kernel launched
 * once directly (not through the helper: it never stops), then SIGTERM; the
 * exit checkpoint's drain waits for the kernel.
 * --unmarked: the same kernel never marked (no record, a handle that never
 * stops), in the common pattern of a program that overlaps host work with
 * its kernel: each step launches it, works on the host for MS ms (default
 * 0), then reaches gpuckpt_point(step + 1), "after the kernel of step", and
 * waits for the kernel. A checkpoint asked for in that host work drains at
 * the point: it waits for the whole kernel (tests/slurm/e2e-kernels.sh).
 * --via-kernel: as the CUDA runtime (cudart 12 and later) does, the module is
 * also loaded as a library and every launch passes the kernel's CUkernel
 * (cuLibraryGetKernel) cast to CUfunction, while the kernel is marked with
 * its CUfunction in the context (cuKernelGetFunction, what
 * cudaGetFuncBySymbol gives gpuckpt_kernel_function): the runtime must know
 * the two handles for one kernel.
 */
#include "gpuckpt.h"
#include "gpuckpt_kernel.h"

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>

struct args {
	CUfunction fn;	   /* what the kernel is marked with */
	CUfunction launch; /* what cuLaunchKernel gets: fn, or the CUkernel (--via-kernel) */
	CUdeviceptr out;
	long step, delay, rounds;
	unsigned blocks, threads;
	int loop;
};

static uint32_t add_of(uint64_t i, long step, long round)
{
	return (uint32_t)((i * 7 + (uint64_t)step * 13 + (uint64_t)round * 3) % 101) + 1;
}

static int launch(void *arg, struct gpuckpt_kernel k)
{
	struct args *a = arg;
	void *p5[] = {&a->out, &a->step, &a->delay, &a->rounds, &k};
	void *p4[] = {&a->out, &a->step, &a->delay, &k};
	CUresult r;

	r = cuLaunchKernel(a->launch, a->blocks, 1, 1, a->threads, 1, 1, 0, NULL, a->loop ? p5 : p4,
			   NULL);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "prog-kernels: cuLaunchKernel: %d\n", (int)r);
		return -5;
	}
	printf("step %ld: launched\n", a->step);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	const char *module = NULL;
	struct args a = {.blocks = 64, .threads = 32, .rounds = 40, .delay = 20000};
	long steps = 3, step = 0;
	int coop = 0, drain = 0, unmarked = 0, via_kernel = 0;
	long host_ms = 0;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUlibrary lib = NULL;
	gpuckpt_kernel_record *rec;
	uint32_t *host;
	size_t n;
	uint64_t sum = 0, want = 0;
	int ret;

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--coop")) {
			coop = 1;
			continue;
		}
		if (!strcmp(o, "--drain")) {
			drain = 1;
			continue;
		}
		if (!strcmp(o, "--unmarked")) {
			unmarked = 1;
			continue;
		}
		if (!strcmp(o, "--via-kernel")) {
			via_kernel = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "prog-kernels: %s: needs a value\n", o);
			return 2;
		}
		i++;
		if (!strcmp(o, "--module"))
			module = v;
		else if (!strcmp(o, "--mode"))
			a.loop = !strcmp(v, "loop");
		else if (!strcmp(o, "--steps"))
			steps = atol(v);
		else if (!strcmp(o, "--blocks"))
			a.blocks = (unsigned)atol(v);
		else if (!strcmp(o, "--threads"))
			a.threads = (unsigned)atol(v);
		else if (!strcmp(o, "--rounds"))
			a.rounds = atol(v);
		else if (!strcmp(o, "--delay-us"))
			a.delay = atol(v);
		else if (!strcmp(o, "--host-ms"))
			host_ms = atol(v);
		else {
			fprintf(stderr, "prog-kernels: %s: unknown option\n", o);
			return 2;
		}
	}
	if (!module) {
		fprintf(stderr, "prog-kernels: --module is required\n");
		return 2;
	}
	n = (size_t)a.blocks * a.threads;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuModuleLoad(&mod, module) ||
	    cuModuleGetFunction(&a.fn, mod, a.loop ? "kmc_loop" : "kmc_blocks") ||
	    cuMemAlloc(&a.out, n * sizeof(uint32_t)) || cuMemsetD8(a.out, 0, n * sizeof(uint32_t))) {
		fprintf(stderr, "prog-kernels: CUDA setup failed\n");
		return 1;
	}
	a.launch = a.fn;
	if (via_kernel) {
		CUkernel kern;

		if (cuLibraryLoadFromFile(&lib, module, NULL, NULL, 0, NULL, NULL, 0) ||
		    cuLibraryGetKernel(&kern, lib, a.loop ? "kmc_loop" : "kmc_blocks") ||
		    cuKernelGetFunction(&a.fn, kern)) {
			fprintf(stderr, "prog-kernels: CUDA library setup failed\n");
			return 1;
		}
		a.launch = (CUfunction)kern;
	}
	gpuckpt_protect("step", &step, sizeof(step));
	if (unmarked) {
		struct gpuckpt_kernel none;
		struct timespec hw = {host_ms / 1000, (host_ms % 1000) * 1000000};

		memset(&none, 0, sizeof(none));
		if (gpuckpt_point(step) == GPUCKPT_RESTORED)
			printf("resumed from step %ld\n", step);
		while (step < steps) {
			a.step = step;
			if (launch(&a, none) < 0)
				return 1;
			/* Host work while the kernel runs. */
			if (host_ms > 0)
				nanosleep(&hw, NULL);
			step++;
			/* After the kernel of step - 1: a checkpoint drains it. */
			if (gpuckpt_point(step) == GPUCKPT_RESTORED)
				printf("resumed from step %ld\n", step);
			if (cuCtxSynchronize()) {
				fprintf(stderr, "prog-kernels: cuCtxSynchronize failed\n");
				return 1;
			}
			printf("step %ld: done\n", step - 1);
			fflush(stdout);
		}
		rec = NULL;
		goto result;
	}
	ret = gpuckpt_kernel_create("kmc", a.fn, a.blocks, a.loop ? n : 0, &rec);
	if (ret < 0) {
		fprintf(stderr, "prog-kernels: gpuckpt_kernel_create: %s\n", gpuckpt_strerror(ret));
		return 1;
	}
	if (coop) {
		void *params[] = {&a.out, &a.step, &a.delay, &a.rounds, NULL};
		CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE, .value.cooperative = 1};
		CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1,
				      .blockDimY = 1, .blockDimZ = 1, .attrs = &attr, .numAttrs = 1};
		CUfunction other;
		CUkernel kother;

		printf("cooperative marked: %d\n",
		       (int)cuLaunchCooperativeKernel(a.launch, 1, 1, 1, 1, 1, 1, 0, NULL, params));
		printf("cooperative-attribute marked: %d\n",
		       (int)cuLaunchKernelEx(&cfg, a.launch, params, NULL));
		if (lib &&
		    cuLibraryGetKernel(&kother, lib, a.loop ? "kmc_blocks" : "kmc_loop") == 0)
			printf("cooperative unmarked: %d\n",
			       (int)cuLaunchCooperativeKernel((CUfunction)kother, 1, 1, 1, 1, 1, 1,
							      0, NULL, params));
		else if (!lib &&
			 cuModuleGetFunction(&other, mod, a.loop ? "kmc_blocks" : "kmc_loop") == 0)
			printf("cooperative unmarked: %d\n",
			       (int)cuLaunchCooperativeKernel(other, 1, 1, 1, 1, 1, 1, 0, NULL,
							      params));
		return 0;
	}
	if (drain) {
		struct gpuckpt_kernel none;

		memset(&none, 0, sizeof(none));
		gpuckpt_point(0);
		if (launch(&a, none) < 0)
			return 1;
		/* An exit checkpoint waits for whatever the runtime writes in
		 * the background, then drains: the kernel runs to its end. */
		raise(SIGTERM);
		ret = gpuckpt_point(1);
		printf("drain: point returned %d\n", ret);
		return 0;
	}
	for (; step < steps; step++) {
		ret = gpuckpt_point(step);
		if (ret == GPUCKPT_RESTORED)
			printf("resumed from step %ld\n", step);
		a.step = step;
		ret = gpuckpt_kernel_run(rec, step, NULL, launch, &a);
		if (ret < 0) {
			fprintf(stderr, "prog-kernels: gpuckpt_kernel_run: %s\n", gpuckpt_strerror(ret));
			return 1;
		}
		printf("step %ld: done\n", step);
		fflush(stdout);
	}
result:
	host = calloc(n, sizeof(*host));
	if (!host || cuMemcpyDtoH(host, a.out, n * sizeof(*host))) {
		fprintf(stderr, "prog-kernels: reading the result failed\n");
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t w = 0;

		for (long s = 0; s < steps; s++)
			for (long r = 0; r < (a.loop ? a.rounds : 1); r++)
				w += add_of(i, s, r);
		sum = sum * 31 + host[i];
		want = want * 31 + w;
	}
	printf("done: checksum=0x%016llx expected=0x%016llx\n", (unsigned long long)sum,
	       (unsigned long long)want);
	if (rec)
		gpuckpt_kernel_destroy(rec);
	free(host);
	return sum == want ? 0 : 3;
}
