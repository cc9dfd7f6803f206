/*
 * route-drv - device allocations through the CUDA driver API reached the way
 * frameworks reach it: libcuda.so.1 opened with dlopen(), a few entry points
 * taken with dlsym() (among them the versioned cuMemAlloc_v2), the rest with
 * cuGetProcAddress. gpuckpt interposes both lookups; wherever an entry point
 * came from, the allocation must land in the runtime's reserved range.
 * Prints each allocation as
 *	route-drv: alloc WHAT 0xADDRESS (range start 0xSTART)
 * checks the data it moves through them, and ends with a checksum line.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "route-drv"

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
				CUdriverProcAddressQueryResult *);

struct drv {
	CUresult (*init)(unsigned);
	get_proc_fn get_proc;
	CUresult (*mem_alloc_dlsym)(CUdeviceptr *, size_t);
	CUresult (*error_name)(CUresult, const char **);
	CUresult (*device_get)(CUdevice *, int);
	CUresult (*ctx_retain)(CUcontext *, CUdevice);
	CUresult (*ctx_release)(CUdevice);
	CUresult (*ctx_set)(CUcontext);
	CUresult (*stream_create)(CUstream *, unsigned);
	CUresult (*stream_destroy)(CUstream);
	CUresult (*stream_sync)(CUstream);
	CUresult (*mem_alloc)(CUdeviceptr *, size_t);
	CUresult (*mem_free)(CUdeviceptr);
	CUresult (*mem_alloc_async)(CUdeviceptr *, size_t, CUstream);
	CUresult (*mem_free_async)(CUdeviceptr, CUstream);
	CUresult (*htod)(CUdeviceptr, const void *, size_t);
	CUresult (*dtod)(CUdeviceptr, CUdeviceptr, size_t);
	CUresult (*dtoh)(void *, CUdeviceptr, size_t);
	CUresult (*pointer_attr)(void *, CUpointer_attribute, CUdeviceptr);
};

static struct drv d;

/* By dlsym: what a program finds before it has cuGetProcAddress. */
static const struct {
	const char *name;
	void **slot;
} by_dlsym[] = {
    {"cuInit", (void **)&d.init},
    {"cuGetProcAddress_v2", (void **)&d.get_proc},
    {"cuMemAlloc_v2", (void **)&d.mem_alloc_dlsym},
    {"cuGetErrorName", (void **)&d.error_name},
};

/* By cuGetProcAddress, under their unversioned names, as the CUDA runtime asks. */
static const struct {
	const char *name;
	void **slot;
} by_proc[] = {
    {"cuDeviceGet", (void **)&d.device_get},
    {"cuDevicePrimaryCtxRetain", (void **)&d.ctx_retain},
    {"cuDevicePrimaryCtxRelease", (void **)&d.ctx_release},
    {"cuCtxSetCurrent", (void **)&d.ctx_set},
    {"cuStreamCreate", (void **)&d.stream_create},
    {"cuStreamDestroy", (void **)&d.stream_destroy},
    {"cuStreamSynchronize", (void **)&d.stream_sync},
    {"cuMemAlloc", (void **)&d.mem_alloc},
    {"cuMemFree", (void **)&d.mem_free},
    {"cuMemAllocAsync", (void **)&d.mem_alloc_async},
    {"cuMemFreeAsync", (void **)&d.mem_free_async},
    {"cuMemcpyHtoD", (void **)&d.htod},
    {"cuMemcpyDtoD", (void **)&d.dtod},
    {"cuMemcpyDtoH", (void **)&d.dtoh},
    {"cuPointerGetAttribute", (void **)&d.pointer_attr},
};

static int failed(CUresult r, const char *call)
{
	const char *name = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	if (d.error_name(r, &name) != CUDA_SUCCESS || !name)
		name = "unknown CUDA error";
	fprintf(stderr, "%s: %s failed: %s (%d)\n", PROG, call, name, (int)r);
	return 1;
}

#define CU(call) failed((call), #call)

