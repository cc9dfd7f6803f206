/*
 * prog-clloop - an OpenCL program that knows nothing of gpuckpt, for
 * transparent mode (opencl-criu.sh): STEPS times a kernel changes a buffer,
 * the program says "step N" and sleeps PAUSE_MS; at the end it reads the
 * buffer back and prints "result <FNV-1a hash>" and "device <name>", the
 * device its queue is on at the end (opencl-criu-move.sh: after a restore
 * onto another device). Deterministic on every OpenCL device.
 *
 *   prog-clloop STEPS PAUSE_MS
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 4096

static const char *src = "__kernel void k(__global uint *a, uint s)\n"
			 "{\n"
			 "	size_t i = get_global_id(0);\n"
			 "	a[i] = a[i] * 1103515245u + s + (uint)i;\n"
			 "}\n";

static int fail(const char *what, cl_int e)
{
	fprintf(stderr, "prog-clloop: %s: OpenCL error %d\n", what, (int)e);
	return 1;
}

int main(int argc, char **argv)
{
	static cl_uint a[N];
	cl_uint steps = argc > 1 ? (cl_uint)atoi(argv[1]) : 10;
	long pause_ms = argc > 2 ? atol(argv[2]) : 0;
	struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
	unsigned long long h = 1469598103934665603ull;
	cl_platform_id p;
	cl_device_id d;
	cl_context c;
	cl_command_queue q;
	cl_program pr;
	cl_kernel k;
	cl_mem m;
	cl_int e;

	if ((e = clGetPlatformIDs(1, &p, NULL)) != CL_SUCCESS)
		return fail("clGetPlatformIDs", e);
	if ((e = clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL)) != CL_SUCCESS)
		return fail("clGetDeviceIDs", e);
	c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
	if (!c)
		return fail("clCreateContext", e);
	q = clCreateCommandQueueWithProperties(c, d, NULL, &e);
	if (!q)
		return fail("clCreateCommandQueueWithProperties", e);
	m = clCreateBuffer(c, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(a), a, &e);
	if (!m)
		return fail("clCreateBuffer", e);
	pr = clCreateProgramWithSource(c, 1, &src, NULL, &e);
	if (!pr || (e = clBuildProgram(pr, 1, &d, NULL, NULL, NULL)) != CL_SUCCESS)
		return fail("clBuildProgram", e);
	k = clCreateKernel(pr, "k", &e);
	if (!k || (e = clSetKernelArg(k, 0, sizeof(m), &m)) != CL_SUCCESS)
		return fail("clCreateKernel", e);
	for (cl_uint s = 0; s < steps; s++) {
		size_t g = N;

		clSetKernelArg(k, 1, sizeof(s), &s);
		if ((e = clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL)) !=
		    CL_SUCCESS)
			return fail("clEnqueueNDRangeKernel", e);
		clFinish(q);
		printf("step %u\n", s);
		fflush(stdout);
		nanosleep(&ts, NULL);
	}
	if ((e = clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof(a), a, 0, NULL, NULL)) != CL_SUCCESS)
		return fail("clEnqueueReadBuffer", e);
	for (int i = 0; i < N; i++)
		h = (h ^ a[i]) * 1099511628211ull;
	printf("result %016llx\n", h);
	{
		char name[256] = "";
		cl_device_id qd = NULL;

		clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof(qd), &qd, NULL);
		clGetDeviceInfo(qd, CL_DEVICE_NAME, sizeof(name) - 1, name, NULL);
		printf("device %s\n", name);
	}
	clReleaseKernel(k);
	clReleaseProgram(pr);
	clReleaseMemObject(m);
	clReleaseCommandQueue(q);
	clReleaseContext(c);
	return 0;
}
