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

/* Whether a segment is all zero: zero[b] of the GPU kernel. */
static unsigned int all_zero(const unsigned char *p, uint64_t len)
{
	for (uint64_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

STANDIN_KERNEL(gk_hash_segments_z, sizeof(void *), sizeof(void *), sizeof(void *),
	       sizeof(unsigned int))
{
	const uint64_t *desc = STANDIN_ARG(const uint64_t *, 0);
	uint64_t *out = STANDIN_ARG(uint64_t *, 1);
	unsigned int *zero = STANDIN_ARG(unsigned int *, 2);
	unsigned int nseg = STANDIN_ARG(unsigned int, 3);

	/* One block per segment, as on the GPU; its threads are the lanes that
	 * gk_sh_segment_host walks side by side. */
	for (unsigned int b = 0; b < launch->grid.x && b < nseg; b++) {
		const void *seg = (const void *)(uintptr_t)desc[2 * b];

		out[b] = gk_sh_segment_host(seg, desc[2 * b + 1]);
		zero[b] = all_zero(seg, desc[2 * b + 1]);
	}
}
