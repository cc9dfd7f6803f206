/*
 * plan.h - a checkpoint on its way from the devices to storage, in the
 * steps that pipeline.c (the pause) and writer.c (the background) share:
 *
 *   describe   every live allocation and registered host region, into a new
 *              manifest and a new .tmp checkpoint folder     (gate closed)
 *   changes    each chunk's change key; a chunk whose key is the baseline's
 *              is not written again: it lies where the baseline has it
 *                                                            (gate closed)
 *   layout     the changed chunks spread over a file per copy thread
 *   write      the changed chunks from the device (blocking) or from their
 *              snapshot in host memory (background), and the host regions
 *   commit     parts and references from where every chunk lies, the
 *              manifest, the rename; the checkpoint becomes the baseline
 *
 * A plan that fails at any step is freed: its .tmp folder goes, the previous
 * checkpoints and the baseline are untouched.
 */
#ifndef GK_PLAN_H
#define GK_PLAN_H

#include "common/error.h"

#include "core/capture/changes.h"
#include "image/image.h"
#include "core/capture/transfer.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* One allocation of the plan, beside its record m->allocs[i]. */
struct gk_plan_alloc {
	CUcontext ctx;
	int ordinal;
	uint8_t *changed;          /* per chunk: written by this checkpoint */
	uint8_t *zero;		   /* per chunk: all zero, recorded, not written */
	struct gk_chunk_loc *locs; /* per chunk: where it lies (own: sequence 0) */
};

/* A host region: the program's memory (blocking), or a copy of it taken in
 * the pause (background). */
struct gk_plan_region {
	char name[GK_NAME_MAX];
	const void *addr;
	size_t size;
	void *copy; /* malloc'ed; freed with the plan */
};

struct gk_plan {
	struct gk_manifest *m;
	struct gk_plan_alloc *a; /* na of them, m->allocs[i] beside a[i] */
	size_t na;
	struct gk_plan_region *regions;
	size_t nregions;
	struct gk_store_txn txn;
	int began;      /* txn open */
	const struct gk_manifest *base; /* what unchanged chunks refer to, or NULL */
	enum gk_keys_where keys;        /* how the change keys were found */
	struct gk_xfer_item *items;     /* the changed chunks, laid out in files */
	size_t nitems;
	int *fds;                       /* one per own data file */
	size_t nfds;
	uint64_t state_bytes;   /* device data and host regions: the whole state */
	uint64_t changed_bytes; /* device data written by this checkpoint */
	uint64_t zero_bytes;	/* device data found all zero: recorded, not written */
	uint64_t region_bytes;
	double t_start;         /* when the checkpoint began (the pause) */
	double paused;          /* how long the program was held (set by pipeline.c) */
	int background;         /* written after the pause, by the writer */
	int exiting;            /* the exit checkpoint (for messages) */
};

/* What a commit did, for the log line. */
struct gk_plan_result {
	uint64_t sequence;
	int is_signed;
	size_t nallocs, nregions;
	unsigned ndevices;
	uint32_t increment;
	uint64_t base_sequence; /* the baseline it was built on (an increment) */
};

/* Start a checkpoint: a .tmp folder, and the manifest of every live
 * allocation (device_data 0: devices only) and host region. Gate closed. */
int gk_plan_describe(struct gk_plan *p, long step, int device_data, gk_error_t *err);

/* The same under a given sequence number (a step's agreed set; 0: the next
 * free one, as gk_plan_describe). */
int gk_plan_describe_at(struct gk_plan *p, long step, int device_data, uint64_t sequence,
			gk_error_t *err);

/* Change keys and what changed since `base` (NULL: everything is written;
 * want_keys 0: no keys either). host_keys allows the host fallback. Gate
 * closed. Chunks whose bytes are all zero are recorded, not written (a zero
 * part, format 5), wherever a pass over the data finds them: the hash kernel
 * (run for that alone when no keys are wanted: it costs device-memory
 * bandwidth, no copy), or the host fallback's copy. */
int gk_plan_changes(struct gk_plan *p, const struct gk_manifest *base, int want_keys,
		    int host_keys);

/* Lay the changed chunks out in files (created in the .tmp folder) and make
 * the transfer items for them. */
int gk_plan_layout(struct gk_plan *p, unsigned writers, gk_error_t *err);

/* Copy the host regions (for a write after the pause). Gate closed. */
int gk_plan_copy_regions(struct gk_plan *p, gk_error_t *err);

/* Write the changed chunks (from wherever the items say) and the regions. */
int gk_plan_write(struct gk_plan *p, unsigned writers, gk_error_t *err);

/* Parts, references, manifest, commit, prune to `keep`; on success the
 * manifest becomes the baseline (p->m is then NULL) and *res says what was
 * committed. */
int gk_plan_commit(struct gk_plan *p, unsigned keep, struct gk_plan_result *res, gk_error_t *err);

/* The checkpoint's line in the log: what was written, or (ret < 0) why
 * nothing was. */
void gk_plan_say(const struct gk_plan *p, int ret, const struct gk_plan_result *res,
		 const char *err);

/* The same without the commit, for transparent mode: parts set, the .tmp
 * folder left open in p->txn for the caller to seal (pipeline.c, the transparent kind). */
int gk_plan_finish_uncommitted(struct gk_plan *p, gk_error_t *err);

/* Free everything; an uncommitted .tmp folder is removed. */
void gk_plan_free(struct gk_plan *p);

#endif
