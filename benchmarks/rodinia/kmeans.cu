/*
 * kmeans - k-means clustering of generated points, shaped like the Rodinia
 * 3.1 CUDA benchmark: the features are transposed on the device (one column
 * per feature, for coalesced reads), the cluster centres go to constant
 * memory every iteration, one kernel assigns each point to its nearest centre,
 * and the host reads the memberships back, counts the changes and recomputes
 * the centres. Clustering repeats for every cluster count from -n to -m, -l
 * times each from new random centres. The inputs are named like Rodinia's
 * data files and generated from the name: points around 16 hidden centres.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define THREADS 256
#define MAX_CENTRE_FLOATS 8192 /* constant memory set aside for the centres */
#define MAX_ITERATIONS 500
#define BLOBS 16

static const char usage[] =
    "usage: kmeans [-i input] [-m max_nclusters] [-n min_nclusters] [-t threshold]\n"
    "              [-l nloops] [-r] [-o] [--small]\n"
    "  -i input  kdd_cup (494020 points x 34 features), <N>[.txt] (N x 34) or\n"
    "            <N>x<F>; generated (default kdd_cup; --small: 20000x34)\n"
    "  -m, -n    largest and smallest number of clusters (default 5, 5)\n"
    "  -t        stop when fewer memberships than this change (default 0.001)\n"
    "  -l        clusterings per cluster count (default 10; --small: 2)\n"
    "  -r        compute the RMSE of each clustering\n"
    "  -o        print the final cluster centres\n"
    "  --verify  check the last memberships against the nearest centres on the host\n"
    "Binary input (-b) and input files are not supported.\n";

__constant__ float c_centres[MAX_CENTRE_FLOATS];

__global__ void kmeans_transpose(const float *features, float *flipped, int npoints, int nfeatures)
{
	int p = blockIdx.x * blockDim.x + threadIdx.x, f;

	if (p >= npoints)
		return;
	for (f = 0; f < nfeatures; f++)
		flipped[(size_t)f * npoints + p] = features[(size_t)p * nfeatures + f];
}

/* Nearest centre by squared distance; the lowest index wins a tie. */
__global__ void kmeans_assign(const float *flipped, int npoints, int nfeatures, int nclusters,
			      int *membership)
{
	int p = blockIdx.x * blockDim.x + threadIdx.x, c, f, best = 0;
	float best_d = FLT_MAX;

	if (p >= npoints)
		return;
	for (c = 0; c < nclusters; c++) {
		float d = 0.0f;

		for (f = 0; f < nfeatures; f++) {
			float diff =
			    flipped[(size_t)f * npoints + p] - c_centres[c * nfeatures + f];

			d += diff * diff;
		}
		if (d < best_d) {
			best_d = d;
			best = c;
		}
	}
	membership[p] = best;
}

static void parse_input_name(const char *arg, long *npoints, long *nfeatures)
{
	const char *p = strrchr(arg, '/');
	char *end;

	p = p ? p + 1 : arg;
	*nfeatures = 34;
	if (!strcmp(p, "kdd_cup")) {
		*npoints = 494020;
		return;
	}
	*npoints = strtol(p, &end, 10);
	if (end == p)
		bench_die("-i %s: expected kdd_cup, <N>[.txt] or <N>x<F> (inputs are generated)",
			  arg);
	if (*end == 'x') {
		const char *f = end + 1;

		*nfeatures = strtol(f, &end, 10);
		if (end == f)
			bench_die("-i %s: no feature count after 'x'", arg);
	}
	if (*end && strcmp(end, ".txt"))
		bench_die("-i %s: unexpected '%s'", arg, end);
	if (*npoints < 1 || *npoints > 100000000)
		bench_die("-i %s: the point count must be in [1, 10^8]", arg);
	if (*nfeatures < 1 || *nfeatures > 1024)
		bench_die("-i %s: the feature count must be in [1, 1024]", arg);
}

static float *make_points(long np, long nf)
{
	float *feat = (float *)malloc((size_t)np * nf * sizeof(float));
	float centres[BLOBS * 1024];
	struct bench_rng rng;
	long p, f;

	if (!feat)
		bench_die("out of host memory for %ld x %ld features", np, nf);
	bench_rng_seed(&rng, 3);
	for (f = 0; f < BLOBS * nf; f++)
		centres[f] = bench_rng_float(&rng);
	for (p = 0; p < np; p++) {
		long b = (long)bench_rng_below(&rng, BLOBS);

		for (f = 0; f < nf; f++) {
			float spread = bench_rng_float(&rng) + bench_rng_float(&rng) +
				       bench_rng_float(&rng) - 1.5f;

			feat[p * nf + f] = centres[b * nf + f] + 0.05f * spread;
		}
	}
	return feat;
}

