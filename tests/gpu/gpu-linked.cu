/*
 * gpu-linked - a linked list whose nodes live in device memory, spread over
 * NCHUNKS separate allocations and linked in a shuffled order, so that nearly
 * every `next` pointer crosses from one allocation into another. A kernel
 * walks the list every step and rewrites values; every 16 steps another
 * kernel reverses it, so the pointers a checkpoint captures were written by
 * the device, not by the host. The host keeps an array of the chunks' device
 * addresses, registered with gpuckpt_protect, and launches through it.
 *
 * Nothing rewrites a pointer after a restore: the run ends with the right
 * checksum only if every allocation came back at its old address. If the
 * chunks are not where the checkpoint says they were, it says so.
 */
#include "gpu_test.h"

#define NCHUNKS 8

struct node {
	struct node *next;
	float value;
	int id;
};

__global__ void walk(struct node **head, long step, float *acc_out)
{
	float acc = 0.0f;

	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;
	/* One thread, in list order: the result depends on the order. */
	for (struct node *p = *head; p; p = p->next) {
		acc = 0.9f * acc + p->value;
		p->value = 10.0f * sinf(acc + 0.001f * (float)(step % 1000));
	}
	*acc_out = acc;
}

__global__ void bump(struct node *chunk, long m)
{
	long i = (long)blockIdx.x * blockDim.x + threadIdx.x;

	if (i < m)
		chunk[i].value += 0.001f * (float)(chunk[i].id % 7);
}

__global__ void reverse(struct node **head)
{
	struct node *prev = NULL, *p, *next;

	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;
	for (p = *head; p; p = next) {
		next = p->next;
		p->next = prev;
		prev = p;
	}
	*head = prev;
}

/* The list in order; ids[n] gets the number of nodes found. */
__global__ void flatten(struct node **head, float *values, int *ids, long n)
{
	long k = 0;

	if (blockIdx.x != 0 || threadIdx.x != 0)
		return;
	for (struct node *p = *head; p && k <= n; p = p->next, k++) {
		if (k < n) {
			values[k] = p->value;
			ids[k] = p->id;
		}
	}
	ids[n] = (int)k;
}

/* Device address of node x of the list. */
static struct node *node_at(struct node *const *chunks, long m, long x)
{
	return chunks[x / m] + x % m;
}

/* Link the nodes in a shuffled order (fixed seed) and copy them to the device. */
static void build_list(struct node *const *chunks, struct node **head, long m)
{
	long n = m * NCHUNKS;
	long *perm = (long *)malloc(n * sizeof(long));
	struct node *host = (struct node *)malloc(n * sizeof(struct node));
	struct node *first;
	uint64_t lcg = 0x9e3779b97f4a7c15ULL;

	if (!perm || !host)
		gt_die("building the list: out of host memory");
	for (long x = 0; x < n; x++)
		perm[x] = x;
	for (long x = n - 1; x > 0; x--) {
		long y, t;

		lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
		y = (long)((lcg >> 33) % (uint64_t)(x + 1));
		t = perm[x];
		perm[x] = perm[y];
		perm[y] = t;
	}
	for (long t = 0; t < n; t++) {
		struct node *h = &host[perm[t]];

		h->id = (int)perm[t];
		h->value = (float)(perm[t] % 13) * 0.5f;
		h->next = t + 1 < n ? node_at(chunks, m, perm[t + 1]) : NULL;
	}
	for (int c = 0; c < NCHUNKS; c++)
		CK(cudaMemcpy(chunks[c], host + c * m, m * sizeof(struct node),
			      cudaMemcpyHostToDevice));
	first = node_at(chunks, m, perm[0]);
	CK(cudaMemcpy(head, &first, sizeof(first), cudaMemcpyHostToDevice));
	free(host);
	free(perm);
}

/* After a restore `chunks` holds what the checkpoint held; it must match this run's. */
static void check_chunks(struct node *const *restored, struct node *const *fresh, long step)
{
	for (int c = 0; c < NCHUNKS; c++)
		if (restored[c] != fresh[c])
			gt_die("restore at step %ld: chunk %d was at %p in the checkpoint but "
			       "is at %p in this run",
			       step, c, (void *)restored[c], (void *)fresh[c]);
}

