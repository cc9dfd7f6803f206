/* placeholder, replaced by the runtime core */
#include "config.h"
#include "gpuckpt.h"
int gpuckpt_version(void) { return GPUCKPT_VERSION; }
