/*
 * gpu-capture.cu - kernels captured into CUDA graphs on a worker thread, as
 * XLA's command buffers are, for tests/gpu/capture.sh: checkpoints asked for
 * while a capture is open must not invalidate it. The stand-in's version is
 * tests/runtime/prog-capture.c (same options, same output, same kernel).
 * Not linked against libgpuckpt: the main thread only offers checkpoint
 * points, bound weakly (gpuckpt_optional.h).
 *
 *   gpu-capture [--steps S] [--launches K] [--pause-ms P] [--elements N]
 *               [--mode global|thread|relaxed]
 *
 * The worker, for each of S steps: cudaStreamBeginCapture (the mode given)
 * on a non-blocking stream, add_step launched K times into it with v = step
 * * K + k + 1 and a host pause of P ms after each launch, cudaStreamEndCapture,
 * cudaGraphInstantiate, cudaGraphLaunch, cudaStreamSynchronize. A failing call
 * prints "gpu-capture: CALL: step S: ERROR_NAME" and ends the program with
 * status 1 (an invalidated capture: cudaErrorStreamCaptureInvalidated at
 * cudaStreamEndCapture). It prints "capture begun: step S t=T" and "capture
 * ended: step S t=T" (CLOCK_MONOTONIC seconds). The main thread reaches a
 * checkpoint point before "ready" and then every millisecond until the
 * worker is done, so a checkpoint asked for by a signal is taken whatever
 * the worker is doing. At the end: "done: checksum=0x... expected=0x..."
 * (FNV-1a of the buffer; the expected one computed on the host).
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuckpt_optional.h"

__global__ void add_step(uint32_t *buf, uint32_t v, uint32_t n)
{
	uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		buf[i] += v * (i % 13 + 1);
}

struct run {
	uint32_t *buf;
	uint32_t n;
	long steps, launches, pause_ms;
	cudaStreamCaptureMode mode;
	long step; /* the worker's, for the checkpoint points (atomic) */
	int finished;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	if (ms > 0)
		nanosleep(&ts, NULL);
}

static void check(cudaError_t e, const char *call, long step)
{
	if (e == cudaSuccess)
		return;
	printf("gpu-capture: %s: step %ld: %s\n", call, step, cudaGetErrorName(e));
	fflush(stdout);
	exit(1);
}

static uint32_t value_of(long step, long k, long launches)
{
	return (uint32_t)(step * launches + k + 1);
}

