/*
 * test-placement.c - the placement policy at the unit: the arena
 * (runtime/core/placement/arena.c) behind the interposed allocation entry points
 * (memory.c), with the runtime linked in (libgkcore) and the CUDA stand-in
 * as the driver (placement.sh runs it with two stand-in GPUs).
 *
 * - addresses are deterministic: they depend on the live blocks alone, so
 *   the same requests after the same frees give the same addresses;
 * - a freed block's place is reused by the next request that fits;
 * - small blocks are 512-byte aligned in the slice's small region, large
 *   ones 2 MiB aligned above it, and the slice is the settings' one;
 * - exhaustion (of the slice, of the device's memory) and bad requests are
 *   errors that leave the arena as it was;
 * - restore: a slice given by the seeder is reserved where the checkpoint
 *   had it, blocks recreated at their addresses are claimed by the same
 *   requests in the same order, a request unlike the checkpointed one
 *   abandons the restore, and recreations outside the slice or over a live
 *   block are refused.
 */
#include "config.h"

#include "tap.h"

#include "core/placement/arena.h"
#include "core/placement/layout.h"
#include "core/state/runtime.h"

#include <cuda.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)

/* A mixed sequence of requests: small and large, odd sizes included. */
static const size_t seq[] = {1000, 4 * MiB, 512, 3 * MiB + 1, 1, 1 * MiB, 1 * MiB + 1, 700 * 1024};
#define NSEQ (sizeof(seq) / sizeof(seq[0]))

static int alloc_all(CUdeviceptr *p)
{
	for (size_t i = 0; i < NSEQ; i++)
		if (cuMemAlloc(&p[i], seq[i]) != CUDA_SUCCESS)
			return -1;
	return 0;
}

static void free_all(CUdeviceptr *p)
{
	for (size_t i = 0; i < NSEQ; i++)
		cuMemFree(p[i]);
}

static void test_placement(struct gk_arena *a)
{
	CUdeviceptr p[NSEQ], q[NSEQ], r = 0, s = 0;
	CUresult rc;
	uint64_t base = gk_rt.settings.va_base, size = gk_rt.settings.va_size;
	int aligned = 1, inside = 1, disjoint = 1;

	ok(a->lay.base == base && a->lay.size == size,
	   "device 0's slice is the settings' (0x%llx, 0x%llx bytes)",
	   (unsigned long long)a->lay.base, (unsigned long long)a->lay.size);
	if (alloc_all(p) < 0) {
		ok(0, "the sequence of requests is placed");
		return;
	}
	for (size_t i = 0; i < NSEQ; i++) {
		int small = seq[i] <= GK_SMALL_MAX;

		if (p[i] % (small ? GK_SMALL_ALIGN : GK_GRANULE))
			aligned = 0;
		if (small ? (p[i] < base + GK_GRANULE || p[i] + seq[i] > a->lay.small_end)
			  : (p[i] < a->lay.small_end || p[i] + seq[i] > base + size - GK_GRANULE))
			inside = 0;
		for (size_t j = 0; j < i; j++)
			if (p[j] < p[i] + seq[i] && p[i] < p[j] + seq[j])
				disjoint = 0;
	}
	ok(aligned, "small blocks 512-byte aligned, large ones on 2 MiB granules");
	ok(inside, "small blocks in the small region past the edge granule, large ones above "
		   "it, none in the last granule");
	ok(disjoint, "no two live blocks overlap");
	ok(p[0] == base + GK_GRANULE && p[1] == a->lay.small_end,
	   "the first small block at the slice's base + 2 MiB, the first large one at the "
	   "small region's end (0x%llx, 0x%llx)",
	   (unsigned long long)p[0], (unsigned long long)p[1]);
	ok(p[2] == p[0] + 1024 && p[4] == p[2] + 512,
	   "small blocks packed at the lowest 512-byte place (0x%llx, 0x%llx)",
	   (unsigned long long)p[2], (unsigned long long)p[4]);
	ok(p[3] == p[1] + 4 * MiB && p[6] == p[3] + 4 * MiB,
	   "large blocks packed on granules: 3 MiB + 1 takes two (0x%llx, 0x%llx)",
	   (unsigned long long)p[3], (unsigned long long)p[6]);
	pthread_mutex_lock(&a->lock);
	{
		struct gk_block *b = gk_arena_find(a, p[3] + 5);

		struct gk_block *next = gk_arena_find(a, p[3] + 4 * MiB);

		ok(b && b->iv.start == p[3] && b->size == seq[3] && b->kind == GK_KIND_ALLOC &&
		       b->iv.end == p[3] + 4 * MiB && next && next->iv.start == p[6] &&
		       gk_arena_find(a, p[6] + 4 * MiB) == NULL,
		   "gk_arena_find: the block holding an inner address, its size, kind and extent; "
		   "the next block from its end; none in a gap");
	}
	pthread_mutex_unlock(&a->lock);

	/* Reuse: a freed place goes to the next request that fits. */
	cuMemFree(p[2]);
	rc = cuMemAlloc(&r, 300);
	ok(rc == CUDA_SUCCESS && r == p[2],
	   "a freed small place is reused by a smaller request (0x%llx)", (unsigned long long)r);
	cuMemFree(p[1]);
	rc = cuMemAlloc(&s, 2 * MiB);
	ok(rc == CUDA_SUCCESS && s == p[1], "a freed large place is reused (0x%llx)",
	   (unsigned long long)s);
	cuMemFree(r);
	cuMemFree(s);
	p[1] = p[2] = 0;
	for (size_t i = 0; i < NSEQ; i++)
		if (p[i])
			cuMemFree(p[i]);

	/* Determinism: the same requests on an empty arena, the same places. */
	ok(a->nlive == 0 && a->live_extent == 0, "everything freed: nothing live (%llu)",
	   (unsigned long long)a->nlive);
	if (alloc_all(q) == 0) {
		int same = 1;

		for (size_t i = 0; i < NSEQ; i++)
			same &= p[i] == 0 || q[i] == p[i];
		ok(same && q[0] == base + GK_GRANULE && q[1] == a->lay.small_end,
		   "the same requests again: the same addresses");
		free_all(q);
	} else {
		ok(0, "the same requests again: placed");
	}
}

