/*
 * start.c - loading the runtime into a process and starting it when the
 * process first uses CUDA or the gpuckpt API. The state it sets up lives in
 * runtime.c, where every part below can read it without calling up here.
 */
#include "config.h"

#include "core/control/start.h"
#include "common/error.h"
#include "core/state/runtime.h"
#include "core/interpose/gate.h"
#include "common/log.h"
#include "core/restore/restore.h"
#include "core/control/agent.h"
#include "core/interpose/exec_guard.h"
#include "core/control/trigger.h"
#include "core/state/eventlog.h"

#include <pthread.h>

/* Runs in every process of a job that has the runtime preloaded (shells,
 * tools): read the settings and nothing else. */
__attribute__((constructor)) static void gk_runtime_load(void)
{
	gk_error_t err;

	if (gk_settings_load(&gk_rt.settings, &err) < 0) {
		gk_error("settings: %s; gpuckpt is disabled in this process", err.text);
		return;
	}
	gk_rt.settings_ok = 1;
	/* Before the runtime is enabled, so before any arena exists. */
	gk_restore_seed_arenas();
	gk_log_set_level((enum gk_log_level)gk_rt.settings.log_level);
	gk_rt.enabled = gk_rt.settings.enable;
	if (gk_rt.enabled) {
		gk_rt.due = GK_DUE_FIRST;
		gk_eventlog_init();
	}
	if (gk_rt.enabled)
		gk_agent_prepare_env();
	/* Under the shepherd every process of the task takes the trigger
	 * signals now, not at its first CUDA call: one that never makes one
	 * (torchrun's launcher, a shell around the ranks) holds a trigger sent
	 * from outside for the shepherd to decide (trigger.c); at its default
	 * it ended the process while its tree was being checkpointed. */
	if (gk_rt.enabled && gk_rt_shepherded())
		gk_triggers_install();
	gk_exec_guard_arm();
}

static void start_once(void)
{
	gk_gate_init();
	/* Without a directory no checkpoint can be written: the signals keep
	 * their usual meaning then. */
	if (gk_rt.settings.dir[0]) {
		gk_triggers_install();
		/* Tells `gpuckpt checkpoint` this process will answer its signal. */
		gk_eventlog_start();
	}
	gk_agent_start();
	/*
	 * The check of the checkpoint to restore runs in a thread while CUDA
	 * starts and the program sets itself up (restore.c). Not earlier, at
	 * load: every process of the task loads the runtime (shells, tools),
	 * and a thread running while a program starts races with what is not
	 * thread-safe there (setlocale at the start of ls and bash corrupted
	 * the heap of a check running meanwhile).
	 */
	gk_restore_begin();
	__atomic_store_n(&gk_rt.started, 1, __ATOMIC_RELEASE);
}

void gk_runtime_start(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (gk_enabled())
		pthread_once(&once, start_once);
}
