/*
 * A checkpoint-aware program that maps device memory itself, as XLA, NCCL and
 * PyTorch's expandable segments do: one reservation, two allocation handles
 * mapped into it (the second at an offset, after a hole), read/write access
 * set, the first handle released while still mapped. Every step writes the
 * memory; at --checkpoint-at it asks for a checkpoint; at the end it prints the
 * reservation's address and a checksum of both mappings read back.
 *
 *   prog-vmm [--steps N] [--checkpoint-at K]... [--exit-after-checkpoint]
 *            [--delay-ms D] [--survive-term] [--export]
 *
 * --export: the second allocation is exported as a file descriptor, as NCCL
 * shares memory between a node's processes: a checkpoint must be refused,
 * naming it, since the importer's state is not in it.
 *
 * --survive-term: SIGTERM is the program's own business (a handler counts
 * it), so that after a transparent checkpoint the shepherd gave up on, the
 * program goes on and shows whether its memory came back (tests/shepherd).
 *
 * A restored run must print the same address and the same checksum as an
 * uninterrupted one (tests/runtime/vmm.sh).
 */
#include "gpuckpt.h"

#include <cuda.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#define WORDS_MAX (8u << 20)

static uint32_t host[WORDS_MAX];
static volatile sig_atomic_t terms;

static void on_term(int sig)
{
	(void)sig;
	terms++;
}

static int fail(const char *what, CUresult r)
{
	const char *name = NULL;

	cuGetErrorName(r, &name);
	fprintf(stderr, "prog-vmm: %s: %s\n", what, name ? name : "?");
	return 1;
}

/* Each word a function of the step and its index: a lost or stale mapping
 * shows in the checksum. */
static CUresult write_step(CUdeviceptr p, size_t bytes, long step, uint32_t salt)
{
	size_t n = bytes / 4;

	for (size_t i = 0; i < n; i++)
		host[i] = (uint32_t)(i * 2654435761u) ^ (uint32_t)(step * 40503u) ^ salt ^
			  (host[i] >> 3);
	return cuMemcpyHtoD(p, host, bytes);
}

static uint64_t checksum(CUdeviceptr p, size_t bytes, CUresult *r)
{
	uint64_t h = 1469598103934665603ull;

	*r = cuMemcpyDtoH(host, p, bytes);
	for (size_t i = 0; *r == CUDA_SUCCESS && i < bytes / 4; i++)
		h = (h ^ host[i]) * 1099511628211ull;
	return h;
}

