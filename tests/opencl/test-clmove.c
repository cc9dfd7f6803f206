/*
 * test-clmove - OpenCL objects made anew on another device in a running
 * process (docs/opencl.md, "Another device after CRIU"), the runtime linked
 * in (libgkcore) on pocl with two CPU devices ("pthread" and "basic"), and
 * GPUCKPT_OPENCL_MOVABLE=1: the program holds the runtime's handles. It makes
 * a context, a queue, a COPY_HOST_PTR buffer with a sub-buffer, a
 * USE_HOST_PTR buffer of doubles, a program built with options and two
 * kernels (the program released once they are made), runs steps, moves every object onto the other device half-way and
 * back again later, and ends with the result of the same steps computed on
 * the host; its handles (the same variables all along) answer for the new
 * device. A move refused (a user event not set, a device that is not there)
 * names the cause and changes nothing. The transparent restore's path (the
 * phase hooks told of CRIU's restore, opencl.device naming the device) moves
 * them too, and follows no link there. Run by opencl-move.sh; opencl-criu-move.sh does the same move
 * after a real CRIU restore.
 */
#include "config.h"

#include "tap.h"

#include "core/state/phase.h"
#include "core/state/runtime.h"

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_icd.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The runtime's move (interpose/opencl_move.h); weak, so that a runtime
 * without it fails here rather than at the link. */
int gk_cl_move(const char *spec, char *why, size_t len) __attribute__((weak));
void gk_phase_resumed(const char *ckpt) __attribute__((weak));

#define N 4096
#define ND 512
#define STEPS 10

static const char *src = "__kernel void k(__global uint *a, uint s)\n"
			 "{\n"
			 "	size_t i = get_global_id(0);\n"
			 "	a[i] = a[i] * 1103515245u + s * SCALE + (uint)i;\n"
			 "}\n"
			 "__kernel void d(__global double *x, double f)\n"
			 "{\n"
			 "	size_t i = get_global_id(0);\n"
			 "	x[i] = x[i] * f + 1.0;\n"
			 "}\n";

/* pocl's device of POCL_DEVICES word WORD ("pthread" or "basic"), its name
 * in NAME. pocl 6 renamed the devices (not the words): pthread-ARCH became
 * cpu-ARCH and basic-ARCH cpu-minimal-ARCH (Debian trixie, sid). A move names
 * the device by its whole name, which is no other's beginning. */
static int is_word(const char *name, const char *word)
{
	if (!strcmp(word, "basic"))
		return !strncmp(name, "basic-", 6) || !strncmp(name, "cpu-minimal-", 12);
	return !strncmp(name, "pthread-", 8) ||
	       (!strncmp(name, "cpu-", 4) && strncmp(name, "cpu-minimal-", 12));
}

static cl_device_id device(const char *word, char *name, size_t len)
{
	cl_platform_id p;
	cl_device_id devs[8];
	cl_uint n = 0;

	if (clGetPlatformIDs(1, &p, NULL) != CL_SUCCESS ||
	    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 8, devs, &n) != CL_SUCCESS)
		return NULL;
	for (cl_uint i = 0; i < n; i++) {
		clGetDeviceInfo(devs[i], CL_DEVICE_NAME, len, name, NULL);
		if (is_word(name, word))
			return devs[i];
	}
	return NULL;
}

static cl_device_id queue_device(cl_command_queue q)
{
	cl_device_id d = NULL;

	clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof(d), &d, NULL);
	return d;
}

