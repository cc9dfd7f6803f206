/*
 * heat_kernels.cu - the heat examples' CUDA kernels (see heat_kernels.h).
 * heat-drv loads them from heat_kernels.cubin with cuModuleLoad, so their
 * names are kept unmangled; heat-rt.cu compiles this file into itself, so both
 * variants run the very same numerics. The host-memory stand-in's copy is
 * heat_kernels_host.c.
 */
#include "heat_kernels.h"

extern "C" __global__ void heat_step(const struct heat_pair *pairs, int parity, int n, float alpha)
{
	int i = blockIdx.y * blockDim.y + threadIdx.y;
	int j = blockIdx.x * blockDim.x + threadIdx.x;

	/* The boundary is fixed: both grids start with it and no step writes it. */
	if (i < 1 || j < 1 || i >= n - 1 || j >= n - 1)
		return;

	const float *src = pairs[parity].src;
	float *dst = pairs[parity].dst;
	size_t k = (size_t)i * n + j;
	float c = src[k];

	dst[k] = c + alpha * (src[k - n] + src[k + n] + src[k - 1] + src[k + 1] - 4.0f * c);
}

extern "C" __global__ void heat_row_sums(const struct heat_pair *pairs, int parity, int n,
					 float *sums)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;

	const float *row = pairs[parity].dst + (size_t)i * n;
	float s = 0.0f;

	for (int j = 0; j < n; j++)
		s += row[j];
	sums[i] = s;
}

extern "C" __global__ void heat_total(const float *sums, int n, float *total)
{
	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;

	float s = 0.0f;

	/* One thread, in order: the value is the same on every run. */
	for (int i = 0; i < n; i++)
		s += sums[i];
	*total = s;
}