static void test_errors(struct gk_arena *a)
{
	CUdeviceptr p = 0, before, after;
	uint64_t nlive;
	CUresult r;

	cuMemAlloc(&before, 4 * MiB);
	cuMemFree(before);
	nlive = a->nlive;
	r = cuMemAlloc(&p, gk_rt.settings.va_size);
	ok(r == CUDA_ERROR_OUT_OF_MEMORY, "a request as large as the slice: out of memory (%d)",
	   (int)r);
	r = cuMemAlloc(&p, 1ull << 40 << 4);
	ok(r == CUDA_ERROR_OUT_OF_MEMORY, "a request larger than the slice: out of memory (%d)",
	   (int)r);
	r = cuMemAlloc(&p, 256 * MiB);
	ok(r == CUDA_ERROR_OUT_OF_MEMORY,
	   "a request larger than the device's memory (64 MiB): out of memory (%d)", (int)r);
	r = cuMemAlloc(&p, 0);
	ok(r == CUDA_ERROR_INVALID_VALUE, "a request of 0 bytes: invalid value (%d)", (int)r);
	r = cuMemAlloc(&p, ~(size_t)0);
	ok(r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_OUT_OF_MEMORY,
	   "a request of SIZE_MAX bytes: refused (%d)", (int)r);
	ok(a->nlive == nlive && cuMemAlloc(&after, 4 * MiB) == CUDA_SUCCESS && after == before,
	   "after the errors the arena is as it was: the same place for the same request");
	ok(cuMemFree(after + 512) == CUDA_ERROR_INVALID_VALUE,
	   "freeing an address inside a block: invalid value");
	ok(cuMemFree(after) == CUDA_SUCCESS && cuMemFree(after) == CUDA_ERROR_INVALID_VALUE,
	   "freeing twice: the second is invalid value");
}

/* ---- restore: the seeder of device 1 ---- */

static uint64_t seeded_base;
static char abandoned[256];
static int populated;

static uint64_t r_addr[3];
static const uint64_t r_size[3] = {1000, 6 * MiB, 8192};

static int seed_slice(int ordinal, uint64_t *base, uint64_t *size)
{
	if (ordinal != 1)
		return 0;
	*base = seeded_base;
	*size = gk_rt.settings.va_size;
	return 1;
}

static int seed_populate(struct gk_arena *a)
{
	int ret = 0;

	if (a->ordinal != 1)
		return 0;
	populated++;
	r_addr[0] = a->lay.base + GK_GRANULE + 16384;
	r_addr[1] = a->lay.small_end + 10 * GK_GRANULE;
	r_addr[2] = a->lay.base + GK_GRANULE;
	/* Manifest order (by address), not by allocation order. */
	for (int i = 2; i >= 0; i--) {
		int r = gk_arena_recreate(a, r_addr[i], r_size[i], (uint64_t)i, GK_KIND_ALLOC);

		if (r < 0) {
			printf("# recreating order %d at 0x%llx: %d\n", i,
			       (unsigned long long)r_addr[i], r);
			ret = r;
		}
	}
	return ret;
}

static void seed_abandon(const char *why)
{
	snprintf(abandoned, sizeof(abandoned), "%s", why);
	if (gk_arenas[1])
		gk_arena_drop_unclaimed(gk_arenas[1]);
}

static const struct gk_arena_seeder seeder = {
    .slice = seed_slice,
    .populate = seed_populate,
    .abandon = seed_abandon,
};

