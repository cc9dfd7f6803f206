/*
 * halo_kernels_host.c - the stand-in's copy of halo_kernels.cu, for running
 * halo-drv without a GPU on the host-memory CUDA driver stand-in
 * (tests/cuda-standin), which calls each kernel once per launch. Same names,
 * arguments and numerics.
 */
#include <math.h>
#include <stddef.h>

#include "standin_kernel.h"
#include "halo_kernels.h"

STANDIN_KERNEL(halo_step, sizeof(const float *), sizeof(float *), sizeof(int), sizeof(int),
	       sizeof(int), sizeof(float), sizeof(float))
{
	const float *src = STANDIN_ARG(const float *, 0);
	float *dst = STANDIN_ARG(float *, 1);
	int rows = STANDIN_ARG(int, 2);
	int n = STANDIN_ARG(int, 3);
	int row0 = STANDIN_ARG(int, 4);
	float alpha = STANDIN_ARG(float, 5);
	float top = STANDIN_ARG(float, 6);

	for (int i = 1; i <= rows; i++) {
		int g = row0 + i - 1;

		for (int j = 0; j < n; j++) {
			size_t k = (size_t)i * n + j;
			float c = src[k];

			if (g == 0)
				dst[k] = top;
			else if (g == n - 1 || j == 0 || j == n - 1)
				dst[k] = c;
			else
				dst[k] = c + alpha * (src[k - n] + src[k + n] + src[k - 1] +
						      src[k + 1] - 4.0f * c);
		}
	}
}

STANDIN_KERNEL(halo_heat, sizeof(const float *), sizeof(int), sizeof(int),
	       sizeof(unsigned long long *))
{
	const float *grid = STANDIN_ARG(const float *, 0);
	int rows = STANDIN_ARG(int, 1);
	int n = STANDIN_ARG(int, 2);
	unsigned long long *heat = STANDIN_ARG(unsigned long long *, 3);

	for (int i = 1; i <= rows; i++)
		for (int j = 0; j < n; j++)
			*heat += (unsigned long long)llrintf(grid[(size_t)i * n + j] * 1024.0f);
}
