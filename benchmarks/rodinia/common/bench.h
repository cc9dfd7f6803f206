/*
 * bench.h - what every Rodinia-style benchmark shares: checked CUDA calls, the
 * gpuckpt checkpoint point, deterministic input generation, result checksums
 * and the output contract the harness (benchmarks/run) parses:
 *
 *	<prog>: <parameters> device=<name>          (stdout, at start)
 *	<prog>: main loop started at step K after S s (stderr, at the first point)
 *	<prog>: resumed at step K                   (stderr, on a restart)
 *	<prog>: checkpoint committed at step K      (stderr, SIGUSR1 or a request)
 *	checksum=0x%016llx                          (stdout, the result)
 *	<prog>: time=S s                            (stdout, wall time in the program)
 *
 * A program fails with exit status 1 and one line naming what failed.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime.h>

#include "gpuckpt.h"

/*
 * The programs are not linked against libgpuckpt (as examples/common/
 * gpuckpt_optional.h does for the examples): a native run is the program
 * alone, and under LD_PRELOAD=libgpuckpt.so these weak references resolve to
 * the runtime. Without it they are NULL: nothing is protected, a point never
 * checkpoints. Only bench.cu and the throughput worker call them, through
 * bench_runtime_present().
 */
#ifdef __cplusplus
extern "C" {
#endif
int gpuckpt_protect(const char *name, void *addr, size_t size) __attribute__((weak));
int gpuckpt_point(long step) __attribute__((weak));
int gpuckpt_request(void) __attribute__((weak));
int gpuckpt_restarting(long *step) __attribute__((weak));
const char *gpuckpt_strerror(int err) __attribute__((weak));
#ifdef __cplusplus
}
#endif

/* Is the gpuckpt runtime loaded into this process (preloaded, or the emulator's)? */
int bench_runtime_present(void);

/* The runtime's message for a negative errno it returned, or strerror's. */
const char *bench_strerror(int err);

/* Every CUDA runtime call goes through CK(): a failure names the call and the error, then exits. */
#define CK(call) bench_check((call), #call, __FILE__, __LINE__)

/*
 * After each kernel launch: a bad launch configuration is reported here; a
 * fault inside the kernel surfaces at the next synchronising call, which goes
 * through CK() as well.
 */
#define CK_LAUNCH(kernel) bench_check(cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__)

void bench_check(cudaError_t err, const char *what, const char *file, int line);
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/*
 * Start: remembers the program name for messages, removes --small and
 * --verify from argv (returns 1 if --small was there) and answers -h/--help
 * with `usage`.
 */
int bench_start(const char *name, int *argc, char **argv, const char *usage);

/* Was --verify given: compare the result with a host computation (small sizes). */
int bench_verifying(void);

/* Report a verification: exits with a message unless ok. */
void bench_verified(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "<prog>: <parameters> device=<name>" once the parameters are known; selects device 0. */
void bench_describe(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print the checksum and the time since bench_start(); flushes stdout. */
void bench_finish(uint64_t checksum);

/* Monotonic seconds. */
double bench_now(void);

/* Parse a whole decimal number in [min, max]; `what` names the argument in the error. */
long bench_parse_long(const char *text, const char *what, long min, long max);
double bench_parse_double(const char *text, const char *what, double min, double max);

/* gpuckpt_protect() that exits with the runtime's message on failure; nothing without the runtime. */
void bench_protect(const char *name, void *addr, size_t size);

/*
 * The checkpoint point of the main loop: gpuckpt_point(step), with a line on
 * stderr when the state was restored or a checkpoint committed; exits on a
 * runtime error. Returns what gpuckpt_point() returned (GPUCKPT_NOTHING
 * without the runtime).
 */
int bench_point(long step);

/* Host and device share one generator so inputs can be made on either side. */
#define BENCH_GOLDEN 0x9e3779b97f4a7c15ull

__host__ __device__ static inline uint64_t bench_mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* A value depending only on (seed, index): inputs can be generated in any order. */
__host__ __device__ static inline uint64_t bench_hash2(uint64_t seed, uint64_t index)
{
	return bench_mix64(seed * BENCH_GOLDEN + bench_mix64(index + BENCH_GOLDEN));
}

/* Uniform in [0, 1) with 24 random bits: exact in a float. */
__host__ __device__ static inline float bench_unit_float(uint64_t bits)
{
	return (float)(bits >> 40) * (1.0f / 16777216.0f);
}

/* Uniform in [0, 1) with 53 random bits. */
__host__ __device__ static inline double bench_unit_double(uint64_t bits)
{
	return (double)(bits >> 11) * (1.0 / 9007199254740992.0);
}

struct bench_rng {
	uint64_t state;
};

__host__ __device__ static inline void bench_rng_seed(struct bench_rng *r, uint64_t seed)
{
	r->state = bench_mix64(seed + BENCH_GOLDEN);
}

__host__ __device__ static inline uint64_t bench_rng_next(struct bench_rng *r)
{
	r->state += BENCH_GOLDEN;
	return bench_mix64(r->state);
}

__host__ __device__ static inline float bench_rng_float(struct bench_rng *r)
{
	return bench_unit_float(bench_rng_next(r));
}

/* Uniform integer in [0, n), n > 0. */
__host__ __device__ static inline uint64_t bench_rng_below(struct bench_rng *r, uint64_t n)
{
	return bench_rng_next(r) % n;
}

/* FNV-1a over bytes; start with BENCH_FNV_INIT, chain by passing the last value. */
#define BENCH_FNV_INIT 0xcbf29ce484222325ull
uint64_t bench_fnv1a(const void *data, size_t len, uint64_t h);

/* Fold one 64-bit value into a checksum. */
static inline uint64_t bench_fold(uint64_t h, uint64_t v)
{
	return bench_fnv1a(&v, sizeof(v), h);
}

/*
 * Checksum of device memory without copying it to the host: a fixed grid of
 * lanes each hashes an interleaved share of the 64-bit words (so the result
 * does not depend on the GPU), the host folds the lane hashes in order. The
 * scratch buffer is allocated once, at setup, so that checksums taken inside
 * a main loop do not allocate.
 */
struct bench_hasher {
	uint64_t *lanes_dev;
	uint64_t *lanes_host;
};

void bench_hasher_init(struct bench_hasher *h);
void bench_hasher_free(struct bench_hasher *h);
uint64_t bench_hash_device(struct bench_hasher *h, const void *dptr, size_t len, uint64_t seed);

/* Blocks needed for n items at `per` items per block. */
static inline unsigned bench_blocks(size_t n, unsigned per)
{
	return (unsigned)((n + per - 1) / per);
}

#endif
