/*
 * gpu-hydro.cu - a hydrodynamics-like long kernel marked interruptible in
 * loop mode (gpuckpt_kernel.cuh), in the spirit of LULESH (the seed paper's
 * case study, FTI's soft kernel interrupts): for tests/gpu/kernel-interrupt.sh
 * (mode "hydro") and benchmarks/kernels/run.sh.
 *
 * Each of n zones (elements) is a Lagrangian cell of ideal gas driven by a
 * piston: in each of m cycles its relative volume changes by the velocity
 * divergence imposed on it (a triangle wave of the cycle, its amplitude the
 * zone's own), and the zone is updated as LULESH's per-element kernels do:
 * the artificial viscosity q in compression (linear and quadratic terms,
 * CalcMonotonicQ's), the energy by the work of p + q (with a floor,
 * EvalEOSForElems'), the pressure from the ideal-gas equation of state
 * (CalcPressureForElems'), and the Courant limit from the sound speed
 * (CalcCourantConstraintForElems'), kept as the minimum over the run. A zone
 * keeps e, p, q, v, the Courant minimum and a count of its cycles.
 *
 * The kernel: a persistent grid (the blocks of 256 threads resident at once) with a
 * grid-stride loop over the zones; each round integrates one zone through
 * its m cycles from its initial state and writes it: whole, and depending
 * on no other round. Each thread checks the stop word at the top of each
 * round and saves its round (gpuckpt_loop_stop): loop mode.
 *
 * Exact check on the host: the device does every operation with the
 * round-to-nearest intrinsics (__dmul_rn, __dadd_rn, __ddiv_rn, __dsqrt_rn:
 * never contracted into a fused multiply-add), the host the same IEEE
 * operations on plain doubles (x86-64's SSE2: no contraction), so a zone's
 * state is bit for bit the host's. The host integrates a spread sample of
 * zones (--check, default 2048, on all its cores) and compares every word;
 * every zone's cycle count must be m (a zone skipped, or integrated from a
 * half state, is a mismatch). Nothing of the check is approximate.
 *
 *   gpu-hydro [--n N] [--seconds S | --cycles M] [--check K] [--unmarked]
 *             [--no-check] [--help]
 *
 * Lines (stdout):
 *   gpu-hydro: calibrated: cycles=M (R zone-cycles/s)
 *   gpu-hydro: fresh start|restart: n=N cycles=M marked=1 device=NAME
 *   gpu-hydro: resumed from step 0 (cycles=M)
 *   gpu-hydro: kernel started
 *   gpu-hydro: kernel done in T s
 *   gpu-hydro: result: ok n=N checked=K mismatches=0 digest=0x...  (or "result: WRONG")
 */
#include "gpuckpt_optional.h"
#include "gpuckpt_kernel.cuh"

#include <cuda.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <thread>
#include <time.h>
#include <vector>

#define THREADS 256

static const char *prog = "gpu-hydro";

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s: %s failed: %s at %s:%d\n", prog, #call,               \
				cudaGetErrorName(e_), __FILE__, __LINE__);                         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* IEEE double operations, rounded to nearest, never fused: the same bits on
 * the device and on the host. */
#ifdef __CUDA_ARCH__
#define MUL(a, b) __dmul_rn((a), (b))
#define ADD(a, b) __dadd_rn((a), (b))
#define SUB(a, b) __dsub_rn((a), (b))
#define DIV(a, b) __ddiv_rn((a), (b))
#define SQRT(a) __dsqrt_rn(a)
#else
/* Built with -ffp-contract=off (tests/gpu/local.mk): no fused operations. */
static inline double MUL(double a, double b) { return a * b; }
static inline double ADD(double a, double b) { return a + b; }
static inline double SUB(double a, double b) { return a - b; }
static inline double DIV(double a, double b) { return a / b; }
static inline double SQRT(double a) { return sqrt(a); }
#endif

/* The zone's state, six words (a structure of arrays on the device). */
struct zone {
	double e, p, q, v, dtc;
	unsigned long long cycles;
};

