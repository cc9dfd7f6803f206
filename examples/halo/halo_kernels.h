/*
 * halo_kernels.h - what the halo example's kernels take, shared by the CUDA
 * kernels (halo_kernels.cu), their copy for the host-memory stand-in
 * (halo_kernels_host.c) and the program (halo-drv.c).
 *
 * Each rank holds `rows` rows of the global n x n grid (global rows row0 ..
 * row0 + rows - 1) between two ghost rows that the halo exchange fills with
 * its neighbours' edge rows: local row 0 and local row rows + 1. A grid
 * buffer is (rows + 2) x n floats.
 *
 *	halo_step(const float *src, float *dst, int rows, int n, int row0,
 *	          float alpha, float top)
 *		one explicit 5-point step of every owned cell; global row 0 is
 *		held at `top`, the other edges keep their value
 *	halo_heat(const float *grid, int rows, int n, unsigned long long *heat)
 *		*heat += the sum of llrint(1024 * v) over the owned cells. In
 *		integers, so the sum is the same in any order: every decomposition
 *		of the grid over ranks computes the same global heat.
 */
#ifndef HALO_KERNELS_H
#define HALO_KERNELS_H

#define HALO_BLOCK 16
#define HALO_ALPHA 0.2f
#define HALO_KERNEL_STEP "halo_step"
#define HALO_KERNEL_HEAT "halo_heat"

#endif
