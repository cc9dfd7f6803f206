/*
 * runtime.h - the state of the runtime in one process, and how its parts meet.
 * Every part may read it: it calls nothing (loading and starting the runtime
 * are start.c's, at the top).
 *
 * Life of a process under gpuckpt:
 *  - load (constructor in start.c): settings are read; nothing else happens,
 *    so shells and tools started in a job with LD_PRELOAD pay nothing.
 *  - first use of CUDA (cuInit) or of the API: signals are taken over
 *    (trigger.c) and, when this run is a restart, a thread starts choosing and
 *    verifying the checkpoint (restore.c), waited for at the first allocation.
 *  - every device allocation is placed by the arena of its device (arena.c).
 *  - gpuckpt_point() (api.c) writes a checkpoint (dump.c, pipeline.c) when one is due, or
 *    loads one (restore.c) on the first call of a restart.
 */
#ifndef GK_RUNTIME_H
#define GK_RUNTIME_H

#include "common/settings.h"

#include <stdint.h>

/* What gpuckpt_point() has to do; any bit set sends it off the fast path. */
enum {
	GK_DUE_CHECKPOINT = 1,
	GK_DUE_RESTORE = 2,
	GK_DUE_FIRST = 4, /* the first call: marks the program checkpoint-aware */
};

struct gk_runtime {
	int enabled;       /* 0: every call passes straight through */
	int settings_ok;
	struct gk_settings settings;
	int started;       /* CUDA or the API has been used */
	int cuda_inited;   /* cuInit succeeded in this process (interpose.c) */
	int aware;         /* the program uses the gpuckpt API */
	int due;           /* GK_DUE_* bits, set from signal handlers and threads */
	int exit_signo;    /* end by this signal after the next checkpoint */
	long points;       /* checkpoint points reached */
	/* CLOCK_MONOTONIC nanoseconds of the last checkpoint written (0: none):
	 * the periodic timer counts from it, so a checkpoint taken for another
	 * reason (a signal, another task of the step) pushes the next one back. */
	int64_t last_checkpoint_ns;
	/* What the checkpoint pipeline remembers between checkpoints (pipeline.c). */
	struct {
		int deferred;     /* checkpoints deferred since the last one taken */
		int said_off;     /* said: no host memory for snapshots */
		int said_too_big; /* said: a checkpoint did not fit in it */
	} ckpt;
};

extern struct gk_runtime gk_rt;

/* The executable of this process, as recorded in checkpoints ("" if unknown). */
void gk_program_exe(char *exe, size_t len);

/* The checkpoint directory's name for messages: the settings' dir or "(none)". */
const char *gk_runtime_dir(void);

static inline int gk_enabled(void)
{
	return __builtin_expect(gk_rt.enabled, 1);
}

/* 1 when this process runs under gpuckpt-shepherd for transparent mode
 * (GPUCKPT_SHEPHERD and a checkpoint directory set, not application mode):
 * whatever it is, a CUDA program or a shell or launcher around one, the
 * shepherd checkpoints it with its task's tree. */
static inline int gk_rt_shepherded(void)
{
	return gk_rt.settings.shepherd[0] && gk_rt.settings.dir[0] &&
	       gk_rt.settings.mode != GK_MODE_APP;
}

#endif
