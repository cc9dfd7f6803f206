/*
 * route-rt - device allocations through the CUDA runtime, built twice: with
 * the static cudart (nvcc's default: the runtime is inside the program and
 * dlopen()s libcuda.so.1) and with the shared one (-cudart shared:
 * libcudart.so). Either way the driver is reached through cuGetProcAddress,
 * not through symbols the loader can bind, and gpuckpt must still place every
 * allocation. Prints each allocation as
 *	ROUTE: alloc WHAT 0xADDRESS
 * checks the data it moves through them, and ends with a checksum line.
 */
#include "gpu_test.h"

#ifndef ROUTE_NAME
#define ROUTE_NAME "route-rt"
#endif

__global__ void pattern(unsigned *d, long n)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = (unsigned)i * 2654435761u;
}

static void show(const char *what, const void *p)
{
	printf("%s: alloc %s 0x%llx\n", gt_prog, what, (unsigned long long)(uintptr_t)p);
}

int main(int argc, char **argv)
{
	const long n = (1L << 20) / sizeof(unsigned);
	const size_t bytes = n * sizeof(unsigned);
	unsigned *small, *async, *large, *host;
	int runtime = 0, driver = 0;
	cudaStream_t s;

	gt_prog = ROUTE_NAME;
	if (argc > 1) {
		printf("Usage: %s\nAllocate device memory through the CUDA runtime and print "
		       "where it went.\n",
		       gt_prog);
		return strcmp(argv[1], "--help") == 0 ? 0 : 2;
	}
	CK(cudaSetDevice(0));
	CK(cudaRuntimeGetVersion(&runtime));
	CK(cudaDriverGetVersion(&driver));
	printf("%s: cudart %d, driver %d\n", gt_prog, runtime, driver);
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	CK(cudaMalloc((void **)&small, bytes));
	show("cudaMalloc", small);
	CK(cudaMallocAsync((void **)&async, bytes, s));
	show("cudaMallocAsync", async);
	CK(cudaMalloc((void **)&large, 64UL << 20));
	show("cudaMalloc(64MiB)", large);

	pattern<<<gt_blocks(n), GT_BLOCK, 0, s>>>(small, n);
	CK_LAUNCH("pattern");
	CK(cudaMemcpyAsync(large + n, small, bytes, cudaMemcpyDeviceToDevice, s));
	CK(cudaMemcpyAsync(async, large + n, bytes, cudaMemcpyDeviceToDevice, s));
	host = (unsigned *)malloc(bytes);
	if (!host)
		gt_die("out of host memory");
	CK(cudaMemcpyAsync(host, async, bytes, cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	for (long i = 0; i < n; i++)
		if (host[i] != (unsigned)i * 2654435761u)
			gt_die("data check: element %ld is 0x%x after the copies, expected 0x%x", i,
			       host[i], (unsigned)i * 2654435761u);

	CK(cudaFreeAsync(async, s));
	CK(cudaStreamSynchronize(s));
	CK(cudaFree(large));
	CK(cudaFree(small));
	CK(cudaStreamDestroy(s));
	printf("%s: done: steps=0 checksum=0x%016llx\n", gt_prog,
	       (unsigned long long)gt_fnv1a(GT_FNV_INIT, host, bytes));
	free(host);
	return 0;
}
