/*
 * gpu_drv.h - what the driver-API GPU test programs (gpu-tables, gpu-vmm,
 * gpu-peer) share: the call check, the option number parser and the
 * deterministic block content their checksums are made of. Define PROG
 * (the program's name, for messages) before including it.
 */
#ifndef GK_GPU_DRV_H
#define GK_GPU_DRV_H

#include <cuda.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef PROG
#error "define PROG before including gpu_drv.h"
#endif

/* A driver call that fails ends the program, naming the call and the error. */
#define CK(call)                                                                                   \
	do {                                                                                       \
		CUresult r_ = (call);                                                              \
		if (r_ != CUDA_SUCCESS) {                                                          \
			const char *n_ = NULL;                                                     \
			cuGetErrorName(r_, &n_);                                                   \
			fprintf(stderr, PROG ": %s failed: %s (line %d)\n", #call,                 \
				n_ ? n_ : "unknown error", __LINE__);                              \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* --OPT's TEXT as a whole number in [MIN, MAX]: 0, or -1 after saying why. */
static inline int parse_long(const char *opt, const char *text, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (end == text || *end || errno == ERANGE || v < min || v > max) {
		fprintf(stderr, PROG ": --%s: '%s' is not a whole number from %ld to %ld\n", opt,
			text, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

static inline uint64_t mix(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* The content of a block written at step `gen` (0: the initial one). */
static inline void fill_block(uint64_t *buf, size_t words, uint64_t block, uint64_t gen)
{
	uint64_t seed = mix(block * 0x100000001b3ull ^ (gen << 1));

	for (size_t i = 0; i < words; i++)
		buf[i] = mix(seed + i);
}

#endif
