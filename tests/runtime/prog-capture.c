/*
 * prog-capture.c - a driver-API program that captures its kernels into CUDA
 * graphs on a worker thread, as XLA's command buffers do, for capture.sh on
 * the stand-in (its kernel: kern_capture_host.c). It is not linked against
 * libgpuckpt: its main thread only offers checkpoint points, bound weakly
 * (gpuckpt_optional.h), so that the same binary runs without gpuckpt.
 *
 *   prog-capture --module SO [--steps S] [--launches K] [--pause-ms P]
 *                [--elements N] [--mode global|thread|relaxed]
 *
 * The worker, for each of S steps: begins a capture (the mode given) on a
 * non-blocking stream, launches add_step K times into it with v = step * K
 * + k + 1, pausing P ms after each launch (so a capture lasts long enough
 * for a checkpoint to be asked for inside it), ends the capture,
 * instantiates the graph, launches it and waits for it. Any failing call
 * prints "prog-capture: CALL: step S: ERROR_NAME" and ends the program with
 * status 1. It prints "capture begun: step S t=T" and "capture ended: step S
 * t=T" (T: CLOCK_MONOTONIC seconds).
 * The main thread reaches a checkpoint point before it prints "ready" and
 * starts the worker, and meanwhile every millisecond
 * (gpuckpt_point with the worker's step: a checkpoint asked for by a signal
 * is taken there, whatever the worker is doing). At the end the buffer is
 * copied back: "done: checksum=0x... expected=0x..." (FNV-1a of the
 * elements; the expected one computed on the host).
 */
