/*
 * particlefilter - tracks a disk moving through a generated noisy video with
 * a particle filter, shaped like the Rodinia 3.1 benchmark: per frame, one
 * kernel moves every particle with random noise and weighs it by the
 * likelihood of the pixels under the disk, block sums and a single-thread
 * total normalise the weights, a single thread builds the cumulative
 * distribution, and one thread per particle resamples by a linear search of
 * it (the quadratic part that dominates the run). Each particle has its own
 * random stream, so results do not depend on scheduling.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define THREADS 256
#define RADIUS 5
#define MAX_DISK ((2 * RADIUS + 1) * (2 * RADIUS + 1))
#define PI 3.14159265358979323846

static const char usage[] =
    "usage: particlefilter [-x dimX] [-y dimY] [-z frames] [-np particles] [--small]\n"
    "  -x, -y  frame size in pixels (default 128 x 128)\n"
    "  -z      frames (default 20; --small: 5)\n"
    "  -np     particles (default 1000000; --small: 20000)\n"
    "  --verify  check that the last estimate is within 5 pixels of the disk\n";

__device__ static inline double pf_randu(uint64_t *state)
{
	*state += BENCH_GOLDEN;
	return bench_unit_double(bench_mix64(*state));
}

/* Box-Muller; 1 - u keeps the logarithm finite. */
__device__ static inline double pf_randn(uint64_t *state)
{
	double u = 1.0 - pf_randu(state), v = pf_randu(state);

	return sqrt(-2.0 * log(u)) * cos(2.0 * PI * v);
}

__global__ void pf_init(double *x, double *y, double *w, uint64_t *seed, int n, double x0,
			double y0)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	x[i] = x0;
	y[i] = y0;
	w[i] = 1.0 / n;
	seed[i] = bench_mix64((uint64_t)i + 1);
}

/*
 * Move each particle (drift +1, -2 per frame, the disk's motion, plus noise)
 * and multiply its weight by the likelihood of the frame's pixels under the
 * disk centred on it: pixels near 228 (the disk) raise it, near 100 lower it.
 */
__global__ void pf_likelihood(double *x, double *y, double *w, uint64_t *seed,
			      const unsigned char *frame, int dimx, int dimy, const int *disk,
			      int ndisk, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x, j;
	uint64_t s;
	double like = 0.0;
	int px, py;

	if (i >= n)
		return;
	s = seed[i];
	x[i] += 1.0 + 5.0 * pf_randn(&s);
	y[i] += -2.0 + 2.0 * pf_randn(&s);
	seed[i] = s;
	px = (int)rint(x[i]);
	py = (int)rint(y[i]);
	for (j = 0; j < ndisk; j++) {
		int xx = px + disk[2 * j], yy = py + disk[2 * j + 1];
		double v;

		xx = xx < 0 ? 0 : (xx >= dimx ? dimx - 1 : xx);
		yy = yy < 0 ? 0 : (yy >= dimy ? dimy - 1 : yy);
		v = frame[(size_t)xx * dimy + yy];
		like += ((v - 100.0) * (v - 100.0) - (v - 228.0) * (v - 228.0)) / 50.0;
	}
	w[i] *= exp(like / ndisk);
}

/* Per-block sums of a (and of a*b when b is given), in a fixed tree order. */
__global__ void pf_block_sums(const double *a, const double *b, const double *c, int n,
			      double *part_ab, double *part_ac)
{
	__shared__ double sb[THREADS], sc[THREADS];
	int tid = threadIdx.x, i = blockIdx.x * blockDim.x + tid, s;

	sb[tid] = i < n ? (b ? a[i] * b[i] : a[i]) : 0.0;
	sc[tid] = i < n && c ? a[i] * c[i] : 0.0;
	__syncthreads();
	for (s = THREADS / 2; s > 0; s >>= 1) {
		if (tid < s) {
			sb[tid] += sb[tid + s];
			sc[tid] += sc[tid + s];
		}
		__syncthreads();
	}
	if (tid == 0) {
		part_ab[blockIdx.x] = sb[0];
		if (part_ac)
			part_ac[blockIdx.x] = sc[0];
	}
}

/* One thread adds the block sums in order: out[0] = sum(p0), out[1] = sum(p1). */
__global__ void pf_total(const double *p0, const double *p1, int nparts, double *out)
{
	double s0 = 0.0, s1 = 0.0;
	int i;

	for (i = 0; i < nparts; i++) {
		s0 += p0[i];
		if (p1)
			s1 += p1[i];
	}
	out[0] = s0;
	out[1] = s1;
}

__global__ void pf_normalize(double *w, int n, const double *total)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		w[i] /= total[0];
}

/*
 * One thread: the cumulative distribution and the first resampling offset.
 * Without aliasing between the arrays the compiler can keep several loads in
 * flight, which is what bounds a single thread walking a million weights.
 */
