/* A CUDA program that knows nothing of gpuckpt: on SIGTERM it must end as it
 * would without gpuckpt, with one line saying no checkpoint was taken. */
#include <cuda.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&d, 1024)) {
		fprintf(stderr, "prog-unaware: CUDA setup failed\n");
		return 1;
	}
	printf("prog-unaware: ready\n");
	fflush(stdout);
	for (int i = 0; i < 600; i++)
		usleep(100000);
	return 0;
}
