/*
 * gpu-peer: one process with two GPUs that enable peer access both ways and
 * move data between their memories every step. Driver API only, so that it
 * runs on the driver stand-in (make check) and on a machine with two or more
 * GPUs (make check-gpu) alike.
 *
 * Each step copies device 0's buffer into device 1's and device 1's into a
 * second buffer on device 0, then changes one word of each on the device. A
 * buffer is allocated on each device after peer access is enabled, so the
 * runtime must grant both the memory it had mapped and what it maps later.
 * The access each device has to the other's memory is checked with
 * cuMemGetAccess after setup, after a restore, and at the end: this is what
 * the runtime must re-establish.
 *
 *	gpu-peer [--steps N] [--delay-ms MS] [--no-route-check] [--no-enable]
 *
 * --no-enable leaves peer access off, for a restore whose access must come
 * from the checkpoint alone (tests/runtime/peer.sh).
 *
 * Prints the lines of gpu_test.h ("gpu-peer: done: steps=S checksum=0x...").
 * Exits 77 (with the reason) when the machine has fewer than two GPUs or no
 * peer route between the first two.
 */
#include <cuda.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpuckpt_optional.h"

#define PROG "gpu-peer"
#include "gpu_drv.h"
#define WORDS (256u << 10) /* 1 MiB of 32-bit words per buffer */
#define BYTES (WORDS * 4u)


struct bufs {
	CUcontext ctx[2];
	CUdeviceptr a0, b0; /* on device 0: its own, and what comes from device 1 */
	CUdeviceptr a1, c1; /* on device 1: what comes from device 0; allocated later */
};

/* Both devices must have read/write access to every buffer. Only memory
 * mapped through the VMM API (the runtime's) answers cuMemGetAccess; without
 * the runtime, cuCtxEnablePeerAccess alone gives the access. */
static void check_access(const struct bufs *b, const char *when)
{
	const struct {
		CUdeviceptr p;
		const char *name;
	} all[] = {{b->a0, "a0"}, {b->b0, "b0"}, {b->a1, "a1"}, {b->c1, "c1"}};

	if (!ckpt_present()) {
		printf(PROG ": %s: no runtime, peer access is the driver's\n", when);
		return;
	}
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		for (int d = 0; d < 2; d++) {
			CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = d};
			unsigned long long flags = 0;

			CK(cuMemGetAccess(&flags, &loc, all[i].p));
			if (flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
				fprintf(stderr,
					PROG
					": %s: device %d has no read/write access to buffer %s "
					"(flags %llu)\n",
					when, d, all[i].name, flags);
				exit(1);
			}
		}
	}
	printf(PROG ": %s: both devices reach all four buffers\n", when);
}

/* "NAME (GPU-...)" of device 0, as tests/gpu/scenario.sh reads it. */
static void describe(CUdevice dev, char *buf, size_t len)
{
	char name[256];
	CUuuid u;
	const unsigned char *b = (const unsigned char *)u.bytes;

	CK(cuDeviceGetName(name, sizeof(name), dev));
	CK(cuDeviceGetUuid(&u, dev));
	snprintf(buf, len,
		 "%s (GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x)",
		 name, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
		 b[12], b[13], b[14], b[15]);
}

static uint64_t checksum(const struct bufs *b, uint32_t *host)
{
	const CUdeviceptr all[] = {b->a0, b->b0, b->a1, b->c1};
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < 4; i++) {
		CK(cuMemcpyDtoH(host, all[i], BYTES));
		for (size_t w = 0; w < WORDS; w++)
			h = (h ^ host[w]) * 1099511628211ull;
	}
	return h;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* One step: the copies run peer to peer; each device then marks its buffer. */
static void step_once(const struct bufs *b, long step)
{
	CK(cuCtxSetCurrent(b->ctx[1]));
	CK(cuMemcpyDtoD(b->a1, b->a0, BYTES));
	CK(cuMemsetD32(b->a1 + (size_t)(step % WORDS) * 4, (unsigned)step * 7u + 1u, 1));
	CK(cuMemcpyDtoD(b->c1 + (size_t)(step % 64) * 4, b->a1, 4));
	CK(cuCtxSynchronize());
	CK(cuCtxSetCurrent(b->ctx[0]));
	CK(cuMemcpyDtoD(b->b0, b->a1, BYTES));
	CK(cuMemsetD32(b->a0 + (size_t)((step * 13) % WORDS) * 4, (unsigned)step * 3u + 5u, 1));
	CK(cuCtxSynchronize());
}

