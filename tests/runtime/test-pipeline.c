/*
 * test-pipeline.c - the checkpoint pipeline (runtime/core/control/pipeline.h) driven
 * phase by phase on the CUDA driver stand-in, with the runtime linked in
 * (libgkcore): a program's device memory is placed by the runtime's own
 * hooks, and the checkpoints go to GPUCKPT_DIR (set by pipeline.sh).
 *
 * - an application checkpoint runs every phase in order, the gate closed
 *   from the drain to the write, and commits;
 * - a failure injected in each phase (a phase hook, phase.h) of the
 *   application and the set-member checkpoint stops it there: the previous
 *   checkpoint is intact, no .tmp folder is left, the gate is open;
 * - real failures too: no folder, a folder that cannot be created, what
 *   tracking counts (refused by its own hook, registered at load); managed
 *   memory is checkpointed;
 * - a transparent checkpoint whose hold or image fails goes on without the
 *   runtime's dump, its gate closed until released;
 * - an application checkpoint after which the program goes on ends its
 *   pause with the snapshot phase; the writer's thread runs the write and
 *   commit phases, and a failure there leaves the previous checkpoint
 *   intact;
 * - hooks run in their order.
 */
#include "config.h"

#include "tap.h"

#include "core/interpose/gate.h"
#include "image/image.h"
#include "core/state/phase.h"
#include "core/control/pipeline.h"
#include "core/state/runtime.h"
#include "core/state/track.h"
#include "core/capture/writer.h"

