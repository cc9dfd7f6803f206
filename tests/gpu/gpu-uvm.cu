/*
 * gpu-uvm - managed memory (cudaMallocManaged) written by kernels and by the
 * host every step (tests/gpu/managed.sh). Three managed arrays of --size
 * 64-bit words:
 *   a  cudaMemAttachGlobal, advised to prefer the device and prefetched there
 *      every step (cudaMemAdvise, cudaMemPrefetchAsync);
 *   b  cudaMemAttachGlobal, advised as accessed by the device;
 *   h  cudaMemAttachHost, then attached to stream s2 (cudaStreamAttachMemAsync),
 *      written by the host every step and read by a kernel on s2.
 * A table of their addresses lives in device memory (a kernel follows it
 * every step) and in a registered host region: a restore that gave other
 * addresses back is seen (the program says so and exits 1). The managed
 * addresses are printed at the start ("gpu-uvm: managed a=... b=... h=..."),
 * so that two runs can be compared.
 */
#include "gpu_test.h"

__global__ void k_update(uint64_t *a, const uint64_t *b, long n, long step)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		a[i] = a[i] * 6364136223846793005ULL + b[i] + (uint64_t)step;
}

/* Through the table in device memory: pointers to managed memory. */
__global__ void k_follow(uint64_t *const *table, long n, long step)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		table[1][step % n] += table[0][(step * 7) % n];
}

__global__ void k_mix(uint64_t *b, const uint64_t *a, const uint64_t *h, long n)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		b[i] ^= (a[(i * 31) % n] >> 7) + h[i];
}

static struct cudaMemLocation loc_device(int dev)
{
	struct cudaMemLocation l;

	l.type = cudaMemLocationTypeDevice;
	l.id = dev;
	return l;
}

int main(int argc, char **argv)
{
	struct gt_opts o;
	struct gt_device dev;
	const struct gt_size size = {1L << 20, 1024, 1L << 26, "64-bit words per managed array"};
	uint64_t *a, *b, *h, **table, *want[3], *got[2], sum = GT_FNV_INIT;
	/* The managed addresses in host memory, saved with the checkpoint. */
	static uint64_t ptrs[3];
	cudaStream_t s1, s2;
	cudaEvent_t e;
	long step = 0, n;
	size_t bytes;
	int attr = 0;

	gt_prog = "gpu-uvm";
	gt_parse(&o, argc, argv, "Managed memory written by kernels and by the host every step.",
		 &size);
	n = o.size;
	bytes = (size_t)n * sizeof(uint64_t);
	gt_device_open(&dev);
	CK(cudaDeviceGetAttribute(&attr, cudaDevAttrConcurrentManagedAccess, 0));
	if (!attr)
		gt_die("device 0 has no concurrent managed access: this test is for Pascal or later "
		       "on Linux");
	{
		/* Never more managed memory than half of what the GPU has free:
		 * oversubscription can hang it. */
		size_t free_b = 0, total_b = 0;

		CK(cudaMemGetInfo(&free_b, &total_b));
		if (3 * bytes > free_b / 2)
			gt_die("3 x %zu bytes of managed memory is more than half of the %zu bytes "
			       "free on the GPU: use a smaller --size",
			       bytes, free_b);
	}
	CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
	CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
	CK(cudaMallocManaged((void **)&a, bytes, cudaMemAttachGlobal));
	CK(cudaMallocManaged((void **)&b, bytes, cudaMemAttachGlobal));
	CK(cudaMallocManaged((void **)&h, bytes, cudaMemAttachHost));
	CK(cudaMalloc((void **)&table, 2 * sizeof(*table)));
	printf("gpu-uvm: managed a=%p b=%p h=%p\n", (void *)a, (void *)b, (void *)h);
	CK(cudaMemAdvise(a, bytes, cudaMemAdviseSetPreferredLocation, loc_device(0)));
	CK(cudaMemAdvise(b, bytes, cudaMemAdviseSetAccessedBy, loc_device(0)));
	CK(cudaStreamAttachMemAsync(s2, h, 0, cudaMemAttachSingle));
	CK(cudaStreamSynchronize(s2));
	want[0] = a;
	want[1] = b;
	want[2] = h;
	CK(cudaMemcpy(table, want, 2 * sizeof(*table), cudaMemcpyHostToDevice));
	for (int k = 0; k < 3; k++)
		ptrs[k] = (uint64_t)(uintptr_t)want[k];
	if (ckpt_protect("ptrs", ptrs, sizeof(ptrs)) < 0)
		gt_die("gpuckpt_protect(ptrs) failed");
	for (long i = 0; i < n; i++) {
		a[i] = (uint64_t)i;
		b[i] = (uint64_t)i * 7;
		h[i] = (uint64_t)i * 13;
	}
	CK(cudaMemPrefetchAsync(a, bytes, loc_device(0), 0, s1));
	gt_begin(&o, &dev, &step);
	for (; step < o.steps; step++) {
		if (gt_point(step) == GPUCKPT_RESTORED) {
			CK(cudaMemcpy(got, table, sizeof(got), cudaMemcpyDeviceToHost));
			for (int k = 0; k < 3; k++)
				if (ptrs[k] != (uint64_t)(uintptr_t)want[k] || (k < 2 && got[k] != want[k]))
					gt_die("after the restore, managed array %d is at %p; the "
					       "checkpointed run had it at %#llx",
					       k, (void *)want[k], (unsigned long long)ptrs[k]);
			printf("gpu-uvm: restored at step %ld: managed pointers intact in host and "
			       "device memory\n",
			       step);
		}
		gt_report(&o, step);
		k_update<<<gt_blocks(n), GT_BLOCK, 0, s1>>>(a, b, n, step);
		CK_LAUNCH("k_update");
		k_follow<<<1, 1, 0, s1>>>(table, n, step);
		CK_LAUNCH("k_follow");
		CK(cudaEventRecord(e, s1));
		CK(cudaStreamWaitEvent(s2, e, 0));
		k_mix<<<gt_blocks(n), GT_BLOCK, 0, s2>>>(b, a, h, n);
		CK_LAUNCH("k_mix");
		CK(cudaStreamSynchronize(s2));
		/* The host's turn: h (attached to s2, idle now) and a little of b. */
		for (long i = 0; i < n; i += 1) {
			h[i] = h[i] * 3 + (uint64_t)step;
		}
		b[step % n] += (uint64_t)step;
		CK(cudaMemPrefetchAsync(a, bytes, loc_device(0), 0, s1));
		gt_delay(&o);
	}
	CK(cudaDeviceSynchronize());
	sum = gt_fnv1a(sum, a, bytes);
	sum = gt_fnv1a(sum, b, bytes);
	sum = gt_fnv1a(sum, h, bytes);
	gt_done(&o, sum);
	return 0;
}
