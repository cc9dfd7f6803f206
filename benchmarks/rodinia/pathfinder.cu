/*
 * pathfinder - cheapest top-to-bottom path through a grid of weights, moving
 * down, down-left or down-right at each row; shaped like the Rodinia 3.1
 * benchmark: each kernel launch advances `pyramid_height` rows in blocks of
 * 256 columns held in shared memory (a ghost zone one column wider per row).
 * The wall is generated on the device. The optional fourth argument traverses
 * the wall several times, as if stacked on itself, so the run lasts long
 * enough to measure without a wall that fills the GPU.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BS 256

static const char usage[] =
    "usage: pathfinder [<cols> <rows> <pyramid_height> [passes]] [--small]\n"
    "  cols            grid width (default 262144; --small: 10000)\n"
    "  rows            grid height (default 2048; --small: 100)\n"
    "  pyramid_height  rows per kernel, 1..127 (default 20)\n"
    "  passes          traversals of the wall (default 3000; --small: 3)\n"
    "  --verify        compare with a plain host computation (small grids)\n";

__host__ __device__ static inline int pf_wall(size_t idx)
{
	return (int)(bench_hash2(9, idx) % 10);
}

__global__ void pf_generate(int *wall, size_t n)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; idx < n; idx += stride)
		wall[idx] = pf_wall(idx);
}

/* Row by row on the host, every pass; compared with the GPU's last row. */
static void pf_verify(const int *gpu, long cols, long rows, long passes)
{
	int *cost = (int *)calloc((size_t)cols, sizeof(int)), *next;
	long p, r, c, bad = 0;

	next = (int *)malloc((size_t)cols * sizeof(int));
	if (!cost || !next)
		bench_die("--verify: out of host memory");
	for (p = 0; p < passes; p++) {
		for (c = 0; c < cols; c++)
			cost[c] += pf_wall((size_t)c);
		for (r = 1; r < rows; r++) {
			for (c = 0; c < cols; c++) {
				int m = cost[c];

				m = c > 0 && cost[c - 1] < m ? cost[c - 1] : m;
				m = c < cols - 1 && cost[c + 1] < m ? cost[c + 1] : m;
				next[c] = m + pf_wall((size_t)r * cols + c);
			}
			int *tmp = cost;
			cost = next;
			next = tmp;
		}
	}
	for (c = 0; c < cols; c++)
		bad += cost[c] != gpu[c];
	bench_verified(bad == 0, "%ld of %ld path costs differ", bad, cols);
	free(cost);
	free(next);
}

/* A pass starts from the cost so far (zero before the first) plus the wall's first row. */
__global__ void pf_start_pass(int *cost, const int *wall, int cols)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;

	if (c < cols)
		cost[c] += wall[c];
}

/*
 * Rows first_row .. first_row + iters - 1. The block's tile starts `iters`
 * columns left of its output; after row i only columns at least i + 1 from the
 * tile edge are valid. At the grid edges the missing neighbour is the column itself.
 */
__global__ void pf_dynproc(int iters, const int *wall, const int *src, int *dst, int cols,
			   int first_row)
{
	__shared__ int prev[BS], result[BS];
	int tx = threadIdx.x, i;
	int small = BS - 2 * iters;
	int x0 = blockIdx.x * small - iters, x = x0 + tx;
	int vmin = x0 < 0 ? -x0 : 0;
	int vmax = x0 + BS - 1 > cols - 1 ? cols - 1 - x0 : BS - 1;
	int valid = tx >= vmin && tx <= vmax;
	int W = tx - 1 < vmin ? vmin : tx - 1, E = tx + 1 > vmax ? vmax : tx + 1;
	int computed = 0;

	if (valid)
		prev[tx] = src[x];
	__syncthreads();
	for (i = 0; i < iters; i++) {
		computed = 0;
		if (valid && tx >= i + 1 && tx <= BS - i - 2) {
			int m = prev[tx];

			computed = 1;
			m = prev[W] < m ? prev[W] : m;
			m = prev[E] < m ? prev[E] : m;
			result[tx] = m + wall[(size_t)(first_row + i) * cols + x];
		}
		__syncthreads();
		if (i == iters - 1)
			break;
		if (computed)
			prev[tx] = result[tx];
		__syncthreads();
	}
	if (computed)
		dst[x] = result[tx];
}

