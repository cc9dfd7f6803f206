/*
 * procstat.h - a process's start time (field 22 of /proc/PID/stat, clock
 * ticks after boot): with its pid, what tells one process from a later one
 * that got the same pid. The runtime writes it into its events; whoever
 * reads them (`gpuckpt checkpoint`) checks that the process still runs.
 */
#ifndef GK_PROCSTAT_H
#define GK_PROCSTAT_H

#include <stdint.h>
#include <sys/types.h>

/* 0 and *ticks, or a negative errno (-ENOENT: no such process). */
int gk_proc_start(pid_t pid, uint64_t *ticks);

/* 1 when pid runs and started at `ticks`, else 0. */
int gk_proc_alive(pid_t pid, uint64_t ticks);

/* A process's state letter (R, S, D, Z, T, ...: field 3 of /proc/PID/stat)
 * and its number of threads (field 20). 0 or -errno. */
int gk_proc_state(pid_t pid, char *state, long *threads);

/* The state letter of thread tid of process pid (/proc/PID/task/TID/stat).
 * 0 or -errno (-ENOENT: the thread is gone). */
int gk_thread_state(pid_t pid, pid_t tid, char *state);

/* The real and effective uid of a process (/proc/PID/status). 0 or -errno. */
int gk_proc_uids(pid_t pid, uid_t *ruid, uid_t *euid);

#endif
