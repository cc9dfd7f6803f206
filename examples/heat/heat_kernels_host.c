/*
 * heat_kernels_host.c - the stand-in's copy of heat_kernels.cu, for running
 * heat-drv on a machine without a GPU: the host-memory CUDA driver stand-in
 * (tests/cuda-standin) loads this module instead of heat_kernels.cubin and
 * calls a kernel once per launch (standin_kernel.h). Same names, arguments and
 * numerics as the CUDA kernels; the results need not match them bit for bit
 * (the host compiler contracts floating point differently), only runs on the
 * same platform are compared.
 */
#include <stddef.h>

#include "standin_kernel.h"
#include "heat_kernels.h"

STANDIN_KERNEL(heat_step, sizeof(const struct heat_pair *), sizeof(int), sizeof(int), sizeof(float))
{
	const struct heat_pair *pairs = STANDIN_ARG(const struct heat_pair *, 0);
	int parity = STANDIN_ARG(int, 1);
	int n = STANDIN_ARG(int, 2);
	float alpha = STANDIN_ARG(float, 3);
	const float *src = pairs[parity].src;
	float *dst = pairs[parity].dst;

	/* One call stands for the whole launch: cover every interior cell. */
	for (int i = 1; i < n - 1; i++) {
		for (int j = 1; j < n - 1; j++) {
			size_t k = (size_t)i * n + j;
			float c = src[k];

			dst[k] = c + alpha * (src[k - n] + src[k + n] + src[k - 1] + src[k + 1] -
					      4.0f * c);
		}
	}
}

STANDIN_KERNEL(heat_row_sums, sizeof(const struct heat_pair *), sizeof(int), sizeof(int),
	       sizeof(float *))
{
	const struct heat_pair *pairs = STANDIN_ARG(const struct heat_pair *, 0);
	int parity = STANDIN_ARG(int, 1);
	int n = STANDIN_ARG(int, 2);
	float *sums = STANDIN_ARG(float *, 3);

	for (int i = 0; i < n; i++) {
		const float *row = pairs[parity].dst + (size_t)i * n;
		float s = 0.0f;

		for (int j = 0; j < n; j++)
			s += row[j];
		sums[i] = s;
	}
}

STANDIN_KERNEL(heat_total, sizeof(const float *), sizeof(int), sizeof(float *))
{
	const float *sums = STANDIN_ARG(const float *, 0);
	int n = STANDIN_ARG(int, 1);
	float *total = STANDIN_ARG(float *, 2);
	float s = 0.0f;

	for (int i = 0; i < n; i++)
		s += sums[i];
	*total = s;
}
