/*
 * prog-uvm-var - a checkpoint-aware program whose module holds a __managed__
 * variable, which gpuckpt does not save (tests/runtime/managed-var.sh; on a
 * GPU, tests/gpu/gpu-uvm-var.cu). It looks the variable up as the CUDA
 * runtime does when it loads the module (cuModuleGetGlobal), then every
 * step: a checkpoint point, "prog-uvm-var: step N", a kernel that bumps
 * the variable, a pause. --no-var: the lookup is skipped (the runtime never
 * hears of the variable: the control).
 *
 *	prog-uvm-var --module PATH [--steps N] [--delay-ms MS] [--no-var]
 */
#include "gpuckpt.h"

#include <cuda.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv)
{
	const char *module = NULL;
	long steps = 30, delay_ms = 100, step = 0;
	int var = 1, rc;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction bump;
	CUdeviceptr p = 0;
	size_t bytes = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--no-var"))
			var = 0;
		else if (i + 1 < argc && !strcmp(argv[i], "--module"))
			module = argv[++i];
		else if (i + 1 < argc && !strcmp(argv[i], "--steps"))
			steps = atol(argv[++i]);
		else if (i + 1 < argc && !strcmp(argv[i], "--delay-ms"))
			delay_ms = atol(argv[++i]);
		else {
			fprintf(stderr, "prog-uvm-var: %s: unknown option\n", argv[i]);
			return 2;
		}
	}
	if (!module) {
		fprintf(stderr, "prog-uvm-var: --module is required\n");
		return 2;
	}
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuModuleLoad(&mod, module) ||
	    cuModuleGetFunction(&bump, mod, "bump") ||
	    (var && cuModuleGetGlobal(&p, &bytes, mod, "counter"))) {
		fprintf(stderr, "prog-uvm-var: CUDA setup failed\n");
		return 1;
	}
	rc = gpuckpt_protect("step", &step, sizeof(step));
	if (rc < 0) {
		fprintf(stderr, "prog-uvm-var: gpuckpt_protect: %s\n", gpuckpt_strerror(rc));
		return 1;
	}
	for (; step < steps; step++) {
		void *params[] = {&step, NULL};
		struct timespec left = {delay_ms / 1000, (delay_ms % 1000) * 1000000L};

		rc = gpuckpt_point(step);
		if (rc < 0) {
			fprintf(stderr, "prog-uvm-var: gpuckpt_point(%ld): %s\n", step,
				gpuckpt_strerror(rc));
			return 1;
		}
		printf("prog-uvm-var: step %ld\n", step);
		fflush(stdout);
		if (cuLaunchKernel(bump, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL) ||
		    cuCtxSynchronize()) {
			fprintf(stderr, "prog-uvm-var: the kernel failed\n");
			return 1;
		}
		/* SIGUSR1 checkpoints and goes on: finish the pause. */
		while (nanosleep(&left, &left) == -1 && errno == EINTR)
			;
	}
	printf("prog-uvm-var: done: steps=%ld\n", steps);
	return 0;
}
