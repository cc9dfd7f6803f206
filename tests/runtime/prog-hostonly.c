/*
 * A checkpoint-aware program that used the GPU, but holds no device memory
 * when it is checkpointed, and allocates none before its first checkpoint
 * point when it is restarted (streamcluster, between its phases, does so):
 * the restore must load its host state all the same.
 *   prog-hostonly save      checkpoint at step 7, then exit 0
 *   prog-hostonly resume    print the step the first point restored
 */
#include "gpuckpt.h"

#include <cuda.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d;
	long step = 0;
	int rc;

	if (argc != 2 || (strcmp(argv[1], "save") && strcmp(argv[1], "resume")))
		return 2;
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx)) {
		fprintf(stderr, "prog-hostonly: CUDA setup failed\n");
		return 1;
	}
	gpuckpt_protect("step", &step, sizeof(step));
	if (!strcmp(argv[1], "save")) {
		if (cuMemAlloc(&d, 4096) || cuMemFree(d))
			return 1;
		step = 7;
		gpuckpt_request();
		rc = gpuckpt_point(step);
		printf("prog-hostonly: saved: %d\n", rc);
		return rc == GPUCKPT_SAVED ? 0 : 1;
	}
	rc = gpuckpt_point(step);
	printf("prog-hostonly: resumed: %d step %ld\n", rc, step);
	return rc == GPUCKPT_RESTORED && step == 7 ? 0 : 1;
}
