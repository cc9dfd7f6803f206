/*
 * unaware.cu - a CUDA program that knows nothing of gpuckpt: no gpuckpt.h, no
 * checkpoint points, plain CUDA runtime API. gpuckpt checkpoints it only in
 * transparent mode (runtime/shepherd/README.md), and the tests compare its
 * output after a checkpoint and restore with that of an uninterrupted run.
 *
 *	unaware [--steps N] [--size N] [--delay-ms D] [--out FILE] [--report-every K]
 *
 * What a transparent checkpoint must carry: device memory written by kernels on
 * three streams (and by cuBLAS when it was found at build time: HAVE_CUBLAS), a
 * host thread that works in parallel with the GPU, and an output file the
 * program keeps open and appends a line to every step (its offset is state
 * too). Every operation is deterministic, so an interrupted and restored run
 * prints exactly what an uninterrupted one prints.
 */
#include <cuda_runtime.h>
#ifdef HAVE_CUBLAS
#include <cublas_v2.h>
#endif

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NSTREAMS 3
#define SAMPLE 256

#define CHECK(call)                                                                                \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "unaware: %s failed: %s (%s)\n", #call,                   \
				cudaGetErrorName(e_), cudaGetErrorString(e_));                     \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

/* One slice per stream: x = x * a + b, a few times, with a value that depends on the step. */
__global__ void relax(float *x, size_t n, int step)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (i >= n)
		return;
	float v = x[i];
	for (int k = 0; k < 8; k++)
		v = v * 0.999f + 0.001f * (float)((i + (size_t)step * 7 + k) % 101);
	x[i] = v;
}

#ifndef HAVE_CUBLAS
__global__ void axpy(float a, const float *x, float *y, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = a * x[i] + y[i];
}
#endif

/* The host thread: a hash chain advanced by each step, while the GPU works. */
struct host_work {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int posted, done, quit;
	uint64_t acc;
};

static void *host_thread(void *arg)
{
	struct host_work *w = (struct host_work *)arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (w->done == w->posted && !w->quit)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->quit)
			break;
		int step = w->done + 1;
		uint64_t a = w->acc;

		pthread_mutex_unlock(&w->lock);
		for (int k = 0; k < 200000; k++)
			a = a * 6364136223846793005ULL + (uint64_t)step * 1442695040888963407ULL + k;
		pthread_mutex_lock(&w->lock);
		w->acc = a;
		w->done = step;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static uint64_t fnv1a(const void *p, size_t len, uint64_t h)
{
	const unsigned char *b = (const unsigned char *)p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (ms > 0 && nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	int steps = 200, delay_ms = 20, report = 20;
	size_t n = 1 << 22;
	const char *out_path = "unaware.out";

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc)
			n = (size_t)atol(argv[++i]);
		else if (strcmp(argv[i], "--delay-ms") == 0 && i + 1 < argc)
			delay_ms = atoi(argv[++i]);
		else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
			out_path = argv[++i];
		else if (strcmp(argv[i], "--report-every") == 0 && i + 1 < argc)
			report = atoi(argv[++i]);
		else {
			fprintf(stderr,
				"usage: unaware [--steps N] [--size N] [--delay-ms D] [--out FILE] "
				"[--report-every K]\n");
			return 2;
		}
	}
	if (n < NSTREAMS * SAMPLE || steps < 1 || report < 1) {
		fprintf(stderr, "unaware: --size must be at least %d, --steps and --report-every 1\n",
			NSTREAMS * SAMPLE);
		return 2;
	}

	FILE *out = fopen(out_path, "w");
	if (!out) {
		perror(out_path);
		return 1;
	}

	cudaStream_t st[NSTREAMS];
	float *x, *y, *host;
	size_t slice = n / NSTREAMS;

	for (int s = 0; s < NSTREAMS; s++)
		CHECK(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
	CHECK(cudaMalloc(&x, n * sizeof(float)));
	CHECK(cudaMalloc(&y, n * sizeof(float)));
	CHECK(cudaMallocHost(&host, n * sizeof(float)));
	for (size_t i = 0; i < n; i++)
		host[i] = (float)(i % 1000) / 1000.0f;
	CHECK(cudaMemcpy(x, host, n * sizeof(float), cudaMemcpyHostToDevice));
	CHECK(cudaMemset(y, 0, n * sizeof(float)));
#ifdef HAVE_CUBLAS
	cublasHandle_t blas;

	if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetStream(blas, st[0]) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "unaware: cublasCreate failed\n");
		return 1;
	}
