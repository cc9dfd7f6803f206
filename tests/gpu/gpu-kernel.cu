/*
 * gpu-kernel.cu - one long kernel marked interruptible (gpuckpt_kernel.cuh),
 * for tests/gpu/kernel-interrupt.sh and benchmarks/kernels/run.sh.
 *
 * Each of n elements draws m numbers from a 64-bit linear congruential
 * generator seeded by its index (x <- A x + C mod 2^64) and keeps a 32-bit
 * digest of their sum and of the last one. The result is checkable at once:
 * the host computes m steps of an affine map, and of the sum of its
 * iterates, by doubling (O(log m)), then checks every element in O(1).
 *
 *   gpu-kernel [--mode blocks|loop] [--n N] [--seconds S | --iters M]
 *              [--unmarked [--host-ms MS]] [--no-check] [--coop] [--help]
 *
 * blocks: one element per thread, n/256 blocks of 256 threads, each block
 *   checks at its top (GPUCKPT_BLOCK_BEGIN): many more blocks than run at
 *   once, so a checkpoint waits at most for the blocks in flight.
 * loop: a persistent grid (8 blocks of 256 threads per SM) with a
 *   grid-stride loop over the elements; each thread checks at the top of
 *   each round and saves its round (gpuckpt_loop_stop).
 * --seconds S: m is calibrated on this GPU so that the kernel lasts about S
 *   seconds (default 30); --iters M fixes it (the benchmark's alternating
 *   runs use the same M). m is a protected region: a restore uses the m of
 *   the checkpoint, whatever the options say.
 * --unmarked: the same kernel compiled without the checks, launched once.
 * --host-ms MS (with --unmarked): the program overlaps MS ms of host work
 *   with its kernel, then reaches gpuckpt_point(1), "after the kernel", and
 *   waits for it: a checkpoint asked for in that host work drains there,
 *   i.e. waits for the whole kernel (tests/slurm/e2e-kernels.sh).
 * --coop: a cooperative launch of the marked kernel, its answer printed.
 *
 * Lines (stdout):
 *   gpu-kernel: fresh start: mode=M n=N iters=M device=NAME
 *   gpu-kernel: resumed from step K
 *   gpu-kernel: calibrated: iters=M (R steps/s)
 *   gpu-kernel: kernel started
 *   gpu-kernel: kernel done in T s
 *   gpu-kernel: result: ok n=N mismatches=0 digest=0x...   (or "result: WRONG")
 */
#include "gpuckpt_optional.h"
#include "gpuckpt_kernel.cuh"

#include <cuda.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vector>

#define LCG_A 6364136223846793005ull
#define LCG_C 1442695040888963407ull
#define THREADS 256

static const char *prog = "gpu-kernel";

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s: %s failed: %s at %s:%d\n", prog, #call,               \
				cudaGetErrorName(e_), __FILE__, __LINE__);                         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