int main(int argc, char **argv)
{
	int small = bench_start("pathfinder", &argc, argv, usage);
	long cols = small ? 10000 : 262144, rows = small ? 100 : 2048, pyramid = 20;
	long passes = small ? 3 : 3000;
	struct {
		long step;
		long pass;
		long row; /* next row to compute; 0: the pass has not started */
		int src;  /* which cost buffer holds the current row */
	} st = {0, 0, 0, 0};
	int *wall_d, *cost_d[2], *cost, shortest;
	long c;

	if (argc != 1 && argc != 4 && argc != 5)
		bench_die("expected <cols> <rows> <pyramid_height> [passes] (see --help)");
	if (argc >= 4) {
		cols = bench_parse_long(argv[1], "cols", 1, INT_MAX / 2);
		rows = bench_parse_long(argv[2], "rows", 2, INT_MAX / 2);
		pyramid = bench_parse_long(argv[3], "pyramid_height", 1, BS / 2 - 1);
	}
	if (argc == 5)
		passes = bench_parse_long(argv[4], "passes", 1, INT_MAX);
	/* Costs grow by at most 9 per row: keep them inside an int. */
	if ((double)rows * (double)passes * 9.0 >= (double)INT_MAX)
		bench_die("rows %ld x passes %ld: path costs would overflow an int", rows, passes);
	bench_describe("cols=%ld rows=%ld pyramid_height=%ld passes=%ld", cols, rows, pyramid,
		       passes);

	CK(cudaMalloc((void **)&wall_d, (size_t)rows * cols * sizeof(int)));
	CK(cudaMalloc((void **)&cost_d[0], (size_t)cols * sizeof(int)));
	CK(cudaMalloc((void **)&cost_d[1], (size_t)cols * sizeof(int)));
	pf_generate<<<4096, 256>>>(wall_d, (size_t)rows * cols);
	CK_LAUNCH("pf_generate");
	CK(cudaMemset(cost_d[0], 0, (size_t)cols * sizeof(int)));

	bench_protect("state", &st, sizeof(st));
	while (st.pass < passes) {
		if (bench_point(st.step) == GPUCKPT_RESTORED)
			continue;
		if (st.row == 0) {
			pf_start_pass<<<bench_blocks((size_t)cols, 256), 256>>>(cost_d[st.src],
										wall_d, (int)cols);
			CK_LAUNCH("pf_start_pass");
			st.row = 1;
		} else {
			int iters = rows - st.row < pyramid ? (int)(rows - st.row) : (int)pyramid;

			pf_dynproc<<<bench_blocks((size_t)cols, BS - 2 * iters), BS>>>(
			    iters, wall_d, cost_d[st.src], cost_d[1 - st.src], (int)cols,
			    (int)st.row);
			CK_LAUNCH("pf_dynproc");
			st.src = 1 - st.src;
			st.row += iters;
			if (st.row == rows) {
				st.row = 0;
				st.pass++;
			}
		}
		st.step++;
	}

	cost = (int *)malloc((size_t)cols * sizeof(int));
	if (!cost)
		bench_die("out of host memory for %ld costs", cols);
	CK(cudaMemcpy(cost, cost_d[st.src], (size_t)cols * sizeof(int), cudaMemcpyDeviceToHost));
	shortest = cost[0];
	for (c = 1; c < cols; c++)
		shortest = cost[c] < shortest ? cost[c] : shortest;
	printf("pathfinder: cheapest path costs %d\n", shortest);
	if (bench_verifying())
		pf_verify(cost, cols, rows, passes);
	bench_finish(bench_fnv1a(cost, (size_t)cols * sizeof(int), BENCH_FNV_INIT));
	free(cost);
	CK(cudaFree(wall_d));
	CK(cudaFree(cost_d[0]));
	CK(cudaFree(cost_d[1]));
	return 0;
}
