/*
 * memchurn - device memory allocated and freed inside the main loop, the
 * pattern of streamcluster and of most frameworks: every iteration allocates
 * a few buffers of varying size, half with cudaMalloc and half stream-ordered
 * with cudaMallocAsync, fills them, folds them into a persistent accumulator
 * and frees them (cudaFreeAsync, cudaFree) before the next checkpoint point.
 * With --ring N, one buffer per iteration also outlives it by N iterations:
 * its pointer sits in a registered host array, so a checkpoint holds
 * allocations the setup of a restarted run does not make.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define ACC_WORDS (16u << 20) /* 64 MiB accumulator */
#define MAX_RING 64
#define RING_WORDS (256u << 10) /* 1 MiB per ring buffer */

static const char usage[] =
    "usage: memchurn [iterations [max_mib]] [--ring N] [--small]\n"
    "  iterations  (default 3000; --small: 40)\n"
    "  max_mib     largest buffer in MiB (default 256; --small: 16)\n"
    "  --ring N    keep one buffer per iteration alive for N iterations (0..64,\n"
    "              default 0)\n"
    "  --verify    recompute the accumulator on the host (small runs)\n";

__host__ __device__ static inline uint32_t churn_word(uint64_t seed, size_t idx)
{
	return (uint32_t)bench_hash2(seed, idx);
}

__global__ void churn_fill(uint32_t *buf, size_t words, uint64_t seed)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; idx < words; idx += stride)
		buf[idx] = churn_word(seed, idx);
}

/* Lane t adds buf[t], buf[t + ACC_WORDS], ... in order: no two lanes touch one word. */
__global__ void churn_fold(uint32_t *acc, const uint32_t *buf, size_t words)
{
	size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, i;
	uint32_t s = 0;

	if (t >= ACC_WORDS || t >= words)
		return;
	for (i = t; i < words; i += ACC_WORDS)
		s = s * 31u + buf[i];
	acc[t] = (acc[t] ^ s) * 2654435761u + 1u;
}

/* Lanes needed to fold `words` words: one per accumulator word touched. */
static unsigned fold_blocks(size_t words)
{
	return bench_blocks(words < ACC_WORDS ? words : ACC_WORDS, 256);
}

/* Buffers in iteration `iter`: 2 to 8. */
static int churn_count(long iter)
{
	return 2 + (int)(bench_hash2(99, (uint64_t)iter) % 7);
}

static size_t churn_size(long iter, int b, size_t max_bytes)
{
	uint64_t h = bench_hash2((uint64_t)iter, (uint64_t)b);
	int span = 0;

	while (((size_t)4096 << (span + 1)) <= max_bytes)
		span++;
	/* Log-uniform from 4 KiB to max_bytes, plus an odd 256-byte multiple. */
	return ((size_t)4096 << (h % (uint64_t)(span + 1))) + ((h >> 32) % 16) * 256;
}

static void host_fold(uint32_t *acc, uint64_t seed, size_t words)
{
	size_t t, i;

	for (t = 0; t < ACC_WORDS && t < words; t++) {
		uint32_t s = 0;

		for (i = t; i < words; i += ACC_WORDS)
			s = s * 31u + churn_word(seed, i);
		acc[t] = (acc[t] ^ s) * 2654435761u + 1u;
	}
}

/* Every buffer's words are a function of (iteration, buffer): replay the folds. */
static void churn_verify(const uint32_t *acc_d, long iterations, long max_mib, long ring)
{
	uint32_t *acc = (uint32_t *)calloc(ACC_WORDS, sizeof(uint32_t));
	uint32_t *gpu = (uint32_t *)malloc(ACC_WORDS * sizeof(uint32_t));
	long it, bad = 0, t;
	int nb, b;

	if (!acc || !gpu)
		bench_die("--verify: out of host memory");
	for (it = 0; it < iterations; it++) {
		nb = churn_count(it);
		for (b = 0; b < nb; b++)
			host_fold(acc, bench_hash2((uint64_t)it, (uint64_t)b),
				  churn_size(it, b, (size_t)max_mib << 20) / 4);
		if (ring && it >= ring)
			host_fold(acc, bench_hash2(7, (uint64_t)(it - ring)), RING_WORDS);
	}
	CK(cudaMemcpy(gpu, acc_d, ACC_WORDS * sizeof(uint32_t), cudaMemcpyDeviceToHost));
	for (t = 0; t < (long)ACC_WORDS; t++)
		bad += gpu[t] != acc[t];
	bench_verified(bad == 0, "%ld of %u accumulator words differ", bad, ACC_WORDS);
	free(acc);
	free(gpu);
}

