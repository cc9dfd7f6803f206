/*
 * snapshot.h - host memory that holds a checkpoint's device data while it is
 * written in the background, so that the program can go on as soon as its
 * state is copied (GPUCKPT_SNAPSHOT_MEMORY).
 *
 * The memory is the runtime's own (mmap), page-locked with
 * cuMemHostRegister so that the device copies into it at the link's rate.
 * Pinning is slow (about as slow as writing tmpfs), so it is done once, in
 * the background, and kept: the first checkpoint that could go to the
 * background is written the blocking way while the memory for the next ones
 * is pinned. Because the memory is not the driver's, a context that goes away
 * while a write runs takes only the pinning with it, never the data.
 *
 * The budget (bytes; 0: no background checkpoints) is GPUCKPT_SNAPSHOT_MEMORY:
 * a size, a percentage of the memory available to the process, or "auto":
 * half of it, shared by the step's tasks on the node.
 */
#ifndef GK_SNAPSHOT_H
#define GK_SNAPSHOT_H

#include "common/error.h"

#include "core/capture/transfer.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* The budget in bytes (worked out once); *how describes it for the log. */
uint64_t gk_snapshot_budget(const char **how);

/* Bytes pinned now. */
uint64_t gk_snapshot_pinned(void);

/* Pin more, up to `target` bytes in all (never above the budget), in steps,
 * in ctx (the memory is portable to every context). Stops early, keeping what
 * is pinned, when gk_snapshot_stop_growing() is called. 0, or a negative
 * errno when no step could be pinned. */
int gk_snapshot_grow(uint64_t target, CUcontext ctx);
void gk_snapshot_stop_growing(void);

/*
 * Copy the device data of items into snapshot memory (on a stream of each
 * context, waiting for the copies). *out gets items of the same files and
 * offsets whose host field points at the copies (an item is cut in two where
 * a step of the memory ends). -ENOSPC when the pinned memory is too small.
 * The devices are quiesced (gate closed).
 */
int gk_snapshot_capture(const struct gk_xfer_item *items, size_t n, uint64_t chunk_size,
			struct gk_xfer_item **out, size_t *nout, gk_error_t *err);

/* The program destroyed or reset ctx: its streams are gone, and so is the
 * pinning if ctx did it. No write may be reading the memory (the caller
 * waited for the writer). */
void gk_snapshot_forget(CUcontext ctx);

#endif
