/*
 * halo_kernels.cu - the halo example's CUDA kernels (halo_kernels.h), loaded
 * by halo-drv from halo_kernels.cubin; names unmangled for cuModuleGetFunction.
 * The stand-in's copy is halo_kernels_host.c.
 */
#include "halo_kernels.h"

extern "C" __global__ void halo_step(const float *src, float *dst, int rows, int n, int row0,
				     float alpha, float top)
{
	int i = blockIdx.y * blockDim.y + threadIdx.y + 1; /* local row, 1..rows */
	int j = blockIdx.x * blockDim.x + threadIdx.x;
	int g = row0 + i - 1;

	if (i > rows || j >= n)
		return;
	size_t k = (size_t)i * n + j;
	if (g == 0) {
		dst[k] = top;
		return;
	}
	if (g == n - 1 || j == 0 || j == n - 1) {
		dst[k] = src[k];
		return;
	}
	float c = src[k];

	dst[k] = c + alpha * (src[k - n] + src[k + n] + src[k - 1] + src[k + 1] - 4.0f * c);
}

extern "C" __global__ void halo_heat(const float *grid, int rows, int n, unsigned long long *heat)
{
	int i = blockIdx.y * blockDim.y + threadIdx.y + 1;
	int j = blockIdx.x * blockDim.x + threadIdx.x;

	if (i > rows || j >= n)
		return;
	long long q = __float2ll_rn(grid[(size_t)i * n + j] * 1024.0f);

	atomicAdd(heat, (unsigned long long)q);
}
