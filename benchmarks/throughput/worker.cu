/*
 * throughput-worker - the process that holds the device state for the
 * throughput benchmark (benchmarks/throughput/main.c starts it; README.md).
 *
 *	throughput-worker MODE BYTES
 *
 * It allocates BYTES of device memory in 1 GiB allocations and, except when
 * restoring, fills every 64-bit word with a value of its allocation and index.
 * Modes:
 *	copy             pinned and pageable device<->host copies of the state
 *	gpuckpt-save     gpuckpt_request() + gpuckpt_point(): one checkpoint, timed
 *	gpuckpt-tables   a mostly static state, checkpointed three times: once
 *	                 (written the blocking way while the runtime pins host
 *	                 memory for snapshots), then with every chunk rewritten
 *	                 (a checkpoint that goes to the background: its pause is
 *	                 timed), then with 10 % of the chunks rewritten (an
 *	                 increment: its pause is timed; the controller measures
 *	                 what it wrote)
 *	gpuckpt-restore  the first gpuckpt_point() of a restart, timed (the load),
 *	                 and the time from the start of main to its end (the
 *	                 restart: CUDA set-up and the program's allocations, with
 *	                 the runtime's check of every checksum running meanwhile,
 *	                 then the load); then a check of every word against what
 *	                 the registered state says was written
 *	hold             prints READY, waits for VERIFY on stdin (meanwhile another
 *	                 process checkpoints and restores it through the driver),
 *	                 then checks every word
 *	start            the start of a program alone: from main to CUDA's context,
 *	                 and to its allocations made and cleared (what a restarted
 *	                 worker does before its first point); run natively, CUDA's
 *	                 own start, and with the runtime preloaded, its cost
 *	direct           a probe of writing the state without a copy by the CPU:
 *	                 TP_DIRECT_THREADS threads (8), each maps its share of a
 *	                 file in TP_DIRECT_DIR in windows of TP_DIRECT_WINDOW bytes
 *	                 (8 MiB), pins the mapping, copies into it from the device,
 *	                 hashes it, unpins and unmaps it; every phase timed
 * Results are lines "RESULT <name> <bytes> <seconds>" on stdout. Like the
 * Rodinia programs it is not linked against libgpuckpt: the gpuckpt modes run
 * with the runtime preloaded, the others without it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xxhash.h>

#include "bench.h"

#define CHUNK (1ull << 30)
#define STAGE_MAX (1ull << 30) /* host buffer for the copies */
#define REPS 3
#define MAGIC 0x7470636b70740001ull

/*
 * What the device memory holds, registered with the runtime so that a
 * restored worker knows what to check: every word is pattern(allocation,
 * index, generation), the generation `base` except in every `every`-th
 * region of `region` bytes (counted over the whole state), where it is
 * `changed` (0: none).
 */
struct state {
	uint64_t magic;
	uint64_t bytes;
	uint32_t base, changed, every;
	uint64_t region;
};

__host__ __device__ static inline uint64_t pattern(unsigned a, size_t i, unsigned gen)
{
	return bench_hash2(((uint64_t)gen << 32) | (a + 1), i);
}

__host__ __device__ static inline unsigned gen_of(const struct state *st, unsigned a, size_t i)
{
	uint64_t at = (uint64_t)a * CHUNK + (uint64_t)i * 8;

	return st->changed && (at / st->region) % st->every == 0 ? st->changed : st->base;
}

/* Words whose generation is `only` (0: every word) get their pattern. */
__global__ void tp_fill(uint64_t *p, size_t words, unsigned a, struct state st, unsigned only)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; i < words; i += stride) {
		unsigned g = gen_of(&st, a, i);

		if (!only || g == only)
			p[i] = pattern(a, i, g);
	}
}

__global__ void tp_check(const uint64_t *p, size_t words, unsigned a, struct state st,
			 unsigned long long *bad)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;
	unsigned long long n = 0;

	for (; i < words; i += stride)
		n += p[i] != pattern(a, i, gen_of(&st, a, i));
	if (n)
		atomicAdd(bad, n);
}

static void result(const char *name, uint64_t bytes, double secs)
{
	printf("RESULT %s %llu %.6f\n", name, (unsigned long long)bytes, secs);
	fflush(stdout);
}

static size_t nchunks(uint64_t bytes)
{
	return (size_t)((bytes + CHUNK - 1) / CHUNK);
}

static size_t chunk_len(uint64_t bytes, size_t c)
{
	uint64_t rest = bytes - (uint64_t)c * CHUNK;

	return (size_t)(rest < CHUNK ? rest : CHUNK);
}

