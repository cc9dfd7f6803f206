/*
 * settings.h - the runtime's configuration: site defaults from a file, then
 * GPUCKPT_* environment variables (set by the Slurm plugin or the user) on top.
 *
 *	variable                    file key            default
 *	GPUCKPT_DIR                 dir                 (none: no checkpoint can be written)
 *	GPUCKPT_RESTORE             -                   (none: fresh start); a checkpoint
 *	                                                directory, or "auto": the newest
 *	                                                valid one under GPUCKPT_DIR
 *	GPUCKPT_ON_BAD_CHECKPOINT   on_bad_checkpoint   fail (or: fresh)
 *	GPUCKPT_KEEP                keep                2
 *	GPUCKPT_SIGNALS             signals             TERM:exit,USR1:continue
 *	GPUCKPT_INTERVAL            interval            0 (seconds; 0 = no periodic checkpoint)
 *	GPUCKPT_REQUIRE_SIGNATURE   require_signature   no
 *	GPUCKPT_VA_BASE             va_base             0x200000000000
 *	GPUCKPT_VA_SIZE             va_size             0x10000000000 (1 TiB per device)
 *	GPUCKPT_WRITERS             writers             auto: the processors of the task's
 *	                                                affinity, at least 4, at most 16
 *	                                                (or a number, 1 to 64)
 *	GPUCKPT_CHUNK_SIZE          chunk_size          8M
 *	GPUCKPT_COPY_PIECE          copy_piece          256K: a checkpoint's copies from the
 *	                                                device in pieces of this size, 4 in
 *	                                                flight per copy thread (0: a chunk)
 *	GPUCKPT_SNAPSHOT_MEMORY     snapshot_memory     auto (or: off, a size like 32G, or
 *	                                                a share like 25%); host memory for
 *	                                                checkpoints written in the background
 *	GPUCKPT_INCREMENTS          increments          4 (increments after a checkpoint
 *	                                                written whole; 0: every one whole)
 *	GPUCKPT_HASH_MODULE         hash_module         (none: the built-in kernel) a module
 *	                                                file with the change-key kernel
 *	GPUCKPT_LOG_LEVEL           log_level           notice
 *	GPUCKPT_ENABLE              enable              yes (no: pass every call through)
 *	GPUCKPT_MODE                mode                auto (or: app, transparent; see
 *	                                                runtime/shepherd/README.md)
 *	GPUCKPT_ASSIST              assist              yes (transparent mode: the runtime
 *	                                                writes device memory itself)
 *	GPUCKPT_SHEPHERD            -                   (none) the shepherd's socket, set by
 *	                                                the plugin when transparent mode is on
 *	GPUCKPT_NO_TRANSPARENT      -                   (none) why this node has no
 *	                                                transparent mode, set by the plugin
 *	GPUCKPT_TASKS               tasks               together (or: independent; a step of
 *	                                                several tasks checkpoints as one set,
 *	                                                runtime/image/setfile.h)
 *	GPUCKPT_AGREE_TIMEOUT       agree_timeout       300 (seconds a task waits for the
 *	                                                others to commit a set)
 *	GPUCKPT_STEP_TASKS          -                   1; the step's task count, set by the plugin
 *	GPUCKPT_TASK                -                   0; this task's index (SLURM_PROCID),
 *	                                                set by the plugin
 *	GPUCKPT_RESTORE_SET         -                   (none) the id of the set GPUCKPT_RESTORE
 *	                                                belongs to, set by the plugin: the
 *	                                                checkpoint must name it, and a refusal
 *	                                                stops the task (never a fresh start alone)
 *	GPUCKPT_CONFIG              -                   SYSCONFDIR/gpuckpt/gpuckpt.conf
 */
#ifndef GK_SETTINGS_H
#define GK_SETTINGS_H

#include "error.h"

#include <stddef.h>
#include <stdint.h>

#include "contract.h" /* enum gk_mode, the defaults of va_base, va_size, chunk_size */

#define GK_MAX_TRIGGERS 8

enum gk_trigger_action {
	GK_ACTION_CONTINUE = 0, /* checkpoint, then let the program go on */
	GK_ACTION_EXIT = 1,     /* checkpoint, then end the way the signal would have */
};

struct gk_trigger {
	int signo;
	enum gk_trigger_action action;
};

struct gk_settings {
	int enable;
	char dir[4096];
	char restore[4096];
	int restore_fresh_on_bad; /* on_bad_checkpoint=fresh */
	unsigned keep;
	struct gk_trigger triggers[GK_MAX_TRIGGERS];
	unsigned ntriggers;
	unsigned interval;
	int require_signature;
	uint64_t va_base;
	uint64_t va_size;
	unsigned writers;
	uint64_t chunk_size;
	uint64_t copy_piece; /* 0: a chunk */
	int snapshot_mode;         /* enum gk_snapshot_mode */
	uint64_t snapshot_bytes;   /* GK_SNAPSHOT_BYTES */
	unsigned snapshot_percent; /* GK_SNAPSHOT_PERCENT */
	unsigned increments;
	char hash_module[4096];
	int log_level;
	int mode; /* enum gk_mode */
	int assist;
	/* A step of several tasks (setfile.h). */
	int tasks_independent;   /* tasks=independent: each checkpoints and restores alone */
	unsigned agree_timeout;  /* seconds */
	unsigned step_tasks;     /* >= 1 */
	unsigned task;           /* < step_tasks */
	uint64_t restore_set;    /* restore_set_given: the set GPUCKPT_RESTORE belongs to */
	int restore_set_given;
	char shepherd[108];      /* abstract socket name, without the leading NUL */
	char no_transparent[512];
	char flush_dir[4096]; /* shared copy of dir, "" = no flush while running */
	uint64_t flush_rate;  /* bytes per second the flush may write, 0 = no limit */
};

enum gk_snapshot_mode {
	GK_SNAPSHOT_AUTO = 0,    /* half of the memory available, shared by the node's tasks */
	GK_SNAPSHOT_OFF = 1,     /* every checkpoint blocks the program until written */
	GK_SNAPSHOT_BYTES = 2,
	GK_SNAPSHOT_PERCENT = 3, /* of the memory available to the process */
};

/* The default number of writer threads: the processors this process may run
 * on (its affinity, as Slurm set it for the task), at least 4, at most 16. */
unsigned gk_settings_default_writers(void);

/* Fill with the built-in defaults. */
void gk_settings_defaults(struct gk_settings *s);

/*
 * Defaults, then the file (GPUCKPT_CONFIG, or the compiled-in path; a missing
 * default file is fine, a missing explicit one is not), then the environment.
 * On error (unknown key, bad value) returns -EINVAL and names key and value in err.
 */
int gk_settings_load(struct gk_settings *s, gk_error_t *err);

/* Apply one key=value (file key names). Used by the loader and by tests. */
int gk_settings_set(struct gk_settings *s, const char *key, const char *value, gk_error_t *err);

/* Parse "TERM:exit,USR1:continue". */
int gk_settings_parse_signals(struct gk_settings *s, const char *spec, gk_error_t *err);

/* Parse a size with an optional K/M/G/T suffix (powers of 1024). */
int gk_parse_size(const char *text, uint64_t *out);

#endif