int main(int argc, char **argv)
{
	long steps = 200, delay_ms = 0, step = 0, resumed;
	struct bufs b;
	CUdevice dev[2];
	uint32_t *host;
	char where[384];
	int n = 0, can01 = 0, can10 = 0, route_check = 1, enable = 1, rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--delay-ms") && i + 1 < argc)
			delay_ms = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--no-enable"))
			enable = 0; /* a restore's grants alone must give the access */
		else if (!strcmp(argv[i], "--no-route-check"))
			route_check = 0; /* let the runtime find the missing route */
		else {
			fprintf(stderr,
				"usage: " PROG " [--steps N] [--delay-ms MS] [--no-route-check] "
				"[--no-enable]\n");
			return 2;
		}
	}
	if (steps < 1) {
		fprintf(stderr, PROG ": --steps must be at least 1\n");
		return 2;
	}
	memset(&b, 0, sizeof(b));
	CK(cuInit(0));
	CK(cuDeviceGetCount(&n));
	if (n < 2) {
		printf(PROG ": SKIP: this machine has %d GPU(s); peer access needs two\n", n);
		return 77;
	}
	for (int d = 0; d < 2; d++) {
		CK(cuDeviceGet(&dev[d], d));
		CK(cuDevicePrimaryCtxRetain(&b.ctx[d], dev[d]));
	}
	CK(cuDeviceCanAccessPeer(&can01, dev[0], dev[1]));
	CK(cuDeviceCanAccessPeer(&can10, dev[1], dev[0]));
	if (route_check && (!can01 || !can10)) {
		printf(PROG ": SKIP: devices 0 and 1 have no peer route (%d, %d)\n", can01, can10);
		return 77;
	}
	host = malloc(BYTES);
	if (!host)
		return 1;
	describe(dev[0], where, sizeof(where));

	/* Setup, the same in a fresh and a restored run: memory on both
	 * devices, peer access both ways, then more memory on device 1. */
	CK(cuCtxSetCurrent(b.ctx[0]));
	CK(cuMemAlloc(&b.a0, BYTES));
	CK(cuMemAlloc(&b.b0, BYTES));
	CK(cuCtxSetCurrent(b.ctx[1]));
	CK(cuMemAlloc(&b.a1, BYTES));
	if (enable)
		CK(cuCtxEnablePeerAccess(b.ctx[0], 0));
	CK(cuCtxSetCurrent(b.ctx[0]));
	if (enable)
		CK(cuCtxEnablePeerAccess(b.ctx[1], 0));
	CK(cuCtxSetCurrent(b.ctx[1]));
	CK(cuMemAlloc(&b.c1, BYTES));
	for (uint32_t w = 0; w < WORDS; w++)
		host[w] = w * 2654435761u;
	CK(cuMemcpyHtoD(b.a0, host, BYTES));
	CK(cuMemsetD32(b.b0, 0, WORDS));
	CK(cuMemsetD32(b.a1, 0, WORDS));
	CK(cuMemsetD32(b.c1, 0, WORDS));
	CK(cuCtxSynchronize());
	check_access(&b, "setup");
	ckpt_protect("step", &step, sizeof(step));

	rc = ckpt_restarting(&resumed);
	if (rc < 0) {
		fprintf(stderr, PROG ": gpuckpt_restarting: %s\n", ckpt_strerror(rc));
		return 1;
	}
	if (rc > 0)
		printf(PROG ": resumed from step %ld on device=%s\n", resumed, where);
	else
		printf(PROG ": fresh start: steps=%ld devices=2 device=%s\n", steps, where);
	fflush(stdout);

	for (;;) {
		rc = ckpt_point(step);
		if (rc < 0) {
			fprintf(stderr, PROG ": gpuckpt_point: %s\n", ckpt_strerror(rc));
			return 1;
		}
		if (rc == GPUCKPT_RESTORED)
			check_access(&b, "restored");
		if (step >= steps)
			break;
		step++;
		step_once(&b, step);
		printf(PROG ": step %ld\n", step);
		fflush(stdout);
		sleep_ms(delay_ms);
	}
	check_access(&b, "end");
	printf(PROG ": done: steps=%ld checksum=0x%016llx\n", step,
	       (unsigned long long)checksum(&b, host));
	free(host);
	return 0;
}