static int load(void)
{
	void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib) {
		fprintf(stderr, "%s: dlopen(libcuda.so.1): %s\n", PROG, dlerror());
		return 1;
	}
	for (size_t i = 0; i < sizeof(by_dlsym) / sizeof(by_dlsym[0]); i++) {
		*by_dlsym[i].slot = dlsym(lib, by_dlsym[i].name);
		if (!*by_dlsym[i].slot) {
			fprintf(stderr, "%s: dlsym(libcuda.so.1, %s) found nothing\n", PROG,
				by_dlsym[i].name);
			return 1;
		}
	}
	if (CU(d.init(0)))
		return 1;
	for (size_t i = 0; i < sizeof(by_proc) / sizeof(by_proc[0]); i++) {
		CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SUCCESS;
		CUresult r;

		r = d.get_proc(by_proc[i].name, by_proc[i].slot, CUDA_VERSION,
			       CU_GET_PROC_ADDRESS_DEFAULT, &found);
		if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS ||
		    !*by_proc[i].slot) {
			fprintf(stderr, "%s: cuGetProcAddress(%s, %d) failed: result %d, %d\n",
				PROG, by_proc[i].name, CUDA_VERSION, (int)r, (int)found);
			return 1;
		}
	}
	return 0;
}

static int show(const char *what, CUdeviceptr p)
{
	CUdeviceptr start = 0;

	if (CU(d.pointer_attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p)))
		return 1;
	printf("%s: alloc %s 0x%llx (range start 0x%llx)\n", PROG, what, (unsigned long long)p,
	       (unsigned long long)start);
	return 0;
}

static uint64_t fnv1a(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t k = 0; k < len; k++) {
		h ^= p[k];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* Through all three buffers and back; every byte must survive. */
static int move_data(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, size_t bytes, CUstream s)
{
	unsigned *in = malloc(bytes), *out = malloc(bytes);
	size_t n = bytes / sizeof(unsigned);
	int rc = 1;

	if (!in || !out) {
		fprintf(stderr, "%s: out of host memory\n", PROG);
		goto out_free;
	}
	for (size_t i = 0; i < n; i++)
		in[i] = (unsigned)i * 2654435761u;
	/* c came from cuMemAllocAsync: the synchronous copies must wait for it. */
	if (CU(d.stream_sync(s)) || CU(d.htod(a, in, bytes)) || CU(d.dtod(b, a, bytes)) ||
	    CU(d.dtod(c, b, bytes)) || CU(d.dtoh(out, c, bytes)))
		goto out_free;
	if (memcmp(in, out, bytes) != 0) {
		fprintf(stderr, "%s: data check: the bytes differ after the copies\n", PROG);
		goto out_free;
	}
	printf("%s: done: steps=0 checksum=0x%016llx\n", PROG,
	       (unsigned long long)fnv1a(out, bytes));
	rc = 0;
out_free:
	free(out);
	free(in);
	return rc;
}

int main(int argc, char **argv)
{
	const size_t bytes = 1 << 20;
	CUdeviceptr a, b, c;
	CUcontext ctx;
	CUdevice dev;
	CUstream s;
	int rc = 1;

	if (argc > 1) {
		printf("Usage: %s\nAllocate device memory through driver entry points found with "
		       "dlsym and cuGetProcAddress, and print where it went.\n",
		       PROG);
		return strcmp(argv[1], "--help") == 0 ? 0 : 2;
	}
	if (load())
		return 1;
	if (CU(d.device_get(&dev, 0)) || CU(d.ctx_retain(&ctx, dev)))
		return 1;
	if (CU(d.ctx_set(ctx)) || CU(d.stream_create(&s, CU_STREAM_NON_BLOCKING)))
		goto out_ctx;
	if (CU(d.mem_alloc_dlsym(&a, bytes)))
		goto out_stream;
	if (CU(d.mem_alloc(&b, 2 * bytes)))
		goto out_a;
	if (CU(d.mem_alloc_async(&c, bytes, s)))
		goto out_b;
	if (show("cuMemAlloc_v2(dlsym)", a) || show("cuMemAlloc(cuGetProcAddress)", b) ||
	    show("cuMemAllocAsync(cuGetProcAddress)", c))
		goto out_c;
	rc = move_data(a, b, c, bytes, s);
out_c:
	if (CU(d.mem_free_async(c, s)) || CU(d.stream_sync(s)))
		rc = 1;
out_b:
	d.mem_free(b);
out_a:
	d.mem_free(a);
out_stream:
	d.stream_destroy(s);
out_ctx:
	d.ctx_release(dev);
	return rc;
}
