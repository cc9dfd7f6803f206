/*
 * gpu-peer-rt - two GPUs of one process that read and write each other's
 * memory from kernels, through the CUDA runtime (cudaDeviceEnablePeerAccess).
 * Every step a kernel on device 0 mixes into its array values it reads from
 * device 1's array and writes a copy of its result into a buffer on device 1;
 * then a kernel on device 1 does the same the other way. Half the buffers are
 * allocated after peer access is enabled.
 *
 * A kernel touching a peer's memory that it has no mapping for faults: under
 * gpuckpt the run ends with the native checksum only if the runtime granted
 * the peer mappings of the memory it placed, and, after a restore, granted
 * them again on the GPUs the process has then. Exits 77, saying why, when the
 * machine has fewer than two GPUs or no peer route between devices 0 and 1.
 */
#include "gpu_test.h"

/* x[i] mixes in the peer's p[(i * stride) % n]; out (on the peer) gets x. */
__global__ void pull_push(float *x, const float *p, float *out, long n, long stride, long step)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	x[i] = 0.99f * x[i] + 0.01f * p[(i * stride) % n] + 1e-4f * (float)(step % 97);
	out[i] = x[i];
}

__global__ void fill(float *x, long n, int seed)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		x[i] = (float)((i * (seed + 3)) % 101) * 0.01f;
}

int main(int argc, char **argv)
{
	static const struct gt_size size = {1L << 20, 1024, 1L << 26, "floats per array"};
	struct gt_opts o;
	struct gt_device dev;
	float *x[2], *y[2]; /* x[d], y[d] on device d */
	uint64_t sum = GT_FNV_INIT;
	long step = 0;
	size_t bytes;
	unsigned blocks;
	int n = 0, can01 = 0, can10 = 0;

	gt_prog = "gpu-peer-rt";
	gt_parse(&o, argc, argv,
		 "Two GPUs read and write each other's memory from kernels every step\n"
		 "(peer access through cudaDeviceEnablePeerAccess).",
		 &size);
	bytes = (size_t)o.size * sizeof(float);
	blocks = gt_blocks(o.size);
	CK(cudaGetDeviceCount(&n));
	if (n < 2) {
		printf("%s: SKIP: this machine has %d GPU(s); peer access needs two\n", gt_prog, n);
		return 77;
	}
	CK(cudaDeviceCanAccessPeer(&can01, 0, 1));
	CK(cudaDeviceCanAccessPeer(&can10, 1, 0));
	if (!can01 || !can10) {
		printf("%s: SKIP: devices 0 and 1 have no peer route (%d, %d)\n", gt_prog, can01,
		       can10);
		return 77;
	}
	gt_device_open(&dev);

	/* Setup, the same in a fresh and a restored run. */
	for (int d = 0; d < 2; d++) {
		CK(cudaSetDevice(d));
		CK(cudaMalloc((void **)&x[d], bytes));
	}
	for (int d = 0; d < 2; d++) {
		CK(cudaSetDevice(d));
		CK(cudaDeviceEnablePeerAccess(1 - d, 0));
	}
	for (int d = 0; d < 2; d++) {
		CK(cudaSetDevice(d));
		CK(cudaMalloc((void **)&y[d], bytes));
		fill<<<blocks, GT_BLOCK>>>(x[d], o.size, d);
		CK_LAUNCH("fill");
		CK(cudaMemset(y[d], 0, bytes));
		CK(cudaDeviceSynchronize());
	}
	CK(cudaSetDevice(0));

	gt_begin(&o, &dev, &step);
	for (; step < o.steps; step++) {
		gt_point(step);
		gt_report(&o, step);
		for (int d = 0; d < 2; d++) {
			/* One device at a time: each reads what the other wrote. */
			CK(cudaSetDevice(d));
			pull_push<<<blocks, GT_BLOCK>>>(x[d], x[1 - d], y[1 - d], o.size, d ? 5 : 7,
							 step);
			CK_LAUNCH("pull_push");
			CK(cudaDeviceSynchronize());
		}
		CK(cudaSetDevice(0));
		gt_delay(&o);
	}

	for (int d = 0; d < 2; d++) {
		CK(cudaSetDevice(d));
		CK(cudaDeviceSynchronize());
		sum = gt_fnv1a_device(sum, x[d], bytes);
		sum = gt_fnv1a_device(sum, y[d], bytes);
	}
	CK(cudaSetDevice(0));
	gt_done(&o, sum);
	for (int d = 0; d < 2; d++) {
		CK(cudaSetDevice(d));
		CK(cudaFree(x[d]));
		CK(cudaFree(y[d]));
	}
	return 0;
}