int main(int argc, char **argv)
{
	long steps = 10, ckpt_at[4] = {-1, -1, -1, -1}, step = 0;
	int nckpt = 0;
	int exit_after = 0, rc;
	long delay_ms = 0;
	int export = 0, fd = -1;
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr va, small;
	CUmemAllocationProp prop;
	CUmemAccessDesc rw;
	CUmemGenericAllocationHandle h1, h2;
	size_t gran = 0, sz, resv;
	CUresult r;
	uint64_t sum;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atol(argv[++i]);
		else if (!strcmp(argv[i], "--checkpoint-at") && i + 1 < argc && nckpt < 4)
			ckpt_at[nckpt++] = atol(argv[++i]);
		else if (!strcmp(argv[i], "--exit-after-checkpoint"))
			exit_after = 1;
		else if (!strcmp(argv[i], "--delay-ms") && i + 1 < argc)
			delay_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--export"))
			export = 1;
		else if (!strcmp(argv[i], "--survive-term"))
			signal(SIGTERM, on_term);
		else {
			fprintf(stderr, "prog-vmm: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	if ((r = cuInit(0)) || (r = cuDeviceGet(&dev, 0)) ||
	    (r = cuDevicePrimaryCtxRetain(&ctx, dev)) || (r = cuCtxSetCurrent(ctx)))
		return fail("setup", r);
	/* Ordinary memory beside it: both kinds in one checkpoint. */
	if ((r = cuMemAlloc(&small, 4096)) || (r = cuMemsetD32(small, 0x5a5a5a5a, 1024)))
		return fail("cuMemAlloc", r);
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	if ((r = cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM)))
		return fail("cuMemGetAllocationGranularity", r);
	sz = 2 * gran;
	resv = 8 * gran;
	if (sz > sizeof(host))
		return fail("granularity too large for the test", CUDA_ERROR_INVALID_VALUE);
	if ((r = cuMemAddressReserve(&va, resv, 0, 0, 0)))
		return fail("cuMemAddressReserve", r);
	if ((r = cuMemCreate(&h1, sz, &prop, 0)) || (r = cuMemCreate(&h2, sz, &prop, 0)))
		return fail("cuMemCreate", r);
	/* The second mapping lies after a hole of one granule. */
	if ((r = cuMemMap(va, sz, 0, h1, 0)) || (r = cuMemMap(va + sz + gran, sz, 0, h2, 0)))
		return fail("cuMemMap", r);
	rw.location = prop.location;
	rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	if ((r = cuMemSetAccess(va, sz, &rw, 1)) || (r = cuMemSetAccess(va + sz + gran, sz, &rw, 1)))
		return fail("cuMemSetAccess", r);
	if (export && (r = cuMemExportToShareableHandle(&fd, h2,
							CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0)))
		return fail("cuMemExportToShareableHandle", r);
	/* Released while mapped, as allocators do: the mapping keeps it alive. */
	if ((r = cuMemRelease(h1)))
		return fail("cuMemRelease", r);
	printf("prog-vmm: va 0x%llx small 0x%llx\n", (unsigned long long)va,
	       (unsigned long long)small);
	fflush(stdout);
	gpuckpt_protect("step", &step, sizeof(step));
	gpuckpt_protect("host", host, sizeof(uint32_t) * (sz / 4));
	rc = gpuckpt_point(step);
	if (rc == GPUCKPT_RESTORED)
		printf("prog-vmm: restored at step %ld\n", step);
	while (step < steps) {
		if ((r = write_step(va, sz, step, 0x1111)) ||
		    (r = write_step(va + sz + gran, sz, step, 0x2222)))
			return fail("cuMemcpyHtoD", r);
		step++;
		if (delay_ms) {
			struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000};

			printf("prog-vmm: step %ld\n", step);
			fflush(stdout);
			nanosleep(&ts, NULL);
		}
		/* A checkpoint point every step, as a real loop has: a request
		 * may be taken a step or two later (staging still being set up). */
		rc = gpuckpt_point(step);
		if (step == ckpt_at[0] || step == ckpt_at[1] || step == ckpt_at[2] ||
		    step == ckpt_at[3]) {
			/* Taken at this step: a request that comes while the
			 * runtime still sets up its staging is deferred to a
			 * later point, so this one is tried until it answers. */
			gpuckpt_request();
			for (int i = 0; i < 1000 && (rc = gpuckpt_point(step)) == GPUCKPT_NOTHING;
			     i++) {
				struct timespec ts = {0, 10000000};

				nanosleep(&ts, NULL);
			}
		}
		if (rc != GPUCKPT_NOTHING) {
			printf("prog-vmm: checkpoint at step %ld: %d (%s)\n", step, rc,
			       gpuckpt_strerror(rc));
			fflush(stdout);
			if (exit_after && rc == GPUCKPT_SAVED)
				return 0;
		}
	}
	sum = checksum(va, sz, &r);
	if (!r)
		sum ^= checksum(va + sz + gran, sz, &r) * 31;
	if (r)
		return fail("cuMemcpyDtoH", r);
	if (terms)
		printf("prog-vmm: SIGTERM seen %d time(s)\n", (int)terms);
	/* The handle the program kept still names its allocation (after a
	 * transparent restore the driver's handle is another value). */
	memset(&prop, 0, sizeof(prop));
	if ((r = cuMemGetAllocationPropertiesFromHandle(&prop, h2)) ||
	    prop.location.type != CU_MEM_LOCATION_TYPE_DEVICE || prop.location.id != dev)
		return fail("cuMemGetAllocationPropertiesFromHandle", r ? r : CUDA_ERROR_INVALID_VALUE);
	if ((r = cuMemUnmap(va, sz)) || (r = cuMemUnmap(va + sz + gran, sz)))
		return fail("cuMemUnmap", r);
	if ((r = cuMemRelease(h2)))
		return fail("cuMemRelease at the end", r);
	if ((r = cuMemAddressFree(va, resv)))
		return fail("cuMemAddressFree", r);
	printf("prog-vmm: done: va 0x%llx sum %016" PRIx64 "\n", (unsigned long long)va, sum);
	return 0;
}