__global__ void pf_cdf(const double *__restrict__ w, double *__restrict__ cdf, int n, uint64_t *rng,
		       double *u1)
{
	double s = 0.0;
	int i;

#pragma unroll 8
	for (i = 0; i < n; i++) {
		s += w[i];
		cdf[i] = s;
	}
	*u1 = pf_randu(rng) / n;
}

/* Systematic resampling: particle j takes the first one whose cdf reaches u1 + j/n. */
__global__ void pf_find_index(const double *cdf, const double *x, const double *y, double *xn,
			      double *yn, int n, const double *u1)
{
	int j = blockIdx.x * blockDim.x + threadIdx.x, i;
	double u;

	if (j >= n)
		return;
	u = *u1 + (double)j / n;
	for (i = 0; i < n - 1; i++)
		if (cdf[i] >= u)
			break;
	xn[j] = x[i];
	yn[j] = y[i];
}

__global__ void pf_take(double *x, double *y, double *w, const double *xn, const double *yn, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	x[i] = xn[i];
	y[i] = yn[i];
	w[i] = 1.0 / n;
}

/* A bright disk (228) on a dark ground (100) moving by (+1, -2) each frame, plus noise. */
static unsigned char *make_video(int dimx, int dimy, int frames)
{
	size_t per = (size_t)dimx * dimy;
	unsigned char *v = (unsigned char *)malloc(per * frames);
	struct bench_rng rng;
	int k, x, y;

	if (!v)
		bench_die("out of host memory for %d frames of %d x %d", frames, dimx, dimy);
	bench_rng_seed(&rng, 17);
	for (k = 0; k < frames; k++) {
		int cx = dimx / 2 + k, cy = dimy / 2 - 2 * k;

		for (x = 0; x < dimx; x++) {
			for (y = 0; y < dimy; y++) {
				int in =
				    (x - cx) * (x - cx) + (y - cy) * (y - cy) <= RADIUS * RADIUS;
				double u = 1.0 - bench_unit_double(bench_rng_next(&rng));
				double g = sqrt(-2.0 * log(u)) *
					   cos(2.0 * PI * bench_unit_double(bench_rng_next(&rng)));
				double val = (in ? 228.0 : 100.0) + 5.0 * g;

				val = val < 0.0 ? 0.0 : (val > 255.0 ? 255.0 : val);
				v[(size_t)k * per + (size_t)x * dimy + y] = (unsigned char)val;
			}
		}
	}
	return v;
}