static void *worker(void *arg)
{
	struct run *r = (struct run *)arg;
	unsigned blocks = (r->n + 255) / 256;
	cudaStream_t s;

	check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", -1);
	for (long step = 0; step < r->steps; step++) {
		cudaGraph_t g = NULL;
		cudaGraphExec_t x = NULL;

		__atomic_store_n(&r->step, step, __ATOMIC_RELAXED);
		check(cudaStreamBeginCapture(s, r->mode), "cudaStreamBeginCapture", step);
		printf("capture begun: step %ld t=%.6f\n", step, now_s());
		fflush(stdout);
		for (long k = 0; k < r->launches; k++) {
			add_step<<<blocks, 256, 0, s>>>(r->buf, value_of(step, k, r->launches), r->n);
			check(cudaGetLastError(), "add_step<<<>>>", step);
			sleep_ms(r->pause_ms);
		}
		check(cudaStreamEndCapture(s, &g), "cudaStreamEndCapture", step);
		printf("capture ended: step %ld t=%.6f\n", step, now_s());
		fflush(stdout);
		check(cudaGraphInstantiate(&x, g, 0), "cudaGraphInstantiate", step);
		check(cudaGraphLaunch(x, s), "cudaGraphLaunch", step);
		check(cudaStreamSynchronize(s), "cudaStreamSynchronize", step);
		check(cudaGraphExecDestroy(x), "cudaGraphExecDestroy", step);
		check(cudaGraphDestroy(g), "cudaGraphDestroy", step);
	}
	check(cudaStreamDestroy(s), "cudaStreamDestroy", -1);
	__atomic_store_n(&r->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static uint64_t fnv1a(const uint32_t *v, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 4; b++) {
			h ^= (v[i] >> (8 * b)) & 0xff;
			h *= 0x100000001b3ULL;
		}
	return h;
}

int main(int argc, char **argv)
{
	struct run r;
	uint32_t *host, *want;
	pthread_t t;

	memset(&r, 0, sizeof(r));
	r.n = 1 << 20;
	r.steps = 30;
	r.launches = 8;
	r.pause_ms = 10;
	r.mode = cudaStreamCaptureModeGlobal;
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			fprintf(stderr, "gpu-capture: %s: needs a value\n", o);
			return 2;
		}
		i++;
		if (!strcmp(o, "--steps")) {
			r.steps = atol(v);
		} else if (!strcmp(o, "--launches")) {
			r.launches = atol(v);
		} else if (!strcmp(o, "--pause-ms")) {
			r.pause_ms = atol(v);
		} else if (!strcmp(o, "--elements")) {
			r.n = (uint32_t)atol(v);
		} else if (!strcmp(o, "--mode")) {
			if (!strcmp(v, "global"))
				r.mode = cudaStreamCaptureModeGlobal;
			else if (!strcmp(v, "thread"))
				r.mode = cudaStreamCaptureModeThreadLocal;
			else if (!strcmp(v, "relaxed"))
				r.mode = cudaStreamCaptureModeRelaxed;
			else {
				fprintf(stderr, "gpu-capture: --mode %s: global, thread or relaxed\n", v);
				return 2;
			}
		} else {
			fprintf(stderr, "gpu-capture: %s: unknown option\n", o);
			return 2;
		}
	}
	if (r.steps < 1 || r.launches < 1 || r.n < 1) {
		fprintf(stderr, "gpu-capture: steps, launches and elements must be > 0\n");
		return 2;
	}
	host = (uint32_t *)calloc(r.n, sizeof(*host));
	want = (uint32_t *)calloc(r.n, sizeof(*want));
	if (!host || !want)
		return 1;
	check(cudaSetDevice(0), "cudaSetDevice", -1);
	check(cudaMalloc(&r.buf, r.n * sizeof(uint32_t)), "cudaMalloc", -1);
	check(cudaMemset(r.buf, 0, r.n * sizeof(uint32_t)), "cudaMemset", -1);
	check(cudaDeviceSynchronize(), "cudaDeviceSynchronize", -1);
	/* From the first point on, the runtime takes a checkpoint on a signal. */
	ckpt_point(0);
	printf("ready: steps=%ld launches=%ld pause=%ld ms mode=%d\n", r.steps, r.launches,
	       r.pause_ms, (int)r.mode);
	fflush(stdout);
	if (pthread_create(&t, NULL, worker, &r)) {
		fprintf(stderr, "gpu-capture: cannot start the worker\n");
		return 1;
	}
	while (!__atomic_load_n(&r.finished, __ATOMIC_ACQUIRE)) {
		ckpt_point(__atomic_load_n(&r.step, __ATOMIC_RELAXED));
		sleep_ms(1);
	}
	pthread_join(t, NULL);
	check(cudaMemcpy(host, r.buf, r.n * sizeof(uint32_t), cudaMemcpyDeviceToHost), "cudaMemcpy",
	      -1);
	for (long step = 0; step < r.steps; step++)
		for (long k = 0; k < r.launches; k++)
			for (uint32_t i = 0; i < r.n; i++)
				want[i] += value_of(step, k, r.launches) * (i % 13 + 1);
	printf("done: checksum=0x%016llx expected=0x%016llx\n",
	       (unsigned long long)fnv1a(host, r.n), (unsigned long long)fnv1a(want, r.n));
	free(host);
	free(want);
	check(cudaFree(r.buf), "cudaFree", -1);
	return 0;
}
