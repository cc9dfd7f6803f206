/*
 * pipeline.h - the checkpoint sequence, written once (pipeline.c):
 *
 *   admit      may it be taken at all (hooks: coordination)
 *   folder     a checkpoint folder is set
 *   writer     a background write in flight: the application's checkpoint
 *              is deferred (or, at exit, waits), a set member's waits
 *   refuse     what this process holds that cannot be saved (hooks: tracking)
 *   drain      the gate closes, every stream drains; a broken context ends it
 *   hold       transparent: whether the runtime's own dump holds everything,
 *              or the driver copies device memory (hooks: peer access,
 *              tracking)
 *   describe, changes, layout   (plan.h)
 *   snapshot   app: when the process goes on and the changed chunks fit in
 *              pinned host memory, they are copied there, the gate opens,
 *              and the writer's thread runs the last two phases
 *   write, commit   (plan.h)
 *
 * Concerns take part through phase.h, never by name. The three kinds differ
 * only by struct gk_pipeline_opts. Whatever phase fails, the previous
 * checkpoints are untouched (the .tmp folder goes) and the gate is open
 * again - but for a transparent checkpoint, whose gate stays closed until
 * the agent is done with the shepherd (gk_pipeline_release).
 */
#ifndef GK_PIPELINE_H
#define GK_PIPELINE_H

#include "common/error.h"
#include "image/image.h"
#include "core/state/phase.h"
#include "core/capture/plan.h"

#include <cuda.h>
#include <stdint.h>

/* A checkpoint due while the previous one is still being written: taken at
 * the first checkpoint point after that (app). */
#define GK_PIPELINE_DEFERRED 1

/* A member of a step's checkpoint set (runtime/image/setfile.h). */
struct gk_member {
	uint64_t sequence; /* the agreed N */
	uint64_t id;	   /* the set's id */
	uint32_t members, member;
	const char *agreement;
};

struct gk_pipeline_opts {
	enum gk_ckpt_kind kind;
	long step;
	int exiting;			/* app: the process ends after it */
	/* member: the set, above; transparent: the NCCL cut's set
	 * (interpose/nccl.h), or NULL. */
	const struct gk_member *member;
	int assist;			/* transparent: the runtime writes device memory */
	const char *label;		/* transparent: the manifest's label */
};

/* One checkpoint under way: all the pipeline's state. */
struct gk_pipeline {
	struct gk_pipeline_opts o;
	enum gk_phase next; /* the phase gk_pipeline_step runs */
	int done;	    /* finished: ret is the answer */
	int ret;	    /* 0, GK_PIPELINE_DEFERRED, or a negative errno */
	int gate_closed;
	struct gk_plan *p; /* app/member: allocated (the writer may take it); transparent: &own */
	struct gk_plan own;
	gk_error_t err;
	struct gk_phase_verdict v; /* what stopped it, if a hook did */
	CUresult broken;	   /* drain: the sticky error of a broken context */
	double t0, t_gate, t_drained, t_planned, t_written, t_image, t_seal;
	uint64_t grow_to;
	int timed;	/* app/member: the info line of a blocking write */
	int background; /* app: the write goes on in the background */
	int in_writer;	/* app: this is the writer thread\'s copy, for the last phases */
	/* transparent: the image sealed in txn, left uncommitted */
	int assisted, sealed, is_signed;
	struct gk_store_txn txn;
	struct gk_manifest *m;
	uint64_t bytes;	     /* transparent: device data and host regions written */
	uint64_t zero_bytes; /* transparent: all-zero chunks recorded, not written */
};

/* Start a checkpoint of o's kind (nothing done yet; t0 is now). */
void gk_pipeline_init(struct gk_pipeline *P, const struct gk_pipeline_opts *o);

/* Run the next phase; 1 when the checkpoint is finished (P->ret), else 0. */
int gk_pipeline_step(struct gk_pipeline *P);

/* Every phase to the end; P->ret. */
int gk_pipeline_run(struct gk_pipeline *P);

/* Transparent: after the shepherd, open the gate and free the manifest. */
void gk_pipeline_release(struct gk_pipeline *P);

/* Drain every device; -ENOTRECOVERABLE, the error in *broken and nothing
 * logged, when a context has a sticky error (gk_cu_broken). */
int gk_pipeline_drain(CUresult *broken);

/* A context to pin snapshot memory in: the first device's (NULL: none). */
CUcontext gk_pipeline_some_context(void);

#endif