#endif

	struct host_work w;
	pthread_t t;

	memset(&w, 0, sizeof(w));
	pthread_mutex_init(&w.lock, NULL);
	pthread_cond_init(&w.cond, NULL);
	w.acc = 1469598103934665603ULL;
	pthread_create(&t, NULL, host_thread, &w);

	for (int step = 1; step <= steps; step++) {
		unsigned threads = 256, blocks = (unsigned)((slice + threads - 1) / threads);
		float sample[SAMPLE];
		float a = 0.5f / (float)step;

		pthread_mutex_lock(&w.lock);
		w.posted = step;
		pthread_cond_broadcast(&w.cond);
		pthread_mutex_unlock(&w.lock);

		for (int s = 0; s < NSTREAMS; s++)
			relax<<<blocks, threads, 0, st[s]>>>(x + s * slice, slice, step);
		CHECK(cudaGetLastError());
		/* y += a * x over the whole array, on stream 0 once the others are done. */
		for (int s = 1; s < NSTREAMS; s++)
			CHECK(cudaStreamSynchronize(st[s]));
#ifdef HAVE_CUBLAS
		if (cublasSaxpy(blas, (int)(slice * NSTREAMS), &a, x, 1, y, 1) != CUBLAS_STATUS_SUCCESS) {
			fprintf(stderr, "unaware: cublasSaxpy failed\n");
			return 1;
		}
#else
		axpy<<<(unsigned)((slice * NSTREAMS + 255) / 256), 256, 0, st[0]>>>(a, x, y,
										     slice * NSTREAMS);
		CHECK(cudaGetLastError());
#endif
		CHECK(cudaMemcpyAsync(sample, y + (size_t)step % (slice * NSTREAMS - SAMPLE),
				      sizeof(sample), cudaMemcpyDeviceToHost, st[0]));
		CHECK(cudaStreamSynchronize(st[0]));

		pthread_mutex_lock(&w.lock);
		while (w.done < step)
			pthread_cond_wait(&w.cond, &w.lock);
		uint64_t acc = w.acc;
		pthread_mutex_unlock(&w.lock);

		fprintf(out, "step %d gpu=%016llx host=%016llx\n", step,
			(unsigned long long)fnv1a(sample, sizeof(sample), 1469598103934665603ULL),
			(unsigned long long)acc);
		fflush(out);
		if (step % report == 0) {
			printf("unaware: step %d\n", step);
			fflush(stdout);
		}
		sleep_ms(delay_ms);
	}

	pthread_mutex_lock(&w.lock);
	w.quit = 1;
	pthread_cond_broadcast(&w.cond);
	pthread_mutex_unlock(&w.lock);
	pthread_join(t, NULL);

	CHECK(cudaMemcpy(host, y, n * sizeof(float), cudaMemcpyDeviceToHost));
	uint64_t sum = fnv1a(host, n * sizeof(float), 1469598103934665603ULL);
	CHECK(cudaMemcpy(host, x, n * sizeof(float), cudaMemcpyDeviceToHost));
	sum = fnv1a(host, n * sizeof(float), sum);
	fprintf(out, "done steps=%d checksum=0x%016llx\n", steps, (unsigned long long)sum);
	fclose(out);
	printf("unaware: done: steps=%d checksum=0x%016llx\n", steps, (unsigned long long)sum);
#ifdef HAVE_CUBLAS
	cublasDestroy(blas);
#endif
	cudaFreeHost(host);
	cudaFree(x);
	cudaFree(y);
	return 0;
}
