/*
 * task_program.h - can the runtime be loaded into the program a task runs?
 *
 * The plugin puts the runtime into LD_PRELOAD. The dynamic loader honours it
 * for a dynamically linked program only, and not for one that is set-user-ID
 * or set-group-ID (it then runs in secure mode). Such a program is not
 * checkpointed at all: it cannot use the API, and in transparent mode the
 * signal reaches it before the shepherd can dump it. The job's output says so
 * when the task starts, rather than after the work is lost.
 */
#ifndef GK_TASK_PROGRAM_H
#define GK_TASK_PROGRAM_H

#include <stddef.h>

/*
 * Find the program a task runs: argv0 as execvp would (a name without '/'
 * along path, else relative to cwd). 0 with the path in out, or -ENOENT.
 */
int gk_program_find(const char *argv0, const char *path, const char *cwd, char *out, size_t len);

/*
 * 1 when the runtime can be loaded into the program at exe (a script, or a
 * dynamically linked ELF program that is not set-ID), 0 when it cannot, with
 * why ("is statically linked", "is set-user-ID"), or a negative errno when
 * the file cannot be read (nothing can be said then).
 */
int gk_program_preloadable(const char *exe, char *why, size_t len);

#endif