static uint64_t **alloc_state(uint64_t bytes)
{
	size_t n = nchunks(bytes), c, free_b, total;
	uint64_t **p = (uint64_t **)calloc(n, sizeof(*p));

	if (!p)
		bench_die("out of host memory");
	CK(cudaMemGetInfo(&free_b, &total));
	if (free_b < bytes + (256ull << 20))
		bench_die("%llu bytes of device state do not fit: %zu of %zu bytes free",
			  (unsigned long long)bytes, free_b, total);
	for (c = 0; c < n; c++)
		CK(cudaMalloc((void **)&p[c], chunk_len(bytes, c)));
	return p;
}

/* Write what st says into the words of generation `only` (0: all). */
static void fill_state(uint64_t **p, uint64_t bytes, const struct state *st, unsigned only)
{
	size_t c;

	for (c = 0; c < nchunks(bytes); c++) {
		tp_fill<<<4096, 256>>>(p[c], chunk_len(bytes, c) / 8, (unsigned)c, *st, only);
		CK_LAUNCH("tp_fill");
	}
	CK(cudaDeviceSynchronize());
}

static unsigned long long check_state(uint64_t **p, uint64_t bytes, const struct state *st)
{
	unsigned long long *bad_d, bad = 0;
	size_t c;

	CK(cudaMalloc((void **)&bad_d, sizeof(*bad_d)));
	CK(cudaMemset(bad_d, 0, sizeof(*bad_d)));
	for (c = 0; c < nchunks(bytes); c++) {
		tp_check<<<4096, 256>>>(p[c], chunk_len(bytes, c) / 8, (unsigned)c, *st, bad_d);
		CK_LAUNCH("tp_check");
	}
	CK(cudaMemcpy(&bad, bad_d, sizeof(bad), cudaMemcpyDeviceToHost));
	CK(cudaFree(bad_d));
	return bad;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of REPS passes over the whole state through one host buffer. */
static double time_copies(uint64_t **p, uint64_t bytes, void *host, size_t host_len, int to_host,
			  cudaStream_t s)
{
	double t[REPS], t0;
	size_t c, off, len;
	int r;

	for (r = 0; r < REPS; r++) {
		t0 = bench_now();
		for (c = 0; c < nchunks(bytes); c++) {
			for (off = 0; off < chunk_len(bytes, c); off += len) {
				char *dev = (char *)p[c] + off;

				len = chunk_len(bytes, c) - off;
				len = len < host_len ? len : host_len;
				if (to_host)
					CK(cudaMemcpyAsync(host, dev, len, cudaMemcpyDeviceToHost,
							   s));
				else
					CK(cudaMemcpyAsync(dev, host, len, cudaMemcpyHostToDevice,
							   s));
			}
		}
		CK(cudaStreamSynchronize(s));
		t[r] = bench_now() - t0;
	}
	qsort(t, REPS, sizeof(double), by_value);
	return t[REPS / 2];
}

static void mode_copy(uint64_t **p, uint64_t bytes)
{
	size_t len = (size_t)(bytes < STAGE_MAX ? bytes : STAGE_MAX);
	void *pinned, *pageable = malloc(len);
	cudaStream_t s;

	if (!pageable)
		bench_die("out of host memory for a %zu-byte buffer", len);
	memset(pageable, 1, len);
	CK(cudaMallocHost(&pinned, len));
	CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
	result("d2h_pinned", bytes, time_copies(p, bytes, pinned, len, 1, s));
	result("h2d_pinned", bytes, time_copies(p, bytes, pinned, len, 0, s));
	result("d2h_pageable", bytes, time_copies(p, bytes, pageable, len, 1, s));
	result("h2d_pageable", bytes, time_copies(p, bytes, pageable, len, 0, s));
	CK(cudaStreamDestroy(s));
	CK(cudaFreeHost(pinned));
	free(pageable);
}

/*
 * Ask for a checkpoint until one is taken: while the previous one is still
 * being written (or memory pinned for it) the runtime answers GPUCKPT_NOTHING
 * and takes it at a later point. The pause of the point that took it.
 */
static double checkpoint_when_ready(void)
{
	for (int tries = 0; tries < 60000; tries++) {
		double t0;
		int rc = gpuckpt_request();

		if (rc < 0)
			bench_die("gpuckpt_request failed: %s", bench_strerror(rc));
		t0 = bench_now();
		rc = gpuckpt_point(1);
		if (rc == GPUCKPT_SAVED)
			return bench_now() - t0;
		if (rc < 0)
			bench_die("gpuckpt_point failed: %s", bench_strerror(rc));
		usleep(10000);
	}
	bench_die("no checkpoint was taken in 10 minutes of asking");
	return -1;
}

/*
 * The checkpoint a program that has been running takes: it has passed a
 * checkpoint point before (where the runtime pins its copy threads' staging
 * buffers in the background, once), so the timed one is not its first.
 */
static void mode_save(uint64_t bytes, struct state *st)
{
	int rc = gpuckpt_point(0);

	if (rc < 0)
		bench_die("gpuckpt_point failed: %s (is libgpuckpt.so preloaded, GPUCKPT_DIR set?)",
			  bench_strerror(rc));
	result("gpuckpt_checkpoint", bytes, checkpoint_when_ready());
	(void)st;
}

static uint64_t chunk_size_setting(void)
{
	const char *v = getenv("GPUCKPT_CHUNK_SIZE");
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return 8ull << 20;
	n = strtoull(v, &end, 10);
	if (*end == 'M' || *end == 'm')
		n <<= 20;
	else if (*end == 'K' || *end == 'k')
		n <<= 10;
	return n ? n : 8ull << 20;
}

static void mode_tables(uint64_t **p, uint64_t bytes, struct state *st)
{
	double pause;

	/* 1: written the blocking way; the runtime pins memory meanwhile. */
	checkpoint_when_ready();
	/* 2: every chunk changed, in the background. */
	st->base = 2;
	fill_state(p, bytes, st, 0);
	pause = checkpoint_when_ready();
	result("gpuckpt_async_pause", bytes, pause);
	/* 3: a tenth of the chunks (of the runtime's chunk size) changed. */
	st->changed = 3;
	st->every = 10;
	st->region = chunk_size_setting();
	fill_state(p, bytes, st, 3);
	pause = checkpoint_when_ready();
	result("gpuckpt_incr_pause", bytes, pause);
	/* Returning from main waits for the write of 3 (the runtime's atexit). */
}

static double t_main;	 /* when main began */
static double t_context; /* when CUDA's context was there (cudaSetDevice returned) */
static double t_setup;	 /* when the allocations were made and cleared */

static void mode_restore(uint64_t **p, uint64_t bytes, struct state *st)
{
	unsigned long long bad;
	double t0;
	int rc;

	t0 = bench_now();
	rc = gpuckpt_point(0);
	if (rc < 0)
		bench_die("gpuckpt_point failed: %s", bench_strerror(rc));
	if (rc != GPUCKPT_RESTORED)
		bench_die("gpuckpt_point returned %d, not GPUCKPT_RESTORED: nothing was restored",
			  rc);
	result("gpuckpt_restore", bytes, bench_now() - t0);
	result("gpuckpt_restart", bytes, bench_now() - t_main);
	/* What the restart is made of: to CUDA's context, to the end of the
	 * program's allocations (the runtime recreates the checkpoint's there,
	 * after waiting for its check if it is still running). */
	result("gpuckpt_restart_context", 0, t_context - t_main);
	result("gpuckpt_restart_setup", 0, t_setup - t_main);
	if (st->magic != MAGIC || st->bytes != bytes)
		bench_die("restore: the registered state came back wrong (magic %#llx, %llu bytes)",
			  (unsigned long long)st->magic, (unsigned long long)st->bytes);
	bad = check_state(p, bytes, st);
	result("verify_mismatches", bad, 0.0);
	if (bad)
		bench_die("restore: %llu of %llu words differ from what was saved", bad,
			  (unsigned long long)(bytes / 8));
}

static const struct state st_hold = {MAGIC, 0, 1, 0, 1, 1};

static void mode_hold(uint64_t **p, uint64_t bytes)
{
	unsigned long long bad;
	char line[64];

	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		bench_die("hold: stdin closed before VERIFY");
	line[strcspn(line, "\n")] = 0;
	if (strcmp(line, "VERIFY"))
		bench_die("hold: expected VERIFY, got '%s'", line);
	bad = check_state(p, bytes, &st_hold);
	result("verify_mismatches", bad, 0.0);
	if (bad)
		bench_die("hold: %llu of %llu words changed across the driver's checkpoint", bad,
			  (unsigned long long)(bytes / 8));
}

/* ---- direct: DMA into the pages of a tmpfs file (a probe) ---- */

struct direct_job {
	uint64_t **p;
	uint64_t bytes, from, len; /* this thread's share of the state */
	uint64_t window;
	int fd;
	double map, reg, copy, hash, unreg, unmap; /* seconds in each phase */
	uint64_t hashes;			   /* folded, so the hash is not optimised away */
	unsigned long long bad;			   /* words found wrong in the file */
	char err[256];
};

static unsigned env_uint(const char *name, unsigned dflt)
{
	const char *v = getenv(name);

	return v && atoi(v) > 0 ? (unsigned)atoi(v) : dflt;
}

static void *direct_thread(void *arg)
{
	struct direct_job *j = (struct direct_job *)arg;
	cudaStream_t s;

	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
		snprintf(j->err, sizeof(j->err), "cudaStreamCreate failed");
		return NULL;
	}
	for (uint64_t o = 0; o < j->len && !j->err[0];) {
		uint64_t at = j->from + o, c = at / CHUNK, in = at % CHUNK;
		uint64_t w = j->len - o < j->window ? j->len - o : j->window;
		const uint64_t *word;
		cudaError_t e;
		double t = bench_now(), t1;
		char *m;

		if (w > CHUNK - in)
			w = CHUNK - in; /* within one allocation */
		m = (char *)mmap(NULL, w, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, j->fd,
				 (off_t)o);
		t1 = bench_now();
		j->map += t1 - t;
		if (m == MAP_FAILED) {
			snprintf(j->err, sizeof(j->err), "mmap: %s", strerror(errno));
			break;
		}
		e = cudaHostRegister(m, w, cudaHostRegisterDefault);
		t = bench_now();
		j->reg += t - t1;
		if (e != cudaSuccess) {
			snprintf(j->err, sizeof(j->err), "cudaHostRegister of a mapping of a tmpfs file: %s",
				 cudaGetErrorString(e));
			munmap(m, w);
			break;
		}
		e = cudaMemcpyAsync(m, (char *)j->p[c] + in, w, cudaMemcpyDeviceToHost, s);
		if (e == cudaSuccess)
			e = cudaStreamSynchronize(s);
		t1 = bench_now();
		j->copy += t1 - t;
		if (e != cudaSuccess)
			snprintf(j->err, sizeof(j->err), "copy: %s", cudaGetErrorString(e));
		j->hashes ^= XXH3_64bits(m, w);
		t = bench_now();
		j->hash += t - t1;
		/* The first and last word of the window: what the device holds. */
		word = (const uint64_t *)m;
		j->bad += word[0] != pattern((unsigned)c, in / 8, 1);
		j->bad += word[w / 8 - 1] != pattern((unsigned)c, (in + w) / 8 - 1, 1);
		t = bench_now();
		cudaHostUnregister(m);
		t1 = bench_now();
		j->unreg += t1 - t;
		munmap(m, w);
		j->unmap += bench_now() - t1;
		o += w;
	}
	cudaStreamDestroy(s);
	return NULL;
}

