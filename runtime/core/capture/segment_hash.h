/*
 * segment_hash.h - the change key of a chunk of device memory: a 64-bit hash
 * that the GPU computes at memory bandwidth (hash_kernel.cu), so that a chunk
 * unchanged since the previous checkpoint is found without copying it over
 * PCIe. The same arithmetic runs on the host (changes.c, when the kernel
 * cannot be loaded, over copied data) and in the CUDA stand-in's host kernel,
 * so that keys from all three compare equal. Only keys of this definition
 * are ever compared; its number is GK_SEGHASH_VERSION.
 *
 * It is not a checksum of the image (that is XXH3, computed on the host from
 * the bytes written): it decides what is written, so it must be a good hash
 * (a changed chunk whose key stays the same would not be written), but it
 * never has to resist an adversary (the data is the process's own).
 *
 * Definition. A chunk is cut into segments of GK_SEG_BYTES (the last one
 * shorter). A segment is read as 16-byte words w[k] (the last one padded
 * with zeros), dealt out to GK_SEG_LANES lanes: lane t takes k = t, t + L,
 * t + 2L, ... in order, and folds each word into its accumulator with two
 * XXH64-style rounds (multiply, rotate, multiply), starting from a value of
 * its own. The lanes are then merged pairwise in a fixed tree (lane t with
 * t + s, s = 1, 2, 4, ...), with a merge that is not symmetric, so that data
 * moved between lanes changes the key; the segment's hash is lane 0's value
 * mixed with the segment's length. A chunk's key folds its segments' hashes
 * in order, then the chunk's length, and ends with an avalanche.
 *
 * On the GPU a block of GK_SEG_LANES threads hashes a segment: neighbouring
 * threads read neighbouring words (coalesced), and the merge tree is a
 * shared-memory reduction. Segments of 1 MiB keep every block busy for a
 * while and give a 16 GiB state 16384 blocks.
 */
#ifndef GK_SEGMENT_HASH_H
#define GK_SEGMENT_HASH_H

#include <stdint.h>

#ifdef __CUDACC__
#define GK_HD __host__ __device__ __forceinline__
#else
#define GK_HD static inline
#endif

#define GK_SEGHASH_VERSION 1
#define GK_SEG_BYTES (1u << 20)
#define GK_SEG_LANES 256u

#define GK_SH_P1 0x9E3779B185EBCA87ull
#define GK_SH_P2 0xC2B2AE3D27D4EB4Full
#define GK_SH_P3 0x165667B19E3779F9ull
#define GK_SH_P4 0x85EBCA77C2B2AE63ull
#define GK_SH_P5 0x27D4EB2F165667C5ull

GK_HD uint64_t gk_sh_rotl(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

/* What a lane starts from. */
GK_HD uint64_t gk_sh_lane_init(unsigned lane)
{
	return GK_SH_P5 + (uint64_t)lane * GK_SH_P1;
}

/* One 16-byte word into a lane's accumulator. */
GK_HD uint64_t gk_sh_round(uint64_t acc, uint64_t lo, uint64_t hi)
{
	acc = gk_sh_rotl(acc + lo * GK_SH_P2, 31) * GK_SH_P1;
	return gk_sh_rotl(acc + hi * GK_SH_P2, 31) * GK_SH_P1;
}

/* Lane a with lane b (b from the higher lanes): order matters. */
GK_HD uint64_t gk_sh_merge(uint64_t a, uint64_t b)
{
	return gk_sh_rotl(a ^ (b * GK_SH_P2), 27) * GK_SH_P1 + GK_SH_P4;
}

GK_HD uint64_t gk_sh_avalanche(uint64_t h)
{
	h ^= h >> 33;
	h *= GK_SH_P2;
	h ^= h >> 29;
	h *= GK_SH_P3;
	h ^= h >> 32;
	return h;
}

/* A segment's hash from its merged lanes. */
GK_HD uint64_t gk_sh_segment_final(uint64_t merged, uint64_t len)
{
	return gk_sh_avalanche(merged ^ (len * GK_SH_P3));
}

/* Little-endian 64-bit load of up to 8 bytes (the rest zeros). */
GK_HD uint64_t gk_sh_load_tail(const unsigned char *p, uint64_t n)
{
	uint64_t v = 0;

	for (uint64_t i = 0; i < n && i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* The chunk's key from its segments' hashes, folded in order. */
GK_HD uint64_t gk_sh_chunk_begin(void)
{
	return GK_SH_P4;
}

GK_HD uint64_t gk_sh_chunk_add(uint64_t h, uint64_t segment)
{
	return gk_sh_merge(h, segment);
}

GK_HD uint64_t gk_sh_chunk_final(uint64_t h, uint64_t len)
{
	return gk_sh_avalanche(h ^ (len * GK_SH_P5));
}

#ifndef __CUDACC__
#include <string.h>

/*
 * A segment of host memory (what the host fallback and the CUDA stand-in's
 * kernel compute). The lanes are kept side by side and each 16-byte word goes
 * to lane k % L, which is the same as every lane walking its own words.
 */
static inline uint64_t gk_sh_segment_host(const void *data, uint64_t len)
{
	const unsigned char *p = (const unsigned char *)data;
	uint64_t acc[GK_SEG_LANES];
	uint64_t words = len / 16, k;

	for (unsigned t = 0; t < GK_SEG_LANES; t++)
		acc[t] = gk_sh_lane_init(t);
	for (k = 0; k < words; k++) {
		uint64_t lo, hi;

		memcpy(&lo, p + 16 * k, 8);
		memcpy(&hi, p + 16 * k + 8, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		lo = __builtin_bswap64(lo);
		hi = __builtin_bswap64(hi);
#endif
		acc[k % GK_SEG_LANES] = gk_sh_round(acc[k % GK_SEG_LANES], lo, hi);
	}
	if (len % 16) {
		uint64_t rest = len % 16, lo, hi;

		lo = gk_sh_load_tail(p + 16 * k, rest);
		hi = rest > 8 ? gk_sh_load_tail(p + 16 * k + 8, rest - 8) : 0;
		acc[k % GK_SEG_LANES] = gk_sh_round(acc[k % GK_SEG_LANES], lo, hi);
	}
	for (unsigned s = 1; s < GK_SEG_LANES; s *= 2)
		for (unsigned t = 0; t < GK_SEG_LANES; t += 2 * s)
			acc[t] = gk_sh_merge(acc[t], acc[t + s]);
	return gk_sh_segment_final(acc[0], len);
}

/* A whole chunk of host memory. */
static inline uint64_t gk_sh_chunk_host(const void *data, uint64_t len)
{
	uint64_t h = gk_sh_chunk_begin();

	for (uint64_t o = 0; o < len; o += GK_SEG_BYTES) {
		uint64_t n = len - o < GK_SEG_BYTES ? len - o : GK_SEG_BYTES;

		h = gk_sh_chunk_add(h, gk_sh_segment_host((const unsigned char *)data + o, n));
	}
	return gk_sh_chunk_final(h, len);
}
#endif

#endif
