/*
 * coord.c - the task's side of a step's checkpoint sets (coord.h,
 * gpuckpt_coord.h): which task this is, writing its part under the agreed
 * number, and settling it once the tasks know whether all of them committed:
 * task 0 records the set, every task prunes what is older than the sets it
 * keeps, or withdraws its part when the set fell short.
 *
 * The two entry points of gpuckpt_coord.h that start the runtime or reach a
 * checkpoint point (gpuckpt_coord_attach, gpuckpt_coord_poll) are api.c's,
 * above restore, which tells this module what it loaded.
 *
 * Pruning waits for the record, because a task's older checkpoints are
 * members of older sets: deleting them before the new set is known complete
 * everywhere could leave the step without any usable set.
 */
#include "config.h"

#include "core/control/coord.h"
#include "core/capture/flush.h"
#include "common/error.h"
#include "core/control/dump.h"
#include "image/image.h"
#include "common/log.h"
#include "core/state/phase.h"
#include "core/state/runtime.h"
#include "image/stepset.h"
#include "core/control/trigger.h"
#include "common/settings_env.h"

#include "include/gpuckpt.h"
#include "include/gpuckpt_coord.h"
#include "image/ckptname.h"
#include "common/export.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define KNOWN_MAX 64

static struct {
	pthread_mutex_t lock;
	int attached;
	char agreement[GK_AGREEMENT_MAX];
	/* Sets known to be recorded complete, oldest first: the one restored
	 * from, then those settled in this run. */
	uint64_t known[KNOWN_MAX];
	unsigned nknown;
	int restored;
	uint64_t restored_id, restored_seq;
	int warned_alone;
} C = {.lock = PTHREAD_MUTEX_INITIALIZER};

int gk_coord_multi(void)
{
	return gk_rt.settings.step_tasks > 1 && !gk_rt.settings.tasks_independent;
}

int gk_coord_attached(void)
{
	return __atomic_load_n(&C.attached, __ATOMIC_ACQUIRE);
}

/*
 * A checkpoint is due in a step of several tasks and no layer agrees for
 * this task: writing one alone could never be restored with the others (and
 * restoring it alone would mix steps). Logs why, once per request, and
 * returns -ENOTSUP; 0 when a checkpoint may be written.
 */
static int refuse_alone(void)
{
	if (!gk_coord_multi() || gk_coord_attached())
		return 0;
	gk_error("checkpoint: %s: refused, no checkpoint written: task %u is one of the %u tasks of "
		 "this step, and they have no way to agree on one point to checkpoint at; a "
		 "checkpoint of this task alone could only be restored at another step than the "
		 "others'. Call gpuckpt_mpi_point() (gpuckpt_mpi.h) instead of gpuckpt_point(), or, "
		 "if the tasks never talk to each other, set " GK_ENV(TASKS) "=independent",
		 gk_runtime_dir(), gk_rt.settings.task, gk_rt.settings.step_tasks);
	return -ENOTSUP;
}

/* Coordination's part in a checkpoint (phase.h): a task of a step whose
 * tasks cannot agree does not checkpoint alone. */
static int coord_before(enum gk_phase phase, enum gk_ckpt_kind kind, struct gk_phase_verdict *v)
{
	(void)v;
	if (phase != GK_PHASE_ADMIT || kind != GK_CKPT_APP)
		return 0;
	return refuse_alone();
}

static const struct gk_phase_hooks coord_hooks = {
	.name = "coord",
	.order = 10,
	.before = coord_before,
};
GK_PHASE_HOOKS(coord_hooks)

/* The folder holding the task folders: set records go there. */
static void step_dir(char *buf, size_t len)
{
	const char *slash;

	snprintf(buf, len, "%s", gk_rt.settings.dir);
	for (size_t n = strlen(buf); n > 1 && buf[n - 1] == '/'; n--)
		buf[n - 1] = 0;
	slash = strrchr(buf, '/');
	if (!slash)
		snprintf(buf, len, ".");
	else if (slash == buf)
		buf[1] = 0;
	else
		buf[slash - buf] = 0;
}

