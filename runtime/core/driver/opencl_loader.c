/*
 * opencl_loader.c - the real OpenCL API (opencl.h): the ICD loader opened at
 * first use, each entry of opencl.def looked up by glibc's own dlsym (the
 * runtime's dlsym is interposed) in that library, so that the runtime's own
 * exported cl* functions are never found instead.
 */
#include "config.h"

#include "core/driver/opencl.h"
#include "core/driver/driver.h"
#include "common/log.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

struct gk_cl_api gk_cl;

static const struct {
	const char *symbol;
	size_t offset;
} entries[] = {
#define GK_CL_OWN(name) {#name, offsetof(struct gk_cl_api, name)},
#define GK_CL_REAL(name) {#name, offsetof(struct gk_cl_api, name)},
#include "core/driver/opencl.def"
#undef GK_CL_OWN
#undef GK_CL_REAL
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int state;

static void load(void)
{
	/* RTLD_NODELETE: the table stays valid if the program dlclose()s it. */
	void *lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);

	if (!lib) {
		gk_error("opencl: libOpenCL.so.1: cannot load the OpenCL ICD loader: %s",
			 dlerror());
		state = -ENOENT;
		return;
	}
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		void *p = gk_real_dlsym(lib, entries[i].symbol);

		memcpy((char *)&gk_cl + entries[i].offset, &p, sizeof(p));
	}
	state = 1;
}

int gk_cl_load(void)
{
	pthread_once(&once, load);
	return state == 1 ? 0 : -ENOENT;
}

const char *gk_cl_name(cl_int err)
{
#define N(x) {x, #x}
	static const struct {
		cl_int code;
		const char *name;
	} names[] = {
	    N(CL_SUCCESS),
	    N(CL_DEVICE_NOT_FOUND),
	    N(CL_DEVICE_NOT_AVAILABLE),
	    N(CL_COMPILER_NOT_AVAILABLE),
	    N(CL_MEM_OBJECT_ALLOCATION_FAILURE),
	    N(CL_OUT_OF_RESOURCES),
	    N(CL_OUT_OF_HOST_MEMORY),
	    N(CL_BUILD_PROGRAM_FAILURE),
	    N(CL_MAP_FAILURE),
	    N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST),
	    N(CL_INVALID_VALUE),
	    N(CL_INVALID_DEVICE),
	    N(CL_INVALID_CONTEXT),
	    N(CL_INVALID_COMMAND_QUEUE),
	    N(CL_INVALID_MEM_OBJECT),
	    N(CL_INVALID_PROGRAM),
	    N(CL_INVALID_KERNEL),
	    N(CL_INVALID_ARG_INDEX),
	    N(CL_INVALID_ARG_VALUE),
	    N(CL_INVALID_ARG_SIZE),
	    N(CL_INVALID_EVENT_WAIT_LIST),
	    N(CL_INVALID_OPERATION),
	    N(CL_INVALID_BUFFER_SIZE),
	};
#undef N

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].code == err)
			return names[i].name;
	return "an OpenCL error";
}
