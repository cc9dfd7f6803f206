/*
 * nw - Needleman-Wunsch global alignment of two generated sequences, shaped
 * like the Rodinia 3.1 benchmark (needle): the score matrix is cut into 16x16
 * tiles, one kernel sweeps the anti-diagonals of tiles of the upper-left half
 * and a second those of the lower-right half; inside a tile, 16 threads walk
 * its anti-diagonals in shared memory. The substitution scores (a
 * BLOSUM-like symmetric table from a fixed seed) and the reference matrix are
 * made on the device. An optional third argument repeats the alignment
 * against new second sequences so the run lasts long enough to measure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BS 16
#define ALPHABET 24
#define SEED_A 0x5ea1ull

static const char usage[] =
    "usage: nw [<max_rows/max_cols> <penalty> [passes]] [--small]\n"
    "  max_rows/max_cols  sequence length, a multiple of 16 (default 32768;\n"
    "                     --small: 2048)\n"
    "  penalty            gap penalty, positive (default 10)\n"
    "  passes             alignments against fresh second sequences (default 40;\n"
    "                     --small: 2)\n"
    "  --verify           compare the last score matrix with a host computation\n";

__constant__ int c_subst[ALPHABET * ALPHABET];

__host__ __device__ static inline int residue(uint64_t seed, size_t i)
{
	return (int)(bench_hash2(seed, i) % ALPHABET);
}

/* The reference (substitution score of each pair) and the gap-penalty borders. */
__global__ void nw_prepare(int *ref, int *mat, size_t n1, int penalty, uint64_t seed_b)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; idx < n1 * n1; idx += stride) {
		size_t i = idx / n1, j = idx % n1;

		if (i == 0 || j == 0) {
			ref[idx] = 0;
			mat[idx] = -(int)(i + j) * penalty;
		} else {
			ref[idx] = c_subst[residue(SEED_A, i) * ALPHABET + residue(seed_b, j)];
		}
	}
}

__device__ static inline int max3(int a, int b, int c)
{
	int m = a > b ? a : b;

	return m > c ? m : c;
}

/* Tile (tr, tc): its top row and left column come from tiles already done. */
__device__ static void nw_tile(const int *ref, int *mat, size_t n1, int penalty, size_t tr,
			       size_t tc)
{
	__shared__ int s[BS + 1][BS + 1];
	__shared__ int r[BS][BS];
	size_t r0 = tr * BS + 1, c0 = tc * BS + 1;
	int tx = threadIdx.x, i, j, d;

	if (tx == 0)
		s[0][0] = mat[(r0 - 1) * n1 + c0 - 1];
	s[0][tx + 1] = mat[(r0 - 1) * n1 + c0 + tx];
	s[tx + 1][0] = mat[(r0 + tx) * n1 + c0 - 1];
	for (i = 0; i < BS; i++)
		r[i][tx] = ref[(r0 + i) * n1 + c0 + tx];
	__syncthreads();
	for (d = 0; d < 2 * BS - 1; d++) {
		i = tx;
		j = d - tx;
		if (j >= 0 && j < BS)
			s[i + 1][j + 1] =
			    max3(s[i][j] + r[i][j], s[i][j + 1] - penalty, s[i + 1][j] - penalty);
		__syncthreads();
	}
	for (i = 0; i < BS; i++)
		mat[(r0 + i) * n1 + c0 + tx] = s[i + 1][tx + 1];
}

/* Anti-diagonal d < nb of tiles: tiles (b, d - b) for b = 0..d. */
__global__ void nw_upper(const int *ref, int *mat, size_t n1, int penalty, size_t d)
{
	nw_tile(ref, mat, n1, penalty, blockIdx.x, d - blockIdx.x);
}

/* Anti-diagonal d >= nb of tiles: tiles (d - nb + 1 + b, nb - 1 - b). */
__global__ void nw_lower(const int *ref, int *mat, size_t n1, int penalty, size_t d, size_t nb)
{
	size_t tr = d - nb + 1 + blockIdx.x;

	nw_tile(ref, mat, n1, penalty, tr, d - tr);
}

/* A symmetric table: matches score 4..11, mismatches -4..2. */
static void make_subst(int *t)
{
	struct bench_rng rng;
	int a, b;

	bench_rng_seed(&rng, 62);
	for (a = 0; a < ALPHABET; a++) {
		t[a * ALPHABET + a] = 4 + (int)bench_rng_below(&rng, 8);
		for (b = a + 1; b < ALPHABET; b++) {
			t[a * ALPHABET + b] = -4 + (int)bench_rng_below(&rng, 7);
			t[b * ALPHABET + a] = t[a * ALPHABET + b];
		}
	}
}

