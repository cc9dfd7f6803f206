/*
 * test_kernels.c - host "kernels" for test-standin: a vector add, a slow fill
 * that holds its stream for a while (to see what waits for what), a scale
 * by a module global (for cuModuleGetGlobal), an order-sensitive update (for
 * stream capture), and a peek that reads where it is told, asking first as a
 * GPU kernel would fault (a sticky error).
 */
#include <time.h>

#include "standin_kernel.h"

/* Read by scale(); the test sets it through cuModuleGetGlobal and a copy. */
int scale_factor[4] = {1, 1, 1, 1};

static unsigned threads(const struct standin_launch *l)
{
	return l->grid.x * l->grid.y * l->grid.z * l->block.x * l->block.y * l->block.z;
}

STANDIN_KERNEL(vec_add, sizeof(const float *), sizeof(const float *), sizeof(float *), sizeof(int))
{
	const float *a = STANDIN_ARG(const float *, 0);
	const float *b = STANDIN_ARG(const float *, 1);
	float *c = STANDIN_ARG(float *, 2);
	int n = STANDIN_ARG(int, 3);

	/* One element per thread, as the CUDA kernel would with i = blockIdx * blockDim + tid. */
	for (unsigned i = 0; i < threads(launch) && (int)i < n; i++)
		c[i] = a[i] + b[i];
}

STANDIN_KERNEL(slow_fill, sizeof(int *), sizeof(int), sizeof(int), sizeof(int))
{
	int *p = STANDIN_ARG(int *, 0);
	int value = STANDIN_ARG(int, 1);
	int n = STANDIN_ARG(int, 2);
	int ms = STANDIN_ARG(int, 3);
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
	for (int i = 0; i < n; i++)
		p[i] = value;
}

STANDIN_KERNEL(scale, sizeof(int *), sizeof(int))
{
	int *p = STANDIN_ARG(int *, 0);
	int n = STANDIN_ARG(int, 1);

	(void)launch;
	for (int i = 0; i < n; i++)
		p[i] *= scale_factor[0];
}

/* p[i] = 2 * p[i] + v: the result tells in which order launches ran (stream capture). */
STANDIN_KERNEL(twice_plus, sizeof(int *), sizeof(int), sizeof(int))
{
	int *p = STANDIN_ARG(int *, 0);
	int v = STANDIN_ARG(int, 1);
	int n = STANDIN_ARG(int, 2);

	(void)launch;
	for (int i = 0; i < n; i++)
		p[i] = 2 * p[i] + v;
}

/* *out = p[offset], if the device may read there; else the launch faults. */
STANDIN_KERNEL(peek, sizeof(const int *), sizeof(long), sizeof(int *))
{
	const int *p = STANDIN_ARG(const int *, 0);
	long offset = STANDIN_ARG(long, 1);
	int *out = STANDIN_ARG(int *, 2);

	if (!STANDIN_CAN_READ(p + offset, sizeof(int)) || !STANDIN_CAN_WRITE(out, sizeof(int)))
		return;
	*out = p[offset];
}

/* A function without NAME__params: cuModuleGetFunction must refuse it. */
void not_a_kernel(void);
void not_a_kernel(void)
{
}
