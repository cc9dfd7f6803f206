/*
 * nvml-hold.c - preloaded into a test program, initialises NVML at start-up
 * and keeps it, as PyTorch, JAX and CuPy do: NVML then holds the MIG
 * capability devices (/dev/nvidia-caps/nvidia-cap1, cap2) open, on any
 * machine (tests/gpu/mig-caps.sh). NVML is the driver's own library: it is
 * loaded by name, as the frameworks load it, and nothing here links it.
 */
#include <dlfcn.h>
#include <stdio.h>

__attribute__((constructor)) static void hold_nvml(void)
{
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE);
	int (*init)(void) = lib ? (int (*)(void))dlsym(lib, "nvmlInit_v2") : NULL;
	int rc = init ? init() : -1;

	fprintf(stderr, "nvml-hold: nvmlInit_v2: %d\n", rc);
}
