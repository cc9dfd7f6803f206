/*
 * opencl.h - the real OpenCL API: the ICD loader's entry points (opencl.def),
 * looked up at first use. Built only with OpenCL headers (HAVE_OPENCL).
 */
#ifndef GK_DRIVER_OPENCL_H
#define GK_DRIVER_OPENCL_H

#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_1_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_2_0_APIS
#include <CL/cl.h>

struct gk_cl_api {
#define GK_CL_OWN(name) __typeof__(name) *name;
#define GK_CL_REAL(name) __typeof__(name) *name;
#include "core/driver/opencl.def"
#undef GK_CL_OWN
#undef GK_CL_REAL
};

extern struct gk_cl_api gk_cl;

/* Load libOpenCL.so.1 and fill gk_cl once: 0, or -ENOENT (said once). An
 * entry the loader lacks stays NULL. */
int gk_cl_load(void);

/* CL_SUCCESS -> "CL_SUCCESS", for messages. */
const char *gk_cl_name(cl_int err);

#endif