int main(int argc, char **argv)
{
	int small = bench_start("memchurn", &argc, argv, usage);
	long iterations = small ? 40 : 3000, max_mib = small ? 16 : 256, ring = 0;
	struct {
		long iter;
		void *ring[MAX_RING];
	} st;
	struct bench_hasher hasher;
	uint32_t *acc_d;
	cudaStream_t stream;
	int pos = 0, k;

	for (k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "--ring") && k + 1 < argc)
			ring = bench_parse_long(argv[++k], "--ring", 0, MAX_RING);
		else if (argv[k][0] == '-' || pos == 2)
			bench_die("unknown argument '%s' (see --help)", argv[k]);
		else if (pos++ == 0)
			iterations = bench_parse_long(argv[k], "iterations", 1, 1000000000);
		else
			max_mib = bench_parse_long(argv[k], "max_mib", 1, 65536);
	}
	bench_describe("iterations=%ld max_mib=%ld ring=%ld", iterations, max_mib, ring);

	CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	CK(cudaMalloc((void **)&acc_d, ACC_WORDS * sizeof(uint32_t)));
	CK(cudaMemset(acc_d, 0, ACC_WORDS * sizeof(uint32_t)));
	bench_hasher_init(&hasher);

	memset(&st, 0, sizeof(st));
	bench_protect("state", &st, sizeof(st));
	while (st.iter < iterations) {
		void *plain[4], *async[4];
		size_t size[8];
		int nb, b, slot;

		if (bench_point(st.iter) == GPUCKPT_RESTORED)
			continue;
		nb = churn_count(st.iter);
		for (b = 0; b < nb; b++) {
			void **p = b % 2 ? &async[b / 2] : &plain[b / 2];

			size[b] = churn_size(st.iter, b, (size_t)max_mib << 20);
			if (b % 2)
				CK(cudaMallocAsync(p, size[b], stream));
			else
				CK(cudaMalloc(p, size[b]));
			churn_fill<<<1024, 256, 0, stream>>>(
			    (uint32_t *)*p, size[b] / 4,
			    bench_hash2((uint64_t)st.iter, (uint64_t)b));
			CK_LAUNCH("churn_fill");
			churn_fold<<<fold_blocks(size[b] / 4), 256, 0, stream>>>(
			    acc_d, (const uint32_t *)*p, size[b] / 4);
			CK_LAUNCH("churn_fold");
		}
		if (ring) {
			slot = (int)(st.iter % ring);
			if (st.ring[slot]) {
				churn_fold<<<fold_blocks(RING_WORDS), 256, 0, stream>>>(
				    acc_d, (const uint32_t *)st.ring[slot], RING_WORDS);
				CK_LAUNCH("churn_fold");
				CK(cudaStreamSynchronize(stream));
				CK(cudaFree(st.ring[slot]));
			}
			CK(cudaMalloc(&st.ring[slot], RING_WORDS * sizeof(uint32_t)));
			churn_fill<<<256, 256, 0, stream>>>((uint32_t *)st.ring[slot], RING_WORDS,
							    bench_hash2(7, (uint64_t)st.iter));
			CK_LAUNCH("churn_fill");
		}
		for (b = 1; b < nb; b += 2)
			CK(cudaFreeAsync(async[b / 2], stream));
		/* cudaFree must not release memory the stream's kernels still read. */
		CK(cudaStreamSynchronize(stream));
		for (b = 0; b < nb; b += 2)
			CK(cudaFree(plain[b / 2]));
		st.iter++;
	}

	CK(cudaStreamSynchronize(stream));
	if (bench_verifying())
		churn_verify(acc_d, iterations, max_mib, ring);
	bench_finish(
	    bench_hash_device(&hasher, acc_d, ACC_WORDS * sizeof(uint32_t), BENCH_FNV_INIT));
	for (k = 0; k < MAX_RING; k++)
		if (st.ring[k])
			CK(cudaFree(st.ring[k]));
	bench_hasher_free(&hasher);
	CK(cudaFree(acc_d));
	CK(cudaStreamDestroy(stream));
	return 0;
}
