/*
 * dump.h - taking a checkpoint: the pause (hold the program's threads at the
 * driver, drain every stream, find what changed), then either
 *  - the blocking path: the changed chunks go from the device straight to
 *    storage through the copy threads, then commit (an exit checkpoint, or
 *    when the snapshot memory is too small), or
 *  - the background path: the changed chunks are copied to pinned host
 *    memory, the program goes on, and the writer (writer.c) writes and
 *    commits them (a checkpoint after which the program goes on: the
 *    interval, SIGUSR1, gpuckpt_request()).
 * pipeline.h has the phases (this module only names the checkpoint
 * wanted), plan.h the steps, baseline.h what an increment builds on.
 */
#ifndef GK_DUMP_H
#define GK_DUMP_H

#include "common/error.h"
#include "core/control/pipeline.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* gk_dump's answer when a checkpoint is due while the previous one is still
 * being written: it is taken at the first checkpoint point after that. */
#define GK_DUMP_DEFERRED GK_PIPELINE_DEFERRED

/*
 * Take a checkpoint now, labelled with the program's step. `exiting`: the
 * process ends after it (SIGTERM): it waits for a background write in
 * flight, then writes the blocking way. *background says whether the write
 * goes on in the background (then a failure is only logged). 0 on success
 * (or on a successful pause); GK_DUMP_DEFERRED; a negative errno when no
 * checkpoint was written (the reason is logged; the previous checkpoints are
 * untouched).
 */
int gk_dump(long step, int exiting, int *background);

/* gk_dump as a member of a set: under the agreed number, the set named in
 * the manifest, and nothing pruned: coord.c prunes or withdraws it once every
 * task has said whether it committed. */
int gk_dump_member(long step, const struct gk_member *mem);

/* At a checkpoint point before any checkpoint: pin the copy threads'
 * staging buffers in the background, so that the first checkpoint does not
 * pay for it (staging.h). Once; a no-op without device memory. */
void gk_dump_prepare(void);

/* The same in ctx, at once: a restore's memory is being recreated, and the
 * load at the first checkpoint point finds the buffers pinned while the
 * program set itself up. */
void gk_dump_prepare_in(CUcontext ctx);

/* The program destroys or resets ctx: a background write finishes first,
 * and what the checkpoint machinery held in ctx is dropped. */
void gk_dump_context_gone(CUcontext ctx);

#endif
