/*
 * api.c - gpuckpt.h: registering host regions (kept in regions.c), the
 * checkpoint point, requests; and the two entry points of gpuckpt_coord.h
 * that start the runtime or reach a point (the rest is coord.c's).
 */
#include "config.h"

#include "include/gpuckpt.h"
#include "include/gpuckpt_coord.h"
#include "core/state/kstop.h"
#include "core/state/regions.h"
#include "core/control/coord.h"
#include "core/control/dump.h"
#include "common/log.h"
#include "core/restore/restore.h"
#include "core/state/runtime.h"
#include "core/control/start.h"
#include "core/interpose/ipc.h"
#include "core/control/trigger.h"
#include "common/export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int valid_name(const char *name)
{
	size_t n = 0;

	if (!name || !*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	for (const char *p = name; *p; p++, n++) {
		char c = *p;

		if (n >= GK_NAME_MAX - 1)
			return 0;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return 0;
	}
	return 1;
}

static void become_aware(void)
{
	__atomic_store_n(&gk_rt.aware, 1, __ATOMIC_RELEASE);
	gk_runtime_start();
}

GK_EXPORT int gpuckpt_protect(const char *name, void *addr, size_t size)
{
	if (!valid_name(name)) {
		gk_error("protect: '%s': a region name is 1-63 letters, digits, '_', '-' or '.'",
			 name ? name : "(null)");
		return -EINVAL;
	}
	if (!addr && size) {
		gk_error("protect: '%s': NULL address", name);
		return -EINVAL;
	}
	/* The runtime's own regions (managed memory, interpose/managed.h). */
	if (!strncmp(name, "gpuckpt.", 8)) {
		gk_error("protect: '%s': names starting with 'gpuckpt.' are the runtime's", name);
		return -EINVAL;
	}
	if (!gk_enabled())
		return 0;
	become_aware();
	return gk_regions_set(name, addr, size);
}

GK_EXPORT int gpuckpt_unprotect(const char *name)
{
	int ret;

	if (!name || !strncmp(name, "gpuckpt.", 8))
		return -EINVAL;
	ret = gk_regions_remove(name);
	return gk_enabled() ? ret : 0;
}

/* What a checkpoint point does before any checkpoint: marks the program
 * checkpoint-aware at the first call, loads a pending restore
 * (GPUCKPT_RESTORED). *due gets the GK_DUE_* bits left; the checkpoint bit is
 * not consumed. */
static int point_prepare(int *due_out)
{
	int due;

	due = __atomic_fetch_and(&gk_rt.due, ~GK_DUE_FIRST, __ATOMIC_ACQ_REL);
	if (due & GK_DUE_FIRST) {
		become_aware();
		/* The restore check's answer sets GK_DUE_RESTORE. */
		gk_restore_prepare();
		gk_trigger_interval_start();
		/* The restore bit may have been set by the start just now. */
		due |= __atomic_load_n(&gk_rt.due, __ATOMIC_ACQUIRE);
	}
	if (due & GK_DUE_RESTORE) {
		__atomic_and_fetch(&gk_rt.due, ~GK_DUE_RESTORE, __ATOMIC_ACQ_REL);
		/* A checkpoint asked for meanwhile stays due, for the next point. */
		if (gk_restore_load() == 0) {
			gk_dump_prepare();
			/* Processes that map this one's memory may read it now;
			 * this one reads theirs once they have loaded it. */
			gk_ipc_settle(1);
			gk_ipc_wait_exporters();
			*due_out = __atomic_load_n(&gk_rt.due, __ATOMIC_ACQUIRE);
			return GPUCKPT_RESTORED;
		}
	}
	if (due & GK_DUE_FIRST)
		gk_ipc_settle(0); /* started afresh (or its restore was given up) */
	*due_out = __atomic_load_n(&gk_rt.due, __ATOMIC_ACQUIRE);
	/* After the first point's restore, not during it: the load pins its
	 * own buffers, which are then kept. */
	if ((due & GK_DUE_FIRST) && !(*due_out & GK_DUE_CHECKPOINT))
		gk_dump_prepare();
	return GPUCKPT_NOTHING;
}

static int point_slow(long step)
{
	int due, ret, exiting, background;

	ret = point_prepare(&due);
	if (ret == GPUCKPT_RESTORED || !(due & GK_DUE_CHECKPOINT))
		return ret;
	/* The step's tasks agree through a layer (gpuckpt_mpi_point): it takes
	 * the checkpoint at its own point, at the same one in every task. */
	if (gk_coord_attached())
		return GPUCKPT_NOTHING;
	__atomic_and_fetch(&gk_rt.due, ~GK_DUE_CHECKPOINT, __ATOMIC_ACQ_REL);
	/* Marked kernels launched from now on run on (gpuckpt_kernel.h). */
	gk_kstop_clear();
	exiting = __atomic_load_n(&gk_rt.exit_signo, __ATOMIC_ACQUIRE) != 0;
	background = 0;
	/* The step's tasks that cannot agree refuse here (coord.c's hook). */
	ret = gk_dump(step, exiting, &background);
	if (ret == GK_DUMP_DEFERRED) {
		/* Still due: taken at a point after the write in flight. */
		__atomic_or_fetch(&gk_rt.due, GK_DUE_CHECKPOINT, __ATOMIC_RELEASE);
		return GPUCKPT_NOTHING;
	}
	/* A terminating signal that came while a checkpoint went to the
	 * background is left due: the next point waits for that write and ends
	 * with a checkpoint known to be committed. */
	if (!background) {
		int signo = __atomic_exchange_n(&gk_rt.exit_signo, 0, __ATOMIC_ACQ_REL);

		if (signo)
			gk_trigger_finish_exit(signo);
	}
	/* gk_dump said why; the program's state is untouched (gpuckpt.h). */
	return ret < 0 ? GPUCKPT_NOT_SAVED : GPUCKPT_SAVED;
}

GK_EXPORT int gpuckpt_point(long step)
{
	/* The common case: one load, nothing due. */
	if (__builtin_expect(!__atomic_load_n(&gk_rt.due, __ATOMIC_ACQUIRE), 1))
		return GPUCKPT_NOTHING;
	return point_slow(step);
}

/* The entry points of gpuckpt_coord.h that start the runtime or reach a
 * point; the rest of that interface is coord.c's. */
GK_EXPORT int gpuckpt_coord_attach(const char *agreement, int ntasks, int mytask)
{
	int ret = gk_coord_attach(agreement, ntasks, mytask);

	if (ret < 0)
		return ret;
	gk_runtime_start();
	gk_info("coord: %s: task %d of %d; checkpoints are agreed through %s", gk_runtime_dir(),
		mytask, ntasks, agreement);
	return 0;
}

GK_EXPORT int gpuckpt_coord_poll(long step, int *due)
{
	int d, ret;

	(void)step;
	*due = 0;
	if (__builtin_expect(!__atomic_load_n(&gk_rt.due, __ATOMIC_ACQUIRE), 1))
		return GPUCKPT_NOTHING;
	ret = point_prepare(&d);
	if (d & GK_DUE_CHECKPOINT)
		*due = GPUCKPT_DUE_CHECKPOINT |
		       (__atomic_load_n(&gk_rt.exit_signo, __ATOMIC_ACQUIRE) ? GPUCKPT_DUE_EXIT : 0);
	return ret;
}

GK_EXPORT int gpuckpt_request(void)
{
	/* Atomics only: callable from a signal handler. */
	if (!gk_rt.enabled)
		return -ENOTSUP;
	__atomic_store_n(&gk_rt.aware, 1, __ATOMIC_RELEASE);
	gk_due_checkpoint();
	return 0;
}

GK_EXPORT int gpuckpt_restarting(long *step)
{
	int refused;

	if (!gk_enabled())
		return 0;
	become_aware();
	refused = gk_restore_refused();
	if (refused)
		return refused;
	return gk_restore_active(step);
}

GK_EXPORT int gpuckpt_version(void)
{
	return GPUCKPT_VERSION;
}

GK_EXPORT const char *gpuckpt_strerror(int err)
{
	switch (err) {
	case GPUCKPT_NOTHING:
		return "no checkpoint was due";
	case GPUCKPT_SAVED:
		return "a checkpoint was written";
	case GPUCKPT_RESTORED:
		return "the state was restored from a checkpoint";
	case GPUCKPT_NOT_SAVED:
		return "a checkpoint was due but could not be written (the runtime's message says "
		       "why); the previous checkpoints are kept";
	case -ENOTSUP:
		return "the process holds state gpuckpt cannot checkpoint (see the log)";
	case -EINVAL:
		return "invalid argument or setting (see the log)";
	case -ENOTRECOVERABLE:
		return "the program's CUDA context is broken: no checkpoint is possible (see the "
		       "log)";
	default:
		return err < 0 ? strerror(-err) : "unknown status";
	}
}
