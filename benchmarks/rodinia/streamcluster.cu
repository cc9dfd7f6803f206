/*
 * streamcluster - online k-median clustering of a stream of generated points,
 * shaped like the Rodinia 3.1 benchmark (after PARSEC's): the stream is read
 * in chunks; each chunk is clustered by local search (a first solution from
 * randomised facility opening, then rounds of "gain" evaluations that ask
 * whether opening a candidate point as a centre, and closing the centres it
 * makes redundant, lowers the cost); the weighted centres of every chunk are
 * kept, and clustered once more at the end. The gain evaluation runs on the
 * GPU: one thread per point computes its distance to the candidate and its
 * block's per-centre sums; the host adds the blocks in order. Device buffers
 * are allocated for every chunk and the per-centre work buffer for every gain
 * evaluation, as the original does.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "bench.h"

#define THREADS 256
#define MAX_DIM 1024
#define MAX_CENTRES 4095 /* per-block accumulators held in shared memory */
#define ITER 3		 /* scales the number of gain evaluations, as in the original */
#define SP 1		 /* first-solution attempts at one facility cost */

static const char usage[] =
    "usage: streamcluster [k1 k2 d n chunksize clustersize infile outfile nproc]\n"
    "                     [--small]\n"
    "  k1, k2       fewest and most centres per chunk (default 10 20)\n"
    "  d            dimensions (default 256; --small: 32)\n"
    "  n            points in the stream (default 262144; --small: 8192)\n"
    "  chunksize    points clustered at a time (default 65536; --small: 2048)\n"
    "  clustersize  most centres kept from all chunks (default 1000)\n"
    "  infile       none: the points are generated (files are not supported)\n"
    "  outfile      where the final centres go, or none (default output.txt)\n"
    "  nproc        1 (the GPU version uses one host thread)\n"
    "  --verify     check every gain evaluation's sums against the host\n";

struct pset {
	long num;
	int dim;
	float *coord; /* num x dim */
	float *weight;
	float *cost;  /* weight x squared distance to the point's centre */
	long *assign; /* the point's centre */
};

/* Device copies of one chunk for the gain evaluations. */
struct gpu {
	float *coord_t; /* dim x num: coalesced by point */
	float *weight, *cost;
	int *assign, *centre_table;
	unsigned char *sw;
	long num;
};

static float dist2(const struct pset *p, long a, long b)
{
	const float *x = p->coord + a * p->dim, *y = p->coord + b * p->dim;
	float s = 0.0f;
	int d;

	for (d = 0; d < p->dim; d++)
		s += (x[d] - y[d]) * (x[d] - y[d]);
	return s;
}

static void swap_points(struct pset *p, long a, long b, float *tmp)
{
	size_t row = (size_t)p->dim * sizeof(float);
	float w = p->weight[a];

	memcpy(tmp, p->coord + a * p->dim, row);
	memcpy(p->coord + a * p->dim, p->coord + b * p->dim, row);
	memcpy(p->coord + b * p->dim, tmp, row);
	p->weight[a] = p->weight[b];
	p->weight[b] = w;
}

static void shuffle_points(struct pset *p, struct bench_rng *rng)
{
	float tmp[MAX_DIM];
	long i;

	for (i = 0; i < p->num - 1; i++)
		swap_points(p, i, i + (long)bench_rng_below(rng, (uint64_t)(p->num - i)), tmp);
}

static void shuffle_ints(long *a, long n, struct bench_rng *rng)
{
	long i, j, t;

	for (i = 0; i < n - 1; i++) {
		j = i + (long)bench_rng_below(rng, (uint64_t)(n - i));
		t = a[i];
		a[i] = a[j];
		a[j] = t;
	}
}

