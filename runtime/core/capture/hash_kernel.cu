/*
 * hash_kernel.cu - the change keys' segment hashes on the GPU
 * (segment_hash.h has the definition and why). One block of GK_SEG_LANES
 * threads per segment: thread t folds words t, t + L, t + 2L, ... (adjacent
 * threads read adjacent 16-byte words, so a warp's loads are coalesced), the
 * lanes are then merged in the fixed tree. Built by nvcc into a fatbinary
 * that is embedded in libgpuckpt (runtime/core/local.mk); the runtime, plain
 * C over the driver API, loads it with cuModuleLoadData.
 *
 * desc[2 b] and desc[2 b + 1]: the address and length of segment b (the
 * address 16-byte aligned: chunks start at 512-byte aligned allocations plus
 * multiples of the chunk size); out[b] gets its hash, and zero[b] 1 when
 * every byte of the segment is zero, else 0: what lets a checkpoint record an
 * all-zero chunk without copying it (a preallocated pool that is mostly
 * unused). The zero test is an OR of the words each thread reads anyway and
 * one __syncthreads_or: no extra memory traffic.
 */
#include "core/capture/segment_hash.h"

#include <stdint.h>

/* Words a thread has in flight before folding them in, for memory-level
 * parallelism; folded in their order, so the result is the same. */
#define UNROLL 4

extern "C" __global__ void __launch_bounds__(GK_SEG_LANES)
gk_hash_segments_z(const unsigned long long *desc, unsigned long long *out, unsigned int *zero,
		   unsigned int nseg)
{
	__shared__ uint64_t acc[GK_SEG_LANES];
	const unsigned int b = blockIdx.x, t = threadIdx.x;
	const uint4 *w;
	uint64_t len, words, k, a = gk_sh_lane_init(t);
	unsigned int nz = 0; /* OR of every word this thread read */
	int any;

	if (b >= nseg)
		return;
	w = (const uint4 *)(uintptr_t)desc[2 * b];
	len = desc[2 * b + 1];
	words = len / 16;
	k = t;
	for (; k + (UNROLL - 1) * GK_SEG_LANES < words; k += UNROLL * GK_SEG_LANES) {
		uint4 v[UNROLL];

#pragma unroll
		for (int u = 0; u < UNROLL; u++)
			v[u] = __ldcs(w + k + (uint64_t)u * GK_SEG_LANES);
#pragma unroll
		for (int u = 0; u < UNROLL; u++) {
			a = gk_sh_round(a, (uint64_t)v[u].x | (uint64_t)v[u].y << 32,
					(uint64_t)v[u].z | (uint64_t)v[u].w << 32);
			nz |= v[u].x | v[u].y | v[u].z | v[u].w;
		}
	}
	for (; k < words; k += GK_SEG_LANES) {
		uint4 v = __ldcs(w + k);

		a = gk_sh_round(a, (uint64_t)v.x | (uint64_t)v.y << 32,
				(uint64_t)v.z | (uint64_t)v.w << 32);
		nz |= v.x | v.y | v.z | v.w;
	}
	/* The padded last word belongs to the lane whose turn it is. */
	if (len % 16 && t == words % GK_SEG_LANES) {
		const unsigned char *p = (const unsigned char *)(w + words);
		uint64_t rest = len % 16, lo = gk_sh_load_tail(p, rest),
			 hi = rest > 8 ? gk_sh_load_tail(p + 8, rest - 8) : 0;

		a = gk_sh_round(a, lo, hi);
		nz |= (lo | hi) != 0;
	}
	acc[t] = a;
	/* A barrier too: acc[] is complete after it. */
	any = __syncthreads_or(nz != 0);
	for (unsigned int s = 1; s < GK_SEG_LANES; s *= 2) {
		if (t % (2 * s) == 0)
			acc[t] = gk_sh_merge(acc[t], acc[t + s]);
		__syncthreads();
	}
	if (t == 0) {
		out[b] = gk_sh_segment_final(acc[0], len);
		zero[b] = !any;
	}
}
