/*
 * gaussian - Gaussian elimination of a dense system A x = b, shaped like the
 * Rodinia 3.1 benchmark: for every pivot t one kernel (fan1) computes the
 * multipliers of column t and a second (fan2) eliminates column t from the
 * rows below it; the host synchronises after each pivot and does the back
 * substitution at the end. No pivoting: the generated matrix is symmetric
 * positive definite (a[i][j] = 10 * exp(-0.01 |i - j|)), which keeps it stable.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static const char usage[] =
    "usage: gaussian [-s size] [-q] [--small]\n"
    "  -s size   order of the generated system (default 12288; --small: 256)\n"
    "  -q        quiet: do not print the first elements of the solution\n"
    "  --small   a quick run for smoke tests\n"
    "  --verify  check the residual b - A x on the host\n"
    "Inputs are generated; -f (an input file) is not supported.\n";

__global__ void fan1(float *m, const float *a, size_t n, size_t t)
{
	size_t i = t + 1 + (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		m[i * n + t] = a[i * n + t] / a[t * n + t];
}

/* Row t and the multipliers are only read here, so rows below t update independently. */
__global__ void fan2(const float *m, float *a, float *b, size_t n, size_t t)
{
	size_t j = t + (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t i = t + 1 + (size_t)blockIdx.y * blockDim.y + threadIdx.y;
	float mul;

	if (i >= n || j >= n)
		return;
	mul = m[i * n + t];
	a[i * n + j] -= mul * a[t * n + j];
	if (j == t)
		b[i] -= mul * b[t];
}

int main(int argc, char **argv)
{
	int small = bench_start("gaussian", &argc, argv, usage);
	size_t n = small ? 256 : 12288, i, j;
	struct {
		long t;
	} st = {0};
	struct bench_hasher hasher;
	float *a, *b, *x, *coe, *a_d, *b_d, *m_d;
	int quiet = 0, k;
	uint64_t sum;

	for (k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "-s") && k + 1 < argc)
			n = (size_t)bench_parse_long(argv[++k], "-s (size)", 2, 65536);
		else if (!strcmp(argv[k], "-q"))
			quiet = 1;
		else if (!strcmp(argv[k], "-f"))
			bench_die(
			    "-f: input files are not supported: the input is generated (use -s)");
		else
			bench_die("unknown argument '%s' (see --help)", argv[k]);
	}
	bench_describe("size=%zu", n);

	a = (float *)malloc(n * n * sizeof(float));
	b = (float *)malloc(n * sizeof(float));
	x = (float *)malloc(n * sizeof(float));
	coe = (float *)malloc(n * sizeof(float));
	if (!a || !b || !x || !coe)
		bench_die("out of host memory for a %zu x %zu system", n, n);
	for (i = 0; i < n; i++)
		coe[i] = 10.0f * expf(-0.01f * (float)i);
	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++)
			a[i * n + j] = coe[i > j ? i - j : j - i];
		b[i] = 1.0f;
	}

	CK(cudaMalloc((void **)&a_d, n * n * sizeof(float)));
	CK(cudaMalloc((void **)&m_d, n * n * sizeof(float)));
	CK(cudaMalloc((void **)&b_d, n * sizeof(float)));
	bench_hasher_init(&hasher);
	CK(cudaMemcpy(a_d, a, n * n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(b_d, b, n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemset(m_d, 0, n * n * sizeof(float)));

	bench_protect("state", &st, sizeof(st));
	while (st.t < (long)n - 1) {
		size_t t, rows;

		if (bench_point(st.t) == GPUCKPT_RESTORED)
			continue;
		t = (size_t)st.t;
		rows = n - 1 - t;
		fan1<<<bench_blocks(rows, 256), 256>>>(m_d, a_d, n, t);
		CK_LAUNCH("fan1");
		fan2<<<dim3(bench_blocks(n - t, 32), bench_blocks(rows, 8)), dim3(32, 8)>>>(
		    m_d, a_d, b_d, n, t);
		CK_LAUNCH("fan2");
		CK(cudaDeviceSynchronize());
		st.t++;
	}

	CK(cudaMemcpy(a, a_d, n * n * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(b, b_d, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (i = n; i-- > 0;) {
		double s = b[i];

		for (j = i + 1; j < n; j++)
			s -= (double)a[i * n + j] * x[j];
		x[i] = (float)(s / a[i * n + i]);
	}
	if (bench_verifying()) {
		double worst = 0.0;

		for (i = 0; i < n; i++) {
			double r = 1.0;

			for (j = 0; j < n; j++)
				r -= (double)coe[i > j ? i - j : j - i] * x[j];
			worst = fabs(r) > worst ? fabs(r) : worst;
		}
		bench_verified(worst < 1e-2, "largest residual |b - A x| %.3g (b = 1)", worst);
	}
	if (!quiet) {
		printf("gaussian: x[0..%d] =", n < 8 ? (int)n : 8);
		for (i = 0; i < n && i < 8; i++)
			printf(" %.6g", x[i]);
		printf("\n");
	}

	sum = bench_fnv1a(x, n * sizeof(float), BENCH_FNV_INIT);
	sum = bench_hash_device(&hasher, a_d, n * n * sizeof(float), sum);
	bench_finish(sum);

	bench_hasher_free(&hasher);
	CK(cudaFree(a_d));
	CK(cudaFree(m_d));
	CK(cudaFree(b_d));
	free(a);
	free(b);
	free(x);
	free(coe);
	return 0;
}
