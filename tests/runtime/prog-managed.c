/*
 * A checkpoint-aware program that holds managed memory, which gpuckpt cannot
 * checkpoint: asked for a checkpoint (SIGUSR1), it must be refused with a
 * message naming managed memory, and the program must go on.
 */
#include "gpuckpt.h"

#include <cuda.h>
#include <signal.h>
#include <stdio.h>
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
	rc = gpuckpt_point(++step);
	printf("prog-managed: after freeing it, point returned %d (%s)\n", rc, gpuckpt_strerror(rc));
	return 0;
}