/* The whole recurrence on the host for the last pass; compared cell by cell. */
static void nw_verify(const int *mat_d, size_t n1, int penalty, const int *subst, uint64_t seed_b)
{
	int *gpu = (int *)malloc(n1 * n1 * sizeof(int)), *m = (int *)malloc(n1 * n1 * sizeof(int));
	size_t i, j, bad = 0;

	if (!gpu || !m)
		bench_die("--verify: out of host memory");
	CK(cudaMemcpy(gpu, mat_d, n1 * n1 * sizeof(int), cudaMemcpyDeviceToHost));
	for (i = 0; i < n1; i++) {
		for (j = 0; j < n1; j++) {
			int diag, up, left, best;

			if (i == 0 || j == 0) {
				m[i * n1 + j] = -(int)(i + j) * penalty;
				continue;
			}
			diag = m[(i - 1) * n1 + j - 1] +
			       subst[residue(SEED_A, i) * ALPHABET + residue(seed_b, j)];
			up = m[(i - 1) * n1 + j] - penalty;
			left = m[i * n1 + j - 1] - penalty;
			best = diag > up ? diag : up;
			m[i * n1 + j] = best > left ? best : left;
		}
	}
	for (i = 0; i < n1 * n1; i++)
		bad += gpu[i] != m[i];
	bench_verified(bad == 0, "%zu of %zu scores differ", bad, n1 * n1);
	free(gpu);
	free(m);
}

int main(int argc, char **argv)
{
	int small = bench_start("nw", &argc, argv, usage);
	size_t n = small ? 2048 : 32768, n1, nb, diagonals;
	long passes = small ? 2 : 40;
	int penalty = 10, subst[ALPHABET * ALPHABET], score = 0;
	struct {
		long step;
		long pass;
		long d; /* next tile anti-diagonal; -1: the pass is not prepared yet */
		uint64_t sum;
	} st = {0, 0, -1, BENCH_FNV_INIT};
	struct bench_hasher hasher;
	int *ref_d, *mat_d;

	if (argc != 1 && argc != 3 && argc != 4)
		bench_die("expected <max_rows/max_cols> <penalty> [passes] (see --help)");
	if (argc >= 3) {
		n = (size_t)bench_parse_long(argv[1], "max_rows/max_cols", BS, 65536);
		penalty = (int)bench_parse_long(argv[2], "penalty", 1, 1000);
	}
	if (argc == 4)
		passes = bench_parse_long(argv[3], "passes", 1, 1000000);
	if (n % BS)
		bench_die("max_rows/max_cols %zu: must be a multiple of %d", n, BS);
	n1 = n + 1;
	nb = n / BS;
	diagonals = 2 * nb - 1;
	bench_describe("length=%zu penalty=%d passes=%ld", n, penalty, passes);

	make_subst(subst);
	CK(cudaMemcpyToSymbol(c_subst, subst, sizeof(subst)));
	CK(cudaMalloc((void **)&ref_d, n1 * n1 * sizeof(int)));
	CK(cudaMalloc((void **)&mat_d, n1 * n1 * sizeof(int)));
	bench_hasher_init(&hasher);

	bench_protect("state", &st, sizeof(st));
	while (st.pass < passes) {
		if (bench_point(st.step) == GPUCKPT_RESTORED)
			continue;
		if (st.d < 0) {
			nw_prepare<<<4096, 256>>>(ref_d, mat_d, n1, penalty,
						  bench_hash2(7, (uint64_t)st.pass));
			CK_LAUNCH("nw_prepare");
			st.d = 0;
		} else {
			size_t d = (size_t)st.d;

			if (d < nb) {
				nw_upper<<<(unsigned)(d + 1), BS>>>(ref_d, mat_d, n1, penalty, d);
				CK_LAUNCH("nw_upper");
			} else {
				nw_lower<<<(unsigned)(diagonals - d), BS>>>(ref_d, mat_d, n1,
									    penalty, d, nb);
				CK_LAUNCH("nw_lower");
			}
			st.d++;
			if ((size_t)st.d == diagonals) {
				st.sum = bench_hash_device(&hasher, mat_d, n1 * n1 * sizeof(int),
							   st.sum);
				st.pass++;
				st.d = -1;
			}
		}
		st.step++;
	}

	CK(cudaMemcpy(&score, mat_d + n1 * n1 - 1, sizeof(int), cudaMemcpyDeviceToHost));
	printf("nw: score of the last alignment: %d\n", score);
	if (bench_verifying())
		nw_verify(mat_d, n1, penalty, subst, bench_hash2(7, (uint64_t)(passes - 1)));
	bench_finish(st.sum);
	bench_hasher_free(&hasher);
	CK(cudaFree(ref_d));
	CK(cudaFree(mat_d));
	return 0;
}