static double rmse(const float *feat, long np, long nf, const float *centres, long nc)
{
	double total = 0.0;
	long p, c, f;

	for (p = 0; p < np; p++) {
		double best = DBL_MAX;

		for (c = 0; c < nc; c++) {
			double d = 0.0;

			for (f = 0; f < nf; f++) {
				double diff = feat[p * nf + f] - centres[c * nf + f];

				d += diff * diff;
			}
			best = d < best ? d : best;
		}
		total += best;
	}
	return sqrt(total / (double)np);
}

/*
 * After a clustering that converged with no membership change, every point
 * belongs to its nearest centre. Distances rounded differently on the GPU may
 * flip a point lying on a boundary: a few are tolerated.
 */
static void kmeans_verify(const float *feat, const int *membership, const float *centres, long np,
			  long nf, long nc)
{
	long p, c, f, bad = 0;

	for (p = 0; p < np; p++) {
		float best_d = FLT_MAX;
		long best = 0;

		for (c = 0; c < nc; c++) {
			float d = 0.0f;

			for (f = 0; f < nf; f++) {
				float diff = feat[p * nf + f] - centres[c * nf + f];

				d += diff * diff;
			}
			if (d < best_d) {
				best_d = d;
				best = c;
			}
		}
		bad += membership[p] != best;
	}
	bench_verified(bad <= np / 1000, "%ld of %ld points are not with their nearest centre", bad,
		       np);
}

