/*
 * A checkpoint-aware program on managed memory (tests/runtime/managed.sh):
 * the host and the "device" (stream-ordered copies and sets, which the
 * stand-in runs on its stream workers) write managed arrays in turn every
 * step; one array is attached to the host (CU_MEM_ATTACH_HOST) and then to
 * a stream, the other advised and prefetched to the device. The managed
 * pointers are kept in host memory (a protected region) and in device
 * memory, so that a restore that gave other addresses back is seen. It
 * prints a checksum of both arrays at the end: the same with a checkpoint
 * and restore in between as without.
 *
 *   prog-uvm [--steps N] [--words N] [--stop-at K] [--term-at K] [--block ADDR]
 *
 * --stop-at K: SIGTERM to itself at step K (a checkpoint, then the process
 * ends, as under Slurm). --term-at K: the same, but the program catches
 * SIGTERM and goes on (transparent mode: the runtime's agent takes the
 * signal first; the program waits until its handler ran). --block ADDR: a
 * page of its own mapped at ADDR before any managed allocation (a restart
 * whose layout has something where the checkpointed run's managed memory
 * was).
 */
#include "gpuckpt.h"

#include <cuda.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_term;

static void on_term(int sig)
{
	(void)sig;
	got_term = 1;
}

#define CHECK(call)                                                                                \
	do {                                                                                       \
		CUresult r_ = (call);                                                              \
		if (r_ != CUDA_SUCCESS) {                                                          \
			fprintf(stderr, "prog-uvm: %s: error %d\n", #call, (int)r_);               \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ c[i]) * 1099511628211ULL;
	return h;
}

int main(int argc, char **argv)
{
	long steps = 40, stop_at = -1, term_at = -1, from = 0;
	size_t words = 1 << 16;
	CUdevice dev;
	CUcontext ctx;
	CUstream s;
	CUdeviceptr a, b, table;
	CUmemLocation on_dev = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0};
	struct {
		uint64_t a, b;
	} ptrs;
	long step = 0;
	uint64_t *ha, *hb, dptrs[2];
	int rc, wanted = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--steps"))
			steps = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--words"))
			words = (size_t)atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--stop-at"))
			stop_at = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--term-at"))
			term_at = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--block") &&
			 mmap((void *)(uintptr_t)strtoull(argv[i + 1], NULL, 0), 4096, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED)
			perror("prog-uvm: --block");
	}
	if (term_at >= 0)
		signal(SIGTERM, on_term);
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAllocManaged(&a, words * 8, CU_MEM_ATTACH_GLOBAL));
	CHECK(cuMemAllocManaged(&b, words * 8, CU_MEM_ATTACH_HOST));
	CHECK(cuMemAlloc(&table, sizeof(dptrs)));
	CHECK(cuMemAdvise(a, words * 8, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, on_dev));
	CHECK(cuStreamAttachMemAsync(s, b, 0, CU_MEM_ATTACH_SINGLE));
	ha = (uint64_t *)(uintptr_t)a;
	hb = (uint64_t *)(uintptr_t)b;
	ptrs.a = a;
	ptrs.b = b;
	dptrs[0] = a;
	dptrs[1] = b;
	CHECK(cuMemcpyHtoD(table, dptrs, sizeof(dptrs)));
	gpuckpt_protect("step", &step, sizeof(step));
	gpuckpt_protect("ptrs", &ptrs, sizeof(ptrs));
	rc = gpuckpt_restarting(&from);
	if (rc > 0)
		printf("prog-uvm: resumed from step %ld: a=%#llx b=%#llx\n", from,
		       (unsigned long long)a, (unsigned long long)b);
	else
		printf("prog-uvm: fresh start: a=%#llx b=%#llx\n", (unsigned long long)a,
		       (unsigned long long)b);
	for (size_t i = 0; i < words; i++) {
		ha[i] = i;
		hb[i] = i * 7;
	}
	CHECK(cuMemPrefetchAsync(a, words * 8, on_dev, 0, s));
	fflush(stdout);
	for (; step < steps; step++) {
		rc = gpuckpt_point(step);
		if (rc == GPUCKPT_RESTORED) {
			CHECK(cuMemcpyDtoH(dptrs, table, sizeof(dptrs)));
			if (ptrs.a != a || ptrs.b != b || dptrs[0] != a || dptrs[1] != b) {
				printf("prog-uvm: pointers differ after the restore\n");
				return 3;
			}
			printf("prog-uvm: restored at step %ld, pointers intact\n", step);
		}
		/* The "device" writes: a set and a copy in stream order. */
		CHECK(cuMemsetD32Async(a + (step % (long)words) * 8, (unsigned)step, 2, s));
		CHECK(cuMemcpyDtoDAsync(b + (words / 2) * 8, a, (words / 2) * 8, s));
		CHECK(cuStreamSynchronize(s));
		/* Then the host. */
		for (size_t i = 0; i < words; i++) {
			ha[i] = ha[i] * 6364136223846793005ULL + hb[i] + (uint64_t)step;
			hb[i] ^= ha[(i * 31) % words] >> 7;
		}
		if (step == stop_at) {
			printf("prog-uvm: stopping at step %ld\n", step);
			fflush(stdout);
			raise(SIGTERM);
			wanted = 1;
		}
		if (step == term_at) {
			struct timespec ts = {0, 10000000};

			printf("prog-uvm: SIGTERM at step %ld\n", step);
			fflush(stdout);
			raise(SIGTERM);
			for (int i = 0; i < 3000 && !got_term; i++)
				nanosleep(&ts, NULL);
			printf("prog-uvm: handler ran: %d\n", (int)got_term);
		}
	}
	if (wanted)
		gpuckpt_point(step); /* a checkpoint due by SIGTERM ends the process here */
	printf("prog-uvm: done: steps %ld checksum %016llx\n", steps,
	       (unsigned long long)fnv(hb, words * 8, fnv(ha, words * 8, 1469598103934665603ULL)));
	return 0;
}
