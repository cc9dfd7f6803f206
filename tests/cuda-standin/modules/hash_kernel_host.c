/*
 * hash_kernel_host.c - the stand-in's copy of the runtime's change-key kernel
 * (runtime/core/capture/hash_kernel.cu), so that the runtime's logic around it - the
 * module loaded into the program's context, the segment table, the launch,
 * the keys folded from the segments' hashes - runs on machines without a GPU
 * (GPUCKPT_HASH_MODULE=.../hash_kernel_host.so). The arithmetic is the same
 * header (segment_hash.h), so the keys equal the GPU's: a test double for the
 * kernel's place in the runtime, never evidence that the kernel itself works.
 */
#include "standin_kernel.h"
#include "core/capture/segment_hash.h"

#include <stdint.h>

STANDIN_KERNEL(gk_hash_segments, sizeof(void *), sizeof(void *), sizeof(unsigned int))
{
	const uint64_t *desc = STANDIN_ARG(const uint64_t *, 0);
	uint64_t *out = STANDIN_ARG(uint64_t *, 1);
	unsigned int nseg = STANDIN_ARG(unsigned int, 2);

	/* One block per segment, as on the GPU; its threads are the lanes that
	 * gk_sh_segment_host walks side by side. */
	for (unsigned int b = 0; b < launch->grid.x && b < nseg; b++)
		out[b] = gk_sh_segment_host((const void *)(uintptr_t)desc[2 * b], desc[2 * b + 1]);
}