/* First solution: point 0 opens, every later point opens with probability cost / z. */
static double pspeedy(struct pset *p, double z, long *k, struct bench_rng *rng)
{
	double total;
	long i, j;

	for (i = 0; i < p->num; i++) {
		p->cost[i] = dist2(p, i, 0) * p->weight[i];
		p->assign[i] = 0;
	}
	*k = 1;
	for (i = 1; i < p->num; i++) {
		if (bench_rng_float(rng) >= p->cost[i] / z)
			continue;
		(*k)++;
		for (j = 0; j < p->num; j++) {
			float d = dist2(p, j, i) * p->weight[j];

			if (d < p->cost[j]) {
				p->cost[j] = d;
				p->assign[j] = i;
			}
		}
	}
	total = z * (double)*k;
	for (i = 0; i < p->num; i++)
		total += p->cost[i];
	return total;
}

/*
 * Candidate x: each thread takes one point. A point closer to x than to its
 * centre would switch (its saving goes to slot K); otherwise what it would
 * lose by moving to x counts against closing its centre. Thread 0 adds the
 * block's values in thread order, so the sums are reproducible.
 */
__global__ void sc_pgain(long num, int dim, long x, const float *coord_t, const float *weight,
			 const float *cost, const int *assign, const int *centre_table,
			 unsigned char *sw, float *work, int K)
{
	__shared__ float xs[MAX_DIM];
	__shared__ float acc[MAX_CENTRES + 1];
	__shared__ int slot[THREADS];
	__shared__ float val[THREADS];
	int tid = threadIdx.x, d, t;
	long i = (long)blockIdx.x * blockDim.x + tid;

	for (d = tid; d < dim; d += blockDim.x)
		xs[d] = coord_t[(size_t)d * num + x];
	for (t = tid; t <= K; t += blockDim.x)
		acc[t] = 0.0f;
	__syncthreads();
	slot[tid] = -1;
	val[tid] = 0.0f;
	if (i < num) {
		float s = 0.0f, xc;

		for (d = 0; d < dim; d++) {
			float diff = coord_t[(size_t)d * num + i] - xs[d];

			s += diff * diff;
		}
		xc = s * weight[i];
		if (xc < cost[i]) {
			sw[i] = 1;
			slot[tid] = K;
			val[tid] = xc - cost[i];
		} else {
			sw[i] = 0;
			slot[tid] = centre_table[assign[i]];
			val[tid] = cost[i] - xc;
		}
	}
	__syncthreads();
	if (tid == 0)
		for (t = 0; t < (int)blockDim.x; t++)
			if (slot[t] >= 0)
				acc[slot[t]] += val[t];
	__syncthreads();
	for (t = tid; t <= K; t += blockDim.x)
		work[(size_t)blockIdx.x * (K + 1) + t] = acc[t];
}

__global__ void sc_transpose(const float *coord, float *coord_t, long num, int dim)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
	int d;

	if (i >= num)
		return;
	for (d = 0; d < dim; d++)
		coord_t[(size_t)d * num + i] = coord[(size_t)i * dim + d];
}

static void gpu_begin(struct gpu *g, const struct pset *p)
{
	float *coord_d;
	size_t bytes = (size_t)p->num * p->dim * sizeof(float);

	g->num = p->num;
	CK(cudaMalloc((void **)&g->coord_t, bytes));
	CK(cudaMalloc((void **)&g->weight, p->num * sizeof(float)));
	CK(cudaMalloc((void **)&g->cost, p->num * sizeof(float)));
	CK(cudaMalloc((void **)&g->assign, p->num * sizeof(int)));
	CK(cudaMalloc((void **)&g->centre_table, p->num * sizeof(int)));
	CK(cudaMalloc((void **)&g->sw, (size_t)p->num));
	CK(cudaMalloc((void **)&coord_d, bytes));
	CK(cudaMemcpy(coord_d, p->coord, bytes, cudaMemcpyHostToDevice));
	sc_transpose<<<bench_blocks((size_t)p->num, THREADS), THREADS>>>(coord_d, g->coord_t,
									 p->num, p->dim);
	CK_LAUNCH("sc_transpose");
	CK(cudaFree(coord_d));
	CK(cudaMemcpy(g->weight, p->weight, p->num * sizeof(float), cudaMemcpyHostToDevice));
}