__host__ __device__ static inline uint64_t seed_of(uint64_t i)
{
	uint64_t z = i + 0x9e3779b97f4a7c15ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

__host__ __device__ static inline uint32_t digest(uint64_t sum, uint64_t last)
{
	uint64_t d = sum ^ (last * 0x9e3779b97f4a7c15ull);

	return (uint32_t)(d ^ (d >> 32));
}

__device__ static inline uint32_t element(uint64_t i, long long m)
{
	uint64_t x = seed_of(i), s = 0;

	for (long long k = 0; k < m; k++) {
		s += x;
		x = x * LCG_A + LCG_C;
	}
	return digest(s, x);
}

template <bool MARKED>
__global__ void lcg_blocks(uint32_t *out, unsigned long long n, long long m, gpuckpt_kernel k)
{
	unsigned long long i;

	if (MARKED)
		GPUCKPT_BLOCK_BEGIN(k);
	i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = element(i, m);
}

template <bool MARKED>
__global__ void lcg_loop(uint32_t *out, unsigned long long n, long long m, gpuckpt_kernel k)
{
	unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
	unsigned long long t = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	long long rounds = (long long)((n + stride - 1) / stride);
	long long r = 0;

	if (MARKED) {
		GPUCKPT_LOOP_BEGIN(k);
		r = gpuckpt_loop_start(k);
	}
	for (; r < rounds; r++) {
		unsigned long long i = (unsigned long long)r * stride + t;

		if (MARKED && gpuckpt_loop_stop(k, r))
			return;
		if (i < n)
			out[i] = element(i, m);
	}
	if (MARKED)
		gpuckpt_loop_end(k, rounds);
}

/* The affine map x -> a x + c applied n times, and the sum of its first n
 * iterates x -> g x + h, by doubling (everything mod 2^64). */
struct affine {
	uint64_t a, c, g, h;
};

static affine compose(const affine &p, const affine &q) /* p after q */
{
	affine r;

	r.a = p.a * q.a;
	r.c = p.a * q.c + p.c;
	r.g = q.g + p.g * q.a;
	r.h = q.h + p.g * q.c + p.h;
	return r;
}

static affine power(long long m)
{
	affine r = {1, 0, 0, 0}, b = {LCG_A, LCG_C, 1, 0};

	for (; m > 0; m >>= 1) {
		if (m & 1)
			r = compose(b, r);
		b = compose(b, b);
	}
	return r;
}

struct params {
	long long m;
};

struct launch_args {
	int loop, marked;
	unsigned grid;
	uint32_t *out;
	unsigned long long n;
	long long m;
	cudaStream_t s;
};

static void launch(const launch_args &a, gpuckpt_kernel k)
{
	if (a.loop) {
		if (a.marked)
			lcg_loop<true><<<a.grid, THREADS, 0, a.s>>>(a.out, a.n, a.m, k);
		else
			lcg_loop<false><<<a.grid, THREADS, 0, a.s>>>(a.out, a.n, a.m, k);
	} else {
		if (a.marked)
			lcg_blocks<true><<<a.grid, THREADS, 0, a.s>>>(a.out, a.n, a.m, k);
		else
			lcg_blocks<false><<<a.grid, THREADS, 0, a.s>>>(a.out, a.n, a.m, k);
	}
}

int main(int argc, char **argv)
{
	struct params P = {0};
	long step = 0, restart_step = 0;
	double seconds = 30;
	long host_ms = 0;
	int no_check = 0, coop = 0, restarting;
	launch_args a;
	cudaDeviceProp prop;
	gpuckpt_kernel_record *rec = NULL;
	gpuckpt_kernel none;

	memset(&a, 0, sizeof(a));
	memset(&none, 0, sizeof(none));
	a.n = 1ull << 25;
	a.marked = 1;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			printf("usage: %s [--mode blocks|loop] [--n N] [--seconds S | --iters M] "
			       "[--unmarked] [--no-check]\n"
			       "One long kernel marked interruptible (gpuckpt_kernel.cuh), its result "
			       "checked on the host.\n"
			       "  --mode     blocks: a check at the top of each block (default); loop: a "
			       "persistent grid-stride loop, a check per round\n"
			       "  --n        elements (default 2^25)\n"
			       "  --seconds  calibrate the iterations so the kernel lasts about S s "
			       "(default 30)\n"
			       "  --iters    iterations per element, no calibration\n"
			       "  --unmarked the same kernel without the checks, launched once\n"
			       "  --host-ms  (with --unmarked) host work beside the kernel, then a "
			       "checkpoint point before waiting for it\n"
			       "  --no-check do not check the result (benchmarks)\n"
			       "  --coop     launch the marked kernel cooperatively once (refused "
			       "under the runtime), then exit\n",
			       prog);
			return 0;
		}
		if (!strcmp(o, "--unmarked")) {
			a.marked = 0;
			continue;
		}
		if (!strcmp(o, "--no-check")) {
			no_check = 1;
			continue;
		}
		if (!strcmp(o, "--coop")) {
			coop = 1;
			continue;
		}
		if (!v) {
			fprintf(stderr, "%s: %s needs a value\n", prog, o);
			return 2;
		}
		i++;
		if (!strcmp(o, "--mode"))
			a.loop = !strcmp(v, "loop");
		else if (!strcmp(o, "--n"))
			a.n = strtoull(v, NULL, 0);
		else if (!strcmp(o, "--seconds"))
			seconds = atof(v);
		else if (!strcmp(o, "--iters"))
			P.m = atoll(v);
		else if (!strcmp(o, "--host-ms"))
			host_ms = atol(v);
		else {
			fprintf(stderr, "%s: %s: unknown option\n", prog, o);
			return 2;
		}
	}
	if (!a.n || a.n > (1ull << 31)) {
		fprintf(stderr, "%s: --n: 1 to 2^31\n", prog);
		return 2;
	}
	CK(cudaSetDevice(0));
	CK(cudaGetDeviceProperties(&prop, 0));
	CK(cudaStreamCreateWithFlags(&a.s, cudaStreamNonBlocking));
	a.grid = a.loop ? (unsigned)prop.multiProcessorCount * 8
			: (unsigned)((a.n + THREADS - 1) / THREADS);
	CK(cudaMalloc(&a.out, a.n * sizeof(uint32_t)));
	CK(cudaMemset(a.out, 0, a.n * sizeof(uint32_t)));
	ckpt_protect("params", &P, sizeof(P));
	ckpt_protect("step", &step, sizeof(step));
	restarting = ckpt_restarting(&restart_step) > 0;
	if (a.marked) {
		void *fn = a.loop ? gpuckpt_kernel_function(lcg_loop<true>)
				  : gpuckpt_kernel_function(lcg_blocks<true>);
		int ret = ckpt_kernel_create(a.loop ? "lcg_loop" : "lcg_blocks", fn, a.grid,
					     a.loop ? (unsigned long long)a.grid * THREADS : 0, &rec);

		if (ret < 0) {
			fprintf(stderr, "%s: gpuckpt_kernel_create: %s\n", prog, ckpt_strerror(ret));
			return 1;
		}
	}
	if (coop) {
		/* A cooperative launch of the marked kernel: the runtime refuses
		 * it (cudaErrorNotSupported); natively it runs one block. */
		long long one = 1;
		unsigned long long n1 = 1;
		void *args[] = {&a.out, &n1, &one, &none};
		cudaError_t e = cudaLaunchCooperativeKernel((const void *)lcg_blocks<true>, dim3(1),
							    dim3(THREADS), args, 0, a.s);

		printf("%s: cooperative launch: %s\n", prog, cudaGetErrorName(e));
		return 0;
	}
	if (!restarting && !P.m) {
		/* Calibrate: the rate of this GPU for this kernel. */
		double t0, dt;

		a.m = 2048;
		for (;;) {
			t0 = now();
			launch(a, none);
			CK(cudaStreamSynchronize(a.s));
			dt = now() - t0;
			if (dt > 0.3 || a.m > (1ll << 40))
				break;
			a.m *= 4;
		}
		P.m = (long long)((double)a.m * seconds / dt);
		if (P.m < 1)
			P.m = 1;
		printf("%s: calibrated: iters=%lld (%.3g steps/s)\n", prog, P.m,
		       (double)a.m * (double)a.n / dt);
	}
	printf("%s: %s: mode=%s n=%llu iters=%lld marked=%d device=%s\n", prog,
	       restarting ? "restart" : "fresh start", a.loop ? "loop" : "blocks", a.n, P.m, a.marked,
	       prop.name);
	fflush(stdout);
	for (; step < 1; step++) {
		double t0;
		int ret = ckpt_point(step);

		if (ret == GPUCKPT_RESTORED)
			printf("%s: resumed from step %ld (iters=%lld)\n", prog, step, P.m);
		if (step >= 1)
			break; /* restored after the kernel (--host-ms) */
		a.m = P.m;
		printf("%s: kernel started\n", prog);
		fflush(stdout);
		t0 = now();
		if (!a.marked && host_ms > 0) {
			struct timespec hw = {host_ms / 1000, (host_ms % 1000) * 1000000};

			launch(a, none);
			CK(cudaPeekAtLastError());
			nanosleep(&hw, NULL); /* host work beside the kernel */
			step = 1;
			/* After the kernel: a checkpoint here drains, waiting for it. */
			ckpt_point(step);
			CK(cudaStreamSynchronize(a.s));
			printf("%s: kernel done in %.3f s\n", prog, now() - t0);
			fflush(stdout);
			break;
		}
		ret = gpuckpt_kernel_launch(rec, step, a.s, [&](gpuckpt_kernel k) { launch(a, k); });
		if (ret < 0) {
			fprintf(stderr, "%s: the kernel failed: %s (%s)\n", prog, ckpt_strerror(ret),
				cudaGetErrorString(cudaGetLastError()));
			return 1;
		}
		printf("%s: kernel done in %.3f s\n", prog, now() - t0);
		fflush(stdout);
	}
	{
		std::vector<uint32_t> host(a.n);
		affine f = power(P.m);
		unsigned long long bad = 0;
		uint64_t d = 0;

		CK(cudaMemcpy(host.data(), a.out, a.n * sizeof(uint32_t), cudaMemcpyDeviceToHost));
		for (unsigned long long i = 0; i < a.n; i++) {
			uint64_t x0 = seed_of(i);
			uint32_t want = digest(f.g * x0 + f.h, f.a * x0 + f.c);

			if (!no_check && host[i] != want && bad++ < 5)
				fprintf(stderr, "%s: element %llu: 0x%08x, want 0x%08x\n", prog, i,
					host[i], want);
			d = d * 31 + host[i];
		}
		if (no_check)
			printf("%s: result: unchecked n=%llu digest=0x%016llx\n", prog, a.n,
			       (unsigned long long)d);
		else
			printf("%s: result: %s n=%llu mismatches=%llu digest=0x%016llx\n", prog,
			       bad ? "WRONG" : "ok", a.n, bad, (unsigned long long)d);
		return bad ? 3 : 0;
	}
}
