/*
 * writer.h - the background writer: one checkpoint at a time, written from
 * its snapshot in host memory while the program runs (checksums, files,
 * manifest, commit); between checkpoints, the pinning of snapshot memory and
 * of the copy threads' staging buffers.
 *
 * Contract with the pause (pipeline.c): a checkpoint is only planned while
 * the writer is idle (one due meanwhile waits for it: the writer phase), so
 * the baseline and the snapshot memory belong to whoever holds them in
 * turn. A process
 * that ends normally (exit, return from main) first lets a write in flight
 * finish, so that it is committed or its .tmp folder removed; one killed
 * leaves the previous checkpoints as they were.
 */
#ifndef GK_WRITER_H
#define GK_WRITER_H

#include <cuda.h>
#include <stdint.h>

/* Something is in flight (atomic load: cheap enough for every due point). */
int gk_writer_busy(void);

/* Write and commit a checkpoint in the background: run(arg) in the writer's
 * thread, `what` its name for messages ("ckpt.000004"); the pipeline's last
 * phases (pipeline.c). 0, or a negative errno when no thread could be
 * started (arg is then still the caller's). */
int gk_writer_submit(const char *what, void (*run)(void *arg), void *arg);

/* Pin snapshot memory up to `target` bytes in the background, in ctx. */
void gk_writer_grow(uint64_t target, CUcontext ctx);

/* Pin `count` staging buffers of `size` bytes for the copy threads in the
 * background, in ctx (staging.h). */
void gk_writer_staging(unsigned count, uint64_t size, CUcontext ctx);

/* Wait until idle; a growth of the snapshot memory is stopped early (a
 * checkpoint needs the writer now), a write always finishes. */
void gk_writer_wait(void);

/* What the writer is doing, for messages ("ckpt.000004", or that memory is
 * being pinned); 1 when it is writing a checkpoint. */
int gk_writer_what(char *buf, size_t len);

#endif
