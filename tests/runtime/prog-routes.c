/*
 * The three ways a program reaches the driver, each of which must end in the
 * runtime's placement: the linked symbol, dlopen + dlsym, and cuGetProcAddress.
 * Prints the address each route's allocation got; the test checks they are in
 * the runtime's range (and, without the runtime, that they are not).
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                \
	do {                                                                                       \
		CUresult r_ = (call);                                                              \
		if (r_ != CUDA_SUCCESS) {                                                          \
			fprintf(stderr, "prog-routes: %s failed: %d\n", #call, (int)r_);           \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*proc_fn)(const char *, void **, int, cuuint64_t,
			    CUdriverProcAddressQueryResult *);

int main(void)
{
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr p1, p2, p3;
	void *lib;
	alloc_fn by_dlsym, by_proc = NULL;
	proc_fn getproc;
	CUdriverProcAddressQueryResult st;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuMemAlloc(&p1, 4096));
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "prog-routes: dlopen: %s\n", dlerror());
		return 1;
	}
	by_dlsym = (alloc_fn)dlsym(lib, "cuMemAlloc_v2");
	getproc = (proc_fn)dlsym(lib, "cuGetProcAddress_v2");
	if (!by_dlsym || !getproc) {
		fprintf(stderr, "prog-routes: dlsym found nothing\n");
		return 1;
	}
	CHECK(by_dlsym(&p2, 4096));
	CHECK(getproc("cuMemAlloc", (void **)&by_proc, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st));
	CHECK(by_proc(&p3, 4096));
	printf("linked 0x%llx\ndlsym 0x%llx\nprocaddress 0x%llx\n", (unsigned long long)p1,
	       (unsigned long long)p2, (unsigned long long)p3);
	return 0;
}
