/*
 * transparent-worker - an unmodified CUDA program for the transparent-mode
 * benchmark (README.md): it knows nothing of gpuckpt (no header, no API, not
 * linked against it), holds device state and proves after a restore that the
 * state came back.
 *
 *	transparent-worker GIB GO_FILE
 *
 * Allocates GIB GiB of device memory in 1 GiB allocations, fills every 64-bit
 * word with a value of its allocation and index, and prints
 *	transparent-worker: filled N bytes checksum=0x... in S s
 * Then it waits, polling every 10 ms for GO_FILE to exist (meanwhile it is
 * checkpointed and killed; a restored copy goes on polling). When GO_FILE
 * exists it checks every word against the pattern, hashes the state again and
 * prints
 *	transparent-worker: verified N bytes: M words differ, checksum=0x...
 * also into GO_FILE.done (a file created then, not one held open across the
 * checkpoint: CRIU restores open files only at the size they had), and exits
 * 0 when nothing differs, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>

#define CHUNK (1ull << 30)
#define LANES (256 * 256)
#define FNV_PRIME 0x100000001b3ull

#define CK(call) check((call), #call, __LINE__)

static void check(cudaError_t err, const char *what, int line)
{
	if (err == cudaSuccess)
		return;
	fprintf(stderr, "transparent-worker: line %d: %s failed: %s: %s\n", line, what,
		cudaGetErrorName(err), cudaGetErrorString(err));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

__host__ __device__ static inline uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

__device__ static inline uint64_t pattern(unsigned chunk, size_t i)
{
	return mix64(((uint64_t)chunk + 1) * 0x9e3779b97f4a7c15ull + mix64(i));
}

__global__ void fill(uint64_t *p, size_t words, unsigned chunk)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;

	for (; i < words; i += (size_t)gridDim.x * blockDim.x)
		p[i] = pattern(chunk, i);
}

__global__ void verify(const uint64_t *p, size_t words, unsigned chunk, unsigned long long *bad)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	unsigned long long n = 0;

	for (; i < words; i += (size_t)gridDim.x * blockDim.x)
		n += p[i] != pattern(chunk, i);
	if (n)
		atomicAdd(bad, n);
}

/* Each of a fixed number of lanes hashes an interleaved share: the result does not depend on the GPU. */
__global__ void hash_lanes(const uint64_t *p, size_t words, uint64_t *lanes)
{
	size_t lane = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	uint64_t h = lanes[lane];

	for (size_t i = lane; i < words; i += LANES) {
		h ^= p[i];
		h *= FNV_PRIME;
		h ^= h >> 29;
	}
	lanes[lane] = h;
}

static uint64_t checksum(uint64_t **chunks, size_t n, uint64_t total, uint64_t *lanes_dev,
			 uint64_t *lanes)
{
	uint64_t h = 0xcbf29ce484222325ull ^ total;

	for (size_t l = 0; l < LANES; l++)
		lanes[l] = l;
	CK(cudaMemcpy(lanes_dev, lanes, LANES * sizeof(uint64_t), cudaMemcpyHostToDevice));
	for (size_t c = 0; c < n; c++) {
		uint64_t len = total - c * CHUNK < CHUNK ? total - c * CHUNK : CHUNK;

		hash_lanes<<<256, 256>>>(chunks[c], len / 8, lanes_dev);
		CK(cudaGetLastError());
	}
	CK(cudaMemcpy(lanes, lanes_dev, LANES * sizeof(uint64_t), cudaMemcpyDeviceToHost));
	for (size_t l = 0; l < LANES; l++) {
		h ^= lanes[l];
		h *= FNV_PRIME;
		h ^= h >> 29;
	}
	return h;
}

int main(int argc, char **argv)
{
	unsigned long long *bad_dev, bad = 0;
	uint64_t total, sum, *lanes_dev, *lanes, **chunks;
	char *end, done[4096], line[256];
	const char *go;
	size_t n;
	double t0;
	long gib;
	int fd;

	if (argc != 3 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fprintf(stderr, "usage: transparent-worker GIB GO_FILE (see benchmarks/transparent/README.md)\n");
		return argc == 2 ? 0 : 1;
	}
	errno = 0;
	gib = strtol(argv[1], &end, 10);
	if (errno || *end || gib < 1 || gib > 1024) {
		fprintf(stderr, "transparent-worker: GIB '%s': expected 1 to 1024\n", argv[1]);
		return 1;
	}
	go = argv[2];
	if (snprintf(done, sizeof(done), "%s.done", go) >= (int)sizeof(done)) {
		fprintf(stderr, "transparent-worker: GO_FILE: the path is too long\n");
		return 1;
	}
	total = (uint64_t)gib * CHUNK;
	n = (size_t)gib;

	t0 = now();
	CK(cudaSetDevice(0));
	chunks = (uint64_t **)calloc(n, sizeof(*chunks));
	lanes = (uint64_t *)malloc(LANES * sizeof(uint64_t));
	if (!chunks || !lanes) {
		fprintf(stderr, "transparent-worker: out of host memory\n");
		return 1;
	}
	CK(cudaMalloc((void **)&lanes_dev, LANES * sizeof(uint64_t)));
	CK(cudaMalloc((void **)&bad_dev, sizeof(*bad_dev)));
	for (size_t c = 0; c < n; c++) {
		CK(cudaMalloc((void **)&chunks[c], CHUNK));
		fill<<<1024, 256>>>(chunks[c], CHUNK / 8, (unsigned)c);
		CK(cudaGetLastError());
	}
	sum = checksum(chunks, n, total, lanes_dev, lanes);
	printf("transparent-worker: filled %llu bytes checksum=0x%016llx in %.3f s\n",
	       (unsigned long long)total, (unsigned long long)sum, now() - t0);
	fflush(stdout);

	/* Sleeping, not spinning on the GPU: the checkpoint finds the device idle. */
	while (access(go, F_OK))
		usleep(10000);

	CK(cudaMemset(bad_dev, 0, sizeof(*bad_dev)));
	for (size_t c = 0; c < n; c++) {
		verify<<<1024, 256>>>(chunks[c], CHUNK / 8, (unsigned)c, bad_dev);
		CK(cudaGetLastError());
	}
	CK(cudaMemcpy(&bad, bad_dev, sizeof(bad), cudaMemcpyDeviceToHost));
	sum = checksum(chunks, n, total, lanes_dev, lanes);
	snprintf(line, sizeof(line), "transparent-worker: verified %llu bytes: %llu words differ, checksum=0x%016llx\n",
		 (unsigned long long)total, bad, (unsigned long long)sum);
	fputs(line, stdout);
	fflush(stdout);
	fd = open(done, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, line, strlen(line)) < 0)
			fprintf(stderr, "transparent-worker: %s: %s\n", done, strerror(errno));
		close(fd);
	}
	for (size_t c = 0; c < n; c++)
		CK(cudaFree(chunks[c]));
	return bad ? 1 : 0;
}
