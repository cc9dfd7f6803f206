/*
 * eventlog.h - the runtime's own lines in GPUCKPT_DIR/gpuckpt.events
 * (runtime/common/events.h): that it started in this process, and each
 * checkpoint and restore, taken, failed or refused. Read by the plugin's
 * epilog (the job's AdminComment, the node's metrics) and by
 * `gpuckpt checkpoint` (which waits for them).
 *
 * Best effort: a line that cannot be written is dropped (said once at info
 * level); the program and its checkpoints never depend on it. Past
 * GK_EVENTS_FILE_MAX bytes nothing more is appended.
 */
#ifndef GK_EVENTLOG_H
#define GK_EVENTLOG_H

#include <stdint.h>

#include "common/events.h"

/* Once per process, from the runtime's start: the time origin of `elapsed`. */
void gk_eventlog_init(void);

/* The runtime is active in this process (triggers installed). */
void gk_eventlog_start(void);

/* A checkpoint: ret 0 (written as ckpt.seq), -ENOTSUP (refused: something
 * in the process cannot be checkpointed) or another negative errno (failed). */
void gk_eventlog_checkpoint(int ret, uint64_t seq, uint64_t bytes, double seconds, unsigned gpus);

/* A restore: result, the ckpt.N loaded (has_ckpt), bytes, seconds, errno. */
void gk_eventlog_restore(enum gk_event_result result, int has_ckpt, uint64_t seq, uint64_t bytes,
			 double seconds, int err);

#endif