static void remember_locked(uint64_t seq)
{
	if (C.nknown && C.known[C.nknown - 1] >= seq)
		return;
	if (C.nknown == KNOWN_MAX) {
		memmove(C.known, C.known + 1, (KNOWN_MAX - 1) * sizeof(C.known[0]));
		C.nknown--;
	}
	C.known[C.nknown++] = seq;
}

void gk_coord_restored_from(const struct gk_manifest *m)
{
	if (!m->set_members)
		return;
	pthread_mutex_lock(&C.lock);
	C.restored = 1;
	C.restored_id = m->set_id;
	C.restored_seq = m->sequence;
	remember_locked(m->sequence);
	pthread_mutex_unlock(&C.lock);
}

int gk_coord_attach(const char *agreement, int ntasks, int mytask)
{
	const struct gk_settings *s = &gk_rt.settings;
	size_t n = agreement ? strlen(agreement) : 0;

	if (!n || n >= sizeof(C.agreement) ||
	    strspn(agreement, "abcdefghijklmnopqrstuvwxyz0123456789_-") != n) {
		gk_error("coord: agreement name '%s' is not a lowercase word of at most %zu "
			 "characters",
			 agreement ? agreement : "(null)", sizeof(C.agreement) - 1);
		return -EINVAL;
	}
	if (!gk_enabled() || !s->dir[0])
		return -ENOTSUP;
	if (s->tasks_independent) {
		gk_error("coord: %s: " GK_ENV(TASKS) "=independent, but the program agrees on its "
			 "checkpoints through %s: unset " GK_ENV(TASKS),
			 gk_runtime_dir(), agreement);
		return -EINVAL;
	}
	/* Every task of the step must be in the set, each in its own folder. */
	if ((unsigned)ntasks != s->step_tasks || (unsigned)mytask != s->task) {
		gk_error("coord: %s: the program's %s group has %d tasks and this is task %d, but the "
			 "Slurm step has %u tasks and this is task %u: a checkpoint set must cover "
			 "every task of the step, each in its own folder (launch one rank per task "
			 "with srun, and agree over all of them, e.g. MPI_COMM_WORLD)",
			 gk_runtime_dir(), agreement, ntasks, mytask, s->step_tasks, s->task);
		return -EINVAL;
	}
	pthread_mutex_lock(&C.lock);
	snprintf(C.agreement, sizeof(C.agreement), "%s", agreement);
	__atomic_store_n(&C.attached, 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&C.lock);
	return 0;
}

GK_EXPORT int gpuckpt_coord_detach(void)
{
	__atomic_store_n(&C.attached, 0, __ATOMIC_RELEASE);
	return 0;
}

GK_EXPORT int gpuckpt_coord_next(unsigned long long *sequence)
{
	gk_error_t err;
	uint64_t next = 0;
	int ret;

	if (!gk_coord_attached())
		return -EINVAL;
	ret = gk_store_next(gk_rt.settings.dir, &next, &err);
	if (ret < 0) {
		gk_error("coord: %s", err.text);
		return ret;
	}
	*sequence = next;
	return 0;
}

GK_EXPORT int gpuckpt_coord_write(long step, const struct gpuckpt_set *set)
{
	struct gk_member mem;

	if (!gk_coord_attached() || !set->sequence || !set->id)
		return -EINVAL;
	mem.sequence = set->sequence;
	mem.id = set->id;
	mem.members = gk_rt.settings.step_tasks;
	mem.member = gk_rt.settings.task;
	mem.agreement = C.agreement;
	/* Cleared first: a request that comes while this one is written is
	 * not lost, it is taken at a later point. */
	__atomic_and_fetch(&gk_rt.due, ~GK_DUE_CHECKPOINT, __ATOMIC_ACQ_REL);
	return gk_dump_member(step, &mem);
}

