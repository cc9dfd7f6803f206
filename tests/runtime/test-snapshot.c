/*
 * test-snapshot.c - the snapshot memory's bookkeeping at the unit
 * (runtime/core/capture/snapshot.c), with the runtime linked in (libgkcore) and the
 * CUDA stand-in as the driver (snapshot.sh: GPUCKPT_SNAPSHOT_MEMORY=16M).
 *
 * - the budget is the setting's, and says so;
 * - nothing is pinned until asked; growing pins up to the target, in steps,
 *   never above the budget;
 * - a capture copies each item's bytes into the pinned memory, cutting an
 *   item where a step ends on a chunk boundary, the pieces keeping their
 *   files, offsets, addresses and chunk records in step;
 * - a capture larger than what is pinned is refused (-ENOSPC), naming why.
 */
#include "config.h"

#include "tap.h"

#include "core/state/runtime.h"
#include "core/capture/snapshot.h"

#include <cuda.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1ull << 20)

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr A, B;
	const char *how = NULL;
	struct gk_chunk chunks[4], bchunks[1];
	struct gk_xfer_item items[2], *out = NULL;
	size_t nout = 0;
	gk_error_t err = {""};
	unsigned char *want;
	int ret, same = 1, in_step = 1;
	uint64_t budget, total = 0;

	if (!gk_rt.settings_ok) {
		printf("Bail out! the runtime's settings are not usable\n");
		return 1;
	}
	want = malloc(3 * MiB);
	if (!want || cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&A, 3 * MiB) || cuMemAlloc(&B, 5000)) {
		printf("Bail out! CUDA setup on the stand-in failed\n");
		return 1;
	}
	for (size_t i = 0; i < 3 * MiB; i++)
		want[i] = (unsigned char)(i * 7 + i / 4096);
	cuMemcpyHtoD(A, want, 3 * MiB);
	cuMemsetD8(B, 0xab, 5000);

	budget = gk_snapshot_budget(&how);
	ok(budget == 16 * MiB && how && strstr(how, "GPUCKPT_SNAPSHOT_MEMORY="),
	   "the budget is GPUCKPT_SNAPSHOT_MEMORY's 16 MiB, and says so (%llu, %s)",
	   (unsigned long long)budget, how ? how : "");
	ok(gk_snapshot_pinned() == 0, "nothing pinned before it is asked for");

	memset(items, 0, sizeof(items));
	items[0] = (struct gk_xfer_item){.ctx = ctx,
					 .dev_addr = A,
					 .size = 3 * MiB,
					 .fd = 7,
					 .file_offset = 4096,
					 .chunks = chunks,
					 .file = "d0",
					 .index = 0};
	items[1] = (struct gk_xfer_item){.ctx = ctx,
					 .dev_addr = B,
					 .size = 5000,
					 .fd = 8,
					 .file_offset = 0,
					 .chunks = bchunks,
					 .file = "d1",
					 .index = 1};
	ret = gk_snapshot_capture(items, 2, MiB, &out, &nout, &err);
	ok(ret == -ENOSPC && !out && strstr(err.text, "too small"),
	   "a capture with nothing pinned: refused, the memory too small (%d, %s)", ret, err.text);

	ret = gk_snapshot_grow(2 * MiB, ctx);
	ok(ret == 0 && gk_snapshot_pinned() == 2 * MiB, "grow to 2 MiB: 2 MiB pinned (%d, %llu)",
	   ret, (unsigned long long)gk_snapshot_pinned());
	err.text[0] = 0;
	ret = gk_snapshot_capture(items, 2, MiB, &out, &nout, &err);
	ok(ret == -ENOSPC && !out, "a capture larger than what is pinned: refused (%d, %s)", ret,
	   err.text);
	ret = gk_snapshot_grow(5 * MiB, ctx);
	ok(ret == 0 && gk_snapshot_pinned() == 5 * MiB,
	   "grow to 5 MiB: a second step, 5 MiB pinned in all (%d, %llu)", ret,
	   (unsigned long long)gk_snapshot_pinned());

	ret = gk_snapshot_capture(items, 2, MiB, &out, &nout, &err);
	ok(ret == 0 && nout == 3,
	   "a capture of 3 MiB and 5000 bytes into steps of 2 and 3 MiB: 3 pieces (%d, %zu; %s)",
	   ret, nout, err.text);
	if (ret == 0 && nout == 3) {
		ok(out[0].dev_addr == A && out[0].size == 2 * MiB && out[0].file_offset == 4096 &&
		       out[0].chunks == chunks && out[1].dev_addr == A + 2 * MiB &&
		       out[1].size == MiB && out[1].file_offset == 4096 + 2 * MiB &&
		       out[1].chunks == chunks + 2 && out[1].fd == 7 && !strcmp(out[1].file, "d0"),
		   "the first item cut where the first step ends, on a chunk boundary: addresses, "
		   "offsets and chunk records in step");
		ok(out[2].dev_addr == B && out[2].size == 5000 && out[2].fd == 8 &&
		       out[2].chunks == bchunks && out[2].index == 1,
		   "the second item whole after it");
		for (size_t k = 0; k < nout; k++) {
			const unsigned char *h = out[k].host;

			total += out[k].size;
			for (size_t i = 0; i < out[k].size; i++) {
				unsigned char w =
				    out[k].index == 1 ? 0xab : want[out[k].dev_addr - A + i];

				if (h[i] != w) {
					same = 0;
					break;
				}
			}
			if ((uintptr_t)h % 4096)
				in_step = 0;
		}
		ok(same && total == 3 * MiB + 5000, "the pinned copies hold the device's bytes");
		ok(in_step && out[0].host != out[1].host && out[1].host != out[2].host,
		   "each piece at its own page-aligned place");
		free(out);
	} else {
		for (int i = 0; i < 4; i++)
			ok(0, "the pieces of the capture");
	}

	ret = gk_snapshot_grow(1024 * MiB, ctx);
	ok(gk_snapshot_pinned() == budget,
	   "grow past the budget: pinned up to the budget only (%d, %llu)", ret,
	   (unsigned long long)gk_snapshot_pinned());
	cuMemFree(A);
	cuMemFree(B);
	free(want);
	return done_testing_plan_last();
}
