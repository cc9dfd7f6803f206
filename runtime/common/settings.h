/*
 * settings.h - the runtime's configuration: the built-in defaults, then the
 * site file (GPUCKPT_CONFIG, or SYSCONFDIR/gpuckpt/gpuckpt.conf), then the
 * GPUCKPT_* environment variables (set by the Slurm plugin or the user) on top.
 *
 * The variables, their gpuckpt.conf keys (the name in lower case without
 * GPUCKPT_), types, ranges, defaults and a line of help for each are the
 * GK_CONF and GK_CONF_SITE rows of settings.def, the one list; settings.c
 * parses each key in conf_<key>(), dispatched from that table, and applies
 * the environment in the table's order. gpuckpt.conf(5) documents them
 * (tests/man/settings-table.sh checks it against the table).
 */
#ifndef GK_SETTINGS_H
#define GK_SETTINGS_H

#include "common/error.h"

#include <stddef.h>
#include <stdint.h>

#include "common/contract.h" /* enum gk_mode, the defaults of va_base, va_size, chunk_size */

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
	int tasks_nccl;          /* tasks=nccl: one set, transparently, cut through NCCL */
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
