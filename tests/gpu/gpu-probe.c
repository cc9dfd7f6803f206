/*
 * gpu-probe - is there a CUDA driver and a device to test on? Opens
 * libcuda.so.1 with dlopen (a missing driver is then a message, not a loader
 * error), initialises it and lists the visible devices:
 *	devices=N
 *	device I: NAME (GPU-UUID)
 * Exit 0 when at least one device is visible; 1 with the reason on stderr.
 * tests/gpu/run.sh skips every test with that reason; tests/gpu/standin.sh
 * uses it to count the stand-in's devices.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*count_fn)(int *);
typedef CUresult (*get_fn)(CUdevice *, int);
typedef CUresult (*name_fn)(char *, int, CUdevice);
typedef CUresult (*uuid_fn)(CUuuid *, CUdevice);
typedef CUresult (*errname_fn)(CUresult, const char **);

static const char *err_name(errname_fn fn, CUresult r)
{
	const char *s = NULL;

	if (!fn || fn(r, &s) != CUDA_SUCCESS || !s)
		return "unknown CUDA error";
	return s;
}

int main(void)
{
	init_fn init;
	count_fn count;
	get_fn get;
	name_fn name;
	uuid_fn uuid;
	errname_fn errname;
	void *lib;
	CUresult r;
	int n = 0;

	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "gpu-probe: no CUDA driver: %s\n", dlerror());
		return 1;
	}
	init = (init_fn)dlsym(lib, "cuInit");
	count = (count_fn)dlsym(lib, "cuDeviceGetCount");
	get = (get_fn)dlsym(lib, "cuDeviceGet");
	name = (name_fn)dlsym(lib, "cuDeviceGetName");
	uuid = (uuid_fn)dlsym(lib, "cuDeviceGetUuid_v2");
	if (!uuid)
		uuid = (uuid_fn)dlsym(lib, "cuDeviceGetUuid");
	errname = (errname_fn)dlsym(lib, "cuGetErrorName");
	if (!init || !count || !get || !name || !uuid) {
		fprintf(stderr, "gpu-probe: libcuda.so.1 lacks cuInit, cuDeviceGetCount, "
				"cuDeviceGet, cuDeviceGetName or cuDeviceGetUuid\n");
		return 1;
	}
	r = init(0);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "gpu-probe: cuInit failed: %s (%d)\n", err_name(errname, r),
			(int)r);
		return 1;
	}
	r = count(&n);
	if (r != CUDA_SUCCESS) {
		fprintf(stderr, "gpu-probe: cuDeviceGetCount failed: %s (%d)\n",
			err_name(errname, r), (int)r);
		return 1;
	}
	printf("devices=%d\n", n);
	for (int i = 0; i < n; i++) {
		char buf[256];
		CUdevice dev;
		CUuuid u;
		const unsigned char *b = (const unsigned char *)u.bytes;

		r = get(&dev, i);
		if (r == CUDA_SUCCESS)
			r = name(buf, (int)sizeof(buf), dev);
		if (r == CUDA_SUCCESS)
			r = uuid(&u, dev);
		if (r != CUDA_SUCCESS) {
			fprintf(stderr, "gpu-probe: device %d: %s (%d)\n", i, err_name(errname, r),
				(int)r);
			return 1;
		}
		printf("device %d: %s (GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		       "%02x%02x%02x%02x%02x%02x)\n",
		       i, buf, b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
		       b[11], b[12], b[13], b[14], b[15]);
	}
	if (n < 1) {
		fprintf(stderr, "gpu-probe: the driver sees no device\n");
		return 1;
	}
	return 0;
}
