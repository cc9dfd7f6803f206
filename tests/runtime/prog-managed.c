/*
 * A checkpoint-aware program that holds managed memory: asked for a
 * checkpoint (SIGUSR1), it is written with the managed memory in it; once
 * the memory is freed, the next one is written without it
 * (tests/runtime/interpose.sh).
 */
#include "gpuckpt.h"

#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr m, d;
	long step = 0;
	int rc = 0;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&d, 1024) ||
	    cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL)) {
		fprintf(stderr, "prog-managed: CUDA setup failed\n");
		return 1;
	}
	gpuckpt_protect("step", &step, sizeof(step));
	raise(SIGUSR1);
	rc = gpuckpt_point(step);
	printf("prog-managed: point returned %d (%s)\n", rc, gpuckpt_strerror(rc));
	cuMemFree(m);
	gpuckpt_request();
	/* The first may still be written in the background: the request is
	 * then taken at a later point. */
	for (int i = 0; i < 500; i++) {
		struct timespec ts = {0, 10000000};

		rc = gpuckpt_point(++step);
		if (rc)
			break;
		nanosleep(&ts, NULL);
	}
	printf("prog-managed: after freeing it, point returned %d (%s)\n", rc, gpuckpt_strerror(rc));
	return 0;
}
