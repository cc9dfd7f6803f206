/*
 * srad - speckle reducing anisotropic diffusion of a generated image, shaped
 * like Rodinia 3.1's srad_v2: every iteration the host computes the
 * statistics of the region of interest from its copy of the image, copies the
 * image to the device, one kernel computes the diffusion coefficient and the
 * four directional derivatives of every pixel, a second applies the
 * divergence, and the image comes back to the host. The host copy is state
 * that lives across iterations, so it is registered with the runtime.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BS 16

static const char usage[] =
    "usage: srad [<rows> <cols> <y1> <y2> <x1> <x2> <lambda> <iterations>] [--small]\n"
    "  rows, cols  image size, multiples of 16 (default 2048 2048; --small: 256 256)\n"
    "  y1 y2 x1 x2 region of interest, inclusive (default 0 127 0 127)\n"
    "  lambda      update step (default 0.5)\n"
    "  iterations  (default 1000; --small: 50)\n"
    "  --verify    compare with the same iterations on the host (small images)\n";

/* Derivatives towards the four neighbours and the coefficient, clamped at the image edges. */
__global__ void srad_coeff(const float *J, float *C, float *dN, float *dS, float *dW, float *dE,
			   int rows, int cols, float q0sqr)
{
	__shared__ float s[BS + 2][BS + 2];
	int tx = threadIdx.x, ty = threadIdx.y;
	int i = blockIdx.y * BS + ty, j = blockIdx.x * BS + tx;
	size_t idx = (size_t)i * cols + j;
	float jc, n, so, w, e, g2, l, num, den, qsqr, c;

	s[ty + 1][tx + 1] = J[idx];
	if (ty == 0)
		s[0][tx + 1] = J[(size_t)(i > 0 ? i - 1 : 0) * cols + j];
	if (ty == BS - 1)
		s[BS + 1][tx + 1] = J[(size_t)(i < rows - 1 ? i + 1 : rows - 1) * cols + j];
	if (tx == 0)
		s[ty + 1][0] = J[(size_t)i * cols + (j > 0 ? j - 1 : 0)];
	if (tx == BS - 1)
		s[ty + 1][BS + 1] = J[(size_t)i * cols + (j < cols - 1 ? j + 1 : cols - 1)];
	__syncthreads();

	jc = s[ty + 1][tx + 1];
	n = s[ty][tx + 1] - jc;
	so = s[ty + 2][tx + 1] - jc;
	w = s[ty + 1][tx] - jc;
	e = s[ty + 1][tx + 2] - jc;
	g2 = (n * n + so * so + w * w + e * e) / (jc * jc);
	l = (n + so + w + e) / jc;
	num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
	den = 1.0f + 0.25f * l;
	qsqr = num / (den * den);
	den = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
	c = 1.0f / (1.0f + den);
	c = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c);

	C[idx] = c;
	dN[idx] = n;
	dS[idx] = so;
	dW[idx] = w;
	dE[idx] = e;
}

/* Divergence: the coefficients of the pixel, its south and its east neighbour. */
__global__ void srad_update(float *J, const float *C, const float *dN, const float *dS,
			    const float *dW, const float *dE, int rows, int cols, float lambda)
{
	__shared__ float c[BS + 1][BS + 1];
	int tx = threadIdx.x, ty = threadIdx.y;
	int i = blockIdx.y * BS + ty, j = blockIdx.x * BS + tx;
	size_t idx = (size_t)i * cols + j;
	float d;

	c[ty][tx] = C[idx];
	if (ty == BS - 1)
		c[BS][tx] = C[(size_t)(i < rows - 1 ? i + 1 : rows - 1) * cols + j];
	if (tx == BS - 1)
		c[ty][BS] = C[(size_t)i * cols + (j < cols - 1 ? j + 1 : cols - 1)];
	__syncthreads();

	d = c[ty][tx] * dN[idx] + c[ty + 1][tx] * dS[idx] + c[ty][tx] * dW[idx] +
	    c[ty][tx + 1] * dE[idx];
	J[idx] += 0.25f * lambda * d;
}

static void srad_image(float *J, size_t size)
{
	struct bench_rng rng;
	size_t i;

	bench_rng_seed(&rng, 7);
	for (i = 0; i < size; i++)
		J[i] = expf(bench_rng_float(&rng));
}

static float roi_q0sqr(const float *J, long cols, long r1, long r2, long c1, long c2)
{
	double sum = 0.0, sum2 = 0.0, n, mean, var;
	long i, j;

	for (i = r1; i <= r2; i++) {
		for (j = c1; j <= c2; j++) {
			double v = J[i * cols + j];

			sum += v;
			sum2 += v * v;
		}
	}
	n = (double)(r2 - r1 + 1) * (double)(c2 - c1 + 1);
	mean = sum / n;
	var = sum2 / n - mean * mean;
	return (float)(var / (mean * mean));
}

