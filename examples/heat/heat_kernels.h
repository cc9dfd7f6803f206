/*
 * heat_kernels.h - what the heat examples' kernels take, shared by the CUDA
 * kernels (heat_kernels.cu), their stand-in copy (heat_kernels_host.c) and the
 * programs that launch them (heat-drv.c, heat-rt.cu).
 *
 * Step s reads grid s % 2 and writes the other one. The kernels do not get the
 * grids as arguments: they find them through a table in device memory, so
 * that device pointers stored in device memory must survive a checkpoint and
 * a restore on another GPU unchanged, which is what gpuckpt's fixed placement
 * promises.
 */
#ifndef HEAT_KERNELS_H
#define HEAT_KERNELS_H

/* pairs[parity] is the view of step s with s % 2 == parity. */
struct heat_pair {
	float *src;
	float *dst;
};

/* Thread block of heat_step (HEAT_BLOCK x HEAT_BLOCK) and of heat_row_sums. */
#define HEAT_BLOCK 16
#define HEAT_ROW_BLOCK 256

/* Diffusion number of the explicit scheme; it is stable up to 0.25. */
#define HEAT_ALPHA 0.2f

/*
 * The kernels, the same names and arguments on both platforms:
 *
 *	heat_step(const struct heat_pair *pairs, int parity, int n, float alpha)
 *		one explicit 5-point step on the interior of the n x n grid
 *	heat_row_sums(const struct heat_pair *pairs, int parity, int n, float *sums)
 *		sums[i] = the sum of row i of the grid that step just wrote
 *	heat_total(const float *sums, int n, float *total)
 *		*total = the sum of sums[0..n), in order (one thread)
 */
#define HEAT_KERNEL_STEP "heat_step"
#define HEAT_KERNEL_ROW_SUMS "heat_row_sums"
#define HEAT_KERNEL_TOTAL "heat_total"

#endif
