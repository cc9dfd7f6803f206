#include "config.h"

#include "dump.h"
#include "error.h"
#include "eventlog.h"
#include "arena.h"
#include "baseline.h"
#include "changes.h"
#include "clock.h"
#include "driver.h"
#include "gate.h"
#include "image.h"
#include "log.h"
#include "plan.h"
#include "runtime.h"
#include "snapshot.h"
#include "staging.h"
#include "track.h"
#include "writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Drain: every stream of every context holding placed memory. A sticky
 * error is not logged here (gk_dump_drain). */
static int drain(CUresult *broken)
{
	for (int i = 0; i < GK_MAX_DEVICES; i++) {
		struct gk_arena *a = gk_arenas[i];
		char obj[32];
		CUresult r;

		if (!a || !a->ctx)
			continue;
		snprintf(obj, sizeof(obj), "device %d", i);
		r = gk_real.cuCtxPushCurrent_v2(a->ctx);
		if (r == CUDA_SUCCESS) {
			r = gk_real.cuCtxSynchronize();
			gk_real.cuCtxPopCurrent_v2(NULL);
		}
		if (gk_cu_broken(r)) {
			*broken = r;
			return -ENOTRECOVERABLE;
		}
		if (r != CUDA_SUCCESS)
			return gk_cu_check(r, "cuCtxSynchronize", "checkpoint", obj);
	}
	return 0;
}

int gk_dump_drain(CUresult *broken)
{
	return drain(broken);
}

/* A context to pin snapshot memory in: the first device's. */
static CUcontext some_context(void)
{
	for (int i = 0; i < GK_MAX_DEVICES; i++)
		if (gk_arenas[i] && gk_arenas[i]->ctx)
			return gk_arenas[i]->ctx;
	return NULL;
}

/*
 * Whether this checkpoint can go to the background: the process goes on,
 * there is a budget, and the changed chunks fit in the memory pinned so
 * far. *grow_to: how much to pin (in the background, after this checkpoint)
 * so that the next one fits.
 */
static int can_go_background(const struct gk_plan *p, int exiting, uint64_t *grow_to)
{
	static int said_off, said_too_big;
	const char *how;
	uint64_t budget, need = p->changed_bytes, want;

	*grow_to = 0;
	if (exiting || !p->m->nallocs)
		return 0;
	budget = gk_snapshot_budget(&how);
	if (!budget) {
		if (!said_off++)
			gk_info("checkpoint: no host memory for snapshots (%s): every checkpoint "
				"holds the program until it is written",
				how);
		return 0;
	}
	if (need > budget) {
		if (!said_too_big++)
			gk_notice("checkpoint: the %.2f GiB to write do not fit in the host memory for "
				  "snapshots (%s): this checkpoint holds the program until it is "
				  "written, and so does every other one that does not fit",
				  need / 1073741824.0, how);
		return 0;
	}
	if (need <= gk_snapshot_pinned())
		return 1;
	/* Room for a whole state, so that the next checkpoint fits whatever
	 * changes; the budget caps it. */
	want = p->state_bytes - p->region_bytes;
	*grow_to = want < budget ? want : budget;
	if (*grow_to < need)
		*grow_to = need;
	gk_info("checkpoint: written the blocking way this time; %.2f GiB of host memory is "
		"pinned in the background so that the next checkpoints are (%s)",
		*grow_to / 1073741824.0, how);
	return 0;
}

/* The pause is over: the changed chunks are in snapshot memory, the host
 * regions copied. The writer takes the plan. */
static int go_background(struct gk_plan *p, double t0, gk_error_t *err)
{
	struct gk_xfer_item *items;
	size_t n;
	int ret;

	ret = gk_snapshot_capture(p->items, p->nitems, p->m->chunk_size, &items, &n, err);
	if (ret < 0)
		return ret;
	free(p->items);
	p->items = items;
	p->nitems = n;
	ret = gk_plan_copy_regions(p, err);
	if (ret < 0)
		return ret;
	p->background = 1;
	p->paused = gk_now() - t0;
	return 0;
}

/* A checkpoint was taken (or tried): the interval timer counts from now,
 * so that the step's tasks, whose timers started a little apart, do not each
 * ask for another one right after an agreed checkpoint (trigger.c). */
static void stamp(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	__atomic_store_n(&gk_rt.last_checkpoint_ns, (int64_t)now.tv_sec * 1000000000 + now.tv_nsec,
			 __ATOMIC_RELEASE);
}

/* When the steps of a blocking checkpoint ended, for the info line. */
struct times {
	double start, drained, planned;
};

/* Write and commit in this thread; the gate (closed when times is given:
 * the data still comes from the device) is opened once the data is out. */