/* The two kernels' arithmetic, pixel by pixel on the host. */
static void srad_verify(const float *gpu, long rows, long cols, long r1, long r2, long c1, long c2,
			float lambda, long niter)
{
	size_t size = (size_t)rows * cols, x;
	float *J = (float *)malloc(size * sizeof(float)),
	      *C = (float *)malloc(size * sizeof(float));
	float *d = (float *)malloc(4 * size * sizeof(float));
	double worst = 0.0;
	long it, i, j;

	if (!J || !C || !d)
		bench_die("--verify: out of host memory");
	srad_image(J, size);
	for (it = 0; it < niter; it++) {
		float q0sqr = roi_q0sqr(J, cols, r1, r2, c1, c2);

		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				float jc, n, s, w, e, g2, l, num, den, qsqr, c;

				x = (size_t)i * cols + j;
				jc = J[x];
				n = J[x - (i > 0 ? cols : 0)] - jc;
				s = J[x + (i < rows - 1 ? cols : 0)] - jc;
				w = J[x - (j > 0)] - jc;
				e = J[x + (j < cols - 1)] - jc;
				g2 = (n * n + s * s + w * w + e * e) / (jc * jc);
				l = (n + s + w + e) / jc;
				num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
				den = 1.0f + 0.25f * l;
				qsqr = num / (den * den);
				den = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
				c = 1.0f / (1.0f + den);
				C[x] = c < 0.0f ? 0.0f : (c > 1.0f ? 1.0f : c);
				d[4 * x] = n;
				d[4 * x + 1] = s;
				d[4 * x + 2] = w;
				d[4 * x + 3] = e;
			}
		}
		for (i = 0; i < rows; i++) {
			for (j = 0; j < cols; j++) {
				float cs, ce;

				x = (size_t)i * cols + j;
				cs = C[x + (i < rows - 1 ? cols : 0)];
				ce = C[x + (j < cols - 1)];
				J[x] += 0.25f * lambda *
					(C[x] * d[4 * x] + cs * d[4 * x + 1] + C[x] * d[4 * x + 2] +
					 ce * d[4 * x + 3]);
			}
		}
	}
	for (x = 0; x < size; x++) {
		double r = fabs((double)gpu[x] - J[x]) / fabs((double)J[x]);

		worst = r > worst ? r : worst;
	}
	bench_verified(worst < 1e-3, "largest relative difference %.3g after %ld iterations", worst,
		       niter);
	free(J);
	free(C);
	free(d);
}

int main(int argc, char **argv)
{
	int small = bench_start("srad", &argc, argv, usage);
	long rows = small ? 256 : 2048, cols = small ? 256 : 2048, niter = small ? 50 : 1000;
	long r1 = 0, r2 = 127, c1 = 0, c2 = 127;
	float lambda = 0.5f;
	struct {
		long iter;
	} st = {0};
	float *J, *J_d, *C_d, *dN_d, *dS_d, *dW_d, *dE_d;
	size_t size, bytes;

	if (argc != 1 && argc != 9)
		bench_die("expected 8 arguments: rows cols y1 y2 x1 x2 lambda iterations "
			  "(see --help)");
	if (argc == 9) {
		rows = bench_parse_long(argv[1], "rows", BS, 32768);
		cols = bench_parse_long(argv[2], "cols", BS, 32768);
		r1 = bench_parse_long(argv[3], "y1", 0, rows - 1);
		r2 = bench_parse_long(argv[4], "y2", r1, rows - 1);
		c1 = bench_parse_long(argv[5], "x1", 0, cols - 1);
		c2 = bench_parse_long(argv[6], "x2", c1, cols - 1);
		lambda = (float)bench_parse_double(argv[7], "lambda", 0.0, 1.0);
		niter = bench_parse_long(argv[8], "iterations", 1, 100000000);
	}
	if (rows % BS || cols % BS)
		bench_die("rows %ld, cols %ld: both must be multiples of %d", rows, cols, BS);
	bench_describe("rows=%ld cols=%ld roi=%ld..%ld,%ld..%ld lambda=%g iterations=%ld", rows,
		       cols, r1, r2, c1, c2, lambda, niter);

	size = (size_t)rows * cols;
	bytes = size * sizeof(float);
	J = (float *)malloc(bytes);
	if (!J)
		bench_die("out of host memory for a %ld x %ld image", rows, cols);
	srad_image(J, size);

	CK(cudaMalloc((void **)&J_d, bytes));
	CK(cudaMalloc((void **)&C_d, bytes));
	CK(cudaMalloc((void **)&dN_d, bytes));
	CK(cudaMalloc((void **)&dS_d, bytes));
	CK(cudaMalloc((void **)&dW_d, bytes));
	CK(cudaMalloc((void **)&dE_d, bytes));

	bench_protect("state", &st, sizeof(st));
	bench_protect("image", J, bytes);
	while (st.iter < niter) {
		dim3 grid((unsigned)(cols / BS), (unsigned)(rows / BS)), block(BS, BS);
		float q0sqr;

		if (bench_point(st.iter) == GPUCKPT_RESTORED)
			continue;
		q0sqr = roi_q0sqr(J, cols, r1, r2, c1, c2);

		CK(cudaMemcpy(J_d, J, bytes, cudaMemcpyHostToDevice));
		srad_coeff<<<grid, block>>>(J_d, C_d, dN_d, dS_d, dW_d, dE_d, (int)rows, (int)cols,
					    q0sqr);
		CK_LAUNCH("srad_coeff");
		srad_update<<<grid, block>>>(J_d, C_d, dN_d, dS_d, dW_d, dE_d, (int)rows, (int)cols,
					     lambda);
		CK_LAUNCH("srad_update");
		CK(cudaMemcpy(J, J_d, bytes, cudaMemcpyDeviceToHost));
		st.iter++;
	}

	if (bench_verifying())
		srad_verify(J, rows, cols, r1, r2, c1, c2, lambda, niter);
	bench_finish(bench_fnv1a(J, bytes, BENCH_FNV_INIT));
	CK(cudaFree(J_d));
	CK(cudaFree(C_d));
	CK(cudaFree(dN_d));
	CK(cudaFree(dS_d));
	CK(cudaFree(dW_d));
	CK(cudaFree(dE_d));
	free(J);
	return 0;
}
