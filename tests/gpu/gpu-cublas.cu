/*
 * gpu-cublas - a cuBLAS SGEMM in every step. cuBLAS reaches the driver on its
 * own (through the CUDA runtime and cuGetProcAddress), allocates its own
 * workspace, some of it lazily at the first call, and loads its own kernels:
 * state the application never sees and the checkpoint must still cover.
 *
 * Every step: C = (2/n) A B + C / 4 on a stream handed to cuBLAS, then
 * B = sin(C) by a kernel of ours, which keeps the values bounded and makes
 * every element of the result depend on every step.
 */
#include <cublas_v2.h>

#include "gpu_test.h"

static void blas_check(cublasStatus_t st, const char *call, const char *file, int line)
{
	if (st == CUBLAS_STATUS_SUCCESS)
		return;
	fprintf(stderr, "%s: %s failed: %s (%d: %s) at %s:%d\n", gt_prog, call,
		cublasGetStatusName(st), (int)st, cublasGetStatusString(st), file, line);
	exit(1);
}

#define CB(call) blas_check((call), #call, __FILE__, __LINE__)

/* A fixed pseudo-random matrix in [0, 1), from a hash of the index. */
__global__ void init_matrix(float *a, long count, unsigned seed)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	unsigned x;

	if (i >= count)
		return;
	x = (unsigned)i * 2654435761u ^ seed;
	x ^= x >> 13;
	x *= 0x5bd1e995u;
	x ^= x >> 15;
	a[i] = (float)(x & 0xffffff) / 16777216.0f;
}

__global__ void squash(const float *c, float *b, long count, long step)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < count)
		b[i] = sinf(c[i] + 0.001f * (float)(step % 1000));
}

int main(int argc, char **argv)
{
	static const struct gt_size size = {256, 1, 8192, "matrix edge"};
	struct gt_device dev;
	struct gt_opts o;
	cublasHandle_t blas;
	cudaStream_t s;
	float *a, *b, *c, alpha, beta = 0.25f;
	uint64_t sum = GT_FNV_INIT;
	long step = 0, count;
	size_t bytes;
	int n;

	gt_prog = "gpu-cublas";
	gt_parse(&o, argc, argv, "Iterate C = (2/n) A B + C/4, B = sin(C) with cuBLAS SGEMM.",
		 &size);
	n = (int)o.size;
	count = (long)n * n;
	bytes = (size_t)count * sizeof(float);
	alpha = 2.0f / (float)n;
	gt_device_open(&dev);

	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	CB(cublasCreate(&blas));
	CB(cublasSetStream(blas, s));
	CK(cudaMalloc((void **)&a, bytes));
	CK(cudaMalloc((void **)&b, bytes));
	CK(cudaMalloc((void **)&c, bytes));
	init_matrix<<<gt_blocks(count), GT_BLOCK, 0, s>>>(a, count, 1u);
	CK_LAUNCH("init_matrix(A)");
	init_matrix<<<gt_blocks(count), GT_BLOCK, 0, s>>>(b, count, 2u);
	CK_LAUNCH("init_matrix(B)");
	CK(cudaMemsetAsync(c, 0, bytes, s));

	gt_begin(&o, &dev, &step);
	for (; step < o.steps; step++) {
		gt_point(step);
		gt_report(&o, step);
		CB(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a, n, b, n, &beta,
			       c, n));
		squash<<<gt_blocks(count), GT_BLOCK, 0, s>>>(c, b, count, step);
		CK_LAUNCH("squash");
		gt_delay(&o);
	}

	CK(cudaStreamSynchronize(s));
	sum = gt_fnv1a_device(sum, b, bytes);
	sum = gt_fnv1a_device(sum, c, bytes);
	gt_done(&o, sum);

	CK(cudaFree(c));
	CK(cudaFree(b));
	CK(cudaFree(a));
	CB(cublasDestroy(blas));
	CK(cudaStreamDestroy(s));
	return 0;
}
