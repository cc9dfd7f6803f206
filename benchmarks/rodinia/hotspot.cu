/*
 * hotspot - transient thermal simulation of a chip, shaped like the Rodinia
 * 3.1 benchmark: an explicit 5-point update of the temperature grid from the
 * power map, computed in 16x16 tiles that each advance `pyramid_height` time
 * steps in shared memory (a ghost zone one cell wider per step, so that the
 * host launches one kernel per pyramid). The temperature and power grids are
 * generated on the device. The cell pitch is fixed (a 16 mm chip at 512 x 512
 * cells), so the explicit scheme stays stable at any grid size.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BS 16

/* Silicon and package parameters of the HotSpot model. */
#define CELL_PITCH (0.016 / 512.0)
#define T_CHIP 0.0005
#define FACTOR_CHIP 0.5
#define SPEC_HEAT_SI 1.75e6
#define K_SI 100.0
#define MAX_PD 3.0e6
#define PRECISION 0.001
#define AMB_TEMP 80.0f

static const char usage[] =
    "usage: hotspot [<grid_rows/grid_cols> <pyramid_height> <sim_time> [output_file]]\n"
    "               [--small]\n"
    "  grid_rows/grid_cols  side of the square grid (default 8192; --small: 512)\n"
    "  pyramid_height       time steps per kernel, 1..7 (default 2)\n"
    "  sim_time             time steps (default 8000; --small: 60)\n"
    "  output_file          where to write the final temperatures (optional)\n"
    "  --verify             compare with a plain host simulation (small grids)\n"
    "Temperature and power inputs are generated; input files are not supported.\n";

struct coef {
	float step_div_cap, rx_1, ry_1, rz_1;
};

__host__ __device__ static inline void hotspot_input(size_t idx, int side, float *temp,
						     float *power)
{
	size_t r = idx / side, c = idx % side;
	/* Hot functional units: 64x64-cell regions, one in five. */
	int hot = bench_hash2(11, (r / 64) * 4096 + c / 64) % 5 == 0;

	*temp = 323.0f + 10.0f * bench_unit_float(bench_hash2(12, idx));
	*power = (hot ? 1e-3f : 1e-4f) * bench_unit_float(bench_hash2(13, idx));
}

__global__ void hotspot_generate(float *temp, float *power, int side)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x, n = (size_t)side * side;

	for (; idx < n; idx += stride)
		hotspot_input(idx, side, &temp[idx], &power[idx]);
}

/*
 * The tile loaded by a block starts `iters` cells before its output region on
 * each side; after step i only cells at least i + 1 from the tile edge hold
 * valid temperatures. Neighbours outside the grid are the cell itself.
 */
__global__ void hotspot_pyramid(int iters, const float *power, const float *src, float *dst,
				int side, struct coef k)
{
	__shared__ float t[BS][BS], p[BS][BS], next[BS][BS];
	int tx = threadIdx.x, ty = threadIdx.y, i;
	int small = BS - 2 * iters;
	int y0 = blockIdx.y * small - iters, x0 = blockIdx.x * small - iters;
	int gy = y0 + ty, gx = x0 + tx;
	int vymin = y0 < 0 ? -y0 : 0, vxmin = x0 < 0 ? -x0 : 0;
	int vymax = y0 + BS - 1 > side - 1 ? side - 1 - y0 : BS - 1;
	int vxmax = x0 + BS - 1 > side - 1 ? side - 1 - x0 : BS - 1;
	int in = ty >= vymin && ty <= vymax && tx >= vxmin && tx <= vxmax;
	int N = ty - 1 < vymin ? vymin : ty - 1, S = ty + 1 > vymax ? vymax : ty + 1;
	int W = tx - 1 < vxmin ? vxmin : tx - 1, E = tx + 1 > vxmax ? vxmax : tx + 1;
	int computed = 0;

	if (in) {
		size_t g = (size_t)gy * side + gx;

		t[ty][tx] = src[g];
		p[ty][tx] = power[g];
	}
	__syncthreads();
	for (i = 0; i < iters; i++) {
		computed = 0;
		if (in && ty >= i + 1 && ty <= BS - i - 2 && tx >= i + 1 && tx <= BS - i - 2) {
			float c = t[ty][tx];

			computed = 1;
			next[ty][tx] =
			    c + k.step_div_cap *
				    (p[ty][tx] + (t[S][tx] + t[N][tx] - 2.0f * c) * k.ry_1 +
				     (t[ty][E] + t[ty][W] - 2.0f * c) * k.rx_1 +
				     (AMB_TEMP - c) * k.rz_1);
		}
		__syncthreads();
		if (i == iters - 1)
			break;
		if (computed)
			t[ty][tx] = next[ty][tx];
		__syncthreads();
	}
	if (computed)
		dst[(size_t)gy * side + gx] = next[ty][tx];
}

static struct coef hotspot_coef(void)
{
	double cap = FACTOR_CHIP * SPEC_HEAT_SI * T_CHIP * CELL_PITCH * CELL_PITCH;
	double rx = CELL_PITCH / (2.0 * K_SI * T_CHIP * CELL_PITCH);
	double ry = CELL_PITCH / (2.0 * K_SI * T_CHIP * CELL_PITCH);
	double rz = T_CHIP / (K_SI * CELL_PITCH * CELL_PITCH);
	double max_slope = MAX_PD / (FACTOR_CHIP * T_CHIP * SPEC_HEAT_SI);
	double step = PRECISION / max_slope;
	struct coef k;

	k.step_div_cap = (float)(step / cap);
	k.rx_1 = (float)(1.0 / rx);
	k.ry_1 = (float)(1.0 / ry);
	k.rz_1 = (float)(1.0 / rz);
	return k;
}

