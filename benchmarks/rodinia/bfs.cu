/*
 * bfs - breadth-first search levels of a generated random graph, shaped like
 * the Rodinia 3.1 benchmark: per level, one kernel expands the frontier
 * (mask) into the unvisited neighbours and a second commits them as the next
 * frontier and raises the `over` flag the host reads back. The graph is named
 * like Rodinia's input files (graph1MW_6: a million nodes, six edges per node
 * on average) and generated from that name. The optional second argument
 * searches from several sources so the run lasts long enough to measure.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define THREADS 512

static const char usage[] =
    "usage: bfs [<graph> [sources]] [--small]\n"
    "  graph    graph<N>[K|M][W_<degree>][.txt]: N (thousand, million) nodes with\n"
    "           <degree> edges each on average (default graph16MW_6; --small:\n"
    "           graph64KW_6)\n"
    "  sources  searches, each from another source node (default 400; --small: 4)\n"
    "  --verify compare the last search's levels with a host breadth-first search\n";

struct node {
	int start;
	int count;
};

__global__ void bfs_reset(unsigned char *mask, unsigned char *updating, unsigned char *visited,
			  int *cost, int n, int source)
{
	int tid = blockIdx.x * blockDim.x + threadIdx.x;

	if (tid >= n)
		return;
	mask[tid] = tid == source;
	visited[tid] = tid == source;
	updating[tid] = 0;
	cost[tid] = tid == source ? 0 : -1;
}

/* Every frontier node has the same cost, so concurrent writers store the same value. */
__global__ void bfs_expand(const struct node *nodes, const int *edges, unsigned char *mask,
			   unsigned char *updating, const unsigned char *visited, int *cost, int n)
{
	int tid = blockIdx.x * blockDim.x + threadIdx.x, e;

	if (tid >= n || !mask[tid])
		return;
	mask[tid] = 0;
	for (e = nodes[tid].start; e < nodes[tid].start + nodes[tid].count; e++) {
		int id = edges[e];

		if (!visited[id]) {
			cost[id] = cost[tid] + 1;
			updating[id] = 1;
		}
	}
}

__global__ void bfs_commit(unsigned char *mask, unsigned char *updating, unsigned char *visited,
			   int *over, int n)
{
	int tid = blockIdx.x * blockDim.x + threadIdx.x;

	if (tid >= n || !updating[tid])
		return;
	mask[tid] = 1;
	visited[tid] = 1;
	*over = 1;
	updating[tid] = 0;
}

/* "graph1MW_6", "graph65536.txt", "../data/graph4096.txt" -> nodes and mean degree. */
static void parse_graph_name(const char *arg, long *nodes, long *degree)
{
	const char *p = strrchr(arg, '/');
	char *end;

	p = p ? p + 1 : arg;
	if (strncmp(p, "graph", 5) || !isdigit((unsigned char)p[5]))
		bench_die("graph '%s': expected graph<N>[K|M][W_<degree>][.txt]", arg);
	*nodes = strtol(p + 5, &end, 10);
	if (*end == 'K' || *end == 'k')
		*nodes *= 1000, end++;
	else if (*end == 'M' || *end == 'm')
		*nodes *= 1000000, end++;
	*degree = 6;
	if (*end == 'W' && end[1] == '_') {
		*degree = strtol(end + 2, &end, 10);
		if (*degree < 1 || *degree > 64)
			bench_die("graph '%s': the degree must be in [1, 64]", arg);
	}
	if (*end && strcmp(end, ".txt"))
		bench_die("graph '%s': unexpected '%s' after the size", arg, end);
	if (*nodes < 2 || *nodes > 1000000000)
		bench_die("graph '%s': the node count must be in [2, 10^9]", arg);
}

/*
 * Node i links to i + 1 (so every node is reachable) and to a random number
 * of random nodes, 2 * degree - 2 at most: degree edges per node on average.
 */
static void make_graph(long n, long degree, struct node **nodes_out, int **edges_out,
		       long *nedges_out)
{
	struct node *nodes = (struct node *)malloc((size_t)n * sizeof(*nodes));
	struct bench_rng rng;
	long i, k, e = 0, cap = n * degree;
	int *edges = (int *)malloc((size_t)cap * sizeof(int));

	if (!nodes || !edges)
		bench_die("out of host memory for a graph of %ld nodes", n);
	bench_rng_seed(&rng, 1);
	for (i = 0; i < n; i++) {
		long extra = (long)bench_rng_below(&rng, (uint64_t)(2 * degree - 1));

		if (e + 1 + extra > 2147483647L)
			bench_die("graph of %ld nodes: more edges than int indices can address", n);
		if (e + 1 + extra > cap) {
			cap = cap * 3 / 2 + 1 + extra;
			edges = (int *)realloc(edges, (size_t)cap * sizeof(int));
			if (!edges)
				bench_die("out of host memory for the edges of %ld nodes", n);
		}
		nodes[i].start = (int)e;
		nodes[i].count = (int)(1 + extra);
		edges[e++] = (int)((i + 1) % n);
		for (k = 0; k < extra; k++)
			edges[e++] = (int)bench_rng_below(&rng, (uint64_t)n);
	}
	*nodes_out = nodes;
	*edges_out = edges;
	*nedges_out = e;
}