#include <cuda.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- what the folder holds: every name, and each manifest's bytes ---- */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return strdup("");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n)
		buf[0] = 0;
	fclose(f);
	return buf;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* A description of the checkpoint folder (malloc'ed): its names in order,
 * and for each checkpoint the bytes of its manifest. */
static char *folder_state(void)
{
	struct dirent **names;
	size_t cap = 1 << 16, used = 0;
	char *out = calloc(1, cap);
	int n = scandir(gk_rt.settings.dir, &names, NULL, by_name);

	for (int i = 0; i < n; i++) {
		char path[8192];
		char *m;

		snprintf(path, sizeof(path), "%s/%s/manifest.json", gk_rt.settings.dir,
			 names[i]->d_name);
		m = slurp(path);
		used += (size_t)snprintf(out + used, used < cap ? cap - used : 0, "%s\n%zu:%s\n",
					 names[i]->d_name, strlen(m), m);
		free(m);
		free(names[i]);
	}
	if (n > 0)
		free(names);
	return out;
}

/* The newest committed checkpoint's name ("" if none). */
static void newest(char *name, size_t len)
{
	struct dirent **names;
	int n = scandir(gk_rt.settings.dir, &names, NULL, by_name);

	name[0] = 0;
	for (int i = 0; i < n; i++) {
		if (!strncmp(names[i]->d_name, GK_CKPT_PREFIX, strlen(GK_CKPT_PREFIX)) &&
		    !strstr(names[i]->d_name, ".tmp"))
			snprintf(name, len, "%s", names[i]->d_name);
		free(names[i]);
	}
	if (n > 0)
		free(names);
}

static int gate_open(void)
{
	return !__atomic_load_n(&gk_gate_closed, __ATOMIC_ACQUIRE);
}

/* ---- a hook that fails in one phase ---- */

static int fail_at = -1;
static unsigned seen[GK_PHASE_COUNT];
static pthread_t seen_in[GK_PHASE_COUNT];

static int inject_before(enum gk_phase ph, enum gk_ckpt_kind kind, struct gk_phase_verdict *v)
{
	(void)kind;
	seen[ph]++;
	seen_in[ph] = pthread_self();
	if ((int)ph != fail_at)
		return 0;
	snprintf(v->why, sizeof(v->why), "a failure injected in the %s phase", gk_phase_name(ph));
	return -EIO;
}

static const struct gk_phase_hooks inject = {
    .name = "test",
    .order = 100,
    .before = inject_before,
};

/* ---- the order of hooks ---- */

static char order_log[64];

static int order_a(enum gk_phase ph, enum gk_ckpt_kind k, struct gk_phase_verdict *v)
{
	(void)ph, (void)k, (void)v;
	strcat(order_log, "a");
	return 0;
}

static int order_b(enum gk_phase ph, enum gk_ckpt_kind k, struct gk_phase_verdict *v)
{
	(void)ph, (void)k, (void)v;
	strcat(order_log, "b");
	return -EAGAIN;
}

static int order_c(enum gk_phase ph, enum gk_ckpt_kind k, struct gk_phase_verdict *v)
{
	(void)ph, (void)k, (void)v;
	strcat(order_log, "c");
	return 0;
}

static void test_order(void)
{
	static const struct gk_phase_hooks a = {.name = "a", .order = 201, .before = order_a},
					   b = {.name = "b", .order = 203, .before = order_b},
					   c = {.name = "c", .order = 202, .before = order_c};
	struct gk_phase_verdict v;
	int ret;

	gk_phase_register(&b);
	gk_phase_register(&a);
	gk_phase_register(&c);
	/* FOLDER: no product concern takes part in it. */
	ret = gk_phase_before(GK_PHASE_FOLDER, GK_CKPT_APP, &v);
	ok(ret == -EAGAIN && !strcmp(order_log, "acb"),
	   "hooks run by their order whatever the order they registered in, until one stops "
	   "(%d, ran %s)",
	   ret, order_log);
	gk_phase_unregister(&a);
	gk_phase_unregister(&b);
	gk_phase_unregister(&c);
	order_log[0] = 0;
	ret = gk_phase_before(GK_PHASE_FOLDER, GK_CKPT_APP, &v);
	ok(ret == 0 && !order_log[0], "unregistered hooks run no more");
}

/* ---- the checkpoints ---- */

static struct gk_member member = {.id = 0x1234, .members = 1, .member = 0, .agreement = "test"};

static void opts_for(enum gk_ckpt_kind kind, struct gk_pipeline_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->step = 7;
	/* The blocking path: every phase runs in this thread. */
	o->exiting = 1;
	if (kind == GK_CKPT_MEMBER) {
		gk_error_t err;
		uint64_t next = 0;

		gk_store_next(gk_rt.settings.dir, &next, &err);
		member.sequence = next;
		o->member = &member;
	}
	o->assist = 1;
	o->label = "transparent (test)";
}

static const char *kind_name(enum gk_ckpt_kind kind)
{
	return kind == GK_CKPT_APP	? "application"
	       : kind == GK_CKPT_MEMBER ? "set-member"
					: "transparent";
}

/* A whole checkpoint, step by step: each phase in order, the gate closed
 * from the drain until the data is written. */
static void test_whole(enum gk_ckpt_kind kind)
{
	struct gk_pipeline P;
	struct gk_pipeline_opts o;
	char was[256], now[256];
	int in_order = 1, gate_right = 1, steps = 0;

	newest(was, sizeof(was));
	opts_for(kind, &o);
	gk_pipeline_init(&P, &o);
	while (!P.done && steps < 2 * GK_PHASE_COUNT) {
		enum gk_phase ph = P.next;

		if ((int)ph != steps)
			in_order = 0;
		gk_pipeline_step(&P);
		steps++;
		/* After the drain and up to the write: closed. */
		if (!P.done && ph >= GK_PHASE_DRAIN && ph < GK_PHASE_WRITE && gate_open())
			gate_right = 0;
		if (!P.done && ph < GK_PHASE_DRAIN && !gate_open())
			gate_right = 0;
	}
	ok(P.done && P.ret == 0 && in_order && steps == GK_PHASE_COUNT,
	   "%s checkpoint: every phase in order, admit to commit (%d steps, answer %d)",
	   kind_name(kind), steps, P.ret);
	ok(gate_right && gate_open(),
	   "%s checkpoint: the gate closed from the drain to the write, open after it",
	   kind_name(kind));
	newest(now, sizeof(now));
	ok(strcmp(now, was) > 0, "%s checkpoint: committed (%s, the newest before: %s)",
	   kind_name(kind), now, was[0] ? was : "none");
}

/* A failure injected in each phase stops the checkpoint there; the folder
 * is as it was and the gate open. */
static void test_failures(enum gk_ckpt_kind kind)
{
	for (int ph = 0; ph < GK_PHASE_COUNT; ph++) {
		struct gk_pipeline P;
		struct gk_pipeline_opts o;
		char *was, *now;

		/* Only a transparent checkpoint has a hold phase, only the
		 * application's a snapshot. */
		if (ph == GK_PHASE_HOLD || (ph == GK_PHASE_SNAPSHOT && kind != GK_CKPT_APP))
			continue;
		opts_for(kind, &o);
		was = folder_state();
		fail_at = ph;
		memset(seen, 0, sizeof(seen));
		gk_pipeline_init(&P, &o);
		gk_pipeline_run(&P);
		fail_at = -1;
		now = folder_state();
		ok(P.ret == -EIO && (int)P.next == ph + 1 && seen[ph] == 1 &&
		       (ph + 1 >= GK_PHASE_COUNT || !seen[ph + 1]),
		   "%s checkpoint, failure in the %s phase: stopped there (answer %d, next %s)",
		   kind_name(kind), gk_phase_name(ph), P.ret, gk_phase_name(P.next));
		ok(!strcmp(was, now) && gate_open(),
		   "%s checkpoint, failure in the %s phase: the previous checkpoint intact, "
		   "nothing left, the gate open",
		   kind_name(kind), gk_phase_name(ph));
		if (strcmp(was, now))
			printf("# before:\n# %s\n# after:\n# %s\n", was, now);
		free(was);
		free(now);
	}
}

/* Failures of the phases themselves, and tracking's own refusal. */
static void test_real_failures(void)
{
	struct gk_pipeline P;
	struct gk_pipeline_opts o;
	char saved[sizeof(gk_rt.settings.dir)], blocker[sizeof(saved) + 8], *was, *now;
	CUdeviceptr managed;
	FILE *f;

	memcpy(saved, gk_rt.settings.dir, sizeof(saved));
	was = folder_state();

	opts_for(GK_CKPT_APP, &o);
	gk_rt.settings.dir[0] = 0;
	gk_pipeline_init(&P, &o);
	gk_pipeline_run(&P);
	ok(P.ret == -EINVAL && P.next == GK_PHASE_FOLDER + 1 && gate_open(),
	   "no folder set: stopped in the folder phase (answer %d), the gate open", P.ret);

	/* A folder below a file: no .tmp folder can be made. */
	snprintf(blocker, sizeof(blocker), "%.4000s.file", saved);
	f = fopen(blocker, "w");
	if (f)
		fclose(f);
	snprintf(gk_rt.settings.dir, sizeof(gk_rt.settings.dir), "%.4000s/below", blocker);
	gk_pipeline_init(&P, &o);
	gk_pipeline_run(&P);
	ok(P.ret < 0 && P.next == GK_PHASE_DESCRIBE + 1 && gate_open(),
	   "a folder that cannot be made: stopped in the describe phase (answer %d, next %s), "
	   "the gate open",
	   P.ret, gk_phase_name(P.next));
	memcpy(gk_rt.settings.dir, saved, sizeof(saved));
	unlink(blocker);

	/* Something tracking counts (managed memory the runtime could not
	 * record, say): refused in the refuse phase. */
	gk_track(GK_UNSUP_MANAGED, 1);
	gk_pipeline_init(&P, &o);
	gk_pipeline_run(&P);
	ok(P.ret == -ENOTSUP && P.next == GK_PHASE_REFUSE + 1 && gate_open(),
	   "what tracking counts: refused by its hook in the refuse phase (answer %d)", P.ret);
	gk_track(GK_UNSUP_MANAGED, -1);
	now = folder_state();
	ok(!strcmp(was, now), "and after each, the previous checkpoint intact, nothing left");
	free(was);
	free(now);
	/* Managed memory itself is checkpointed (managed.c), not refused. */
	if (cuMemAllocManaged(&managed, 1 << 20, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS) {
		skip("the stand-in gives no managed memory");
	} else {
		gk_pipeline_init(&P, &o);
		gk_pipeline_run(&P);
		ok(P.ret == 0 && gate_open(), "managed memory: checkpointed (answer %d)", P.ret);
		cuMemFree(managed);
	}
}

/* Transparent: a hold that fails (peer access, say) leaves device memory
 * to the driver, and a failed image goes on without it; the gate stays
 * closed for the shepherd until released. */
static void test_transparent(void)
{
	struct gk_pipeline P;
	struct gk_pipeline_opts o;
	char *was = folder_state(), *now;

	opts_for(GK_CKPT_TRANSPARENT, &o);
	fail_at = GK_PHASE_HOLD;
	gk_pipeline_init(&P, &o);
	while (!P.done && P.next <= GK_PHASE_HOLD)
		gk_pipeline_step(&P);
	ok(!P.done && !P.assisted && P.next == GK_PHASE_DESCRIBE && !gate_open(),
	   "transparent, the hold phase refuses: the driver copies device memory, the "
	   "checkpoint goes on with the gate closed");
	fail_at = GK_PHASE_WRITE;
	gk_pipeline_run(&P);
	fail_at = -1;
	ok(P.done && P.ret == 0 && !P.sealed && !P.m && !gate_open(),
	   "transparent, the write fails: no image, the checkpoint goes on (answer %d), the gate "
	   "still closed",
	   P.ret);
	gk_pipeline_release(&P);
	now = folder_state();
	ok(gate_open() && !strcmp(was, now),
	   "transparent, released: the gate open, nothing left in the folder");
	free(was);
	free(now);
}

/* An application checkpoint after which the program goes on: the pause
 * ends with the snapshot phase, and the writer's thread runs the write and
 * commit phases; a failure there is only logged, and leaves the previous
 * checkpoint intact. (The first may be written the blocking way while
 * snapshot memory is pinned.) */
static int background_once(struct gk_pipeline *P, int fail)
{
	struct gk_pipeline_opts o;

	opts_for(GK_CKPT_APP, &o);
	o.exiting = 0;
	memset(seen, 0, sizeof(seen));
	fail_at = fail;
	gk_pipeline_init(P, &o);
	gk_pipeline_run(P);
	return gate_open();
}

static void test_background(void)
{
	struct gk_pipeline P;
	char was[256], now[256], *before, *after;
	int open_at_once = 0, tries;

	for (tries = 0; tries < 3; tries++) {
		newest(was, sizeof(was));
		open_at_once = background_once(&P, -1);
		gk_writer_wait();
		if (P.background)
			break;
	}
	fail_at = -1;
	newest(now, sizeof(now));
	ok(P.ret == 0 && P.background && open_at_once,
	   "a checkpoint the program goes on after: the pause ends with the snapshot phase, the "
	   "gate open at once (answer %d, in the background: %d, after %d tries)",
	   P.ret, P.background, tries + 1);
	ok(seen[GK_PHASE_WRITE] == 1 && seen[GK_PHASE_COMMIT] == 1 &&
	       !pthread_equal(seen_in[GK_PHASE_WRITE], pthread_self()) &&
	       !pthread_equal(seen_in[GK_PHASE_COMMIT], pthread_self()),
	   "its write and commit phases ran in the writer's thread, hooks and all");
	ok(strcmp(now, was) > 0, "and it committed (%s, the newest before: %s)", now,
	   was[0] ? was : "none");
	for (int ph = GK_PHASE_WRITE; ph <= GK_PHASE_COMMIT; ph++) {
		before = folder_state();
		open_at_once = background_once(&P, ph);
		gk_writer_wait();
		fail_at = -1;
		after = folder_state();
		ok(P.ret == 0 && P.background && seen[ph] == 1 && !strcmp(before, after) &&
		       gate_open() && open_at_once,
		   "a failure in the %s phase in the background: only logged, the previous "
		   "checkpoint intact, nothing left, the gate open",
		   gk_phase_name(ph));
		free(before);
		free(after);
	}
}

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr d;

	/* The application's failures in every phase but hold, the set
	 * member's in every phase but hold and snapshot. */
	plan(2 + 3 + 2 * (GK_PHASE_COUNT - 1) + 2 * (GK_PHASE_COUNT - 2) + 3 + 5 + 3 + 3 + 5);
	if (!gk_rt.settings_ok || !gk_rt.settings.dir[0]) {
		printf("Bail out! the runtime's settings (GPUCKPT_DIR) are not set: run "
		       "pipeline.sh\n");
		return 1;
	}
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&d, 4 << 20) || cuMemsetD8(d, 0x5a, 4 << 20)) {
		printf("Bail out! CUDA setup on the stand-in failed\n");
		return 1;
	}
	test_order();
	gk_phase_register(&inject);
	test_whole(GK_CKPT_APP);
	test_failures(GK_CKPT_APP);
	test_failures(GK_CKPT_MEMBER);
	test_whole(GK_CKPT_MEMBER);
	test_real_failures();
	test_transparent();
	test_whole(GK_CKPT_APP);
	test_background();
	cuMemFree(d);
	return done_testing();
}