/*
 * Whether the copy a write() makes can be avoided: the device's copy engine
 * writes straight into the pages of the checkpoint's files. What it costs
 * per phase (seconds per thread, the mean) says where the time would go.
 */
static void mode_direct(uint64_t **p, uint64_t bytes)
{
	const char *dir = getenv("TP_DIRECT_DIR");
	unsigned n = env_uint("TP_DIRECT_THREADS", 8);
	uint64_t window = (uint64_t)env_uint("TP_DIRECT_WINDOW", 8u << 20) & ~4095ull;
	uint64_t per = bytes / n / 4096 * 4096, hashes = 0;
	struct direct_job *jobs = (struct direct_job *)calloc(n, sizeof(*jobs));
	pthread_t *tid = (pthread_t *)calloc(n, sizeof(*tid));
	double t0, wall, sum[6] = {0};
	unsigned long long bad = 0;
	char path[4096];

	if (!dir || !jobs || !tid || !window)
		bench_die("direct: TP_DIRECT_DIR must name a folder (and memory must suffice)");
	for (unsigned i = 0; i < n; i++) {
		struct direct_job *j = &jobs[i];

		j->p = p;
		j->bytes = bytes;
		j->from = per * i;
		j->len = i == n - 1 ? bytes - per * i : per;
		j->window = window;
		snprintf(path, sizeof(path), "%s/direct.%u", dir, i);
		j->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (j->fd < 0 || ftruncate(j->fd, (off_t)j->len))
			bench_die("direct: %s: %s", path, strerror(errno));
	}
	t0 = bench_now();
	for (unsigned i = 0; i < n; i++)
		if (pthread_create(&tid[i], NULL, direct_thread, &jobs[i]))
			bench_die("direct: cannot start a thread");
	for (unsigned i = 0; i < n; i++)
		pthread_join(tid[i], NULL);
	wall = bench_now() - t0;
	for (unsigned i = 0; i < n; i++) {
		struct direct_job *j = &jobs[i];

		if (j->err[0])
			bench_die("direct: thread %u: %s", i, j->err);
		sum[0] += j->map, sum[1] += j->reg, sum[2] += j->copy;
		sum[3] += j->hash, sum[4] += j->unreg, sum[5] += j->unmap;
		hashes ^= j->hashes;
		bad += j->bad;
		close(j->fd);
	}
	result("direct_dma", bytes, wall);
	result("direct_map_populate", bytes, sum[0] / n);
	result("direct_register", bytes, sum[1] / n);
	result("direct_copy", bytes, sum[2] / n);
	result("direct_hash", bytes, sum[3] / n);
	result("direct_unregister", bytes, sum[4] / n);
	result("direct_unmap", bytes, sum[5] / n);
	fprintf(stderr, "throughput-worker: direct: %u threads, windows of %llu bytes, hashes %016llx\n",
		n, (unsigned long long)window, (unsigned long long)hashes);
	result("verify_mismatches", bad, 0.0);
	free(jobs);
	free(tid);
}

