/*
 * pipeline.c - the checkpoint sequence (pipeline.h), once for the three
 * kinds of checkpoint. Each phase is a function of the table at the end;
 * the concerns' hooks (phase.h) run at the start of each phase.
 */
#include "config.h"
#include "common/settings_env.h"

#include "core/control/pipeline.h"
#include "core/placement/arena.h"
#include "core/capture/baseline.h"
#include "common/clock.h"
#include "core/driver/driver.h"
#include "common/error.h"
#include "core/state/eventlog.h"
#include "core/interpose/gate.h"
#include "common/log.h"
#include "core/capture/plan.h"
#include "core/state/kstop.h"
#include "core/state/runtime.h"
#include "core/capture/snapshot.h"
#include "core/capture/writer.h"
#include "image/ckptname.h"
#include "common/shepherd_protocol.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int gk_pipeline_drain(CUresult *broken)
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

CUcontext gk_pipeline_some_context(void)
{
	for (int i = 0; i < GK_MAX_DEVICES; i++)
		if (gk_arenas[i] && gk_arenas[i]->ctx)
			return gk_arenas[i]->ctx;
	return NULL;
}

static int have_devices(void)
{
	return gk_pipeline_some_context() != NULL;
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

static int transparent(const struct gk_pipeline *P)
{
	return P->o.kind == GK_CKPT_TRANSPARENT;
}

static int end(struct gk_pipeline *P, int ret)
{
	P->ret = ret;
	P->done = 1;
	return 1;
}

static void open_gate(struct gk_pipeline *P)
{
	if (P->gate_closed) {
		gk_gate_open();
		P->gate_closed = 0;
	}
}

static void drop_plan(struct gk_pipeline *P)
{
	if (!P->p)
		return;
	gk_plan_free(P->p);
	if (P->p != &P->own)
		free(P->p);
	P->p = NULL;
}

/* Transparent: the runtime's part failed; the driver copies device memory
 * (the gate stays closed for the shepherd). */
static int image_failed(struct gk_pipeline *P)
{
	drop_plan(P);
	gk_warn("transparent: the runtime could not write its part of the checkpoint (%s); "
		"the driver will copy device memory instead",
		P->err.text);
	P->assisted = 0;
	gk_manifest_free(P->m);
	P->m = NULL;
	return end(P, 0);
}

/* A phase failed once the plan existed: nothing written, the .tmp folder
 * goes, the gate opens. */
static int fail(struct gk_pipeline *P, int ret)
{
	struct gk_plan_result res = {0};

	if (transparent(P))
		return image_failed(P);
	open_gate(P);
	gk_plan_say(P->p, ret, &res, P->err.text);
	drop_plan(P);
	/* The writer's: stamped when the pause ended. */
	if (!P->in_writer)
		stamp();
	return end(P, ret);
}

/* ---- the phases; each returns 1 when the checkpoint ended there ---- */

static int ph_admit(struct gk_pipeline *P)
{
	(void)P;
	return 0;
}

static int ph_folder(struct gk_pipeline *P)
{
	if (gk_rt.settings.dir[0])
		return 0;
	gk_error("checkpoint: no checkpoint directory is set (" GK_ENV(DIR) "); no checkpoint written");
	return end(P, -EINVAL);
}

static int ph_writer(struct gk_pipeline *P)
{
	char what[64];

	if (P->o.kind == GK_CKPT_MEMBER) {
		/* A part is written whole and committed before the task says so
		 * to the others: never in the background. Whatever the writer
		 * does (the pinning of staging buffers) ends first. */
		gk_writer_wait();
		P->t0 = gk_now();
		return 0;
	}
	/* Transparent: the writer is waited for with the gate closed, before
	 * the image (ph_describe). */
	if (P->o.kind != GK_CKPT_APP)
		return 0;
	if (gk_writer_busy()) {
		int writing = gk_writer_what(what, sizeof(what));

		if (!P->o.exiting) {
			/* Neither a pause nor a lost checkpoint: the program goes on
			 * and the checkpoint waits for the write (or for the pinning
			 * of snapshot memory, done once). */
			if (!gk_rt.ckpt.deferred++)
				gk_info("checkpoint: due while %s%s; taken at the first checkpoint "
					"point after that",
					what, writing ? " is being written in the background" : "");
			return end(P, GK_PIPELINE_DEFERRED);
		}
		if (writing)
			gk_notice("checkpoint: finishing the background write of %s before the "
				  "checkpoint the program ends with",
				  what);
		/* A growth of the snapshot memory stops at once. */
		gk_writer_wait();
		P->t0 = gk_now();
	}
	gk_rt.ckpt.deferred = 0;
	return 0;
}

/* The refusal itself is the hooks' (tracking): ph_refuse has nothing left. */
static int ph_refuse(struct gk_pipeline *P)
{
	(void)P;
	return 0;
}

/* What the drain waited for: the last kernel launched, by name, so that a
 * user whose checkpoints wait for a long kernel knows which one to mark
 * interruptible (gpuckpt_kernel.h). A notice from a second on, else info. */
static void say_drain(double t_start, double waited)
{
	int64_t when_ns, asked_ns = __atomic_load_n(&gk_kstop_raised_ns, __ATOMIC_ACQUIRE);
	void *f = gk_launch_last(&when_ns);
	char name[96], asked[96] = "";
	double ago;

	if (!f)
		return;
	gk_kernel_name(f, name, sizeof(name));
	ago = t_start - (double)when_ns * 1e-9;
	if (asked_ns)
		snprintf(asked, sizeof(asked), "; the checkpoint was asked for %.3f s before the drain",
			 t_start - (double)asked_ns * 1e-9);
	if (waited >= 1.0)
		gk_notice("checkpoint: the drain waited %.3f s for the GPU's work; the last kernel "
			  "launched was %s, %.3f s before the drain%s: a long kernel delays every "
			  "checkpoint by its length; %s",
			  waited, name, ago, asked,
			  gk_kstop_marked(f) ? "it is marked interruptible, but was launched other "
					       "than through gpuckpt_kernel_run"
					     : "mark it interruptible (gpuckpt_kernel.h)");
	else
		gk_info("checkpoint: drained in %.3f s; the last kernel launched was %s, %.3f s "
			"before the drain%s",
			waited, name, ago, asked);
}

/*
 * While the drain waits: a notice after 1, 2, 4, 8, ... s naming the last
 * kernel launched, from a thread of its own. The notice after the drain
 * (say_drain) never comes when the scheduler's SIGKILL ends the process
 * first, in the middle of a kernel longer than its GraceTime or KillWait:
 * this one says, before that, which kernel the checkpoint is waiting for.
 */
struct drain_watch {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
	double t_start;
};

static void *drain_watch(void *arg)
{
	struct drain_watch *w = arg;
	double wait = 1.0;

	pthread_mutex_lock(&w->lock);
	while (!w->done) {
		struct timespec until;
		double at;
		int r;

		at = w->t_start + wait; /* gk_now() is CLOCK_MONOTONIC's too */
		until.tv_sec = (time_t)at;
		until.tv_nsec = (long)((at - (double)until.tv_sec) * 1e9);
		r = pthread_cond_timedwait(&w->cond, &w->lock, &until);
		if (w->done)
			break;
		if (r == ETIMEDOUT || gk_now() - w->t_start >= wait) {
			int64_t when_ns;
			void *f = gk_launch_last(&when_ns);
			char name[96];

			if (f) {
				gk_kernel_name(f, name, sizeof(name));
				gk_notice("checkpoint: the drain has waited %.0f s so far for the GPU's "
					  "work; the last kernel launched was %s, %.3f s before the "
					  "drain; %s",
					  wait, name, w->t_start - (double)when_ns * 1e-9,
					  gk_kstop_marked(f) ? "it is marked interruptible, but was "
							       "launched other than through "
							       "gpuckpt_kernel_run"
							     : "mark it interruptible (gpuckpt_kernel.h)");
			}
			wait *= 2;
		}
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

static int ph_drain(struct gk_pipeline *P)
{
	int ret, watching;
	double t_start = gk_now();
	struct drain_watch w = {.done = 0, .t_start = t_start};
	pthread_condattr_t ca;
	pthread_t t;
	sigset_t all, old;

	P->broken = CUDA_SUCCESS;
	pthread_mutex_init(&w.lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w.cond, &ca);
	pthread_condattr_destroy(&ca);
	/* The thread never takes the program's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	watching = pthread_create(&t, NULL, drain_watch, &w) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	ret = gk_pipeline_drain(&P->broken);
	if (watching) {
		pthread_mutex_lock(&w.lock);
		w.done = 1;
		pthread_cond_signal(&w.cond);
		pthread_mutex_unlock(&w.lock);
		pthread_join(t, NULL);
	}
	pthread_cond_destroy(&w.cond);
	pthread_mutex_destroy(&w.lock);
	say_drain(t_start, gk_now() - t_start);
	if (ret == -ENOTRECOVERABLE) {
		/* The program's own kernel failed before: one line that says so,
		 * rather than the errors every later call would give. */
		if (transparent(P)) {
			/* Neither the runtime nor the driver can save its context
			 * (the driver's lock fails with CUDA_ERROR_NOT_INITIALIZED).
			 * The agent tells the shepherd, which takes no checkpoint. */
			open_gate(P);
			gk_error("transparent: the program's CUDA context is broken (%s): no "
				 "checkpoint possible",
				 gk_cu_name(P->broken));
			return end(P, ret);
		}
		if (P->o.kind == GK_CKPT_APP) {
			open_gate(P);
			drop_plan(P);
			gk_error("checkpoint: %s: the program's CUDA context is broken (%s): no "
				 "checkpoint possible; the previous checkpoints are kept",
				 gk_rt.settings.dir, gk_cu_name(P->broken));
			gk_eventlog_checkpoint(-EIO, 0, 0, gk_now() - P->t0, 0);
			return end(P, ret);
		}
		gk_errprintf(&P->err, "the program's CUDA context is broken (%s)",
			     gk_cu_name(P->broken));
		return fail(P, ret);
	}
	if (ret < 0) {
		if (transparent(P)) {
			gk_warn(
			    "transparent: draining failed; the driver's checkpoint will see the "
			    "error");
		} else {
			gk_errprintf(&P->err,
				     "the device reported an error while draining its work");
			return fail(P, ret);
		}
	}
	P->t_drained = gk_now();
	return 0;
}

/* The deciding is the hooks' (peer access, tracking): see step(). */
static int ph_hold(struct gk_pipeline *P)
{
	(void)P;
	return 0;
}

static int ph_describe(struct gk_pipeline *P)
{
	struct gk_plan *p = P->p;
	const struct gk_member *mem = P->o.member;
	int ret;

	switch (P->o.kind) {
	case GK_CKPT_TRANSPARENT:
		/* A background write of the runtime's own finishes first: the
		 * process is about to be dumped whole. */
		gk_writer_wait();
		/* A part of the step's set (interpose/nccl.h): its number and
		 * the set's names, as a member's. */
		ret = gk_plan_describe_at(p, 0, P->assisted, mem ? mem->sequence : 0, &P->err);
		if (ret < 0)
			return image_failed(P);
		if (mem) {
			p->m->set_id = mem->id;
			p->m->set_members = mem->members;
			p->m->set_member = mem->member;
			snprintf(p->m->set_agreement, sizeof(p->m->set_agreement), "%s",
				 mem->agreement);
		}
		return 0;
	case GK_CKPT_MEMBER:
		ret = gk_plan_describe_at(p, P->o.step, 1, mem->sequence, &P->err);
		if (ret < 0)
			return fail(P, ret);
		p->t_start = P->t0;
		p->m->set_id = mem->id;
		p->m->set_members = mem->members;
		p->m->set_member = mem->member;
		snprintf(p->m->set_agreement, sizeof(p->m->set_agreement), "%s", mem->agreement);
		return 0;
	case GK_CKPT_APP:
		break;
	}
	ret = gk_plan_describe(p, P->o.step, 1, &P->err);
	if (ret < 0)
		return fail(P, ret);
	p->t_start = P->t0;
	p->exiting = P->o.exiting;
	return 0;
}

static int ph_changes(struct gk_pipeline *P)
{
	unsigned k = gk_rt.settings.increments;
	const struct gk_manifest *base = NULL;

	if (P->o.kind != GK_CKPT_APP) {
		/* Whole, never an increment. A set that falls short is withdrawn,
		 * and sets are pruned by the step (coord.c), so a part must not
		 * lean on another task-local checkpoint that may go; the
		 * transparent image is restored by the shepherd alone. */
		gk_plan_changes(P->p, NULL, 0, 0);
		return 0;
	}
	if (k) {
		base = gk_baseline_get();
		/* After k increments, a checkpoint that holds all its data. */
		if (base && base->increment >= k)
			base = NULL;
	}
	/* Keys on the host cost a copy of everything: only when they pay, for
	 * an increment now or for the next checkpoint of a process that goes on. */
	gk_plan_changes(P->p, base, k > 0, !P->o.exiting || base);
	return 0;
}

static int ph_layout(struct gk_pipeline *P)
{
	int ret = gk_plan_layout(P->p, gk_rt.settings.writers, &P->err);

	if (ret < 0)
		return fail(P, ret);
	P->t_planned = gk_now();
	return 0;
}

/*
 * Whether this checkpoint can go to the background: the process goes on,
 * there is a budget, and the changed chunks fit in the memory pinned so
 * far. P->grow_to: how much to pin (in the background, after this
 * checkpoint) so that the next one fits.
 */
static int can_go_background(struct gk_pipeline *P)
{
	const struct gk_plan *p = P->p;
	const char *how;
	uint64_t budget, need = p->changed_bytes, want;

	P->grow_to = 0;
	if (P->o.exiting || !p->m->nallocs)
		return 0;
	budget = gk_snapshot_budget(&how);
	if (!budget) {
		if (!gk_rt.ckpt.said_off++)
			gk_info("checkpoint: no host memory for snapshots (%s): every checkpoint "
				"holds the program until it is written",
				how);
		return 0;
	}
	/* The host regions are copied too (malloc'ed, beside the pinned
	 * chunks); managed memory makes them large (interpose/managed.h). */
	if (need > budget || p->region_bytes > budget - need) {
		need += p->region_bytes;
		if (!gk_rt.ckpt.said_too_big++)
			gk_notice(
			    "checkpoint: the %.2f GiB to write do not fit in the host memory for "
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
	P->grow_to = want < budget ? want : budget;
	if (P->grow_to < need)
		P->grow_to = need;
	gk_info("checkpoint: written the blocking way this time; %.2f GiB of host memory is "
		"pinned in the background so that the next checkpoints are (%s)",
		P->grow_to / 1073741824.0, how);
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

/* In the writer's thread: the write and commit phases of a checkpoint whose
 * pause is over. */
static void finish_in_writer(void *arg)
{
	struct gk_pipeline *B = arg;

	gk_pipeline_run(B);
	free(B);
}

/* The pause is over: the writer's thread runs the rest on a copy of P.
 * 0, or a negative errno when it could not (P still holds the plan). */
static int hand_to_writer(struct gk_pipeline *P)
{
	struct gk_pipeline *B = malloc(sizeof(*B));
	char what[64];
	int ret;

	if (!B)
		return -ENOMEM;
	*B = *P;
	B->in_writer = 1;
	B->timed = 0;
	snprintf(what, sizeof(what), GK_CKPT_FMT, (uint64_t)P->p->txn.sequence);
	ret = gk_writer_submit(what, finish_in_writer, B);
	if (ret < 0)
		free(B);
	return ret;
}

/* App: 1 when the checkpoint went to the background writer (ended here),
 * else 0: written in this thread, from the device or (no writer thread)
 * from the snapshot. */
static int ph_snapshot(struct gk_pipeline *P)
{
	struct gk_plan *p = P->p;

	if (!can_go_background(P))
		return 0;
	if (go_background(p, P->t0, &P->err) == 0) {
		open_gate(P);
		gk_info("checkpoint: paused the program %.3f s (draining %.3f s, finding what "
			"changed and planning %.3f s, copying %.3f s); the rest in the "
			"background",
			p->paused, P->t_drained - P->t0, P->t_planned - P->t_drained,
			gk_now() - P->t_planned);
		if (hand_to_writer(P) == 0) {
			stamp();
			P->background = 1;
			P->p = NULL; /* the writer's */
			return end(P, 0);
		}
		/* No thread: written here, from the snapshot, all the same. */
		p->background = 0;
		P->timed = 0;
		return 0;
	}
	gk_warn("checkpoint: %s; writing it the blocking way", P->err.text);
	/* Pieces of the same device ranges, now read from the device. */
	for (size_t i = 0; i < p->nitems; i++)
		p->items[i].host = NULL;
	return 0;
}

static int ph_write(struct gk_pipeline *P)
{
	int ret;

	if (transparent(P)) {
		ret = gk_plan_write(P->p, gk_rt.settings.writers, &P->err);
		return ret < 0 ? image_failed(P) : 0;
	}
	/* A blocking write (timed): the gate opens once the data is out of
	 * the devices. */
	ret = gk_plan_write(P->p, gk_rt.settings.writers, &P->err);
	P->t_written = gk_now();
	if (P->timed) {
		open_gate(P);
		P->p->paused = P->t_written - P->t0;
	}
	return ret < 0 ? fail(P, ret) : 0;
}

/* Transparent: the image left uncommitted for the shepherd, sealed. */
static int seal(struct gk_pipeline *P)
{
	struct gk_plan *p = P->p;
	int ret = gk_plan_finish_uncommitted(p, &P->err);

	if (ret < 0)
		return image_failed(P);
	P->txn = p->txn;
	p->began = 0;
	P->m = p->m;
	p->m = NULL;
	P->bytes = p->changed_bytes + p->region_bytes;
	P->zero_bytes = p->zero_bytes;
	drop_plan(P);
	P->t_image = gk_now();
	snprintf(P->m->label, sizeof(P->m->label), "%s", P->o.label ? P->o.label : "");
	P->m->write_seconds = gk_now() - P->t0;
	if (gk_store_seal(&P->txn, P->m, &P->is_signed, &P->err) == 0)
		P->sealed = 1;
	P->t_seal = gk_now();
	if (!P->sealed)
		return image_failed(P);
	return end(P, 0);
}

static int ph_commit(struct gk_pipeline *P)
{
	struct gk_plan_result res = {0};
	struct gk_plan *p = P->p;
	/* Nothing pruned for a member: coord.c prunes once the set is complete. */
	unsigned keep = P->o.kind == GK_CKPT_APP ? gk_rt.settings.keep : 0;
	int ret;

	if (transparent(P))
		return seal(P);
	ret = gk_plan_commit(p, keep, &res, &P->err);
	if (ret == 0 && P->timed)
		gk_info("checkpoint: draining %.3f s, finding what changed and planning %.3f s, "
			"writing %.3f s, commit %.3f s",
			P->t_drained - P->t0, P->t_planned - P->t_drained,
			P->t_written - P->t_planned, gk_now() - P->t_written);
	gk_plan_say(p, ret, &res, P->err.text);
	drop_plan(P);
	if (!P->in_writer)
		stamp();
	if (ret == 0 && P->grow_to)
		gk_writer_grow(P->grow_to, gk_pipeline_some_context());
	return end(P, ret);
}

static int (*const phases[GK_PHASE_COUNT])(struct gk_pipeline *) = {
    [GK_PHASE_ADMIT] = ph_admit,       [GK_PHASE_FOLDER] = ph_folder,
    [GK_PHASE_WRITER] = ph_writer,     [GK_PHASE_REFUSE] = ph_refuse,
    [GK_PHASE_DRAIN] = ph_drain,       [GK_PHASE_HOLD] = ph_hold,
    [GK_PHASE_DESCRIBE] = ph_describe, [GK_PHASE_CHANGES] = ph_changes,
    [GK_PHASE_LAYOUT] = ph_layout,     [GK_PHASE_SNAPSHOT] = ph_snapshot,
    [GK_PHASE_WRITE] = ph_write,       [GK_PHASE_COMMIT] = ph_commit,
};

/* ---- what a hook's stop means in each phase ---- */

static int refused(struct gk_pipeline *P, int ret)
{
	const char *why = P->v.why;

	if (!why[0]) /* the hook said it */
		return end(P, ret);
	switch (P->o.kind) {
	case GK_CKPT_TRANSPARENT:
		gk_error("transparent: refused, no checkpoint taken: this process holds %s, which "
			 "%s cannot save",
			 why,
			 P->v.word && !strcmp(P->v.word, GK_PROTO_REFUSE_OPENCL)
			     ? "a transparent checkpoint"
			     : "the CUDA driver's checkpoint");
		break;
	case GK_CKPT_APP:
	case GK_CKPT_MEMBER:
		gk_error("checkpoint: %s: refused, no checkpoint written: this process holds %s, "
			 "which gpuckpt cannot checkpoint",
			 gk_rt.settings.dir, why);
		if (P->o.kind == GK_CKPT_APP)
			gk_eventlog_checkpoint(ret, 0, 0, gk_now() - P->t0, 0);
		break;
	}
	return end(P, ret);
}

static int stopped(struct gk_pipeline *P, enum gk_phase ph, int ret)
{
	if (ph == GK_PHASE_REFUSE)
		return refused(P, ret);
	if (ph < GK_PHASE_DRAIN) {
		if (P->v.why[0])
			gk_error("checkpoint: %s: refused, no checkpoint written: %s",
				 gk_runtime_dir(), P->v.why);
		return end(P, ret);
	}
	if (ph == GK_PHASE_HOLD) {
		/* The runtime grants peer access again only in application mode
		 * (peer.h); here the driver keeps it, with the memory it copies. */
		if (P->v.why[0])
			gk_notice("transparent: this process holds %s; the driver copies device "
				  "memory itself",
				  P->v.why);
		P->assisted = 0;
		return 0;
	}
	gk_errprintf(&P->err, "%s", P->v.why[0] ? P->v.why : strerror(-ret));
	return fail(P, ret);
}

/* Before the drain: the plan (app/member: the writer may take it), and the
 * gate closes. */
static int close_gate(struct gk_pipeline *P)
{
	double waited = 0;
	int were_open = 0, open;

	if (transparent(P)) {
		P->p = &P->own;
	} else {
		P->p = calloc(1, sizeof(*P->p));
		if (!P->p) {
			gk_error("checkpoint: %s: no checkpoint written: out of memory",
				 gk_rt.settings.dir);
			if (P->o.kind == GK_CKPT_APP)
				gk_eventlog_checkpoint(-ENOMEM, 0, 0, gk_now() - P->t0, 0);
			return end(P, -ENOMEM);
		}
	}
	open = gk_gate_close(&waited, &were_open);
	P->gate_closed = 1;
	P->t_gate = gk_now();
	if (were_open && !open)
		gk_info("checkpoint: waited %.3f s for %d open stream capture(s) to end", waited,
			were_open);
	if (open) {
		/* Draining now would invalidate the program's capture (gate.h);
		 * no checkpoint is better than a program that fails after it. */
		open_gate(P);
		P->v.word = GK_PROTO_REFUSE_CAPTURE;
		if (transparent(P))
			gk_error("transparent: no checkpoint taken: %d CUDA stream capture(s) of the "
				 "program still open after %.0f s; draining the GPU now would "
				 "invalidate them",
				 open, GK_GATE_CAPTURE_WAIT_S);
		else
			gk_error("checkpoint: %s: no checkpoint written: %d CUDA stream capture(s) of "
				 "the program still open after %.0f s; draining the GPU now would "
				 "invalidate them; the previous checkpoints are kept",
				 gk_rt.settings.dir, open, GK_GATE_CAPTURE_WAIT_S);
		if (P->o.kind == GK_CKPT_APP)
			gk_eventlog_checkpoint(-EBUSY, 0, 0, gk_now() - P->t0, 0);
		drop_plan(P);
		return end(P, -EBUSY);
	}
	/* The info line and the gate of a blocking write, unless the
	 * snapshot phase sends the write to the background. */
	P->timed = !transparent(P);
	return 0;
}

void gk_pipeline_init(struct gk_pipeline *P, const struct gk_pipeline_opts *o)
{
	memset(P, 0, sizeof(*P));
	P->o = *o;
	P->t0 = gk_now();
	P->broken = CUDA_SUCCESS;
}

int gk_pipeline_step(struct gk_pipeline *P)
{
	enum gk_phase ph;
	int ret;

	if (P->done)
		return 1;
	if (P->next >= GK_PHASE_COUNT)
		return end(P, P->ret);
	ph = P->next++;
	if (ph == GK_PHASE_DRAIN && close_gate(P))
		return 1;
	/* Only the application's checkpoint may go on in the background. */
	if (ph == GK_PHASE_SNAPSHOT && P->o.kind != GK_CKPT_APP)
		return 0;
	if (ph == GK_PHASE_HOLD) {
		/* Without the runtime's dump the driver copies device memory
		 * itself; the manifest still records the devices, for the
		 * shepherd's GPU mapping. So does it where the runtime's own dump
		 * could not hold everything. */
		if (!transparent(P))
			return 0;
		P->assisted = P->o.assist && have_devices();
		if (!P->assisted)
			return 0;
	}
	ret = gk_phase_before(ph, P->o.kind, &P->v);
	if (ret < 0)
		return stopped(P, ph, ret);
	return phases[ph](P);
}

int gk_pipeline_run(struct gk_pipeline *P)
{
	/* On the program's thread (a checkpoint point): relaxed for the
	 * checkpoint only, so that its calls before the gate cannot invalidate
	 * another thread's capture (driver.h). */
	CUstreamCaptureMode was = gk_driver_capture_mode(CU_STREAM_CAPTURE_MODE_RELAXED);

	while (!gk_pipeline_step(P))
		;
	gk_driver_capture_mode(was);
	return P->ret;
}

void gk_pipeline_release(struct gk_pipeline *P)
{
	open_gate(P);
	gk_manifest_free(P->m);
	P->m = NULL;
}