#define GAMMA_M1 (2.0 / 3.0)  /* ideal gas, gamma = 5/3 */
#define GAMMA 1.6666666666666667
#define QLC 0.5	       /* linear artificial viscosity */
#define QQC 2.0	       /* quadratic artificial viscosity */
#define EMIN 1.0e-9
#define DT 1.0e-3

__host__ __device__ static inline uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Zone i through m cycles from its initial state (the same code on both). */
__host__ __device__ static inline zone integrate(uint64_t i, long long m)
{
	uint64_t h = mix(i);
	/* Amplitude 0.5 to 1.5 (a 53-bit fraction: exact), initial energy 1 to 2. */
	double amp = ADD(0.5, (double)(h >> 11) * (1.0 / 9007199254740992.0));
	double e = ADD(1.0, (double)(mix(h) >> 11) * (1.0 / 9007199254740992.0));
	double v = 1.0, rho0 = 1.0, q = 0.0;
	double p = DIV(MUL(GAMMA_M1, e), v);
	double dtc = 1.0e30;
	long long phase = (long long)(h % 400);
	zone z;

	for (long long k = 0; k < m; k++) {
		/* The piston: a triangle wave of period 400 cycles, in [-1, 1]. */
		long long t = (k + phase) % 400;
		double tri = MUL((double)(t < 200 ? t - 100 : 300 - t), 0.01);
		double vdov = MUL(amp, tri);
		double delv = MUL(MUL(DT, vdov), v); /* dV = V div(u) dt */
		double vnew = ADD(v, delv);
		double rho = DIV(rho0, vnew);
		double ss, vel;

		/* Artificial viscosity in compression only. */
		if (delv < 0.0) {
			double dv = DIV(delv, vnew); /* the relative compression, < 0 */
			double c = SQRT(MUL(MUL(GAMMA, p), vnew));

			q = MUL(rho, SUB(MUL(QQC, MUL(dv, dv)), MUL(QLC, MUL(c, dv))));
		} else {
			q = 0.0;
		}
		/* Energy: the work of p + q over the volume change, with a floor. */
		e = SUB(e, MUL(ADD(p, q), delv));
		if (e < EMIN)
			e = EMIN;
		v = vnew;
		/* The equation of state. */
		p = DIV(MUL(GAMMA_M1, e), v);
		/* The Courant limit: the zone's length over the signal speed. */
		ss = SQRT(MUL(MUL(GAMMA, p), v));
		vel = ADD(ss, SQRT(DIV(q, rho)));
		{
			double dt = DIV(v, vel);

			if (dt < dtc)
				dtc = dt;
		}
	}
	z.e = e;
	z.p = p;
	z.q = q;
	z.v = v;
	z.dtc = dtc;
	z.cycles = (unsigned long long)m;
	return z;
}

struct zones {
	double *e, *p, *q, *v, *dtc;
	unsigned long long *cycles;
};

template <bool MARKED>
__global__ void hydro_loop(zones Z, unsigned long long n, long long m, gpuckpt_kernel k)
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
		if (i < n) {
			zone z = integrate(i, m);

			Z.e[i] = z.e;
			Z.p[i] = z.p;
			Z.q[i] = z.q;
			Z.v[i] = z.v;
			Z.dtc[i] = z.dtc;
			Z.cycles[i] = z.cycles;
		}
	}
	if (MARKED)
		gpuckpt_loop_end(k, rounds);
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

struct params {
	long long m;
};

struct launch_args {
	int marked;
	unsigned grid;
	zones Z;
	unsigned long long n;
	long long m;
	cudaStream_t s;
};

static void launch(const launch_args &a, gpuckpt_kernel k)
{
	if (a.marked)
		hydro_loop<true><<<a.grid, THREADS, 0, a.s>>>(a.Z, a.n, a.m, k);
	else
		hydro_loop<false><<<a.grid, THREADS, 0, a.s>>>(a.Z, a.n, a.m, k);
}

static uint64_t bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

