/*
 * prog-dtoh - a CUDA program (driver API, no gpuckpt API) whose second
 * thread copies device memory to the host in a tight loop, checking each
 * copy, while its first thread does host work: prog-dtoh STEPS. It prints
 * "step K" every 20 ms and "copies N" at the end; a failed or wrong copy
 * prints "cuMemcpyDtoH failed: ERROR" or "cuMemcpyDtoH read V, want 7" and
 * exits 1. In transparent mode the runtime releases device memory before the
 * driver's checkpoint: a device-to-host copy that passed the runtime's gate
 * then read memory that was no longer there (tests/shepherd/agent.sh).
 */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static CUdeviceptr dev;
static CUcontext ctx;
static volatile unsigned long copies;

static void *reader(void *arg)
{
	unsigned buf[1024];

	(void)arg;
	cuCtxSetCurrent(ctx);
	for (;;) {
		CUresult r = cuMemcpyDtoH(buf, dev, sizeof(buf));
		const char *name = "?";

		if (r != CUDA_SUCCESS) {
			cuGetErrorName(r, &name);
			printf("cuMemcpyDtoH failed: %s\n", name);
			fflush(stdout);
			exit(1);
		}
		if (buf[0] != 7 || buf[1023] != 7) {
			printf("cuMemcpyDtoH read %u, want 7\n", buf[0] != 7 ? buf[0] : buf[1023]);
			fflush(stdout);
			exit(1);
		}
		copies++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 200;
	CUdevice d;
	pthread_t t;

	if (cuInit(0) || cuDeviceGet(&d, 0) || cuDevicePrimaryCtxRetain(&ctx, d) || cuCtxSetCurrent(ctx) ||
	    cuMemAlloc(&dev, 4 << 20) || cuMemsetD32(dev, 7, (4 << 20) / 4) ||
	    cuCtxSynchronize()) {
		printf("CUDA set-up failed\n");
		return 2;
	}
	if (pthread_create(&t, NULL, reader, NULL))
		return 2;
	for (int i = 1; i <= steps; i++) {
		printf("step %d\n", i);
		fflush(stdout);
		usleep(20000);
	}
	printf("copies %lu\n", copies);
	return 0;
}