int main(int argc, char **argv)
{
	static const char usage[] =
	    "usage: throughput-worker copy|gpuckpt-save|gpuckpt-tables|gpuckpt-restore|hold|start|"
	    "direct BYTES\n"
	    "(started by the throughput benchmark; see benchmarks/README.md)\n";
	struct state st = {0, 0, 1, 0, 1, 1};
	const char *mode;
	uint64_t bytes, **p;
	long long b;

	t_main = bench_now();
	bench_start("throughput-worker", &argc, argv, usage);
	if (argc != 3)
		bench_die("expected a mode and a size in bytes (see --help)");
	mode = argv[1];
	b = bench_parse_long(argv[2], "BYTES", 8, 1L << 46);
	if (b % 8)
		bench_die("BYTES %lld: must be a multiple of 8", b);
	bytes = (uint64_t)b;
	if (strcmp(mode, "copy") && strcmp(mode, "gpuckpt-save") && strcmp(mode, "gpuckpt-tables") &&
	    strcmp(mode, "gpuckpt-restore") && strcmp(mode, "hold") && strcmp(mode, "start") &&
	    strcmp(mode, "direct"))
		bench_die("unknown mode '%s' (see --help)", mode);
	/* Not linked against libgpuckpt (bench.h): the gpuckpt modes need it preloaded. */
	if (!strncmp(mode, "gpuckpt", 7) && (!bench_runtime_present() || !gpuckpt_request))
		bench_die("%s: the gpuckpt runtime is not loaded (LD_PRELOAD=libgpuckpt.so)",
			  mode);
	CK(cudaSetDevice(0));
	t_context = bench_now();
	p = alloc_state(bytes);
	/* After the allocations, as a program would: the runtime's check of the
	 * checkpoint runs meanwhile. */
	if (!strcmp(mode, "gpuckpt-restore") && gpuckpt_restarting(NULL) != 1)
		bench_die("gpuckpt-restore: the runtime reports no checkpoint to restore "
			  "(GPUCKPT_RESTORE set? runtime preloaded?)");
	if (strcmp(mode, "gpuckpt-restore") && strcmp(mode, "start")) {
		st.magic = MAGIC;
		st.bytes = bytes;
		fill_state(p, bytes, &st, 0);
	} else {
		/* Stale contents must not pass the check (and a program's start
		 * clears its memory, as the restarted worker does). */
		for (size_t c = 0; c < nchunks(bytes); c++)
			CK(cudaMemset(p[c], 0, chunk_len(bytes, c)));
	}
	if (!strncmp(mode, "gpuckpt", 7))
		bench_protect("tp-state", &st, sizeof(st));
	CK(cudaDeviceSynchronize());
	t_setup = bench_now();

	if (!strcmp(mode, "start")) {
		result("cuda_start_context", 0, t_context - t_main);
		result("cuda_start", 0, t_setup - t_main);
	} else if (!strcmp(mode, "direct"))
		mode_direct(p, bytes);
	else if (!strcmp(mode, "copy"))
		mode_copy(p, bytes);
	else if (!strcmp(mode, "gpuckpt-save"))
		mode_save(bytes, &st);
	else if (!strcmp(mode, "gpuckpt-tables"))
		mode_tables(p, bytes, &st);
	else if (!strcmp(mode, "gpuckpt-restore"))
		mode_restore(p, bytes, &st);
	else
		mode_hold(p, bytes);

	for (size_t c = 0; c < nchunks(bytes); c++)
		CK(cudaFree(p[c]));
	free(p);
	return 0;
}