static void gpu_end(struct gpu *g)
{
	CK(cudaFree(g->coord_t));
	CK(cudaFree(g->weight));
	CK(cudaFree(g->cost));
	CK(cudaFree(g->assign));
	CK(cudaFree(g->centre_table));
	CK(cudaFree(g->sw));
}

/* Host scratch for the gain evaluations of one chunk. */
struct scratch {
	char *is_centre;
	int *centre_table, *assign32;
	unsigned char *sw;
	float *work;
	double *lower;
	char *close;
	size_t work_cap;
};

static long checks_done, checks_bad;

/* The kernel's switches and per-centre sums, recomputed on the host. */
static void pgain_check(long x, const struct pset *p, const struct scratch *s, long K)
{
	std::vector<double> lower(K + 1, 0.0), scale(K + 1, 0.0);
	long i, bad = 0;

	for (i = 0; i < p->num; i++) {
		double xc = (double)dist2(p, i, x) * p->weight[i];
		long slot = xc < p->cost[i] ? K : s->centre_table[p->assign[i]];
		double v = slot == K ? xc - p->cost[i] : p->cost[i] - xc;

		/* A point within rounding of the switch may go either way. */
		if ((slot == K) != (s->sw[i] != 0) && fabs(xc - p->cost[i]) > 1e-3 * (xc + 1.0))
			bad++;
		lower[slot] += v;
		scale[slot] += fabs(v);
	}
	for (i = 0; i <= K; i++)
		if (fabs(lower[i] - s->lower[i]) > 1e-3 * (scale[i] + 1.0))
			bad++;
	checks_done++;
	checks_bad += bad != 0;
}

