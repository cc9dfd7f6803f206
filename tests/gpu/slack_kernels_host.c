/*
 * slack_kernels_host.c - slack_kernels.cu for the host-memory driver
 * stand-in (tests/cuda-standin): the same update, and the same reads outside
 * the array, each asked for first, so that a read where no device memory is
 * mapped faults the launch as it would on a GPU (CUDA_ERROR_ILLEGAL_ADDRESS,
 * sticky) instead of crashing the process.
 */
#include <stddef.h>

#include "standin_kernel.h"

STANDIN_KERNEL(slack_step, sizeof(float *), sizeof(long), sizeof(long), sizeof(long), sizeof(int))
{
	float *p = STANDIN_ARG(float *, 0);
	long n = STANDIN_ARG(long, 1);
	long before = STANDIN_ARG(long, 2);
	long after = STANDIN_ARG(long, 3);
	int step = STANDIN_ARG(int, 4);
	volatile const float *q = p;

	if (n <= 0)
		return;
	if (before > 0) {
		const float *at = p - before / (long)sizeof(float);

		if (!STANDIN_CAN_READ(at, sizeof(float)))
			return;
		(void)q[-(before / (long)sizeof(float))];
	}
	if (after > 0) {
		const float *at = p + n - 1 + after / (long)sizeof(float);

		if (!STANDIN_CAN_READ(at, sizeof(float)))
			return;
		(void)q[n - 1 + after / (long)sizeof(float)];
	}
	if (!STANDIN_CAN_WRITE(p, (size_t)n * sizeof(float)))
		return;
	for (long i = 0; i < n; i++)
		p[i] = p[i] * 0.75f + (float)((i * 7 + step) & 15) * 0.25f;
}