int main(int argc, char **argv)
{
	int small = bench_start("kmeans", &argc, argv, usage);
	const char *input = small ? "20000x34" : "kdd_cup";
	long max_nc = 5, min_nc = 5, nloops = small ? 2 : 10, np, nf, p, c, f;
	float threshold = 0.001f;
	int do_rmse = 0, do_output = 0, k;
	struct {
		long step;
		long nc;   /* cluster count of the clustering under way */
		long loop; /* its repetition */
		long iter; /* iterations done; -1: centres not chosen yet */
		uint64_t sum;
		double best_rmse;
		long best_nc;
	} st;
	float *feat, *feat_d, *flipped_d, *centres, *new_centres;
	int *membership, *new_membership, *membership_d;
	long *new_len;
	struct bench_rng rng;

	for (k = 1; k < argc; k++) {
		const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;

		if (!strcmp(a, "-i") && v)
			input = argv[++k];
		else if (!strcmp(a, "-m") && v)
			max_nc = bench_parse_long(argv[++k], "-m (max_nclusters)", 1, 100000);
		else if (!strcmp(a, "-n") && v)
			min_nc = bench_parse_long(argv[++k], "-n (min_nclusters)", 1, 100000);
		else if (!strcmp(a, "-t") && v)
			threshold =
			    (float)bench_parse_double(argv[++k], "-t (threshold)", 0.0, 1e12);
		else if (!strcmp(a, "-l") && v)
			nloops = bench_parse_long(argv[++k], "-l (nloops)", 1, 1000000);
		else if (!strcmp(a, "-r"))
			do_rmse = 1;
		else if (!strcmp(a, "-o"))
			do_output = 1;
		else if (!strcmp(a, "-b"))
			bench_die("-b: binary input files are not supported: inputs are generated");
		else
			bench_die("unknown argument '%s' (see --help)", a);
	}
	if (min_nc > max_nc)
		bench_die("-n %ld is larger than -m %ld", min_nc, max_nc);
	parse_input_name(input, &np, &nf);
	if (max_nc * nf > MAX_CENTRE_FLOATS)
		bench_die("-m %ld x %ld features: more than the %d centre values constant "
			  "memory holds here",
			  max_nc, nf, MAX_CENTRE_FLOATS);
	if (max_nc > np)
		bench_die("-m %ld: more clusters than the %ld points", max_nc, np);
	bench_describe("input=%s points=%ld features=%ld clusters=%ld..%ld threshold=%g "
		       "nloops=%ld",
		       input, np, nf, min_nc, max_nc, threshold, nloops);

	feat = make_points(np, nf);
	centres = (float *)calloc((size_t)max_nc * nf, sizeof(float));
	new_centres = (float *)calloc((size_t)max_nc * nf, sizeof(float));
	new_len = (long *)calloc((size_t)max_nc, sizeof(long));
	membership = (int *)malloc((size_t)np * sizeof(int));
	new_membership = (int *)malloc((size_t)np * sizeof(int));
	if (!centres || !new_centres || !new_len || !membership || !new_membership)
		bench_die("out of host memory for %ld points", np);

	CK(cudaMalloc((void **)&feat_d, (size_t)np * nf * sizeof(float)));
	CK(cudaMalloc((void **)&flipped_d, (size_t)np * nf * sizeof(float)));
	CK(cudaMalloc((void **)&membership_d, (size_t)np * sizeof(int)));
	CK(cudaMemcpy(feat_d, feat, (size_t)np * nf * sizeof(float), cudaMemcpyHostToDevice));
	kmeans_transpose<<<bench_blocks((size_t)np, THREADS), THREADS>>>(feat_d, flipped_d, (int)np,
									 (int)nf);
	CK_LAUNCH("kmeans_transpose");

	memset(&st, 0, sizeof(st));
	st.nc = min_nc;
	st.iter = -1;
	st.sum = BENCH_FNV_INIT;
	st.best_rmse = DBL_MAX;
	bench_protect("state", &st, sizeof(st));
	bench_protect("centres", centres, (size_t)max_nc * nf * sizeof(float));
	bench_protect("membership", membership, (size_t)np * sizeof(int));
	while (st.nc <= max_nc) {
		long delta = 0;

		if (bench_point(st.step) == GPUCKPT_RESTORED)
			continue;
		st.step++;
		if (st.iter < 0) {
			bench_rng_seed(&rng, (uint64_t)(st.nc * 1000003 + st.loop));
			for (c = 0; c < st.nc; c++) {
				long pick = (long)bench_rng_below(&rng, (uint64_t)np);

				memcpy(centres + c * nf, feat + pick * nf, nf * sizeof(float));
			}
			for (p = 0; p < np; p++)
				membership[p] = -1;
			st.iter = 0;
			continue;
		}

		CK(cudaMemcpyToSymbol(c_centres, centres, (size_t)st.nc * nf * sizeof(float)));
		kmeans_assign<<<bench_blocks((size_t)np, THREADS), THREADS>>>(
		    flipped_d, (int)np, (int)nf, (int)st.nc, membership_d);
		CK_LAUNCH("kmeans_assign");
		CK(cudaMemcpy(new_membership, membership_d, (size_t)np * sizeof(int),
			      cudaMemcpyDeviceToHost));

		memset(new_centres, 0, (size_t)st.nc * nf * sizeof(float));
		memset(new_len, 0, (size_t)st.nc * sizeof(long));
		for (p = 0; p < np; p++) {
			int m = new_membership[p];

			if (m != membership[p]) {
				delta++;
				membership[p] = m;
			}
			new_len[m]++;
			for (f = 0; f < nf; f++)
				new_centres[m * nf + f] += feat[p * nf + f];
		}
		for (c = 0; c < st.nc; c++)
			if (new_len[c] > 0)
				for (f = 0; f < nf; f++)
					centres[c * nf + f] = new_centres[c * nf + f] / new_len[c];
		st.iter++;
		if ((float)delta > threshold && st.iter < MAX_ITERATIONS)
			continue;

		/* This clustering converged. */
		if (do_rmse) {
			double e = rmse(feat, np, nf, centres, st.nc);

			if (e < st.best_rmse) {
				st.best_rmse = e;
				st.best_nc = st.nc;
			}
		}
		if (bench_verifying() && st.nc == max_nc && st.loop == nloops - 1 && delta == 0)
			kmeans_verify(feat, membership, centres, np, nf, st.nc);
		st.sum = bench_fnv1a(centres, (size_t)st.nc * nf * sizeof(float), st.sum);
		st.sum = bench_fold(st.sum, (uint64_t)st.iter);
		if (do_output && st.nc == max_nc && st.loop == nloops - 1) {
			for (c = 0; c < st.nc; c++) {
				printf("kmeans: centre %ld:", c);
				for (f = 0; f < nf; f++)
					printf(" %.4f", centres[c * nf + f]);
				printf("\n");
			}
		}
		st.iter = -1;
		if (++st.loop == nloops) {
			st.loop = 0;
			st.nc++;
		}
	}

	if (do_rmse)
		printf("kmeans: best RMSE %.5f with %ld clusters\n", st.best_rmse, st.best_nc);
	bench_finish(bench_fnv1a(membership, (size_t)np * sizeof(int), st.sum));
	CK(cudaFree(feat_d));
	CK(cudaFree(flipped_d));
	CK(cudaFree(membership_d));
	free(feat);
	free(centres);
	free(new_centres);
	free(new_len);
	free(membership);
	free(new_membership);
	return 0;
}