static void test_restore(CUdevice dev1)
{
	CUcontext ctx;
	CUdeviceptr p0 = 0, p1 = 0, p2 = 0, n = 0;
	CUresult rc;
	struct gk_arena *a;

	if (cuDevicePrimaryCtxRetain(&ctx, dev1) || cuCtxSetCurrent(ctx)) {
		printf("Bail out! a context on the stand-in's second GPU\n");
		exit(1);
	}
	seeded_base = gk_rt.settings.va_base + 5 * gk_rt.settings.va_size;
	gk_arena_set_seeder(&seeder);
	rc = cuMemAlloc(&p0, r_size[0]);
	ok(rc == CUDA_SUCCESS && p0 == r_addr[0] && populated == 1 && !abandoned[0],
	   "restore: the first request claims the block recreated for order 0 at its address "
	   "(%d, 0x%llx, recreated at 0x%llx%s%s)",
	   (int)rc, (unsigned long long)p0, (unsigned long long)r_addr[0],
	   abandoned[0] ? "; abandoned: " : "", abandoned);
	a = gk_arenas[1];
	ok(a && a->lay.base == seeded_base,
	   "restore: the slice reserved where the checkpoint had it, not where the settings "
	   "put device 1's (0x%llx)",
	   a ? (unsigned long long)a->lay.base : 0ull);
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	ok(gk_arena_recreate(a, a->lay.base - GK_GRANULE, 4096, 9, GK_KIND_ALLOC) == -EINVAL &&
	       gk_arena_recreate(a, a->lay.base + a->lay.size - 4096, 8192, 9, GK_KIND_ALLOC) ==
		   -EINVAL,
	   "restore: recreations outside the slice, or running past its end, are refused");
	ok(gk_arena_recreate(a, r_addr[1] + GK_GRANULE, 2 * MiB, 9, GK_KIND_ALLOC) == -EINVAL,
	   "restore: a recreation over a live block is refused");
	ok(gk_arena_recreate(a, a->lay.small_end + 40 * GK_GRANULE, 4096, 9, GK_KIND_ALLOC) ==
	       -EINVAL,
	   "restore: a small block in the large region is refused");
	ok(gk_arena_recreate(a, a->lay.base + GK_GRANULE + 64, 0, 9, GK_KIND_ALLOC) == -EINVAL,
	   "restore: a block of 0 bytes is refused");
	pthread_mutex_unlock(&a->lock);
	rc = cuMemAlloc(&p1, r_size[1]);
	ok(rc == CUDA_SUCCESS && p1 == r_addr[1],
	   "restore: the second request claims order 1's block, though its place is not the "
	   "lowest free one (0x%llx)",
	   (unsigned long long)p1);
	rc = cuMemAlloc(&p2, 4096);
	ok(rc == CUDA_SUCCESS && strstr(abandoned, "allocation #2") &&
	       strstr(abandoned, "4096 bytes") && strstr(abandoned, "8192"),
	   "restore: a request unlike the checkpointed one abandons the restore, naming both "
	   "sizes (%s)",
	   abandoned);
	ok(a->nrestored == 0 && p2 == r_addr[2],
	   "restore abandoned: the unclaimed block dropped, its place given to the request");
	gk_arena_restore_done(a, 100);
	ok(a->next_order == 100, "restore done: orders go on from the checkpointed run's");
	rc = cuMemAlloc(&n, 2 * MiB);
	ok(rc == CUDA_SUCCESS && n == a->lay.small_end,
	   "after the restore, placement is the policy's again (0x%llx)", (unsigned long long)n);
	cuMemFree(n);
	cuMemFree(p0);
	cuMemFree(p1);
	cuMemFree(p2);
	gk_arena_set_seeder(NULL);
}

int main(void)
{
	CUdevice dev, dev1;
	CUcontext ctx;
	CUdeviceptr d;
	CUresult r;
	struct gk_arena *a;
	int n = 0;

	if (!gk_rt.settings_ok) {
		printf("Bail out! the runtime's settings are not usable\n");
		return 1;
	}
	/* No restore seeds the arenas; device 1's seeder is this test's. */
	gk_arena_set_seeder(NULL);
	if (cuInit(0) || cuDeviceGetCount(&n) || n < 2 || cuDeviceGet(&dev, 0) ||
	    cuDeviceGet(&dev1, 1) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
	    cuMemAlloc(&d, 4096)) {
		printf("Bail out! CUDA setup on the stand-in (two GPUs) failed\n");
		return 1;
	}
	cuMemFree(d);
	a = gk_arena_current(&r);
	if (!a) {
		printf("Bail out! no arena for device 0 (%d)\n", (int)r);
		return 1;
	}
	test_placement(a);
	test_errors(a);
	test_restore(dev1);
	return done_testing_plan_last();
}