static int write_here(struct gk_plan *p, unsigned keep, uint64_t grow_to, const struct times *t)
{
	struct gk_plan_result res = {0};
	gk_error_t err = {""};
	double t_written;
	int ret = gk_plan_write(p, gk_rt.settings.writers, &err);

	t_written = gk_now();
	if (t) {
		gk_gate_open();
		p->paused = t_written - t->start;
	}
	if (ret == 0)
		ret = gk_plan_commit(p, keep, &res, &err);
	if (ret == 0 && t)
		gk_info("checkpoint: draining %.3f s, finding what changed and planning %.3f s, "
			"writing %.3f s, commit %.3f s",
			t->drained - t->start, t->planned - t->drained, t_written - t->planned,
			gk_now() - t_written);
	gk_plan_say(p, ret, &res, err.text);
	gk_plan_free(p);
	free(p);
	stamp();
	if (ret == 0 && grow_to)
		gk_writer_grow(grow_to, some_context());
	return ret;
}

int gk_dump(long step, int exiting, int *background)
{
	static int deferred;
	const char *dir = gk_rt.settings.dir;
	unsigned k = gk_rt.settings.increments;
	const struct gk_manifest *base = NULL;
	char why[1024], what[64];
	gk_error_t err = {""};
	struct gk_plan_result res = {0};
	struct gk_plan *p;
	struct times times;
	uint64_t grow_to = 0;
	double t0 = gk_now(), t_drained, t_planned;
	CUresult broken = CUDA_SUCCESS;
	int ret, bg;

	*background = 0;
	if (!dir[0]) {
		gk_error("checkpoint: no checkpoint directory is set (GPUCKPT_DIR); no checkpoint "
			 "written");
		return -EINVAL;
	}
	if (gk_writer_busy()) {
		int writing = gk_writer_what(what, sizeof(what));

		if (!exiting) {
			/* Neither a pause nor a lost checkpoint: the program goes on
			 * and the checkpoint waits for the write (or for the pinning
			 * of snapshot memory, done once). */
			if (!deferred++)
				gk_info("checkpoint: due while %s%s; taken at the first checkpoint "
					"point after that",
					what, writing ? " is being written in the background" : "");
			return GK_DUMP_DEFERRED;
		}
		if (writing)
			gk_notice("checkpoint: finishing the background write of %s before the "
				  "checkpoint the program ends with",
				  what);
		/* A growth of the snapshot memory stops at once. */
		gk_writer_wait();
		t0 = gk_now();
	}
	deferred = 0;
	/* After the deferral: a program may reach its checkpoint point many
	 * times a second while a write is in flight. */
	if (gk_track_report(why, sizeof(why))) {
		gk_error("checkpoint: %s: refused, no checkpoint written: this process holds %s, "
			 "which gpuckpt cannot checkpoint",
			 dir, why);
		gk_eventlog_checkpoint(-ENOTSUP, 0, 0, gk_now() - t0, 0);
		return -ENOTSUP;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		gk_error("checkpoint: %s: no checkpoint written: out of memory", dir);
		gk_eventlog_checkpoint(-ENOMEM, 0, 0, gk_now() - t0, 0);
		return -ENOMEM;
	}
	gk_gate_close();
	ret = drain(&broken);
	if (ret == -ENOTRECOVERABLE) {
		/* The program's own kernel failed before: one line that says so,
		 * rather than the errors every later call would give. */
		gk_gate_open();
		free(p);
		gk_error("checkpoint: %s: the program's CUDA context is broken (%s): no checkpoint "
			 "possible; the previous checkpoints are kept",
			 dir, gk_cu_name(broken));
		gk_eventlog_checkpoint(-EIO, 0, 0, gk_now() - t0, 0);
		return ret;
	}
	if (ret < 0) {
		gk_errprintf(&err, "the device reported an error while draining its work");
		goto out_open;
	}
	t_drained = gk_now();
	ret = gk_plan_describe(p, step, 1, &err);
	if (ret < 0)
		goto out_open;
	p->t_start = t0;
	p->exiting = exiting;
	if (k) {
		base = gk_baseline_get();
		/* After k increments, a checkpoint that holds all its data. */
		if (base && base->increment >= k)
			base = NULL;
	}
	/* Keys on the host cost a copy of everything: only when they pay, for
	 * an increment now or for the next checkpoint of a process that goes on. */
	gk_plan_changes(p, base, k > 0, !exiting || base);
	ret = gk_plan_layout(p, gk_rt.settings.writers, &err);
	if (ret < 0)
		goto out_open;
	t_planned = gk_now();
	times = (struct times){t0, t_drained, t_planned};
	bg = can_go_background(p, exiting, &grow_to);
	if (bg) {
		ret = go_background(p, t0, &err);
		if (ret == 0) {
			gk_gate_open();
			gk_info("checkpoint: paused the program %.3f s (draining %.3f s, finding what "
				"changed and planning %.3f s, copying %.3f s); the rest in the "
				"background",
				p->paused, t_drained - t0, t_planned - t_drained, gk_now() - t_planned);
			if (gk_writer_submit(p) == 0) {
				stamp();
				*background = 1;
				return 0;
			}
			/* No thread: written here, from the snapshot, all the same. */
			p->background = 0;
			return write_here(p, gk_rt.settings.keep, grow_to, NULL);
		}
		gk_warn("checkpoint: %s; writing it the blocking way", err.text);
		/* Pieces of the same device ranges, now read from the device. */
		for (size_t i = 0; i < p->nitems; i++)
			p->items[i].host = NULL;
	}
	return write_here(p, gk_rt.settings.keep, grow_to, &times);
out_open:
	gk_gate_open();
	gk_plan_say(p, ret, &res, err.text);
	gk_plan_free(p);
	free(p);
	stamp();
	return ret;
}

