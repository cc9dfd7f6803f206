/* handlers.h - the gk_on_<name>() handler of every GK_OWN entry of hooks.def. */
#ifndef GK_HANDLERS_H
#define GK_HANDLERS_H

#include "core/driver/driver.h"

#define GK_OWN(name, params, args) CUresult gk_on_##name params;
#include "core/driver/hooks.def"

/* The first lines of a handler: the driver loaded, and the real entry point
 * there (an older driver may lack it), else the error a program expects. */
#define GK_NEED_REAL(call)                                                                         \
	do {                                                                                       \
		if (gk_driver_ensure() < 0)                                                        \
			return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;                               \
		if (!gk_real.call)                                                                 \
			return CUDA_ERROR_NOT_SUPPORTED;                                           \
	} while (0)

#endif
