/*
 * slack_kernels.cu - the kernel of gpu-slack (gpu-slack.c), built into
 * slack_kernels.cubin. slack_kernels_host.c is the same for the driver
 * stand-in.
 *
 * slack_step updates an array in place and, like Rodinia's srad_v2, reads a
 * little outside it: `before` bytes before its start and `after` bytes past
 * its end (0: no read there). The values read are not used: natively they
 * belong to a neighbouring allocation, whatever it holds; what matters is
 * that the read does not fault.
 */
extern "C" __global__ void slack_step(float *p, long n, long before, long after, int step)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	if (i == 0 && before > 0) {
		volatile const float *q = p;
		float v = q[-(before / (long)sizeof(float))];

		/* Never true (step >= 0), but the compiler cannot know: the load stays. */
		if (step < 0)
			p[0] = v;
	}
	if (i == n - 1 && after > 0) {
		volatile const float *q = p;
		float v = q[n - 1 + after / (long)sizeof(float)];

		if (step < 0)
			p[n - 1] = v;
	}
	p[i] = p[i] * 0.75f + (float)((i * 7 + step) & 15) * 0.25f;
}