/* The nodes in list order must be a permutation of all of them. */
static void check_list(const int *ids, long n)
{
	char *seen;

	if (ids[n] != n)
		gt_die("the list has %d nodes, expected %ld", ids[n], n);
	seen = (char *)calloc(n, 1);
	if (!seen)
		gt_die("checking the list: out of host memory");
	for (long k = 0; k < n; k++) {
		if (ids[k] < 0 || ids[k] >= n || seen[ids[k]])
			gt_die("the list is corrupt: position %ld holds node %d", k, ids[k]);
		seen[ids[k]] = 1;
	}
	free(seen);
}

int main(int argc, char **argv)
{
	static const struct gt_size size = {1024, NCHUNKS, 1L << 20, "nodes (a multiple of 8)"};
	struct node *chunks[NCHUNKS], *fresh[NCHUNKS], **head;
	struct gt_device dev;
	struct gt_opts o;
	cudaStream_t s;
	float *acc, *values, *host_values, last;
	int *ids, *host_ids;
	uint64_t sum = GT_FNV_INIT;
	long step = 0, m, n;
	int rc;

	gt_prog = "gpu-linked";
	gt_parse(&o, argc, argv,
		 "Walk, update and reverse a linked list whose nodes live in device memory.",
		 &size);
	if (o.size % NCHUNKS)
		gt_die("--size: %ld is not a multiple of %d", o.size, NCHUNKS);
	m = o.size / NCHUNKS;
	n = m * NCHUNKS;
	gt_device_open(&dev);
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

	for (int c = 0; c < NCHUNKS; c++)
		CK(cudaMalloc((void **)&chunks[c], m * sizeof(struct node)));
	CK(cudaMalloc((void **)&head, sizeof(*head)));
	CK(cudaMalloc((void **)&acc, sizeof(*acc)));
	CK(cudaMalloc((void **)&values, n * sizeof(*values)));
	CK(cudaMalloc((void **)&ids, (n + 1) * sizeof(*ids)));
	CK(cudaMemset(acc, 0, sizeof(*acc)));
	build_list(chunks, head, m);
	/* Copies from pageable memory may still be in flight, and s does not wait for them. */
	CK(cudaDeviceSynchronize());
	memcpy(fresh, chunks, sizeof(fresh));

	rc = ckpt_protect("chunks", chunks, sizeof(chunks));
	if (rc < 0)
		gt_die("gpuckpt_protect(chunks): %s", ckpt_strerror(rc));
	gt_begin(&o, &dev, &step);
	for (; step < o.steps; step++) {
		if (gt_point(step) == GPUCKPT_RESTORED)
			check_chunks(chunks, fresh, step);
		gt_report(&o, step);
		walk<<<1, 1, 0, s>>>(head, step, acc);
		CK_LAUNCH("walk");
		bump<<<gt_blocks(m), GT_BLOCK, 0, s>>>(chunks[step % NCHUNKS], m);
		CK_LAUNCH("bump");
		if (step % 16 == 15) {
			reverse<<<1, 1, 0, s>>>(head);
			CK_LAUNCH("reverse");
		}
		gt_delay(&o);
	}

	flatten<<<1, 1, 0, s>>>(head, values, ids, n);
	CK_LAUNCH("flatten");
	CK(cudaStreamSynchronize(s));
	host_values = (float *)malloc(n * sizeof(float));
	host_ids = (int *)malloc((n + 1) * sizeof(int));
	if (!host_values || !host_ids)
		gt_die("checksum: out of host memory");
	CK(cudaMemcpy(host_values, values, n * sizeof(float), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(host_ids, ids, (n + 1) * sizeof(int), cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(&last, acc, sizeof(last), cudaMemcpyDeviceToHost));
	check_list(host_ids, n);
	sum = gt_fnv1a(sum, host_values, n * sizeof(float));
	sum = gt_fnv1a(sum, host_ids, n * sizeof(int));
	sum = gt_fnv1a(sum, &last, sizeof(last));
	ckpt_unprotect("chunks");
	gt_done(&o, sum);

	free(host_ids);
	free(host_values);
	CK(cudaFree(ids));
	CK(cudaFree(values));
	CK(cudaFree(acc));
	CK(cudaFree(head));
	for (int c = 0; c < NCHUNKS; c++)
		CK(cudaFree(chunks[c]));
	CK(cudaStreamDestroy(s));
	return 0;
}
