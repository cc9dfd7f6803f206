/*
 * phase.h - the phases of a checkpoint (pipeline.c runs them) and the hooks
 * by which a concern takes part in them, as DMTCP's plugin events or CRIU's
 * plugin hooks do: tracking refuses what cannot be saved, peer access says
 * what the runtime's own dump cannot hold, flush hears of every commit,
 * coordination refuses a task's lone checkpoint, OpenCL drains its queues
 * and copies its buffers. The pipeline never calls a concern by name; nor
 * does the restore, which asks each concern to check its own state before
 * anything is loaded and tells it when everything was (restore_check,
 * restored).
 *
 * The lowest layer: it includes nothing of the runtime, so that any module
 * may register (each registers its hooks at load time, from a constructor;
 * GK_PHASE_HOOKS below) and plan.c, below the pipeline, may say a commit.
 */
#ifndef GK_PHASE_H
#define GK_PHASE_H

#include <stddef.h>

/* Which checkpoint: the program's own (gpuckpt_point), a member of a step's
 * set (gpuckpt_coord_write), or the transparent agent's (agent.c). */
enum gk_ckpt_kind {
	GK_CKPT_APP,
	GK_CKPT_MEMBER,
	GK_CKPT_TRANSPARENT,
};

/* In the order they run. The hooks' `before` runs at the start of each;
 * from GK_PHASE_DRAIN on the gate is closed. */
enum gk_phase {
	GK_PHASE_ADMIT,	   /* may this checkpoint be taken at all */
	GK_PHASE_FOLDER,   /* a checkpoint folder is set */
	GK_PHASE_WRITER,   /* a background write in flight: defer, or wait */
	GK_PHASE_REFUSE,   /* what this process holds that cannot be saved */
	GK_PHASE_DRAIN,	   /* close the gate, drain every stream */
	GK_PHASE_HOLD,	   /* transparent: what the runtime's own dump cannot hold */
	GK_PHASE_DESCRIBE, /* the manifest and a new .tmp folder */
	GK_PHASE_CHANGES,  /* what changed since the baseline */
	GK_PHASE_LAYOUT,   /* the changed chunks laid out in files */
	GK_PHASE_SNAPSHOT, /* app: copied to host memory, the rest in the background */
	GK_PHASE_WRITE,	   /* the data written (by the writer, after a snapshot) */
	GK_PHASE_COMMIT,   /* committed (transparent: sealed, left for the shepherd) */
	GK_PHASE_COUNT
};

/* What a hook that stops a checkpoint says: `why` ("" when the hook logged
 * its own words), worded by the pipeline for the checkpoint's kind, and for
 * the shepherd one word of its protocol (shepherd_protocol.h) or NULL. */
struct gk_phase_verdict {
	char why[1024];
	const char *word;
};

struct gk_manifest;

struct gk_phase_hooks {
	const char *name;
	int order; /* hooks run in increasing order (registration order on ties) */
	/* At the start of `phase`: 0 to go on, or a negative errno to stop the
	 * checkpoint there, the reason in *v. NULL: takes part in no phase. */
	int (*before)(enum gk_phase phase, enum gk_ckpt_kind kind, struct gk_phase_verdict *v);
	/* A checkpoint was committed in the folder (in the pause or by the
	 * background writer). Never blocks. NULL: not told. */
	void (*committed)(void);
	/* A restore of the checkpoint in dir (manifest m) is about to load:
	 * 0, or a negative errno and why (the restore is then refused, before
	 * anything is loaded). NULL: not asked. */
	int (*restore_check)(const char *dir, const struct gk_manifest *m, char *why, size_t len);
	/* The restore has loaded device memory and host regions, the gate still
	 * closed: 0, or a negative errno and why (the program is stopped: its
	 * state is half-restored). NULL: not told. */
	int (*restored)(char *why, size_t len);
	/* Transparent mode: CRIU restored this process from the checkpoint
	 * ckpt (its path), the gate still closed; the program goes on after
	 * every hook was told. NULL: not told. */
	void (*resumed)(const char *ckpt);
};

/* Register h (kept by pointer); at load time or before any checkpoint, from
 * one thread. -ENOSPC when the table is full. */
int gk_phase_register(const struct gk_phase_hooks *h);
/* Take h out again (tests). */
void gk_phase_unregister(const struct gk_phase_hooks *h);

/* Every hook's `before` for phase, in order, until one stops: its answer (0
 * when none did). v is cleared first. */
int gk_phase_before(enum gk_phase phase, enum gk_ckpt_kind kind, struct gk_phase_verdict *v);

/* Tell every hook of a commit. */
void gk_phase_committed(void);

/* Every hook's restore_check, in order, until one refuses: its answer. */
int gk_phase_restore_check(const char *dir, const struct gk_manifest *m, char *why, size_t len);

/* Every hook's restored, in order, until one fails: its answer. */
int gk_phase_restored(char *why, size_t len);

/* Tell every hook, in order, that CRIU restored the process from ckpt. */
void gk_phase_resumed(const char *ckpt);

/* "describe", for messages and tests. */
const char *gk_phase_name(enum gk_phase phase);

/* Register hooks when the library is loaded. */
#define GK_PHASE_HOOKS(hooks)                                                                      \
	__attribute__((constructor)) static void gk_phase_hooks_register_(void)                    \
	{                                                                                          \
		gk_phase_register(&(hooks));                                                       \
	}

#endif
