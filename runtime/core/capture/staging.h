/*
 * staging.h - the copy threads' pinned staging buffers (transfer.c), kept
 * from one checkpoint to the next. Pinning runs at about 1 GB/s in the
 * driver: the 2 x GPUCKPT_WRITERS buffers of a chunk each (128 MiB by
 * default) cost about 0.05 s, an eighth of a 4 GiB checkpoint to tmpfs, when
 * pinned inside every checkpoint. So they are pinned once, in the background
 * at the program's first checkpoint point, and kept (that memory stays
 * pinned while the program runs).
 *
 * The memory is the runtime's own (mmap, cuMemHostRegister), like the
 * snapshot memory: a context that goes away takes the pinning with it, and
 * the buffers pinned in it are dropped (gk_staging_forget).
 */
#ifndef GK_STAGING_H
#define GK_STAGING_H

#include <cuda.h>
#include <stdint.h>

/* A pinned buffer of `size` bytes: a kept one, or one pinned now in the
 * current context. NULL when none can be pinned. */
void *gk_staging_take(uint64_t size);

/* Give it back, to be kept for the next transfer. */
void gk_staging_give(void *buf, uint64_t size);

/* Pin `n` buffers of `size` bytes in ctx and keep them (the writer's
 * thread does it, in the background). */
void gk_staging_fill(CUcontext ctx, unsigned n, uint64_t size);

/* ctx is being destroyed: buffers pinned in it are pinned no more. */
void gk_staging_forget(CUcontext ctx);

#endif
