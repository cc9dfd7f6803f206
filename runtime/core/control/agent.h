/*
 * agent.h - the runtime's agent in transparent mode (agent.c): a thread that
 * answers the trigger signals by checkpointing the whole process with the
 * shepherd. It registers itself with the triggers (trigger.h) when it starts.
 */
#ifndef GK_AGENT_H
#define GK_AGENT_H

/* Start the agent's thread when the process runs under a shepherd
 * (GPUCKPT_SHEPHERD) and the mode allows it. */
void gk_agent_start(void);
/* Sets the variables a transparent checkpoint needs in the program's
 * environment (CRIU cannot carry what they turn off); called at load. */
void gk_agent_prepare_env(void);

#endif