/* The same model one step at a time on the host; compared with the final GPU grid. */
static void hotspot_verify(const float *temp_d, int side, long steps, struct coef k)
{
	size_t n = (size_t)side * side, i;
	float *t = (float *)malloc(n * sizeof(float)), *p = (float *)malloc(n * sizeof(float));
	float *nx = (float *)malloc(n * sizeof(float)), *g = (float *)malloc(n * sizeof(float));
	double worst = 0.0;
	long s;
	int r, c;

	if (!t || !p || !nx || !g)
		bench_die("--verify: out of host memory");
	for (i = 0; i < n; i++)
		hotspot_input(i, side, &t[i], &p[i]);
	for (s = 0; s < steps; s++) {
		for (r = 0; r < side; r++) {
			for (c = 0; c < side; c++) {
				size_t x = (size_t)r * side + c;
				float v = t[x];
				float nn = t[x - (r > 0 ? side : 0)],
				      ss = t[x + (r < side - 1 ? side : 0)];
				float w = t[x - (c > 0)], e = t[x + (c < side - 1)];

				nx[x] = v + k.step_div_cap * (p[x] + (ss + nn - 2.0f * v) * k.ry_1 +
							      (e + w - 2.0f * v) * k.rx_1 +
							      (AMB_TEMP - v) * k.rz_1);
			}
		}
		float *tmp = t;
		t = nx;
		nx = tmp;
	}
	CK(cudaMemcpy(g, temp_d, n * sizeof(float), cudaMemcpyDeviceToHost));
	for (i = 0; i < n; i++)
		worst = fabs((double)g[i] - t[i]) > worst ? fabs((double)g[i] - t[i]) : worst;
	bench_verified(worst < 1e-2, "largest temperature difference %.3g K after %ld steps", worst,
		       steps);
	free(t);
	free(p);
	free(nx);
	free(g);
}

static void write_output(const char *path, float *temp_d, int side)
{
	size_t n = (size_t)side * side, i;
	float *t = (float *)malloc(n * sizeof(float));
	FILE *f;

	if (!t)
		bench_die("%s: out of host memory for the output", path);
	CK(cudaMemcpy(t, temp_d, n * sizeof(float), cudaMemcpyDeviceToHost));
	f = fopen(path, "w");
	if (!f)
		bench_die("%s: cannot open for writing", path);
	for (i = 0; i < n; i++)
		fprintf(f, "%zu\t%g\n", i, t[i]);
	if (fclose(f))
		bench_die("%s: write failed", path);
	free(t);
}

int main(int argc, char **argv)
{
	int small = bench_start("hotspot", &argc, argv, usage);
	int side = small ? 512 : 8192, pyramid = 2;
	long sim_time = small ? 60 : 8000;
	const char *out = NULL;
	struct {
		long t;
		int src; /* which temperature buffer holds the current step */
	} st = {0, 0};
	struct coef k = hotspot_coef();
	struct bench_hasher hasher;
	float *temp_d[2], *power_d;
	size_t bytes;

	if (argc == 7)
		bench_die("input files are not supported: temperature and power are generated "
			  "(give <grid_rows/grid_cols> <pyramid_height> <sim_time> [output_file])");
	if (argc != 1 && argc != 4 && argc != 5)
		bench_die("expected <grid_rows/grid_cols> <pyramid_height> <sim_time> "
			  "[output_file] (see --help)");
	if (argc >= 4) {
		side = (int)bench_parse_long(argv[1], "grid_rows/grid_cols", 1, 46340);
		pyramid = (int)bench_parse_long(argv[2], "pyramid_height", 1, BS / 2 - 1);
		sim_time = bench_parse_long(argv[3], "sim_time", 1, 1000000000);
	}
	if (argc == 5)
		out = argv[4];
	bench_describe("grid=%dx%d pyramid_height=%d sim_time=%ld", side, side, pyramid, sim_time);

	bytes = (size_t)side * side * sizeof(float);
	CK(cudaMalloc((void **)&power_d, bytes));
	CK(cudaMalloc((void **)&temp_d[0], bytes));
	CK(cudaMalloc((void **)&temp_d[1], bytes));
	bench_hasher_init(&hasher);
	hotspot_generate<<<4096, 256>>>(temp_d[0], power_d, side);
	CK_LAUNCH("hotspot_generate");

	bench_protect("state", &st, sizeof(st));
	while (st.t < sim_time) {
		int iters;
		unsigned blocks;

		if (bench_point(st.t) == GPUCKPT_RESTORED)
			continue;
		iters = sim_time - st.t < pyramid ? (int)(sim_time - st.t) : pyramid;
		blocks = bench_blocks((size_t)side, BS - 2 * iters);
		hotspot_pyramid<<<dim3(blocks, blocks), dim3(BS, BS)>>>(
		    iters, power_d, temp_d[st.src], temp_d[1 - st.src], side, k);
		CK_LAUNCH("hotspot_pyramid");
		st.src = 1 - st.src;
		st.t += iters;
	}

	CK(cudaDeviceSynchronize());
	if (out)
		write_output(out, temp_d[st.src], side);
	if (bench_verifying())
		hotspot_verify(temp_d[st.src], side, sim_time, k);
	bench_finish(bench_hash_device(&hasher, temp_d[st.src], bytes, BENCH_FNV_INIT));
	bench_hasher_free(&hasher);
	CK(cudaFree(power_d));
	CK(cudaFree(temp_d[0]));
	CK(cudaFree(temp_d[1]));
	return 0;
}