int main(void)
{
	static cl_uint a[N], ref[N];
	static double x[ND], xref[ND];
	char why[1024], pname[256], bname[256];
	cl_device_id pthr, basic, cd = NULL;
	cl_context ctx, c2 = NULL;
	cl_command_queue q;
	cl_program pr, p2 = NULL;
	cl_kernel k, kd;
	cl_mem m, sub, mx;
	cl_event ev;
	cl_int e;
	cl_buffer_region half = {N / 2 * sizeof(cl_uint), N / 2 * sizeof(cl_uint)};
	double f = 0.5;
	int ret, moved = 0, moved_back = 0;

	plan(12);
	if (!gk_rt.settings_ok) {
		printf("Bail out! the runtime's settings are not set: run opencl-move.sh\n");
		return 1;
	}
	pthr = device("pthread", pname, sizeof(pname));
	basic = device("basic", bname, sizeof(bname));
	if (!pthr || !basic) {
		for (int i = 0; i < 12; i++)
			skip("pocl's pthread and basic devices are not both there (POCL_DEVICES="
			     "\"pthread basic\", pocl-opencl-icd)");
		return done_testing();
	}
	for (int i = 0; i < N; i++)
		a[i] = ref[i] = (cl_uint)i * 7u;
	for (int i = 0; i < ND; i++)
		x[i] = xref[i] = i;
	ctx = clCreateContext(NULL, 1, &pthr, NULL, NULL, &e);
	q = clCreateCommandQueueWithProperties(ctx, pthr, NULL, &e);
	m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(a), a, &e);
	sub = clCreateSubBuffer(m, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &half, &e);
	mx = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, sizeof(x), x, &e);
	pr = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
	e = clBuildProgram(pr, 1, &pthr, "-DSCALE=3", NULL, NULL);
	k = clCreateKernel(pr, "k", &e);
	kd = clCreateKernel(pr, "d", &e);
	/* As many programs do: the kernels hold it now. */
	clReleaseProgram(pr);
	clSetKernelArg(k, 0, sizeof(sub), &sub);
	clSetKernelArg(kd, 0, sizeof(mx), &mx);
	clSetKernelArg(kd, 1, sizeof(f), &f);
	ok(ctx && q && m && sub && mx && pr && k && kd && e == CL_SUCCESS &&
	       *(void **)ctx != *(void **)pthr,
	   "objects made on '%s' through the runtime, with handles of its own", pname);

	for (cl_uint s = 0; s < STEPS; s++) {
		size_t g = N / 2, gd = ND;

		if (s == 4) {
			ret = gk_cl_move ? gk_cl_move(bname, why, sizeof(why)) : -ENOSYS;
			moved = ret == 0;
			ok(moved, "step 4: every object made anew on '%s' (%d: %s)", bname, ret,
			   ret ? (gk_cl_move ? why : "this runtime has no gk_cl_move") : "");
			clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof(cd), &cd, NULL);
			ok(moved && cd == basic && queue_device(q) == basic,
			   "the program's context and queue (the same handles) are on '%s' now",
			   bname);
			clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(c2), &c2, NULL);
			clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof(p2), &p2, NULL);
			ok(moved && c2 == ctx && p2 == pr,
			   "info queries answer with the program's handles (queue's context, "
			   "kernel's program)");
		}
		if (s == 7 && moved) {
			ret = gk_cl_move(pname, why, sizeof(why));
			moved_back = ret == 0 && queue_device(q) == pthr;
			ok(moved_back, "step 7: moved back onto '%s' (%d: %s)", pname, ret,
			   ret ? why : "");
		} else if (s == 7) {
			ok(0, "step 7: moved back (no first move)");
		}
		clSetKernelArg(k, 1, sizeof(s), &s);
		clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
		clEnqueueNDRangeKernel(q, kd, 1, NULL, &gd, NULL, 0, NULL, NULL);
		/* Through the ICD's dispatch table, as a library that reached
		 * the loader some other way would call it. */
		(*(struct _cl_icd_dispatch **)q)->clFinish(q);
		for (int i = N / 2; i < N; i++)
			ref[i] = ref[i] * 1103515245u + s * 3u + (cl_uint)(i - N / 2);
		for (int i = 0; i < ND; i++)
			xref[i] = xref[i] * f + 1.0;
	}
	e = clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof(a), a, 0, NULL, NULL);
	ok(e == CL_SUCCESS && !memcmp(a, ref, sizeof(a)),
	   "the buffer and its sub-buffer end as the steps computed on the host do (%d)", e);
	{
		double *p = clEnqueueMapBuffer(q, mx, CL_TRUE, CL_MAP_READ, 0, sizeof(x), 0, NULL,
					       NULL, &e);

		ok(p && !memcmp(p, xref, sizeof(xref)),
		   "the USE_HOST_PTR buffer of doubles too (kernel argument by value kept)");
		if (p)
			clEnqueueUnmapMemObject(q, mx, p, 0, NULL, NULL);
		clFinish(q);
	}

	ev = clCreateUserEvent(ctx, &e);
	ret = gk_cl_move ? gk_cl_move(bname, why, sizeof(why)) : -ENOSYS;
	ok(ret == -EBUSY && strstr(why, "user event") && queue_device(q) == pthr,
	   "a user event not set refuses the move, naming it, and nothing moves (%d: %s)", ret,
	   gk_cl_move ? why : "no gk_cl_move");
	clSetUserEventStatus(ev, CL_COMPLETE);
	clReleaseEvent(ev);
	ret = gk_cl_move ? gk_cl_move("nosuchdevice", why, sizeof(why)) : -ENOSYS;
	ok(ret == -ENODEV && strstr(why, "nosuchdevice"),
	   "a device that is not there is refused by name (%d: %s)", ret,
	   gk_cl_move ? why : "no gk_cl_move");
	ret = gk_cl_move ? gk_cl_move("cpu:0", why, sizeof(why)) : -ENOSYS;
	ok(ret == 0 && clFinish(q) == CL_SUCCESS, "a device named TYPE:N (cpu:0) (%d: %s)", ret,
	   ret ? why : "");

	/* The transparent restore's path: the phase hooks told that CRIU
	 * restored the process, and opencl.device in the checkpoint folder
	 * (GPUCKPT_DIR) naming the device; a link there is not followed. */
	{
		char path[4200], target[4300];
		FILE *fp;

		if (gk_cl_move)
			gk_cl_move(pname, why, sizeof(why));
		snprintf(path, sizeof(path), "%s/opencl.device", gk_rt.settings.dir);
		snprintf(target, sizeof(target), "%s.target", path);
		fp = fopen(target, "w");
		if (fp) {
			fprintf(fp, "%s\n", bname);
			fclose(fp);
		}
		if (symlink(target, path) < 0)
			perror(path);
		if (gk_phase_resumed)
			gk_phase_resumed(gk_rt.settings.dir);
		ok(queue_device(q) == pthr, "restored: a link at opencl.device is not followed");
		unlink(path);
		rename(target, path);
		if (gk_phase_resumed)
			gk_phase_resumed(gk_rt.settings.dir);
		ok(queue_device(q) == basic && clFinish(q) == CL_SUCCESS,
		   "restored: opencl.device naming '%s' moves every object there", bname);
		unlink(path);
	}

	clReleaseKernel(kd);
	clReleaseKernel(k);
	clReleaseMemObject(sub);
	clReleaseMemObject(mx);
	clReleaseMemObject(m);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
	return done_testing();
}