GK_EXPORT int gpuckpt_coord_record(const struct gpuckpt_set *set)
{
	struct gk_set_record r;
	char dir[4096];
	gk_error_t err;
	int ret;

	/* Task 0, once every task committed: the record is the set's commit. */
	if (!gk_coord_attached() || gk_rt.settings.task != 0)
		return -EINVAL;
	memset(&r, 0, sizeof(r));
	r.sequence = set->sequence;
	r.id = set->id;
	r.members = gk_rt.settings.step_tasks;
	r.step = set->step;
	snprintf(r.agreement, sizeof(r.agreement), "%s", C.agreement);
	r.created = (int64_t)time(NULL);
	step_dir(dir, sizeof(dir));
	ret = gk_set_record_write(dir, &r, &err);
	if (ret < 0)
		gk_error(
		    "checkpoint: set %llu: cannot record it as complete: %s; it will not be used",
		    set->sequence, err.text);
	else
		gk_flush_kick(); /* the record goes to the flush root too (flush.c) */
	return ret;
}

int gk_coord_record_cut(uint64_t sequence, uint64_t id)
{
	struct gk_set_record r;
	char dir[4096];
	gk_error_t err;
	int ret;

	if (gk_rt.settings.task != 0)
		return 0;
	memset(&r, 0, sizeof(r));
	r.sequence = sequence;
	r.id = id;
	r.members = gk_rt.settings.step_tasks;
	snprintf(r.agreement, sizeof(r.agreement), "%s", GK_SET_AGREEMENT_NCCL);
	r.created = (int64_t)time(NULL);
	step_dir(dir, sizeof(dir));
	ret = gk_set_record_write(dir, &r, &err);
	if (ret < 0)
		gk_warn("checkpoint: set %llu: cannot record it: %s; the step's parts of it "
			"will not be restored",
			(unsigned long long)sequence, err.text);
	return ret;
}

GK_EXPORT int gpuckpt_coord_settle(const struct gpuckpt_set *set, int recorded)
{
	char dir[4096];
	gk_error_t err;
	uint64_t oldest_kept = 0;
	int ret;

	if (!gk_coord_attached())
		return -EINVAL;
	if (!recorded) {
		ret = gk_store_remove(gk_rt.settings.dir, set->sequence, set->sequence, &err);
		if (ret < 0)
			gk_warn("checkpoint: %s: cannot withdraw " GK_CKPT_FMT ": %s",
				gk_runtime_dir(), (uint64_t)set->sequence, err.text);
		gk_error("checkpoint: %s/" GK_CKPT_FMT ": withdrawn: not every task of the step "
			 "committed set %llu (see their output); the previous sets are kept",
			 gk_runtime_dir(), (uint64_t)set->sequence, set->sequence);
		return 0;
	}
	pthread_mutex_lock(&C.lock);
	remember_locked(set->sequence);
	if (C.nknown >= gk_rt.settings.keep)
		oldest_kept = C.known[C.nknown - gk_rt.settings.keep];
	pthread_mutex_unlock(&C.lock);
	gk_notice("checkpoint: set %llu complete: every one of the %u tasks committed it (step %lld)",
		  set->sequence, gk_rt.settings.step_tasks, set->step);
	if (oldest_kept > 1) {
		ret = gk_store_remove(gk_rt.settings.dir, 0, oldest_kept - 1, &err);
		if (ret < 0)
			gk_warn("prune: %s", err.text);
		if (gk_rt.settings.task == 0) {
			step_dir(dir, sizeof(dir));
			if (gk_set_records_prune(dir, oldest_kept, &err) < 0)
				gk_warn("prune: %s", err.text);
		}
	}
	return 0;
}

GK_EXPORT void gpuckpt_coord_finish(int agreed_due)
{
	int signo = __atomic_exchange_n(&gk_rt.exit_signo, 0, __ATOMIC_ACQ_REL);

	if (!signo && (agreed_due & GPUCKPT_DUE_EXIT)) {
		/* Another task of the step ends after this set (it got SIGTERM):
		 * going on alone would leave the others' collectives waiting. */
		gk_notice("checkpoint: another task of the step is ending after this checkpoint; so "
			  "does this one");
		signo = SIGTERM;
	}
	if (signo)
		gk_trigger_finish_exit(signo);
}

GK_EXPORT int gpuckpt_coord_restored(unsigned long long *id, unsigned long long *sequence)
{
	int r;

	pthread_mutex_lock(&C.lock);
	r = C.restored;
	if (r) {
		*id = C.restored_id;
		*sequence = C.restored_seq;
	}
	pthread_mutex_unlock(&C.lock);
	return r;
}
