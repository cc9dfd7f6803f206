/*
 * opencl_move.h - OpenCL objects made anew on another device in a running
 * process (interpose/opencl.c; docs/opencl.md, "Another device after CRIU").
 * With GPUCKPT_OPENCL_MOVABLE=1 the program holds handles of the runtime's
 * own; a move makes every recorded object again on the device named, in the
 * order the program made it (contexts, queues, buffers with their contents,
 * sub-buffers, programs built from their source with their options, kernels
 * with their arguments), re-points the program's handles at them and
 * releases the old ones.
 */
#ifndef GK_OPENCL_MOVE_H
#define GK_OPENCL_MOVE_H

#include <stddef.h>

/* Whether objects made now get handles of the runtime's own. */
int gk_cl_movable(void);

/* Every recorded object made anew on the device spec names: "TYPE:N" (the
 * N-th device of type cpu, gpu, accelerator or all, over every platform) or
 * the first device whose CL_DEVICE_NAME starts with spec ("basic",
 * "pthread"). With the gate closed, or no other thread calling OpenCL. 0, or
 * a negative errno with why naming the object or the device; nothing is
 * changed then. */
int gk_cl_move(const char *spec, char *why, size_t len);

/* The file in a checkpoint's folder that names the device a transparent
 * restore moves the objects to (its first line, a spec as above). */
#define GK_CL_DEVICE_FILE "opencl.device"

#endif