int main(int argc, char **argv)
{
	struct params P = {0};
	long step = 0, restart_step = 0;
	double seconds = 30;
	unsigned long long nsample = 2048;
	int no_check = 0, restarting;
	launch_args a;
	cudaDeviceProp prop;
	gpuckpt_kernel_record *rec = NULL;
	gpuckpt_kernel none;

	memset(&a, 0, sizeof(a));
	memset(&none, 0, sizeof(none));
	a.n = 1ull << 23;
	a.marked = 1;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
			printf("usage: %s [--n N] [--seconds S | --cycles M] [--check K] [--unmarked] "
			       "[--no-check]\n"
			       "A hydrodynamics-like kernel (LULESH's per-zone updates), marked "
			       "interruptible in loop mode, checked exactly on the host.\n"
			       "  --n        zones (default 2^23)\n"
			       "  --seconds  calibrate the cycles so the kernel lasts about S s "
			       "(default 30)\n"
			       "  --cycles   cycles per zone, no calibration\n"
			       "  --check    zones the host integrates again (default 2048)\n"
			       "  --unmarked the same kernel without the checks, launched once\n"
			       "  --no-check do not check the result (benchmarks)\n",
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
		if (!v) {
			fprintf(stderr, "%s: %s needs a value\n", prog, o);
			return 2;
		}
		i++;
		if (!strcmp(o, "--n"))
			a.n = strtoull(v, NULL, 0);
		else if (!strcmp(o, "--seconds"))
			seconds = atof(v);
		else if (!strcmp(o, "--cycles"))
			P.m = atoll(v);
		else if (!strcmp(o, "--check"))
			nsample = strtoull(v, NULL, 0);
		else {
			fprintf(stderr, "%s: %s: unknown option\n", prog, o);
			return 2;
		}
	}
	if (!a.n || a.n > (1ull << 28)) {
		fprintf(stderr, "%s: --n: 1 to 2^28\n", prog);
		return 2;
	}
	if (nsample > a.n)
		nsample = a.n;
	CK(cudaSetDevice(0));
	CK(cudaGetDeviceProperties(&prop, 0));
	CK(cudaStreamCreateWithFlags(&a.s, cudaStreamNonBlocking));
	{
		/* A persistent grid: as many blocks as are resident at once. */
		int per_sm = 0;

		CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, hydro_loop<true>, THREADS, 0));
		a.grid = (unsigned)prop.multiProcessorCount * (unsigned)(per_sm > 0 ? per_sm : 1);
	}
	CK(cudaMalloc(&a.Z.e, a.n * sizeof(double)));
	CK(cudaMalloc(&a.Z.p, a.n * sizeof(double)));
	CK(cudaMalloc(&a.Z.q, a.n * sizeof(double)));
	CK(cudaMalloc(&a.Z.v, a.n * sizeof(double)));
	CK(cudaMalloc(&a.Z.dtc, a.n * sizeof(double)));
	CK(cudaMalloc(&a.Z.cycles, a.n * sizeof(unsigned long long)));
	CK(cudaMemset(a.Z.cycles, 0, a.n * sizeof(unsigned long long)));
	ckpt_protect("params", &P, sizeof(P));
	ckpt_protect("step", &step, sizeof(step));
	restarting = ckpt_restarting(&restart_step) > 0;
	if (a.marked) {
		int ret = ckpt_kernel_create("hydro_loop", gpuckpt_kernel_function(hydro_loop<true>),
					     a.grid, (unsigned long long)a.grid * THREADS, &rec);

		if (ret < 0) {
			fprintf(stderr, "%s: gpuckpt_kernel_create: %s\n", prog, ckpt_strerror(ret));
			return 1;
		}
	}
	if (!restarting && !P.m) {
		/* Calibrate: this GPU's rate for this kernel, on every zone. */
		double t0, dt;

		a.m = 16;
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
		printf("%s: calibrated: cycles=%lld (%.3g zone-cycles/s)\n", prog, P.m,
		       (double)a.m * (double)a.n / dt);
	}
	printf("%s: %s: n=%llu cycles=%lld marked=%d device=%s\n", prog,
	       restarting ? "restart" : "fresh start", a.n, P.m, a.marked, prop.name);
	fflush(stdout);
	for (; step < 1; step++) {
		double t0;
		int ret = ckpt_point(step);

		if (ret == GPUCKPT_RESTORED)
			printf("%s: resumed from step %ld (cycles=%lld)\n", prog, step, P.m);
		a.m = P.m;
		printf("%s: kernel started\n", prog);
		fflush(stdout);
		t0 = now();
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
		std::vector<double> e(a.n), p(a.n), q(a.n), v(a.n), dtc(a.n);
		std::vector<unsigned long long> cycles(a.n);
		std::vector<unsigned long long> idx(nsample);
		std::vector<zone> want(nsample);
		unsigned long long bad = 0, badcount = 0;
		uint64_t d = 0;
		unsigned nt = std::thread::hardware_concurrency();
		std::vector<std::thread> workers;
		double t0 = now();

		CK(cudaMemcpy(e.data(), a.Z.e, a.n * sizeof(double), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(p.data(), a.Z.p, a.n * sizeof(double), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(q.data(), a.Z.q, a.n * sizeof(double), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(v.data(), a.Z.v, a.n * sizeof(double), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(dtc.data(), a.Z.dtc, a.n * sizeof(double), cudaMemcpyDeviceToHost));
		CK(cudaMemcpy(cycles.data(), a.Z.cycles, a.n * sizeof(unsigned long long),
			      cudaMemcpyDeviceToHost));
		for (unsigned long long i = 0; i < a.n; i++) {
			if (cycles[i] != (unsigned long long)P.m && badcount++ < 5)
				fprintf(stderr, "%s: zone %llu: %llu cycles, want %lld\n", prog, i,
					cycles[i], P.m);
			d = d * 31 + (bits(e[i]) ^ bits(p[i]) ^ bits(q[i]) ^ bits(v[i]) ^
				      bits(dtc[i]) ^ cycles[i]);
		}
		if (no_check) {
			printf("%s: result: unchecked n=%llu digest=0x%016llx\n", prog, a.n,
			       (unsigned long long)d);
			return 0;
		}
		/* A spread sample: the first and the last zone, the rest evenly
		 * apart with a varying offset (rounds and threads of every kind). */
		for (unsigned long long s = 0; s < nsample; s++)
			idx[s] = nsample < 2 ? 0
					     : (s * (a.n - 1)) / (nsample - 1) -
						   ((s && s + 1 < nsample) ? mix(s) % ((a.n / nsample) | 1) / 2 : 0);
		if (!nt)
			nt = 1;
		for (unsigned w = 0; w < nt; w++)
			workers.emplace_back([&, w]() {
				for (unsigned long long s = w; s < nsample; s += nt)
					want[s] = integrate(idx[s], P.m);
			});
		for (auto &w : workers)
			w.join();
		for (unsigned long long s = 0; s < nsample; s++) {
			unsigned long long i = idx[s];
			const zone &z = want[s];

			if (bits(e[i]) != bits(z.e) || bits(p[i]) != bits(z.p) ||
			    bits(q[i]) != bits(z.q) || bits(v[i]) != bits(z.v) ||
			    bits(dtc[i]) != bits(z.dtc) || cycles[i] != z.cycles) {
				if (bad++ < 5)
					fprintf(stderr,
						"%s: zone %llu: e=%.17g p=%.17g v=%.17g cycles=%llu, "
						"want e=%.17g p=%.17g v=%.17g cycles=%llu\n",
						prog, i, e[i], p[i], v[i], cycles[i], z.e, z.p, z.v,
						z.cycles);
			}
		}
		bad += badcount;
		fprintf(stderr, "%s: the host checked %llu zones in %.3f s on %u threads\n", prog,
			nsample, now() - t0, nt);
		printf("%s: result: %s n=%llu checked=%llu mismatches=%llu digest=0x%016llx\n", prog,
		       bad ? "WRONG" : "ok", a.n, nsample, bad, (unsigned long long)d);
		return bad ? 3 : 0;
	}
}
