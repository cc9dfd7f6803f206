/*
 * gpu-streams - several streams working at once, tied together by events, with
 * stream-ordered allocation inside the loop. A checkpoint has to drain every
 * stream and must not catch a scratch buffer between cudaMallocAsync and
 * cudaFreeAsync; a restore has to give the persistent buffers back where the
 * kernels expect them.
 *
 * Every step: each of NSTREAMS worker streams waits for the previous mix,
 * allocates a scratch buffer on itself, advances its own array through it and
 * frees it; the mixer stream waits for all of them and folds their arrays
 * into an accumulator. The order is fixed by events, so the result is the
 * same on every run.
 */
#include "gpu_test.h"

#define NSTREAMS 4

__global__ void fill(float *d, long n, int k)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = (float)(i % 97) * 0.01f + (float)k;
}

__global__ void advance(const float *in, float *out, long n, long step, int k)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = in[i] * 0.999f + 0.001f * sinf(0.001f * (float)(i % 4096) +
							0.01f * (float)(step % 1000) + (float)k);
}

__global__ void take(float *d, const float *tmp, long n)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = tmp[i];
}

__global__ void mix(float *acc, const float *a, const float *b, const float *c, const float *d,
		    long n)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		acc[i] = 0.5f * acc[i] + 0.125f * (a[i] + b[i] + c[i] + d[i]);
}

int main(int argc, char **argv)
{
	static const struct gt_size size = {1L << 20, 1, 1L << 28, "elements per stream"};
	cudaStream_t worker[NSTREAMS], mixer;
	cudaEvent_t done[NSTREAMS], mixed;
	float *data[NSTREAMS], *acc;
	struct gt_device dev;
	struct gt_opts o;
	uint64_t sum = GT_FNV_INIT;
	long step = 0;
	size_t bytes;
	unsigned blocks;

	gt_prog = "gpu-streams";
	gt_parse(&o, argc, argv,
		 "Advance four arrays on four streams, joined by events, with a scratch buffer\n"
		 "from cudaMallocAsync per stream and step.",
		 &size);
	bytes = (size_t)o.size * sizeof(float);
	blocks = gt_blocks(o.size);
	gt_device_open(&dev);

	CK(cudaStreamCreateWithFlags(&mixer, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&mixed, cudaEventDisableTiming));
	for (int k = 0; k < NSTREAMS; k++) {
		CK(cudaStreamCreateWithFlags(&worker[k], cudaStreamNonBlocking));
		CK(cudaEventCreateWithFlags(&done[k], cudaEventDisableTiming));
		CK(cudaMalloc((void **)&data[k], bytes));
		fill<<<blocks, GT_BLOCK, 0, mixer>>>(data[k], o.size, k);
		CK_LAUNCH("fill");
	}
	CK(cudaMalloc((void **)&acc, bytes));
	CK(cudaMemsetAsync(acc, 0, bytes, mixer));
	CK(cudaEventRecord(mixed, mixer));

	gt_begin(&o, &dev, &step);
	for (; step < o.steps; step++) {
		gt_point(step);
		gt_report(&o, step);
		for (int k = 0; k < NSTREAMS; k++) {
			float *tmp;

			CK(cudaStreamWaitEvent(worker[k], mixed, 0));
			CK(cudaMallocAsync((void **)&tmp, bytes, worker[k]));
			advance<<<blocks, GT_BLOCK, 0, worker[k]>>>(data[k], tmp, o.size, step, k);
			CK_LAUNCH("advance");
			take<<<blocks, GT_BLOCK, 0, worker[k]>>>(data[k], tmp, o.size);
			CK_LAUNCH("take");
			CK(cudaFreeAsync(tmp, worker[k]));
			CK(cudaEventRecord(done[k], worker[k]));
			CK(cudaStreamWaitEvent(mixer, done[k], 0));
		}
		mix<<<blocks, GT_BLOCK, 0, mixer>>>(acc, data[0], data[1], data[2], data[3],
						    o.size);
		CK_LAUNCH("mix");
		CK(cudaEventRecord(mixed, mixer));
		gt_delay(&o);
	}

	CK(cudaDeviceSynchronize());
	for (int k = 0; k < NSTREAMS; k++)
		sum = gt_fnv1a_device(sum, data[k], bytes);
	sum = gt_fnv1a_device(sum, acc, bytes);
	gt_done(&o, sum);

	CK(cudaFree(acc));
	for (int k = 0; k < NSTREAMS; k++) {
		CK(cudaFree(data[k]));
		CK(cudaEventDestroy(done[k]));
		CK(cudaStreamDestroy(worker[k]));
	}
	CK(cudaEventDestroy(mixed));
	CK(cudaStreamDestroy(mixer));
	return 0;
}
