/*
 * test-changes.c - the change keys at the unit (runtime/core/capture/changes.c),
 * with the runtime linked in (libgkcore) and the CUDA stand-in as the driver.
 * changes.sh runs it twice: with the stand-in's hash kernel
 * (GPUCKPT_HASH_MODULE: keys "on the GPU") and without one (keys on the
 * host, over copies), and checks that both give the same keys.
 *
 * - keys are found where expected (GK_EXPECT_WHERE: gpu or host), and
 *   without a kernel and without leave to use the host, none are;
 * - equal bytes give equal keys, in any allocation; other bytes other keys;
 * - one changed byte changes its chunk's key only;
 * - two 16-byte words swapped change the key (the lanes' merge is ordered);
 * - a chunk's length counts: zeros of half a chunk and of a whole one differ;
 * - all-zero chunks are reported as such (and only they), also when the one
 *   non-zero byte is a chunk's last;
 * - the keys are written to GK_KEYS_OUT for the comparison.
 */
#include "config.h"

#include "tap.h"

#include "core/capture/changes.h"
#include "core/state/runtime.h"

#include <cuda.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)

static CUcontext ctx;
static CUdeviceptr D, E, Z; /* 2.5 MiB (3 chunks), 1 MiB, 1.5 MiB of zeros */
static struct gk_chunk dk[3], ek[1], zk[2];
static uint8_t dz[3], ez[1], zz[2]; /* all zero, per chunk */
static FILE *out;

static int keys(int host_allowed, enum gk_keys_where *where)
{
	struct gk_key_range r[3] = {
	    {ctx, 0, D, 5 * MiB / 2, dk, dz},
	    {ctx, 0, E, MiB, ek, ez},
	    {ctx, 0, Z, 3 * MiB / 2, zk, zz},
	};

	memset(dz, 7, sizeof(dz));
	memset(ez, 7, sizeof(ez));
	memset(zz, 7, sizeof(zz));
	memset(dk, 0, sizeof(dk));
	memset(ek, 0, sizeof(ek));
	memset(zk, 0, sizeof(zk));
	return gk_changes_keys(r, 3, MiB, host_allowed, where);
}

static void dump(const char *what)
{
	if (!out)
		return;
	fprintf(out, "%s: %016llx %016llx %016llx %016llx %016llx %016llx zero %d%d%d%d%d%d\n",
		what, (unsigned long long)dk[0].key, (unsigned long long)dk[1].key,
		(unsigned long long)dk[2].key, (unsigned long long)ek[0].key,
		(unsigned long long)zk[0].key, (unsigned long long)zk[1].key, dz[0], dz[1], dz[2],
		ez[0], zz[0], zz[1]);
}

int main(void)
{
	const char *expect = getenv("GK_EXPECT_WHERE"), *path = getenv("GK_KEYS_OUT");
	enum gk_keys_where where;
	unsigned char *buf = malloc(5 * MiB / 2), w[32];
	uint64_t before[3];
	CUdevice dev;
	int ret, gpu;

	if (!gk_rt.settings_ok || !expect || !buf) {
		printf("Bail out! run changes.sh (GK_EXPECT_WHERE)\n");
		return 1;
	}
	gpu = !strcmp(expect, "gpu");
	for (size_t i = 0; i < 5 * MiB / 2; i++)
		buf[i] = (unsigned char)(i * 131 + (i >> 12) + (i >> 20) * 7);
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&D, 5 * MiB / 2) || cuMemAlloc(&E, MiB) ||
	    cuMemAlloc(&Z, 3 * MiB / 2) || cuMemcpyHtoD(D, buf, 5 * MiB / 2) ||
	    cuMemcpyHtoD(E, buf + MiB, MiB) || cuMemsetD8(Z, 0, 3 * MiB / 2)) {
		printf("Bail out! CUDA setup on the stand-in failed\n");
		return 1;
	}
	out = path ? fopen(path, "w") : NULL;

	ok(gk_changes_on_gpu(ctx, 0) == gpu, "a kernel for the GPU: %s", gpu ? "yes" : "no");
	if (!gpu) {
		ret = keys(0, &where);
		ok(ret < 0 && where == GK_KEYS_NONE,
		   "no kernel, and the host not allowed: no keys (%d, %d)", ret, (int)where);
	}
	ret = keys(1, &where);
	ok(ret == 0 && where == (gpu ? GK_KEYS_GPU : GK_KEYS_HOST), "keys found on the %s (%d, %d)",
	   expect, ret, (int)where);
	dump("initial");
	ok(dk[1].key == ek[0].key && dk[1].key, "equal bytes in other allocations: equal keys");
	ok(dk[0].key != dk[1].key && dk[1].key != dk[2].key && dk[0].key != dk[2].key,
	   "other bytes: other keys");
	ok(zk[0].key != zk[1].key,
	   "zeros of a whole chunk and of half a chunk: other keys (the length counts)");
	ok(zz[0] == 1 && zz[1] == 1 && dz[0] == 0 && dz[1] == 0 && dz[2] == 0 && ez[0] == 0,
	   "all-zero chunks are reported on the %s, and only they", expect);
	cuMemsetD8(Z + 3 * MiB / 2 - 1, 1, 1);
	keys(1, &where);
	dump("last byte");
	ok(zz[0] == 1 && zz[1] == 0, "one non-zero byte, the last of a short chunk: not zero");
	cuMemsetD8(Z + 3 * MiB / 2 - 1, 0, 1);

	memcpy(before, (uint64_t[]){dk[0].key, dk[1].key, dk[2].key}, sizeof(before));
	cuMemsetD8(D + MiB + 777, (unsigned char)(buf[MiB + 777] ^ 1), 1);
	keys(1, &where);
	dump("one byte");
	ok(dk[0].key == before[0] && dk[1].key != before[1] && dk[2].key == before[2],
	   "one bit changed in chunk 1: its key changes, the others stay");
	cuMemcpyHtoD(D + MiB + 777, buf + MiB + 777, 1);
	keys(1, &where);
	ok(dk[1].key == before[1], "changed back: the key is the old one again");

	/* Two 16-byte words of chunk 2 swapped. */
	memcpy(w, buf + 2 * MiB + 4096, 16);
	memcpy(w + 16, buf + 2 * MiB + 4096 + 16, 16);
	cuMemcpyHtoD(D + 2 * MiB + 4096, w + 16, 16);
	cuMemcpyHtoD(D + 2 * MiB + 4096 + 16, w, 16);
	keys(1, &where);
	dump("swapped");
	ok(dk[2].key != before[2] && dk[0].key == before[0],
	   "two neighbouring 16-byte words swapped: the key changes");

	if (out)
		fclose(out);
	free(buf);
	return done_testing_plan_last();
}