/* What opening x (and closing the centres that then cost more than they save) gains. */
static double pgain(long x, struct pset *p, double z, long *k, struct gpu *g, struct scratch *s)
{
	long i, K = 0, nclose = 0;
	unsigned blocks = bench_blocks((size_t)p->num, THREADS);
	size_t work_n;
	float *work_d;
	double open;

	if (s->is_centre[x])
		return 0.0;
	for (i = 0; i < p->num; i++) {
		if (s->is_centre[i])
			s->centre_table[i] = (int)K++;
		s->assign32[i] = (int)p->assign[i];
	}
	if (K > MAX_CENTRES)
		bench_die("pgain: %ld open centres: more than the kernel's %d", K, MAX_CENTRES);
	work_n = (size_t)blocks * (K + 1);
	if (work_n > s->work_cap) {
		free(s->work);
		s->work = (float *)malloc(work_n * sizeof(float));
		if (!s->work)
			bench_die("pgain: out of host memory");
		s->work_cap = work_n;
	}

	CK(cudaMemcpy(g->centre_table, s->centre_table, p->num * sizeof(int),
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(g->assign, s->assign32, p->num * sizeof(int), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(g->cost, p->cost, p->num * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMalloc((void **)&work_d, work_n * sizeof(float)));
	sc_pgain<<<blocks, THREADS>>>(p->num, p->dim, x, g->coord_t, g->weight, g->cost, g->assign,
				      g->centre_table, g->sw, work_d, (int)K);
	CK_LAUNCH("sc_pgain");
	CK(cudaMemcpy(s->work, work_d, work_n * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(s->sw, g->sw, (size_t)p->num, cudaMemcpyDeviceToHost));
	CK(cudaFree(work_d));

	open = z;
	for (i = 0; i <= K; i++)
		s->lower[i] = 0.0;
	for (size_t b = 0; b < blocks; b++)
		for (i = 0; i <= K; i++)
			s->lower[i] += s->work[b * (K + 1) + i];
	if (bench_verifying())
		pgain_check(x, p, s, K);
	open += s->lower[K];
	for (i = 0; i < K; i++) {
		double gain = z + s->lower[i];

		s->close[i] = gain > 0.0;
		if (s->close[i]) {
			nclose++;
			open -= gain;
		}
	}
	if (open >= 0.0)
		return 0.0;

	for (i = 0; i < p->num; i++) {
		if (s->sw[i] || s->close[s->centre_table[p->assign[i]]]) {
			p->cost[i] = dist2(p, i, x) * p->weight[i];
			p->assign[i] = x;
		}
	}
	for (i = 0; i < p->num; i++)
		if (s->is_centre[i] && s->close[s->centre_table[i]])
			s->is_centre[i] = 0;
	s->is_centre[x] = 1;
	*k += 1 - nclose;
	return -open;
}

/* Rounds of gain evaluations over shuffled candidates until a round gains less than e. */
static double pfl(struct pset *p, long *feasible, long nf, double z, long *k, double cost,
		  long iter, double e, struct gpu *g, struct scratch *s, struct bench_rng *rng)
{
	double change = cost;
	long i;

	while (cost > 0.0 && change / cost > e) {
		change = 0.0;
		shuffle_ints(feasible, nf, rng);
		for (i = 0; i < iter; i++)
			change += pgain(feasible[i % nf], p, z, k, g, s);
		cost -= change;
	}
	return cost;
}

/* Candidate centres drawn with probability proportional to weight. */
static long select_feasible(const struct pset *p, long kmin, long *feasible, struct bench_rng *rng)
{
	long nf = p->num, limit = (long)(ITER * kmin * log((double)kmin)), i;
	double *acc, total;

	if (limit < 1)
		limit = 1;
	if (nf <= limit) {
		for (i = 0; i < nf; i++)
			feasible[i] = i;
		return nf;
	}
	nf = limit;
	acc = (double *)malloc((size_t)p->num * sizeof(double));
	if (!acc)
		bench_die("out of host memory");
	total = 0.0;
	for (i = 0; i < p->num; i++) {
		total += p->weight[i];
		acc[i] = total;
	}
	for (i = 0; i < nf; i++) {
		double r = bench_rng_float(rng) * total;
		long lo = 0, hi = p->num - 1;

		while (lo < hi) {
			long mid = (lo + hi) / 2;

			if (acc[mid] < r)
				lo = mid + 1;
			else
				hi = mid;
		}
		feasible[i] = lo;
	}
	free(acc);
	return nf;
}

/*
 * k-median of one point set with between kmin and kmax centres: a binary
 * search on the facility cost z around local search; is_centre marks the result.
 */
static double pkmedian(struct pset *p, long kmin, long kmax, long *kfinal, struct scratch *s,
		       struct bench_rng *rng)
{
	double hiz = 0.0, loz = 0.0, z, cost;
	long i, k, nf, *feasible;
	struct gpu g;

	for (i = 0; i < p->num; i++)
		hiz += dist2(p, i, 0) * p->weight[i];
	z = (hiz + loz) / 2.0;
	memset(s->is_centre, 0, (size_t)p->num);
	if (p->num <= kmax) {
		for (i = 0; i < p->num; i++) {
			p->assign[i] = i;
			p->cost[i] = 0.0f;
			s->is_centre[i] = 1;
		}
		*kfinal = p->num;
		return 0.0;
	}

	shuffle_points(p, rng);
	cost = pspeedy(p, z, &k, rng);
	i = 0;
	while (k < kmin && i < SP) {
		cost = pspeedy(p, z, &k, rng);
		i++;
	}
	while (k < kmin) {
		if (i >= SP) {
			hiz = z;
			z = (hiz + loz) / 2.0;
			i = 0;
		}
		shuffle_points(p, rng);
		cost = pspeedy(p, z, &k, rng);
		i++;
	}
	for (i = 0; i < p->num; i++)
		s->is_centre[p->assign[i]] = 1;

	feasible = (long *)malloc((size_t)p->num * sizeof(long));
	if (!feasible)
		bench_die("out of host memory");
	nf = select_feasible(p, kmin, feasible, rng);
	gpu_begin(&g, p);
	for (;;) {
		cost = pfl(p, feasible, nf, z, &k, cost, (long)(ITER * kmax * log((double)kmax)),
			   0.1, &g, s, rng);
		if ((k <= 1.1 * kmax && k >= 0.9 * kmin) || (k <= kmax + 2 && k >= kmin - 2))
			cost = pfl(p, feasible, nf, z, &k, cost,
				   (long)(ITER * kmax * log((double)kmax)), 0.001, &g, s, rng);
		if (k > kmax) {
			loz = z;
			z = (hiz + loz) / 2.0;
			cost += (z - loz) * k;
		}
		if (k < kmin) {
			hiz = z;
			z = (hiz + loz) / 2.0;
			cost += (z - hiz) * k;
		}
		if ((k <= kmax && k >= kmin) || loz >= 0.999 * hiz)
			break;
	}
	gpu_end(&g);
	free(feasible);
	*kfinal = k;
	return cost;
}

/* Move each centre to the weighted mean of its points and give it their weight. */
static void contract_centres(struct pset *p)
{
	long i, c;
	int d;

	for (i = 0; i < p->num; i++) {
		float rel;

		c = p->assign[i];
		if (c == i)
			continue;
		rel = p->weight[i] / (p->weight[c] + p->weight[i]);
		for (d = 0; d < p->dim; d++)
			p->coord[c * p->dim + d] = p->coord[c * p->dim + d] * (1.0f - rel) +
						   p->coord[i * p->dim + d] * rel;
		p->weight[c] += p->weight[i];
	}
}

static void scratch_init(struct scratch *s, long num)
{
	memset(s, 0, sizeof(*s));
	s->is_centre = (char *)malloc((size_t)num);
	s->centre_table = (int *)malloc((size_t)num * sizeof(int));
	s->assign32 = (int *)malloc((size_t)num * sizeof(int));
	s->sw = (unsigned char *)malloc((size_t)num);
	s->lower = (double *)malloc(((size_t)MAX_CENTRES + 1) * sizeof(double));
	s->close = (char *)malloc((size_t)MAX_CENTRES + 1);
	if (!s->is_centre || !s->centre_table || !s->assign32 || !s->sw || !s->lower || !s->close)
		bench_die("out of host memory for %ld points", num);
}

static void pset_alloc(struct pset *p, long num, int dim)
{
	p->num = 0;
	p->dim = dim;
	p->coord = (float *)calloc((size_t)num * dim, sizeof(float));
	p->weight = (float *)calloc((size_t)num, sizeof(float));
	p->cost = (float *)calloc((size_t)num, sizeof(float));
	p->assign = (long *)calloc((size_t)num, sizeof(long));
	if (!p->coord || !p->weight || !p->cost || !p->assign)
		bench_die("out of host memory for %ld points of %d dimensions", num, dim);
}

int main(int argc, char **argv)
{
	int small = bench_start("streamcluster", &argc, argv, usage);
	long kmin = 10, kmax = 20, n = small ? 8192 : 262144, chunk = small ? 2048 : 65536;
	long centre_cap = 1000, nchunks, i, kfinal;
	int dim = small ? 32 : 256, d;
	const char *outfile = "output.txt";
	struct {
		long step;
		long chunk;    /* next chunk to read; nchunks: the final clustering is next */
		long ncentres; /* centres kept so far */
	} st = {0, 0, 0};
	struct pset points, centres;
	struct scratch s, cs;
	struct bench_rng rng;
	uint64_t sum;
	FILE *f;

	if (argc != 1 && argc != 10)
		bench_die("expected k1 k2 d n chunksize clustersize infile outfile nproc "
			  "(see --help)");
	if (argc == 10) {
		kmin = bench_parse_long(argv[1], "k1", 2, MAX_CENTRES / 4);
		kmax = bench_parse_long(argv[2], "k2", kmin, MAX_CENTRES / 4);
		dim = (int)bench_parse_long(argv[3], "d", 1, MAX_DIM);
		n = bench_parse_long(argv[4], "n", 1, 1L << 32);
		chunk = bench_parse_long(argv[5], "chunksize", 1, 1L << 26);
		centre_cap = bench_parse_long(argv[6], "clustersize", kmax, MAX_CENTRES);
		if (strcmp(argv[7], "none"))
			bench_die("infile '%s': input files are not supported (give none)",
				  argv[7]);
		outfile = argv[8];
		bench_parse_long(argv[9], "nproc", 1, 1);
	}
	nchunks = (n + chunk - 1) / chunk;
	bench_describe("k=%ld..%ld d=%d n=%ld chunksize=%ld clustersize=%ld", kmin, kmax, dim, n,
		       chunk, centre_cap);

	pset_alloc(&points, chunk, dim);
	pset_alloc(&centres, centre_cap, dim);
	scratch_init(&s, chunk);
	scratch_init(&cs, centre_cap);

	bench_protect("state", &st, sizeof(st));
	bench_protect("centre-coords", centres.coord, (size_t)centre_cap * dim * sizeof(float));
	bench_protect("centre-weights", centres.weight, (size_t)centre_cap * sizeof(float));
	while (st.chunk < nchunks) {
		long first = st.chunk * chunk;

		if (bench_point(st.step) == GPUCKPT_RESTORED)
			continue;
		points.num = n - first < chunk ? n - first : chunk;
		bench_rng_seed(&rng, (uint64_t)st.chunk);
		for (i = 0; i < points.num * dim; i++)
			points.coord[i] = bench_rng_float(&rng);
		for (i = 0; i < points.num; i++)
			points.weight[i] = 1.0f;

		pkmedian(&points, kmin, kmax, &kfinal, &s, &rng);
		contract_centres(&points);
		if (st.ncentres + kfinal > centre_cap)
			bench_die("chunk %ld: %ld + %ld centres exceed clustersize %ld", st.chunk,
				  st.ncentres, kfinal, centre_cap);
		for (i = 0; i < points.num; i++) {
			if (!s.is_centre[i])
				continue;
			memcpy(centres.coord + st.ncentres * dim, points.coord + i * dim,
			       dim * sizeof(float));
			centres.weight[st.ncentres] = points.weight[i];
			st.ncentres++;
		}
		st.chunk++;
		st.step++;
	}

	/* Between the phases: the kept centres are clustered once more. */
	bench_point(st.step);
	centres.num = st.ncentres;
	bench_rng_seed(&rng, 0xc1u);
	pkmedian(&centres, kmin, kmax, &kfinal, &cs, &rng);
	contract_centres(&centres);

	sum = BENCH_FNV_INIT;
	f = strcmp(outfile, "none") ? fopen(outfile, "w") : NULL;
	if (strcmp(outfile, "none") && !f)
		bench_die("outfile '%s': cannot open for writing", outfile);
	for (i = 0; i < centres.num; i++) {
		if (!cs.is_centre[i])
			continue;
		sum = bench_fnv1a(centres.coord + i * dim, dim * sizeof(float), sum);
		sum = bench_fnv1a(&centres.weight[i], sizeof(float), sum);
		if (f) {
			fprintf(f, "%ld %g", i, centres.weight[i]);
			for (d = 0; d < dim; d++)
				fprintf(f, " %g", centres.coord[i * dim + d]);
			fprintf(f, "\n");
		}
	}
	if (f && fclose(f))
		bench_die("outfile '%s': write failed", outfile);
	printf("streamcluster: %ld centres kept from %ld chunks, %ld final\n", st.ncentres, nchunks,
	       kfinal);
	if (bench_verifying())
		bench_verified(checks_bad == 0 && checks_done > 0,
			       "%ld of %ld gain evaluations differ from the host", checks_bad,
			       checks_done);
	bench_finish(sum);
	return 0;
}
