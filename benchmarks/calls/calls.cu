/*
 * calls - what one CUDA call costs, with and without the runtime preloaded
 * (benchmarks/calls/run compares the two; README.md).
 *
 *	calls [N]
 *
 * Times N calls of each kind the runtime interposes or that a loop typically
 * makes, on one stream, after a warm-up, and prints "RESULT <kind> <ns per
 * call>" for each:
 *	launch      an empty kernel launch (held back while a checkpoint is written)
 *	h2d_async   cudaMemcpyAsync of 64 bytes from pinned host memory to the
 *	            device (held back likewise)
 *	d2h_async   cudaMemcpyAsync of 64 bytes back (not held back)
 *	alloc_free  cudaMalloc + cudaFree of 1 MiB (placed by the runtime)
 *	sync        cudaStreamSynchronize of an idle stream
 * Launches and copies are timed up to the end of the last one
 * (a synchronize), so what is measured is the issue rate the program sees.
 * Like the Rodinia programs it is not linked against libgpuckpt.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

__global__ void calls_empty(void)
{
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void result(const char *kind, double secs, long n)
{
	printf("RESULT %s %.1f\n", kind, secs / (double)n * 1e9);
	fflush(stdout);
}

static void run(long n, cudaStream_t s, void *host, void *dev, int report)
{
	double t0;

	t0 = now();
	for (long i = 0; i < n; i++)
		calls_empty<<<1, 32, 0, s>>>();
	CK(cudaStreamSynchronize(s));
	if (report)
		result("launch", now() - t0, n);

	t0 = now();
	for (long i = 0; i < n; i++)
		CK(cudaMemcpyAsync(dev, host, 64, cudaMemcpyHostToDevice, s));
	CK(cudaStreamSynchronize(s));
	if (report)
		result("h2d_async", now() - t0, n);

	t0 = now();
	for (long i = 0; i < n; i++)
		CK(cudaMemcpyAsync(host, dev, 64, cudaMemcpyDeviceToHost, s));
	CK(cudaStreamSynchronize(s));
	if (report)
		result("d2h_async", now() - t0, n);

	t0 = now();
	for (long i = 0; i < n / 10; i++) {
		void *p;

		CK(cudaMalloc(&p, 1 << 20));
		CK(cudaFree(p));
	}
	if (report)
		result("alloc_free", now() - t0, n / 10);

	t0 = now();
	for (long i = 0; i < n; i++)
		CK(cudaStreamSynchronize(s));
	if (report)
		result("sync", now() - t0, n);
}

int main(int argc, char **argv)
{
	static const char usage[] = "usage: calls [N]   (N calls of each kind, default 200000)\n";
	long n = 200000;
	cudaStream_t s;
	void *host, *dev;

	bench_start("calls", &argc, argv, usage);
	if (argc > 2)
		bench_die("expected at most one argument, N (see --help)");
	if (argc == 2)
		n = bench_parse_long(argv[1], "N", 10, 100000000);
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CK(cudaMallocHost(&host, 64));
	CK(cudaMalloc(&dev, 64));
	run(n / 10, s, host, dev, 0); /* warm-up: module load, first allocations */
	run(n, s, host, dev, 1);
	CK(cudaFree(dev));
	CK(cudaFreeHost(host));
	CK(cudaStreamDestroy(s));
	return 0;
}
