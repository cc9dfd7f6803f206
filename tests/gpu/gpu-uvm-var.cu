/*
 * gpu-uvm-var - a __managed__ variable, which gpuckpt does not save: a
 * checkpoint must be refused, naming it (tests/gpu/managed.sh).
 */
#include "gpu_test.h"

__managed__ uint64_t counter;

__global__ void bump(long step)
{
	counter += (uint64_t)step;
}

int main(int argc, char **argv)
{
	struct gt_opts o;
	struct gt_device dev;
	const struct gt_size size = {1, 1, 1, "unused"};
	long step = 0;

	gt_prog = "gpu-uvm-var";
	gt_parse(&o, argc, argv, "A __managed__ variable, bumped by a kernel every step.", &size);
	gt_device_open(&dev);
	gt_begin(&o, &dev, &step);
	for (; step < o.steps; step++) {
		gt_point(step);
		gt_report(&o, step);
		bump<<<1, 1>>>(step);
		CK_LAUNCH("bump");
		CK(cudaDeviceSynchronize());
		gt_delay(&o);
	}
	gt_done(&o, counter);
	return 0;
}
