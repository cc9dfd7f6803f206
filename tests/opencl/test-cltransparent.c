/*
 * test-cltransparent - the OpenCL concern in the checkpoint pipeline, with
 * the runtime linked in (libgkcore) on pocl: a transparent checkpoint of a
 * process holding OpenCL objects on a CPU device goes through (its queues
 * drained; CRIU carries the buffers, host memory) and leaves its folder sealed
 * for the shepherd; one with a user event not set is refused in the refuse
 * phase, naming it, before anything is written; an application checkpoint of
 * the same process is written, with the OpenCL state among its host regions.
 * Run by opencl-transparent.sh.
 */
#include "config.h"

#include "tap.h"

#include "core/control/pipeline.h"
#include "core/state/runtime.h"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int main(void)
{
	struct gk_pipeline P;
	struct gk_pipeline_opts o = {.kind = GK_CKPT_TRANSPARENT,
				     .step = 3,
				     .exiting = 1,
				     .assist = 1,
				     .label = "transparent (test)"};
	cl_platform_id plat;
	cl_device_id dev;
	cl_context ctx;
	cl_mem m;
	cl_event ev;
	cl_int e;
	char path[4200];
	struct stat st;

	plan(5);
	if (!gk_rt.settings_ok || !gk_rt.settings.dir[0]) {
		printf("Bail out! the runtime's settings (GPUCKPT_DIR) are not set: run "
		       "opencl-transparent.sh\n");
		return 1;
	}
	if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS ||
	    clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
		for (int i = 0; i < 5; i++)
			skip("no OpenCL platform with a device (install pocl-opencl-icd)");
		return done_testing();
	}
	ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
	m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &e);
	ok(ctx && m, "a context and a buffer, made through the runtime");

	gk_pipeline_init(&P, &o);
	gk_pipeline_run(&P);
	ok(P.ret == 0 && P.sealed,
	   "transparent, on a CPU device: its folder sealed for the shepherd (%d: %s)", P.ret,
	   P.v.why);
	if (P.sealed)
		gk_store_abort(&P.txn);
	gk_pipeline_release(&P);

	ev = clCreateUserEvent(ctx, &e);
	gk_pipeline_init(&P, &o);
	gk_pipeline_run(&P);
	ok(P.ret == -EBUSY && P.next == GK_PHASE_REFUSE + 1 && strstr(P.v.why, "user event"),
	   "transparent: a user event not set is refused in the refuse phase, naming it (%d: %s)",
	   P.ret, P.v.why);
	gk_pipeline_release(&P);
	clSetUserEventStatus(ev, CL_COMPLETE);
	clReleaseEvent(ev);
	snprintf(path, sizeof(path), "%s/ckpt.000001", gk_rt.settings.dir);
	ok(stat(path, &st) < 0, "and nothing was committed");

	o.kind = GK_CKPT_APP;
	gk_pipeline_init(&P, &o);
	gk_pipeline_run(&P);
	gk_pipeline_release(&P);
	ok(P.ret == 0 && stat(path, &st) == 0,
	   "application mode: the same process is checkpointed (%d)", P.ret);
	clReleaseMemObject(m);
	clReleaseContext(ctx);
	return done_testing();
}
