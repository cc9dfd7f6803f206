#include "config.h"

#include "core/control/dump.h"
#include "core/state/kstop.h"
#include "core/capture/changes.h"
#include "core/control/pipeline.h"
#include "core/state/runtime.h"
#include "core/capture/snapshot.h"
#include "core/capture/staging.h"
#include "core/capture/writer.h"

int gk_dump(long step, int exiting, int *background)
{
	struct gk_pipeline P;
	const struct gk_pipeline_opts o = {.kind = GK_CKPT_APP, .step = step, .exiting = exiting};

	gk_pipeline_init(&P, &o);
	gk_pipeline_run(&P);
	*background = P.background;
	return P.ret;
}

int gk_dump_member(long step, const struct gk_member *mem)
{
	struct gk_pipeline P;
	const struct gk_pipeline_opts o = {.kind = GK_CKPT_MEMBER, .step = step, .member = mem};

	gk_pipeline_init(&P, &o);
	return gk_pipeline_run(&P);
}

void gk_dump_context_gone(CUcontext ctx)
{
	gk_writer_wait();
	gk_kstop_context_gone(ctx);
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
		gk_dump_prepare_in(gk_pipeline_some_context());
}