int gk_dump_member(long step, const struct gk_member *mem)
{
	const char *dir = gk_rt.settings.dir;
	char why[1024];
	gk_error_t err = {""};
	struct gk_plan_result res = {0};
	struct gk_plan *p;
	struct times times;
	double t0, t_drained;
	CUresult broken = CUDA_SUCCESS;
	int ret;

	if (!dir[0]) {
		gk_error("checkpoint: no checkpoint directory is set (GPUCKPT_DIR); no checkpoint "
			 "written");
		return -EINVAL;
	}
	/* A part is written whole and committed before the task says so to
	 * the others: never in the background. Whatever the writer does (the
	 * pinning of staging buffers) ends first. */
	gk_writer_wait();
	t0 = gk_now();
	if (gk_track_report(why, sizeof(why))) {
		gk_error("checkpoint: %s: refused, no checkpoint written: this process holds %s, "
			 "which gpuckpt cannot checkpoint",
			 dir, why);
		return -ENOTSUP;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		gk_error("checkpoint: %s: no checkpoint written: out of memory", dir);
		return -ENOMEM;
	}
	gk_gate_close();
	ret = drain(&broken);
	if (ret == -ENOTRECOVERABLE) {
		gk_errprintf(&err, "the program's CUDA context is broken (%s)", gk_cu_name(broken));
		goto out_open;
	}
	if (ret < 0) {
		gk_errprintf(&err, "the device reported an error while draining its work");
		goto out_open;
	}
	t_drained = gk_now();
	ret = gk_plan_describe_at(p, step, 1, mem->sequence, &err);
	if (ret < 0)
		goto out_open;
	p->t_start = t0;
	p->m->set_id = mem->id;
	p->m->set_members = mem->members;
	p->m->set_member = mem->member;
	snprintf(p->m->set_agreement, sizeof(p->m->set_agreement), "%s", mem->agreement);
	/* Whole, never an increment: a set that falls short is withdrawn, and
	 * sets are pruned by the step (coord.c), so a part must not lean on
	 * another task-local checkpoint that may go. */
	gk_plan_changes(p, NULL, 0, 0);
	ret = gk_plan_layout(p, gk_rt.settings.writers, &err);
	if (ret < 0)
		goto out_open;
	times = (struct times){t0, t_drained, gk_now()};
	/* Nothing pruned here: coord.c prunes once the set is complete. */
	return write_here(p, 0, 0, &times);
out_open:
	gk_gate_open();
	gk_plan_say(p, ret, &res, err.text);
	gk_plan_free(p);
	free(p);
	stamp();
	return ret;
}

int gk_dump_image(long step, int device_data, struct gk_store_txn *txn, struct gk_manifest **mp,
		  uint64_t *bytes, gk_error_t *err)
{
	struct gk_plan p;
	int ret;

	*mp = NULL;
	*bytes = 0;
	/* A background write of the runtime's own finishes first: the process
	 * is about to be dumped whole. */
	gk_writer_wait();
	ret = gk_plan_describe(&p, step, device_data, err);
	if (ret == 0) {
		gk_plan_changes(&p, NULL, 0, 0);
		ret = gk_plan_layout(&p, gk_rt.settings.writers, err);
	}
	if (ret == 0)
		ret = gk_plan_write(&p, gk_rt.settings.writers, err);
	if (ret == 0)
		ret = gk_plan_finish_uncommitted(&p, err);
	if (ret == 0) {
		*txn = p.txn;
		p.began = 0;
		*mp = p.m;
		p.m = NULL;
		*bytes = p.state_bytes;
	}
	gk_plan_free(&p);
	return ret;
}

void gk_dump_context_gone(CUcontext ctx)
{
	gk_writer_wait();
	gk_snapshot_forget(ctx);
	gk_staging_forget(ctx);
	gk_changes_forget(ctx);
}

void gk_dump_prepare_in(CUcontext ctx)
{
	static int done;

	/* Only once. */
	if (!ctx || __atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	if (!gk_writer_busy())
		gk_writer_staging(2 * gk_rt.settings.writers, gk_rt.settings.chunk_size, ctx);
}

void gk_dump_prepare(void)
{
	/* Only once the program has device memory (a context to pin in). */
	if (gk_rt.settings.dir[0])
		gk_dump_prepare_in(some_context());
}
