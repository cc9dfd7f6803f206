/*
 * A checkpoint-aware OpenCL program of our own: one context, two command
 * queues, buffers made with CL_MEM_COPY_HOST_PTR and CL_MEM_USE_HOST_PTR, a
 * buffer split into two sub-buffers, kernels from source (one uses the double
 * type), events that order the queues, a kernel argument set only on even
 * steps (so a restore must set it again), and gpuckpt_point() at the loop.
 * Integer arithmetic, and doubles that hold integers exactly: every OpenCL
 * device gives the same bytes.
 *   prog-clsteps STEPS [KILL]   KILL: ask for a checkpoint at step KILL, then
 *                               two steps later die by SIGKILL
 *   prog-clsteps STEPS image    hold an image at the first point (refused)
 *   prog-clsteps STEPS event    hold a user event not yet set (refused)
 *   prog-clsteps STEPS svm      hold shared virtual memory (refused; exit 4
 *                               when the device has none)
 * With CLSTEPS_BINARY set, the kernels come from a program made from the
 * binary of the one built from source (which is then released). With
 * CLSTEPS_CLONE set, the second kernel is a clone (clCloneKernel) of one whose
 * arguments were set, and the original is released.
 * CLSTEPS_DEVICE=cpu|gpu: the first device of that type of any platform
 * (exit 5 when there is none), instead of the first platform's first device.
 * With CLSTEPS_SHIFT set in the environment, the second sub-buffer starts 256
 * bytes later (a run that differs from the checkpointed one), and the program
 * ends after its first checkpoint point, printing what it returned.
 * Prints "device NAME, N compute units", "restored at step S" and
 * "result HEX" (a hash of every buffer at the end).
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <gpuckpt.h>

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 4096

static const char *src =
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "__kernel void stepk(__global uint *a, __global const uint *b, __global uint *c0, uint k,\n"
    "                    uint scale)\n"
    "{\n"
    "	size_t i = get_global_id(0);\n"
    "	a[i] = a[i] * 1103515245u + b[i] + k * scale;\n"
    "	c0[i] = a[i] ^ (uint)i;\n"
    "}\n"
    "__kernel void mixk(__global const uint *c0, __global uint *c1)\n"
    "{\n"
    "	size_t i = get_global_id(0);\n"
    "	double d = (double)(c0[i] >> 8) * 0.5;\n"
    "	c1[i] = (uint)d + (c0[(i + 1) % get_global_size(0)] & 0xffu);\n"
    "}\n";

#define CHECK(what, e)                                                                             \
	do {                                                                                       \
		if ((e) != CL_SUCCESS) {                                                           \
			fprintf(stderr, "prog-clsteps: %s: error %d\n", what, (int)(e));           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static cl_uint hb[N]; /* the USE_HOST_PTR buffer's memory */

