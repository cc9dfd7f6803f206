/*
 * lud - blocked LU decomposition without pivoting, shaped like the Rodinia 3.1
 * benchmark: for every 16-wide block step, one kernel factors the diagonal
 * tile, one solves the tiles of the row and column panels (the perimeter),
 * and one updates the trailing matrix (the internal tiles). The generated
 * matrix (a[i][j] = 10 * exp(-0.01 |i - j|)) is symmetric positive definite,
 * so no pivoting is needed; it is generated on the device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BS 16

static const char usage[] =
    "usage: lud [-s size] [-v] [--small]\n"
    "  -s size   order of the generated matrix, a multiple of 16 (default 24576;\n"
    "            --small: 512)\n"
    "  -v, --verify  compare sampled entries of L*U with the input\n"
    "  --small   a quick run for smoke tests\n"
    "Inputs are generated; -i (an input file) is not supported.\n";

__host__ __device__ static inline float lud_input(size_t i, size_t j)
{
	size_t d = i > j ? i - j : j - i;

	return 10.0f * expf(-0.01f * (float)d);
}

__global__ void lud_generate(float *m, size_t n)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; idx < n * n; idx += stride)
		m[idx] = lud_input(idx / n, idx % n);
}

/* One block of BS threads factors the diagonal tile in place; thread r owns row r. */
__global__ void lud_diagonal(float *m, size_t n, size_t off)
{
	__shared__ float s[BS][BS];
	int tx = threadIdx.x, r, k, j;

	for (r = 0; r < BS; r++)
		s[r][tx] = m[(off + r) * n + off + tx];
	__syncthreads();
	for (k = 0; k < BS - 1; k++) {
		if (tx > k)
			s[tx][k] /= s[k][k];
		__syncthreads();
		if (tx > k)
			for (j = k + 1; j < BS; j++)
				s[tx][j] -= s[tx][k] * s[k][j];
		__syncthreads();
	}
	for (r = 0; r < BS; r++)
		m[(off + r) * n + off + tx] = s[r][tx];
}

/*
 * Block b solves the b-th tile right of the diagonal tile (U panel: thread j
 * owns a column, forward substitution with the unit lower factor) and the b-th
 * tile below it (L panel: thread BS + i owns a row, against the upper factor).
 */
__global__ void lud_perimeter(float *m, size_t n, size_t off)
{
	__shared__ float dia[BS][BS], row[BS][BS], col[BS][BS];
	size_t t0 = off + ((size_t)blockIdx.x + 1) * BS;
	int tx = threadIdx.x, i, j, k;
	float s;

	if (tx < BS) {
		for (i = 0; i < BS; i++) {
			dia[i][tx] = m[(off + i) * n + off + tx];
			row[i][tx] = m[(off + i) * n + t0 + tx];
		}
	} else {
		for (i = 0; i < BS; i++)
			col[i][tx - BS] = m[(t0 + i) * n + off + tx - BS];
	}
	__syncthreads();
	if (tx < BS) {
		j = tx;
		for (i = 1; i < BS; i++) {
			s = row[i][j];
			for (k = 0; k < i; k++)
				s -= dia[i][k] * row[k][j];
			row[i][j] = s;
		}
	} else {
		i = tx - BS;
		for (j = 0; j < BS; j++) {
			s = col[i][j];
			for (k = 0; k < j; k++)
				s -= col[i][k] * dia[k][j];
			col[i][j] = s / dia[j][j];
		}
	}
	__syncthreads();
	if (tx < BS) {
		for (i = 0; i < BS; i++)
			m[(off + i) * n + t0 + tx] = row[i][tx];
	} else {
		for (i = 0; i < BS; i++)
			m[(t0 + i) * n + off + tx - BS] = col[i][tx - BS];
	}
}

