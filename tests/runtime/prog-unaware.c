/* A CUDA program that knows nothing of gpuckpt: on SIGTERM it must end as it
 * would without gpuckpt, with one line saying no checkpoint was taken.
 * With --managed it also holds managed memory, and with --pool-export it has
 * tried to share pool memory with another process: transparent mode must
 * refuse to checkpoint either (tests/transparent/agent.sh). */
#include <cuda.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int managed = argc > 1 && !strcmp(argv[1], "--managed");
	int pool_export = argc > 1 && !strcmp(argv[1], "--pool-export");
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d, m;

	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&d, 1024) ||
	    (managed && cuMemAllocManaged(&m, 1 << 20, CU_MEM_ATTACH_GLOBAL))) {
		fprintf(stderr, "prog-unaware: CUDA setup failed\n");
		return 1;
	}
	if (pool_export) {
		CUmemPoolPtrExportData data;

		/* Whether the export worked or not, the process may now share
		 * memory with another: the runtime must not let it be dumped. */
		cuMemPoolExportPointer(&data, d);
	}
	printf("prog-unaware: ready\n");
	fflush(stdout);
	for (int i = 0; i < 600; i++)
		usleep(100000);
	return 0;
}
