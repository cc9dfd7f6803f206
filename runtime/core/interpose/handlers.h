/* handlers.h - the gk_on_<name>() handler of every GK_OWN entry of hooks.def. */
#ifndef GK_HANDLERS_H
#define GK_HANDLERS_H

#include "core/driver/driver.h"

#define GK_OWN(name, params, args) CUresult gk_on_##name params;
#include "core/driver/hooks.def"

#endif