/* Trailing update: tile (by, bx) -= L panel tile by * U panel tile bx. */
__global__ void lud_internal(float *m, size_t n, size_t off)
{
	__shared__ float l[BS][BS], u[BS][BS];
	int tx = threadIdx.x, ty = threadIdx.y, k;
	size_t gr = off + ((size_t)blockIdx.y + 1) * BS + ty;
	size_t gc = off + ((size_t)blockIdx.x + 1) * BS + tx;
	float s = 0.0f;

	l[ty][tx] = m[gr * n + off + tx];
	u[ty][tx] = m[(off + ty) * n + gc];
	__syncthreads();
	for (k = 0; k < BS; k++)
		s += l[ty][k] * u[k][tx];
	m[gr * n + gc] -= s;
}

/* Sampled check of L*U against the input: the full product is O(n^3) on the host. */
static void lud_verify(const float *lu, size_t n)
{
	struct bench_rng rng;
	double worst = 0.0;
	int s, samples = 256;

	bench_rng_seed(&rng, 2024);
	for (s = 0; s < samples; s++) {
		size_t i = bench_rng_below(&rng, n), j = bench_rng_below(&rng, n), k;
		size_t kmax = i < j ? i : j;
		double v = 0.0, want = lud_input(i, j), err;

		for (k = 0; k <= kmax; k++) {
			double l = k == i ? 1.0 : lu[i * n + k];

			v += l * lu[k * n + j];
		}
		err = fabs(v - want) / (fabs(want) > 1e-6 ? fabs(want) : 1e-6);
		if (err > worst)
			worst = err;
	}
	bench_verified(worst < 1e-2, "largest relative error of L*U %.3g over %d sampled entries",
		       worst, samples);
}

int main(int argc, char **argv)
{
	int small = bench_start("lud", &argc, argv, usage);
	size_t n = small ? 512 : 24576, nb, off;
	struct {
		long blk;
	} st = {0};
	struct bench_hasher hasher;
	int verify = 0, k;
	float *m_d;
	uint64_t sum;

	for (k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "-s") && k + 1 < argc)
			n = (size_t)bench_parse_long(argv[++k], "-s (size)", BS, 65536);
		else if (!strcmp(argv[k], "-v"))
			verify = 1;
		else if (!strcmp(argv[k], "-i"))
			bench_die(
			    "-i: input files are not supported: the input is generated (use -s)");
		else
			bench_die("unknown argument '%s' (see --help)", argv[k]);
	}
	if (n % BS)
		bench_die("-s %zu: the size must be a multiple of %d", n, BS);
	nb = n / BS;
	bench_describe("size=%zu", n);

	CK(cudaMalloc((void **)&m_d, n * n * sizeof(float)));
	bench_hasher_init(&hasher);
	lud_generate<<<4096, 256>>>(m_d, n);
	CK_LAUNCH("lud_generate");

	bench_protect("state", &st, sizeof(st));
	while (st.blk < (long)nb - 1) {
		unsigned rest;

		if (bench_point(st.blk) == GPUCKPT_RESTORED)
			continue;
		off = (size_t)st.blk * BS;
		rest = (unsigned)(nb - (size_t)st.blk - 1);
		lud_diagonal<<<1, BS>>>(m_d, n, off);
		CK_LAUNCH("lud_diagonal");
		lud_perimeter<<<rest, 2 * BS>>>(m_d, n, off);
		CK_LAUNCH("lud_perimeter");
		lud_internal<<<dim3(rest, rest), dim3(BS, BS)>>>(m_d, n, off);
		CK_LAUNCH("lud_internal");
		st.blk++;
	}
	lud_diagonal<<<1, BS>>>(m_d, n, (nb - 1) * BS);
	CK_LAUNCH("lud_diagonal");
	CK(cudaDeviceSynchronize());

	if (verify || bench_verifying()) {
		float *lu = (float *)malloc(n * n * sizeof(float));

		if (!lu)
			bench_die("-v: out of host memory for a %zu x %zu matrix", n, n);
		CK(cudaMemcpy(lu, m_d, n * n * sizeof(float), cudaMemcpyDeviceToHost));
		lud_verify(lu, n);
		free(lu);
	}

	sum = bench_hash_device(&hasher, m_d, n * n * sizeof(float), BENCH_FNV_INIT);
	bench_finish(sum);
	bench_hasher_free(&hasher);
	CK(cudaFree(m_d));
	return 0;
}
