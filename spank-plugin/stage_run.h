/*
 * stage_run.h - running the staging program (scheduler-hooks/stage,
 * gpuckpt-stage) from the plugin's prolog and epilog callbacks, as root on
 * the node, with the site's settings from plugstack.conf as its arguments,
 * so the program and the plugin can never disagree about where checkpoints
 * live:
 *
 *	gpuckpt-stage in|out --job ID --uid UID --gid GID --bb-root DIR
 *	              --shared-root DIR --keep N
 *
 * Its output (one line per event or problem) goes to the caller line by line,
 * for Slurm's log. It runs in a process group of its own, which is killed
 * whole when it takes longer than the site's stage_timeout.
 */
#ifndef GK_STAGE_RUN_H
#define GK_STAGE_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "site_args.h"

typedef void (*gk_line_fn)(void *arg, const char *line);

#define GK_STAGE_MAXARGS 20

/* The script's argument vector in argv (at most GK_STAGE_MAXARGS entries,
 * NULL-terminated), its strings in buf. -ENAMETOOLONG if buf is too small. */
int gk_stage_argv(const struct gk_site *s, const char *verb, uint32_t job_id, uid_t uid, gid_t gid,
		  char *argv[], char *buf, size_t buflen);

/* Copy items[0..n) into buf as a NULL-terminated argv (argv has n + 1
 * slots). -ENAMETOOLONG if buf is too small. */
int gk_pack_argv(const char *const *items, int n, char *argv[], char *buf, size_t buflen);

/*
 * Run argv[0] with argv, stdin from /dev/null, stdout and stderr handed to fn
 * line by line. Returns the exit status (0-255), 128+N when killed by signal
 * N, -ETIME when it was still running after timeout seconds (it and
 * everything it started are then killed; 0: no limit), or a negative errno
 * when it could not be started. After the kill, the end of its output and
 * its exit are waited for 5 s at most: a process that left its group and
 * holds the pipe, or one stuck in the kernel, does not hold the caller (a
 * Slurm callback).
 */
int gk_run_logged(char *const argv[], unsigned timeout, gk_line_fn fn, void *arg);

#endif
