/*
 * exec_guard.h - the runtime's execve() and friends: a line in the job's
 * output when the task's own process starts a program without the runtime
 * (exec_guard.c says which cases are seen).
 */
#ifndef GK_EXEC_GUARD_H
#define GK_EXEC_GUARD_H

/* After the settings are loaded (start.c): guard this process if it is a
 * task's with checkpointing on. */
void gk_exec_guard_arm(void);

#endif