#include "gpuckpt_optional.h"

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct run {
	CUcontext ctx;
	CUfunction fn;
	CUdeviceptr buf;
	uint32_t n;
	long steps, launches, pause_ms;
	CUstreamCaptureMode mode;
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

/* A failed call ends the program: the test reads the error's name. */
static void check(CUresult rc, const char *call, long step)
{
	const char *name = NULL;

	if (rc == CUDA_SUCCESS)
		return;
	cuGetErrorName(rc, &name);
	printf("prog-capture: %s: step %ld: %s\n", call, step, name ? name : "(unknown)");
	fflush(stdout);
	exit(1);
}

static uint32_t value_of(long step, long k, long launches)
{
	return (uint32_t)(step * launches + k + 1);
}

static void *worker(void *arg)
{
	struct run *r = arg;
	CUstream s;

	check(cuCtxSetCurrent(r->ctx), "cuCtxSetCurrent", -1);
	check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate", -1);
	for (long step = 0; step < r->steps; step++) {
		CUgraph g = NULL;
		CUgraphExec x = NULL;

		__atomic_store_n(&r->step, step, __ATOMIC_RELAXED);
		check(cuStreamBeginCapture(s, r->mode), "cuStreamBeginCapture", step);
		printf("capture begun: step %ld t=%.6f\n", step, now_s());
		fflush(stdout);
		for (long k = 0; k < r->launches; k++) {
			uint32_t v = value_of(step, k, r->launches);
			void *args[] = {&r->buf, &v, &r->n};

			check(cuLaunchKernel(r->fn, (r->n + 255) / 256, 1, 1, 256, 1, 1, 0, s, args,
					     NULL),
			      "cuLaunchKernel", step);
			sleep_ms(r->pause_ms);
		}
		check(cuStreamEndCapture(s, &g), "cuStreamEndCapture", step);
		printf("capture ended: step %ld t=%.6f\n", step, now_s());
		fflush(stdout);
		check(cuGraphInstantiateWithFlags(&x, g, 0), "cuGraphInstantiateWithFlags", step);
		check(cuGraphLaunch(x, s), "cuGraphLaunch", step);
		check(cuStreamSynchronize(s), "cuStreamSynchronize", step);
		check(cuGraphExecDestroy(x), "cuGraphExecDestroy", step);
		check(cuGraphDestroy(g), "cuGraphDestroy", step);
	}
	check(cuStreamDestroy(s), "cuStreamDestroy", -1);
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
	struct run r = {.n = 4096,
			.steps = 20,
			.launches = 8,
			.pause_ms = 10,
			.mode = CU_STREAM_CAPTURE_MODE_GLOBAL};
	const char *module = NULL;
	uint32_t *host, *want;
	CUdevice dev;
	CUmodule mod;
	pthread_t t;

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v) {
			fprintf(stderr, "prog-capture: %s: needs a value\n", o);
			return 2;
		}
		i++;
		if (!strcmp(o, "--module")) {
			module = v;
		} else if (!strcmp(o, "--steps")) {
			r.steps = atol(v);
		} else if (!strcmp(o, "--launches")) {
			r.launches = atol(v);
		} else if (!strcmp(o, "--pause-ms")) {
			r.pause_ms = atol(v);
		} else if (!strcmp(o, "--elements")) {
			r.n = (uint32_t)atol(v);
		} else if (!strcmp(o, "--mode")) {
			if (!strcmp(v, "global"))
				r.mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
			else if (!strcmp(v, "thread"))
				r.mode = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
			else if (!strcmp(v, "relaxed"))
				r.mode = CU_STREAM_CAPTURE_MODE_RELAXED;
			else {
				fprintf(stderr,
					"prog-capture: --mode %s: global, thread or relaxed\n", v);
				return 2;
			}
		} else {
			fprintf(stderr, "prog-capture: %s: unknown option\n", o);
			return 2;
		}
	}
	if (!module || r.steps < 1 || r.launches < 1 || r.n < 1) {
		fprintf(stderr,
			"prog-capture: --module is required; steps, launches, elements > 0\n");
		return 2;
	}
	host = calloc(r.n, sizeof(*host));
	want = calloc(r.n, sizeof(*want));
	if (!host || !want)
		return 1;
	check(cuInit(0), "cuInit", -1);
	check(cuDeviceGet(&dev, 0), "cuDeviceGet", -1);
	check(cuDevicePrimaryCtxRetain(&r.ctx, dev), "cuDevicePrimaryCtxRetain", -1);
	check(cuCtxSetCurrent(r.ctx), "cuCtxSetCurrent", -1);
	check(cuModuleLoad(&mod, module), "cuModuleLoad", -1);
	check(cuModuleGetFunction(&r.fn, mod, "add_step"), "cuModuleGetFunction", -1);
	check(cuMemAlloc(&r.buf, r.n * sizeof(uint32_t)), "cuMemAlloc", -1);
	check(cuMemsetD32(r.buf, 0, r.n), "cuMemsetD32", -1);
	/* From the first point on, the runtime takes a checkpoint on a signal:
	 * "ready" says a signal may come. */
	ckpt_point(0);
	printf("ready: steps=%ld launches=%ld pause=%ld ms mode=%d\n", r.steps, r.launches,
	       r.pause_ms, (int)r.mode);
	fflush(stdout);
	if (pthread_create(&t, NULL, worker, &r)) {
		fprintf(stderr, "prog-capture: cannot start the worker\n");
		return 1;
	}
	while (!__atomic_load_n(&r.finished, __ATOMIC_ACQUIRE)) {
		ckpt_point(__atomic_load_n(&r.step, __ATOMIC_RELAXED));
		sleep_ms(1);
	}
	pthread_join(t, NULL);
	check(cuMemcpyDtoH(host, r.buf, r.n * sizeof(uint32_t)), "cuMemcpyDtoH", -1);
	for (long step = 0; step < r.steps; step++)
		for (long k = 0; k < r.launches; k++)
			for (uint32_t i = 0; i < r.n; i++)
				want[i] += value_of(step, k, r.launches) * (i % 13 + 1);
	printf("done: checksum=0x%016llx expected=0x%016llx\n",
	       (unsigned long long)fnv1a(host, r.n), (unsigned long long)fnv1a(want, r.n));
	free(host);
	free(want);
	return 0;
}
