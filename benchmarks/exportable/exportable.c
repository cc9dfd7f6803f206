/*
 * exportable - what it costs to create device memory exportable as a POSIX
 * file descriptor (cuMemCreate with requestedHandleTypes set), as the
 * runtime's placement does for every segment with GPUCKPT_CUDA_IPC=1 so
 * that legacy CUDA IPC of any block can be served (runtime/core/README.md,
 * "Legacy CUDA IPC"). Against the same without a handle type, in
 * alternating rounds on one GPU:
 *
 *   - create, reserve, map, set access (and the reverse) of one allocation
 *     of 2 MiB, 64 MiB and 1 GiB: microseconds, median of --rounds;
 *   - how many 2 MiB allocations can exist at once, up to --count;
 *   - a device memset of 1 GiB into each kind: GB/s, median.
 *
 * One markdown table on stdout. The driver API alone (no gpuckpt).
 *
 *   exportable [--rounds N] [--count N] [--device D]
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB ((size_t)1024 * 1024)

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void check(CUresult r, const char *what)
{
	const char *s = NULL;

	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorName(r, &s);
	fprintf(stderr, "exportable: %s: %s\n", what, s ? s : "?");
	exit(1);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct kind {
	const char *name;
	CUmemAllocationHandleType type;
};

static CUmemAllocationProp prop_of(int dev, const struct kind *k)
{
	CUmemAllocationProp p;

	memset(&p, 0, sizeof(p));
	p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = dev;
	p.requestedHandleTypes = k->type;
	return p;
}

/* One allocation's life: seconds to set it up and to take it down. */
static void life(int dev, const struct kind *k, size_t size, double *up, double *down,
		 double *gbs)
{
	CUmemAllocationProp p = prop_of(dev, k);
	CUmemAccessDesc a = {{CU_MEM_LOCATION_TYPE_DEVICE, dev}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CUmemGenericAllocationHandle h;
	CUdeviceptr va;
	double t0 = now(), t1;

	check(cuMemCreate(&h, size, &p, 0), "cuMemCreate");
	check(cuMemAddressReserve(&va, size, 0, 0, 0), "cuMemAddressReserve");
	check(cuMemMap(va, size, 0, h, 0), "cuMemMap");
	check(cuMemSetAccess(va, size, &a, 1), "cuMemSetAccess");
	*up = now() - t0;
	if (gbs) {
		check(cuMemsetD8(va, 1, size), "cuMemsetD8"); /* first touch, not timed */
		check(cuCtxSynchronize(), "cuCtxSynchronize");
		t1 = now();
		check(cuMemsetD8(va, 2, size), "cuMemsetD8");
		check(cuCtxSynchronize(), "cuCtxSynchronize");
		*gbs = (double)size / (now() - t1) / 1e9;
	}
	t0 = now();
	check(cuMemUnmap(va, size), "cuMemUnmap");
	check(cuMemRelease(h), "cuMemRelease");
	check(cuMemAddressFree(va, size), "cuMemAddressFree");
	*down = now() - t0;
}

/* How many allocations of `size` exist at once, up to max. */
static int how_many(int dev, const struct kind *k, size_t size, int max)
{
	CUmemAllocationProp p = prop_of(dev, k);
	CUmemGenericAllocationHandle *h = calloc((size_t)max, sizeof(*h));
	int n = 0;

	if (!h)
		return -1;
	while (n < max && cuMemCreate(&h[n], size, &p, 0) == CUDA_SUCCESS)
		n++;
	for (int i = 0; i < n; i++)
		cuMemRelease(h[i]);
	free(h);
	return n;
}

int main(int argc, char **argv)
{
	static const struct kind kinds[2] = {{"plain", CU_MEM_HANDLE_TYPE_NONE},
					     {"exportable (POSIX fd)", CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR}};
	static const size_t sizes[3] = {2 * MIB, 64 * MIB, 1024 * MIB};
	int rounds = 21, count = 16384, dev = 0;
	double up[2][3][64], down[2][3][64], gbs[2][64];
	char name[128];
	CUcontext ctx;
	CUdevice d;
	int drv = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--count"))
			count = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--device"))
			dev = atoi(argv[i + 1]);
	}
	if (rounds < 1 || rounds > 64 || count < 1) {
		fprintf(stderr, "usage: exportable [--rounds 1..64] [--count N] [--device D]\n");
		return 2;
	}
	check(cuInit(0), "cuInit");
	check(cuDeviceGet(&d, dev), "cuDeviceGet");
	check(cuDevicePrimaryCtxRetain(&ctx, d), "cuDevicePrimaryCtxRetain");
	check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	cuDeviceGetName(name, sizeof(name), d);
	cuDriverGetVersion(&drv);
	/* Alternating: the kinds see the same state of the device. */
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < 2; k++)
			for (int s = 0; s < 3; s++)
				life(dev, &kinds[k], sizes[s], &up[k][s][r], &down[k][s][r],
				     s == 2 ? &gbs[k][r] : NULL);
	printf("# Exportable device memory: %s, driver API %d, %d alternating rounds\n\n", name, drv,
	       rounds);
	printf("| | %s | %s | ratio |\n| --- | ---: | ---: | ---: |\n", kinds[0].name, kinds[1].name);
	for (int s = 0; s < 3; s++) {
		double a = median(up[0][s], rounds) * 1e6, b = median(up[1][s], rounds) * 1e6;
		double c = median(down[0][s], rounds) * 1e6, e = median(down[1][s], rounds) * 1e6;

		printf("| %zu MiB: create, reserve, map, set access (us, median) | %.1f | %.1f | %.2f |\n",
		       sizes[s] / MIB, a, b, b / a);
		printf("| %zu MiB: unmap, release, free (us, median) | %.1f | %.1f | %.2f |\n",
		       sizes[s] / MIB, c, e, e / c);
	}
	{
		double a = median(gbs[0], rounds), b = median(gbs[1], rounds);

		printf("| 1 GiB memset (GB/s, median) | %.1f | %.1f | %.2f |\n", a, b, b / a);
	}
	printf("| 2 MiB allocations at once (up to %d) | %d | %d | |\n", count,
	       how_many(dev, &kinds[0], 2 * MIB, count), how_many(dev, &kinds[1], 2 * MIB, count));
	return 0;
}
