/* agent.h - the runtime's part of transparent mode (agent.c). */
#ifndef GK_AGENT_H
#define GK_AGENT_H

/* Start the runtime's transparent thread when the process runs under a
 * shepherd (GPUCKPT_SHEPHERD) and the mode allows it. */
void gk_transparent_start(void);

/* The thread is there: every trigger signal is reported to it. */
int gk_transparent_running(void);

/* A trigger signal now means a transparent checkpoint (the thread is there,
 * and the mode says so for this process). */
int gk_transparent_takes(void);

/* From a signal handler (async-signal-safe): wake the thread. */
void gk_transparent_signal(int signo);

#endif