static int bfs_source(long k, long n)
{
	return (int)(bench_hash2(5, (uint64_t)k) % (uint64_t)n);
}

static void bfs_verify(const int *cost_d, const struct node *nodes, const int *edges, long n,
		       int source)
{
	int *gpu = (int *)malloc((size_t)n * sizeof(int)),
	    *cost = (int *)malloc((size_t)n * sizeof(int));
	int *queue = (int *)malloc((size_t)n * sizeof(int));
	long head = 0, tail = 0, i, bad = 0;

	if (!gpu || !cost || !queue)
		bench_die("--verify: out of host memory");
	CK(cudaMemcpy(gpu, cost_d, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost));
	for (i = 0; i < n; i++)
		cost[i] = -1;
	cost[source] = 0;
	queue[tail++] = source;
	while (head < tail) {
		int u = queue[head++], e;

		for (e = nodes[u].start; e < nodes[u].start + nodes[u].count; e++) {
			if (cost[edges[e]] < 0) {
				cost[edges[e]] = cost[u] + 1;
				queue[tail++] = edges[e];
			}
		}
	}
	for (i = 0; i < n; i++)
		bad += gpu[i] != cost[i];
	bench_verified(bad == 0, "%ld of %ld levels differ (source %d)", bad, n, source);
	free(gpu);
	free(cost);
	free(queue);
}

int main(int argc, char **argv)
{
	int small = bench_start("bfs", &argc, argv, usage);
	const char *graph = small ? "graph64KW_6" : "graph16MW_6";
	long nsources = small ? 4 : 400, n, degree, nedges;
	struct {
		long step;
		long source; /* index of the search under way */
		long level;  /* levels done; -1: the search has not started */
		uint64_t sum;
	} st = {0, 0, -1, BENCH_FNV_INIT};
	struct bench_hasher hasher;
	struct node *nodes, *nodes_d;
	int *edges, *edges_d, *cost_d, *over_d, over;
	unsigned char *mask_d, *updating_d, *visited_d;
	unsigned blocks;

	if (argc > 3)
		bench_die("expected [<graph> [sources]] (see --help)");
	if (argc >= 2)
		graph = argv[1];
	if (argc == 3)
		nsources = bench_parse_long(argv[2], "sources", 1, 100000000);
	parse_graph_name(graph, &n, &degree);
	if (n * degree > 2000000000L)
		bench_die("graph '%s': too many edges for int indices", graph);
	make_graph(n, degree, &nodes, &edges, &nedges);
	bench_describe("graph=%s nodes=%ld edges=%ld sources=%ld", graph, n, nedges, nsources);
	blocks = bench_blocks((size_t)n, THREADS);

	CK(cudaMalloc((void **)&nodes_d, (size_t)n * sizeof(*nodes_d)));
	CK(cudaMalloc((void **)&edges_d, (size_t)nedges * sizeof(int)));
	CK(cudaMalloc((void **)&mask_d, (size_t)n));
	CK(cudaMalloc((void **)&updating_d, (size_t)n));
	CK(cudaMalloc((void **)&visited_d, (size_t)n));
	CK(cudaMalloc((void **)&cost_d, (size_t)n * sizeof(int)));
	CK(cudaMalloc((void **)&over_d, sizeof(int)));
	bench_hasher_init(&hasher);
	CK(cudaMemcpy(nodes_d, nodes, (size_t)n * sizeof(*nodes), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(edges_d, edges, (size_t)nedges * sizeof(int), cudaMemcpyHostToDevice));

	bench_protect("state", &st, sizeof(st));
	while (st.source < nsources) {
		if (bench_point(st.step) == GPUCKPT_RESTORED)
			continue;
		if (st.level < 0) {
			int source = bfs_source(st.source, n);

			bfs_reset<<<blocks, THREADS>>>(mask_d, updating_d, visited_d, cost_d,
						       (int)n, source);
			CK_LAUNCH("bfs_reset");
			st.level = 0;
		} else {
			CK(cudaMemset(over_d, 0, sizeof(int)));
			bfs_expand<<<blocks, THREADS>>>(nodes_d, edges_d, mask_d, updating_d,
							visited_d, cost_d, (int)n);
			CK_LAUNCH("bfs_expand");
			bfs_commit<<<blocks, THREADS>>>(mask_d, updating_d, visited_d, over_d,
							(int)n);
			CK_LAUNCH("bfs_commit");
			CK(cudaMemcpy(&over, over_d, sizeof(int), cudaMemcpyDeviceToHost));
			st.level++;
			if (!over) {
				st.sum = bench_hash_device(&hasher, cost_d, (size_t)n * sizeof(int),
							   st.sum);
				st.sum = bench_fold(st.sum, (uint64_t)st.level);
				st.source++;
				st.level = -1;
			}
		}
		st.step++;
	}

	printf("bfs: %ld searches done\n", nsources);
	if (bench_verifying())
		bfs_verify(cost_d, nodes, edges, n, bfs_source(nsources - 1, n));
	bench_finish(st.sum);
	bench_hasher_free(&hasher);
	CK(cudaFree(nodes_d));
	CK(cudaFree(edges_d));
	CK(cudaFree(mask_d));
	CK(cudaFree(updating_d));
	CK(cudaFree(visited_d));
	CK(cudaFree(cost_d));
	CK(cudaFree(over_d));
	free(nodes);
	free(edges);
	return 0;
}
