/*
 * restore.h - bringing a checkpoint back.
 *
 * At the first use of CUDA, a thread starts checking the checkpoint named by
 * GPUCKPT_RESTORE (or the newest good one, for "auto") whole: owner,
 * signature, format, every checksum; its answer is waited for at the first
 * allocation (or gpuckpt_restarting(), or the first checkpoint point). Its device slices are then reserved at the addresses they had
 * and its allocations recreated there, before the program allocates anything;
 * the program's setup runs again and each of its requests gets back the
 * allocation it made in the checkpointed run. The contents are loaded at the
 * first checkpoint point, after setup, so setup cannot overwrite them.
 */
#ifndef GK_RESTORE_H
#define GK_RESTORE_H

#include "common/error.h"

#include "core/placement/arena.h"

#include <stdint.h>

/* Start choosing and verifying the checkpoint to restore, if any, in a
 * thread of its own (at the runtime's start, so that the check of every
 * checksum overlaps CUDA's start and the program's setup). */
void gk_restore_begin(void);

/* The answer of that check, waited for (or made here, if none was begun);
 * every function below settles it first. */
void gk_restore_prepare(void);

/* 1 while a restore is pending or done; the step it resumes from. */
int gk_restore_active(long *step);

/* Refused, and the settings say fail: the error to give back. */
int gk_restore_refused(void);

/* Give placement the seeder of every new arena (arena.h): the slice a
 * device must use (the checkpoint's, when a restore applies), the
 * checkpoint's allocations recreated in it, and giving the restore up when
 * the program's setup asks for something else than the checkpointed run did.
 * Called once, as the runtime loads, before anything is placed. */
void gk_restore_seed_arenas(void);

/* Load contents and host regions (at the first checkpoint point). 0, or a
 * negative errno when nothing was loaded; exits when a failure came half-way. */
int gk_restore_load(void);


struct gk_manifest;
struct gk_xfer_item;

/* The transfers (*nitems, one per part of an allocation) that load m's
 * allocations from the checkpoint in dir into the arenas, with each data file
 * opened once (*fds, one per m->files); adds the bytes to *bytes. Free both
 * with gk_restore_items_free. */
int gk_restore_items(const char *dir, const struct gk_manifest *m, struct gk_xfer_item **items,
		     size_t *nitems, int **fds, uint64_t *bytes, gk_error_t *err);
void gk_restore_items_free(const struct gk_manifest *m, struct gk_xfer_item *items, int *fds);

/* The refusals of restore's plan (exposed for the unit test,
 * tests/runtime/test-plan.c). gk_restore_check_set: a checkpoint chosen for
 * a member of the step's set (GPUCKPT_RESTORE_SET) must be that member's:
 * 0, or -EINVAL with err saying both. gk_restore_check_ready: this run must
 * have registered m's host regions at their sizes and allocated on each of
 * m's devices before its first checkpoint point: 0, or -EINVAL with why. */
int gk_restore_check_set(const struct gk_manifest *m, gk_error_t *err);
int gk_restore_check_ready(const struct gk_manifest *m, char *why, size_t len);

#endif
