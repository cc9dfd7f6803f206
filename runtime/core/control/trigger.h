/*
 * trigger.h - what asks for a checkpoint: the configured signals (SIGTERM and
 * SIGUSR1 by default), a periodic timer, the API. A signal only sets a flag;
 * the checkpoint is written at the program's next checkpoint point, outside
 * any signal handler.
 *
 * The runtime keeps its handler installed for those signals: sigaction() and
 * signal() calls of the program for them are recorded instead, and the
 * program's handler is called from the runtime's (chained), so the program
 * sees its signals as before.
 */
#ifndef GK_TRIGGER_H
#define GK_TRIGGER_H

/* Take over the configured signals (once). */
void gk_triggers_install(void);

/* Start the periodic timer, if an interval is set (once). */
void gk_trigger_interval_start(void);

/* After the checkpoint asked for by a terminating signal: end the process the
 * way that signal would have, had the runtime not deferred it. */
void gk_trigger_finish_exit(int signo) __attribute__((noreturn));

/*
 * What checkpoints the whole process on a trigger signal instead of the
 * program (the transparent agent, agent.c). It registers itself once its
 * thread runs; from then on the handler reports every trigger signal to it.
 * Registering, rather than this module calling the agent, keeps the agent
 * above the triggers: it calls down here (gk_trigger_as_usual,
 * gk_signal_name), never the other way.
 */
struct gk_trigger_taker {
	/* From the signal handler (async-signal-safe): signo came. */
	void (*signal)(int signo);
	/* Whether a trigger signal now means the taker's checkpoint. */
	int (*takes)(void);
};
void gk_trigger_set_taker(const struct gk_trigger_taker *t);

/*
 * In a child forked without exec (from a pthread_atfork child handler; the
 * runtime's thread is not in the child, fork copies only the calling
 * thread): no taker is left, and a trigger signal sent from outside the
 * process and its parent is held instead of taking its course. Slurm sends
 * SIGTERM to every process of the step: a PyTorch DataLoader worker killed
 * by it made its parent raise, inside the checkpoint. The shepherd dumps
 * the child as it is, or sends the signal again "as usual"
 * (GK_SIGVAL_AS_USUAL) when it took no checkpoint. Async-signal-safe.
 */
void gk_triggers_follow(void);

/* The name of a signal, "SIGTERM". */
const char *gk_signal_name(int signo);

/* A transparent checkpoint did not happen: let signo do what it does without
 * gpuckpt (the program's handler, or the default action) - except a continue
 * trigger left at its default, which then ends nothing: the program goes on,
 * as an application-mode program does after a refused checkpoint. */
void gk_trigger_as_usual(int signo);

#endif
