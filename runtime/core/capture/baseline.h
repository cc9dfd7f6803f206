/*
 * baseline.h - the checkpoint that the next one builds on: the newest
 * checkpoint this process committed (or restored from) in its checkpoint
 * root, kept as its manifest, with the change key of every chunk. An
 * increment writes the chunks whose key differs from the baseline's and
 * refers to the files that hold the others (plan.c).
 *
 * Contract: the baseline only changes when a checkpoint commits (the
 * checkpoint that planned against it is the one that replaces it) or when a
 * restore completes; both happen while no other checkpoint is being planned
 * (a checkpoint due during a background write waits for it), so a plan may
 * keep the pointer gk_baseline_get gave it until it commits.
 */
#ifndef GK_BASELINE_H
#define GK_BASELINE_H

#include "image/image.h"

#include <stdint.h>

/* The baseline, or NULL: none yet, or none usable (no change keys, another
 * root, its manifest unreadable). The first call after a restore reads the
 * restored checkpoint's manifest. */
const struct gk_manifest *gk_baseline_get(void);

/* A checkpoint was committed: m (with its sequence, keys and references)
 * becomes the baseline; the baseline takes it over. Without change keys it
 * cannot be built on, and the next checkpoint is written whole. */
void gk_baseline_set(struct gk_manifest *m);

/* The program was restored from the checkpoint in `dir`, sequence `seq`:
 * the next checkpoint may build on it, if it lies in the checkpoint root. */
void gk_baseline_restored(const char *dir, uint64_t seq);

/* The allocation of b at (device, address), or NULL. */
const struct gk_alloc_rec *gk_baseline_alloc(const struct gk_manifest *b, int device,
					     uint64_t address);

/* The id and the size of `file` of checkpoint `sequence` as b knows them (b
 * itself or one of its references): 0, or -ENOENT. */
int gk_baseline_file(const struct gk_manifest *b, uint64_t sequence, const char *file,
		     const char **id, uint64_t *size);

#endif