int main(int argc, char **argv)
{
	cl_platform_id plat;
	cl_device_id dev;
	cl_int e;
	cl_uint cus = 0;
	char name[256] = "";
	long steps, kill_at = -1, step = 0;
	int image = 0, uevent = 0, svm = 0;
	cl_uint init[N], out[2 * N];
	cl_uint scale = 1;

	if (argc < 2)
		return 2;
	steps = atol(argv[1]);
	if (argc > 2 && !strcmp(argv[2], "image"))
		image = 1;
	else if (argc > 2 && !strcmp(argv[2], "event"))
		uevent = 1;
	else if (argc > 2 && !strcmp(argv[2], "svm"))
		svm = 1;
	else if (argc > 2)
		kill_at = atol(argv[2]);

	if (getenv("CLSTEPS_DEVICE")) {
		cl_device_type type = strcmp(getenv("CLSTEPS_DEVICE"), "gpu") ? CL_DEVICE_TYPE_CPU
									     : CL_DEVICE_TYPE_GPU;
		cl_platform_id plats[16];
		cl_uint np = 0, i;

		if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS)
			np = 0;
		for (i = 0; i < np && i < 16; i++)
			if (clGetDeviceIDs(plats[i], type, 1, &dev, NULL) == CL_SUCCESS)
				break;
		if (i == np || i == 16) {
			printf("no %s device\n", getenv("CLSTEPS_DEVICE"));
			return 5;
		}
		plat = plats[i];
	} else {
		CHECK("clGetPlatformIDs", clGetPlatformIDs(1, &plat, NULL));
		CHECK("clGetDeviceIDs", clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
	}
	(void)plat;
	clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(name) - 1, name, NULL);
	clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cus), &cus, NULL);
	printf("device %s, %u compute units\n", name, cus);

	cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
	CHECK("clCreateContext", e);
	cl_command_queue q1 = clCreateCommandQueueWithProperties(ctx, dev, NULL, &e);
	CHECK("clCreateCommandQueueWithProperties", e);
	cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &e);
	CHECK("clCreateCommandQueue", e);

	for (int i = 0; i < N; i++) {
		init[i] = (cl_uint)i * 2654435761u;
		hb[i] = (cl_uint)i;
	}
	cl_mem a =
	    clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(init), init, &e);
	CHECK("clCreateBuffer a", e);
	cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, sizeof(hb), hb, &e);
	CHECK("clCreateBuffer b", e);
	cl_mem c = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2 * N * sizeof(cl_uint), NULL, &e);
	CHECK("clCreateBuffer c", e);
	cl_buffer_region r0 = {0, N * sizeof(cl_uint)},
			 r1 = {N * sizeof(cl_uint), N * sizeof(cl_uint)};
	int shift = getenv("CLSTEPS_SHIFT") != NULL;

	if (shift) {
		r1.origin += 256;
		r1.size -= 256;
	}
	cl_mem c0 = clCreateSubBuffer(c, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r0, &e);
	CHECK("clCreateSubBuffer c0", e);
	cl_mem c1 = clCreateSubBuffer(c, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r1, &e);
	CHECK("clCreateSubBuffer c1", e);
	cl_uint zero = 0;
	CHECK("clEnqueueFillBuffer", clEnqueueFillBuffer(q1, c, &zero, sizeof(zero), 0,
							 2 * N * sizeof(cl_uint), 0, NULL, NULL));

	cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &e);
	CHECK("clCreateProgramWithSource", e);
	e = clBuildProgram(prog, 1, &dev, "-cl-std=CL1.2", NULL, NULL);
	if (e != CL_SUCCESS) {
		char log[8192] = "";

		clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log, NULL);
		fprintf(stderr, "%s\n", log);
		CHECK("clBuildProgram", e);
	}
	if (getenv("CLSTEPS_BINARY")) {
		size_t len = 0;
		unsigned char *bin;
		cl_program bprog;

		CHECK("CL_PROGRAM_BINARY_SIZES",
		      clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(len), &len, NULL));
		bin = malloc(len);
		if (!bin)
			return 1;
		CHECK("CL_PROGRAM_BINARIES",
		      clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(bin), &bin, NULL));
		bprog = clCreateProgramWithBinary(ctx, 1, &dev, &len, (const unsigned char **)&bin,
						  NULL, &e);
		CHECK("clCreateProgramWithBinary", e);
		CHECK("clBuildProgram binary", clBuildProgram(bprog, 1, &dev, NULL, NULL, NULL));
		free(bin);
		clReleaseProgram(prog);
		prog = bprog;
		printf("kernels from a binary\n");
	}
	cl_kernel ks = clCreateKernel(prog, "stepk", &e);
	CHECK("clCreateKernel stepk", e);
	cl_kernel km = clCreateKernel(prog, "mixk", &e);
	CHECK("clCreateKernel mixk", e);
	CHECK("arg", clSetKernelArg(ks, 0, sizeof(cl_mem), &a));
	CHECK("arg", clSetKernelArg(ks, 1, sizeof(cl_mem), &b));
	CHECK("arg", clSetKernelArg(ks, 2, sizeof(cl_mem), &c0));
	CHECK("arg", clSetKernelArg(ks, 4, sizeof(scale), &scale));
	CHECK("arg", clSetKernelArg(km, 0, sizeof(cl_mem), &c0));
	CHECK("arg", clSetKernelArg(km, 1, sizeof(cl_mem), &c1));
	if (getenv("CLSTEPS_CLONE")) {
		cl_kernel clone = clCloneKernel(km, &e);

		CHECK("clCloneKernel", e);
		clReleaseKernel(km);
		km = clone;
		printf("a cloned kernel\n");
	}
	CHECK("clFinish", clFinish(q1));

	if (image) {
		cl_image_format f = {CL_RGBA, CL_UNSIGNED_INT8};
		cl_image_desc d = {
		    .image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = 4, .image_height = 4};
		cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &f, &d, NULL, &e);

		CHECK("clCreateImage", e);
		(void)img;
	}
	if (svm) {
		void *p = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 4096, 0);

		if (!p)
			return 4;
	}
	if (uevent) {
		cl_event ue = clCreateUserEvent(ctx, &e);

		CHECK("clCreateUserEvent", e);
		(void)ue;
	}

	gpuckpt_protect("step", &step, sizeof(step));
	for (; step < steps; step++) {
		size_t g = N;
		cl_event ev1, ev2, ev3;
		cl_uint k = (cl_uint)step;
		int rc;

		if (step == kill_at || image || uevent || svm)
			gpuckpt_request();
		rc = gpuckpt_point(step);
		if (rc == GPUCKPT_RESTORED)
			printf("restored at step %ld\n", step);
		if (rc == GPUCKPT_SAVED)
			printf("saved at step %ld\n", step);
		if (image || uevent || svm)
			return rc == GPUCKPT_NOT_SAVED ? 3 : 1;
		if (shift) {
			printf("first point: %d\n", rc);
			return 0;
		}
		if (kill_at >= 0 && step == kill_at + 2) {
			fflush(stdout);
			raise(SIGKILL);
		}
		if (step % 2 == 0) {
			scale = (cl_uint)step * 7u + 3u;
			CHECK("arg scale", clSetKernelArg(ks, 4, sizeof(scale), &scale));
		}
		k = (cl_uint)step;
		CHECK("arg k", clSetKernelArg(ks, 3, sizeof(k), &k));
		CHECK("stepk", clEnqueueNDRangeKernel(q1, ks, 1, NULL, &g, NULL, 0, NULL, &ev1));
		CHECK("mix", clEnqueueNDRangeKernel(q2, km, 1, NULL, &g, NULL, 1, &ev1, &ev2));
		CHECK("copy",
		      clEnqueueCopyBuffer(q1, c1, b, 0, 0, N * sizeof(cl_uint), 1, &ev2, &ev3));
		CHECK("clFlush", clFlush(q2));
		CHECK("clWaitForEvents", clWaitForEvents(1, &ev3));
		clReleaseEvent(ev1);
		clReleaseEvent(ev2);
		clReleaseEvent(ev3);
	}
	CHECK("clFinish", clFinish(q1));
	CHECK("clFinish", clFinish(q2));
	uint64_t h = 1469598103934665603ull;
	CHECK("read a", clEnqueueReadBuffer(q1, a, CL_TRUE, 0, sizeof(init), init, 0, NULL, NULL));
	h = fnv(h, init, sizeof(init));
	CHECK("read c", clEnqueueReadBuffer(q1, c, CL_TRUE, 0, sizeof(out), out, 0, NULL, NULL));
	h = fnv(h, out, sizeof(out));
	void *p = clEnqueueMapBuffer(q1, b, CL_TRUE, CL_MAP_READ, 0, sizeof(hb), 0, NULL, NULL, &e);
	CHECK("map b", e);
	h = fnv(h, p, sizeof(hb));
	CHECK("unmap b", clEnqueueUnmapMemObject(q1, b, p, 0, NULL, NULL));
	CHECK("clFinish", clFinish(q1));
	printf("result %016llx\n", (unsigned long long)h);
	clReleaseMemObject(c0);
	clReleaseMemObject(c1);
	clReleaseMemObject(c);
	clReleaseMemObject(b);
	clReleaseMemObject(a);
	clReleaseKernel(ks);
	clReleaseKernel(km);
	clReleaseProgram(prog);
	clReleaseCommandQueue(q1);
	clReleaseCommandQueue(q2);
	clReleaseContext(ctx);
	return 0;
}
