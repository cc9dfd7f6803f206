/*
 * kern_capture_host.c - prog-capture.c's kernel as a host function for the
 * CUDA driver stand-in (tests/cuda-standin); tests/gpu/gpu-capture.cu has
 * the same kernel for a GPU.
 *
 * add_step(buf, v, n): buf[i] += v * (i % 13 + 1) for every element. The
 * program adds a different v at each launch, so a launch run twice or never
 * changes the checksum.
 */
#include <stdint.h>

#include "standin_kernel.h"

STANDIN_KERNEL(add_step, sizeof(uint32_t *), sizeof(uint32_t), sizeof(uint32_t))
{
	uint32_t *buf = STANDIN_ARG(uint32_t *, 0);
	uint32_t v = STANDIN_ARG(uint32_t, 1);
	uint32_t n = STANDIN_ARG(uint32_t, 2);

	(void)launch;
	for (uint32_t i = 0; i < n; i++)
		buf[i] += v * (i % 13 + 1);
}
