/*
 * kern_kernels_host.c - the marked kernels of prog-kernels.c as host
 * functions for the CUDA driver stand-in (tests/cuda-standin): the protocol
 * of gpuckpt_kernel.cuh written out in C (the bitmap, the stop word, the loop
 * positions, the counters), one "thread" after another, each unit of work
 * slowed down (delay_us) so that a signal lands in the middle of a kernel.
 * The stand-in tests the runtime's side (the stop word it raises, the
 * record, the relaunch of the rest, the checkpoint in between, the restore);
 * only a GPU runs gpuckpt_kernel.cuh itself (tests/gpu/kernel-interrupt.sh).
 *
 * The work: out[i] += ((i * 7 + step * 13 + round * 3) % 101) + 1 for each
 * element (block mode: one round; loop mode: `rounds` rounds per thread). An
 * element added to twice, or never, changes the checksum.
 */
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "gpuckpt_kernel.h"
#include "standin_kernel.h"

static void pause_us(long us)
{
	struct timespec t = {us / 1000000, (us % 1000000) * 1000};

	if (us > 0)
		nanosleep(&t, NULL);
}

static uint32_t add_of(uint64_t i, long step, long round)
{
	return (uint32_t)((i * 7 + (uint64_t)step * 13 + (uint64_t)round * 3) % 101) + 1;
}

static unsigned stop_word(const struct gpuckpt_kernel *k)
{
	return k->stop ? *k->stop : 0u;
}

/* Block mode: (out, step, delay_us, k); one element per thread. */
STANDIN_KERNEL(kmc_blocks, sizeof(uint32_t *), sizeof(long), sizeof(long),
	       sizeof(struct gpuckpt_kernel))
{
	uint32_t *out = STANDIN_ARG(uint32_t *, 0);
	long step = STANDIN_ARG(long, 1);
	long delay = STANDIN_ARG(long, 2);
	struct gpuckpt_kernel k = STANDIN_ARG(struct gpuckpt_kernel, 3);
	unsigned long long nb = (unsigned long long)launch->grid.x * launch->grid.y * launch->grid.z;
	unsigned long long nt = (unsigned long long)launch->block.x * launch->block.y * launch->block.z;

	for (unsigned long long b = 0; b < nb; b++) {
		/* gpuckpt_block_enter, by the block's first thread. */
		if (k.state) {
			unsigned long long *word = k.state + GPUCKPT_KREC_HEADER + b / 64;
			unsigned long long bit = 1ull << (b % 64);

			if (b >= k.nblocks || (__atomic_load_n(word, __ATOMIC_ACQUIRE) & bit))
				continue;
			if (stop_word(&k)) {
				__atomic_add_fetch(k.state + GPUCKPT_KREC_INTERRUPTED, 1, __ATOMIC_RELAXED);
				continue;
			}
			__atomic_or_fetch(word, bit, __ATOMIC_RELEASE);
			__atomic_add_fetch(k.state + GPUCKPT_KREC_EXECUTED, 1, __ATOMIC_RELAXED);
		}
		if (!STANDIN_CAN_WRITE(out + b * nt, nt * sizeof(*out)))
			return;
		for (unsigned long long t = 0; t < nt; t++)
			out[b * nt + t] += add_of(b * nt + t, step, 0);
		pause_us(delay);
	}
}

/* Loop mode: (out, step, delay_us, rounds, k); thread t adds to out[t] in
 * each of its rounds, checking the stop word at the top of each. */
STANDIN_KERNEL(kmc_loop, sizeof(uint32_t *), sizeof(long), sizeof(long), sizeof(long),
	       sizeof(struct gpuckpt_kernel))
{
	uint32_t *out = STANDIN_ARG(uint32_t *, 0);
	long step = STANDIN_ARG(long, 1);
	long delay = STANDIN_ARG(long, 2);
	long rounds = STANDIN_ARG(long, 3);
	struct gpuckpt_kernel k = STANDIN_ARG(struct gpuckpt_kernel, 4);
	unsigned long long n = (unsigned long long)launch->grid.x * launch->grid.y * launch->grid.z *
			       launch->block.x * launch->block.y * launch->block.z;

	if (!STANDIN_CAN_WRITE(out, n * sizeof(*out)))
		return;
	for (unsigned long long t = 0; t < n; t++) {
		long r = 0;
		int stopped = 0;

		/* gpuckpt_loop_enter */
		if (k.state && stop_word(&k)) {
			__atomic_add_fetch(k.state + GPUCKPT_KREC_INTERRUPTED, 1, __ATOMIC_RELAXED);
			continue;
		}
		/* gpuckpt_loop_start */
		if (k.state && t < k.npos)
			r = (long)k.state[GPUCKPT_KREC_HEADER + t];
		for (; r < rounds; r++) {
			/* gpuckpt_loop_stop */
			if (k.state && stop_word(&k)) {
				if (t < k.npos)
					k.state[GPUCKPT_KREC_HEADER + t] = (unsigned long long)r;
				__atomic_add_fetch(k.state + GPUCKPT_KREC_INTERRUPTED, 1,
						   __ATOMIC_RELAXED);
				stopped = 1;
				break;
			}
			out[t] += add_of(t, step, r);
			pause_us(delay);
		}
		/* gpuckpt_loop_end */
		if (!stopped && k.state && t < k.npos &&
		    k.state[GPUCKPT_KREC_HEADER + t] != (unsigned long long)rounds) {
			k.state[GPUCKPT_KREC_HEADER + t] = (unsigned long long)rounds;
			__atomic_add_fetch(k.state + GPUCKPT_KREC_EXECUTED, 1, __ATOMIC_RELAXED);
		}
	}
}
