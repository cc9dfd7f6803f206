/*
 * test-cltransparent - the OpenCL concern in the checkpoint pipeline, with
 * the runtime linked in (libgkcore) on pocl: a transparent checkpoint of a
 * process holding OpenCL objects is refused in the refuse phase, saying why
 * (transparent mode does not re-create OpenCL objects yet), before anything is
 * written; an application checkpoint of the same process is written, with the
 * OpenCL state among its host regions. Run by opencl-transparent.sh.
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
	cl_int e;
	char path[4200];
	struct stat st;

	plan(4);
	if (!gk_rt.settings_ok || !gk_rt.settings.dir[0]) {
		printf("Bail out! the runtime's settings (GPUCKPT_DIR) are not set: run "
		       "opencl-transparent.sh\n");
		return 1;
	}
	if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS ||
	    clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL) != CL_SUCCESS) {
		for (int i = 0; i < 4; i++)
			skip("no OpenCL platform with a device (install pocl-opencl-icd)");
		return done_testing();
	}
	ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
	m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &e);
	ok(ctx && m, "a context and a buffer, made through the runtime");

	gk_pipeline_init(&P, &o);
	gk_pipeline_run(&P);
	ok(P.ret == -ENOTSUP && P.next == GK_PHASE_REFUSE + 1 &&
	       strstr(P.v.why, "OpenCL objects, which transparent mode does not checkpoint"),
	   "transparent: refused in the refuse phase, saying why (%d: %s)", P.ret, P.v.why);
	gk_pipeline_release(&P);
	snprintf(path, sizeof(path), "%s/ckpt.000001", gk_rt.settings.dir);
	ok(stat(path, &st) < 0, "and nothing was written");

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