int main(int argc, char **argv)
{
	int small = bench_start("particlefilter", &argc, argv, usage);
	long dimx = 128, dimy = 128, frames = small ? 5 : 20, n = small ? 20000 : 1000000;
	int disk[2 * MAX_DISK], ndisk = 0, dx, dy, k;
	struct {
		long frame;
	} st = {1};
	double *est, *x_d, *y_d, *w_d, *xn_d, *yn_d, *cdf_d, *part0_d, *part1_d, *tot_d, *u1_d;
	uint64_t *seed_d, *rng_d, rng0 = 99, sum;
	unsigned char *video, *video_d;
	int *disk_d;
	struct bench_hasher hasher;
	unsigned blocks;
	size_t per;

	for (k = 1; k < argc; k++) {
		const char *a = argv[k];

		if (k + 1 >= argc)
			bench_die("'%s': missing value or unknown argument (see --help)", a);
		if (!strcmp(a, "-x"))
			dimx = bench_parse_long(argv[++k], "-x (dimX)", 16, 8192);
		else if (!strcmp(a, "-y"))
			dimy = bench_parse_long(argv[++k], "-y (dimY)", 16, 8192);
		else if (!strcmp(a, "-z"))
			frames = bench_parse_long(argv[++k], "-z (frames)", 2, 100000);
		else if (!strcmp(a, "-np"))
			n = bench_parse_long(argv[++k], "-np (particles)", 1, 100000000);
		else
			bench_die("unknown argument '%s' (see --help)", a);
	}
	bench_describe("dimX=%ld dimY=%ld frames=%ld particles=%ld", dimx, dimy, frames, n);
	blocks = bench_blocks((size_t)n, THREADS);
	per = (size_t)dimx * dimy;

	for (dx = -RADIUS; dx <= RADIUS; dx++) {
		for (dy = -RADIUS; dy <= RADIUS; dy++) {
			if (dx * dx + dy * dy <= RADIUS * RADIUS) {
				disk[2 * ndisk] = dx;
				disk[2 * ndisk + 1] = dy;
				ndisk++;
			}
		}
	}
	video = make_video((int)dimx, (int)dimy, (int)frames);
	est = (double *)calloc(2 * (size_t)frames, sizeof(double));
	if (!est)
		bench_die("out of host memory");

	CK(cudaMalloc((void **)&video_d, per * frames));
	CK(cudaMalloc((void **)&disk_d, sizeof(int) * 2 * ndisk));
	CK(cudaMalloc((void **)&x_d, n * sizeof(double)));
	CK(cudaMalloc((void **)&y_d, n * sizeof(double)));
	CK(cudaMalloc((void **)&w_d, n * sizeof(double)));
	CK(cudaMalloc((void **)&xn_d, n * sizeof(double)));
	CK(cudaMalloc((void **)&yn_d, n * sizeof(double)));
	CK(cudaMalloc((void **)&cdf_d, n * sizeof(double)));
	CK(cudaMalloc((void **)&seed_d, n * sizeof(uint64_t)));
	CK(cudaMalloc((void **)&part0_d, blocks * sizeof(double)));
	CK(cudaMalloc((void **)&part1_d, blocks * sizeof(double)));
	CK(cudaMalloc((void **)&tot_d, 2 * sizeof(double)));
	CK(cudaMalloc((void **)&u1_d, sizeof(double)));
	CK(cudaMalloc((void **)&rng_d, sizeof(uint64_t)));
	bench_hasher_init(&hasher);
	CK(cudaMemcpy(video_d, video, per * frames, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(disk_d, disk, sizeof(int) * 2 * ndisk, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(rng_d, &rng0, sizeof(rng0), cudaMemcpyHostToDevice));
	pf_init<<<blocks, THREADS>>>(x_d, y_d, w_d, seed_d, (int)n, (double)(dimx / 2),
				     (double)(dimy / 2));
	CK_LAUNCH("pf_init");
	est[0] = (double)(dimx / 2);
	est[1] = (double)(dimy / 2);

	bench_protect("state", &st, sizeof(st));
	bench_protect("estimates", est, 2 * (size_t)frames * sizeof(double));
	while (st.frame < frames) {
		double xy[2];

		if (bench_point(st.frame) == GPUCKPT_RESTORED)
			continue;
		pf_likelihood<<<blocks, THREADS>>>(x_d, y_d, w_d, seed_d, video_d + st.frame * per,
						   (int)dimx, (int)dimy, disk_d, ndisk, (int)n);
		CK_LAUNCH("pf_likelihood");
		pf_block_sums<<<blocks, THREADS>>>(w_d, NULL, NULL, (int)n, part0_d, NULL);
		CK_LAUNCH("pf_block_sums");
		pf_total<<<1, 1>>>(part0_d, NULL, (int)blocks, tot_d);
		CK_LAUNCH("pf_total");
		pf_normalize<<<blocks, THREADS>>>(w_d, (int)n, tot_d);
		CK_LAUNCH("pf_normalize");

		/* The estimate: the weighted mean position. */
		pf_block_sums<<<blocks, THREADS>>>(w_d, x_d, y_d, (int)n, part0_d, part1_d);
		CK_LAUNCH("pf_block_sums");
		pf_total<<<1, 1>>>(part0_d, part1_d, (int)blocks, tot_d);
		CK_LAUNCH("pf_total");
		CK(cudaMemcpy(xy, tot_d, sizeof(xy), cudaMemcpyDeviceToHost));
		est[2 * st.frame] = xy[0];
		est[2 * st.frame + 1] = xy[1];

		pf_cdf<<<1, 1>>>(w_d, cdf_d, (int)n, rng_d, u1_d);
		CK_LAUNCH("pf_cdf");
		pf_find_index<<<blocks, THREADS>>>(cdf_d, x_d, y_d, xn_d, yn_d, (int)n, u1_d);
		CK_LAUNCH("pf_find_index");
		pf_take<<<blocks, THREADS>>>(x_d, y_d, w_d, xn_d, yn_d, (int)n);
		CK_LAUNCH("pf_take");
		st.frame++;
	}

	printf("particlefilter: last estimate (%.2f, %.2f), disk at (%ld, %ld)\n",
	       est[2 * (frames - 1)], est[2 * (frames - 1) + 1], dimx / 2 + frames - 1,
	       dimy / 2 - 2 * (frames - 1));
	if (bench_verifying()) {
		double ex = est[2 * (frames - 1)] - (double)(dimx / 2 + frames - 1);
		double ey = est[2 * (frames - 1) + 1] - (double)(dimy / 2 - 2 * (frames - 1));

		bench_verified(sqrt(ex * ex + ey * ey) < 5.0, "tracking error %.2f pixels",
			       sqrt(ex * ex + ey * ey));
	}
	sum = bench_fnv1a(est, 2 * (size_t)frames * sizeof(double), BENCH_FNV_INIT);
	sum = bench_hash_device(&hasher, x_d, n * sizeof(double), sum);
	sum = bench_hash_device(&hasher, y_d, n * sizeof(double), sum);
	bench_finish(sum);

	bench_hasher_free(&hasher);
	CK(cudaFree(video_d));
	CK(cudaFree(disk_d));
	CK(cudaFree(x_d));
	CK(cudaFree(y_d));
	CK(cudaFree(w_d));
	CK(cudaFree(xn_d));
	CK(cudaFree(yn_d));
	CK(cudaFree(cdf_d));
	CK(cudaFree(seed_d));
	CK(cudaFree(part0_d));
	CK(cudaFree(part1_d));
	CK(cudaFree(tot_d));
	CK(cudaFree(u1_d));
	CK(cudaFree(rng_d));
	free(video);
	free(est);
	return 0;
}
