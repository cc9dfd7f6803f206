/*
 * start.h - loading the runtime into a process and starting it (start.c).
 *
 * The top of the runtime: loading reads the settings, and starting calls
 * down into every part that has work to do from the first use of CUDA or of
 * the API on (triggers, the transparent agent, the restore check). Only the
 * entry points (interpose.c, api.c) call it; nothing below includes it.
 */
#ifndef GK_START_H
#define GK_START_H

/* Called at the first use of CUDA or of the API, in any thread; runs once. */
void gk_runtime_start(void);

#endif
