/* placeholder, replaced by the runtime core */
#include "config.h"
#include <errno.h>
#include <string.h>
#include "gpuckpt.h"

/*
 * Until the runtime core lands, programs written against gpuckpt.h (the
 * benchmarks, the examples) must still link: these entry points are exported
 * (the library is built with -fvisibility=hidden) and take no checkpoint.
 */
#define GK_PLACEHOLDER_API __attribute__((visibility("default")))

GK_PLACEHOLDER_API int gpuckpt_version(void)
{
	return GPUCKPT_VERSION;
}

GK_PLACEHOLDER_API int gpuckpt_protect(const char *name, void *addr, size_t size)
{
	return (name && addr && size) ? 0 : -EINVAL;
}

GK_PLACEHOLDER_API int gpuckpt_unprotect(const char *name)
{
	return name ? 0 : -EINVAL;
}

GK_PLACEHOLDER_API int gpuckpt_point(long step)
{
	return GPUCKPT_NOTHING;
}

GK_PLACEHOLDER_API int gpuckpt_request(void)
{
	return -ENOSYS;
}

GK_PLACEHOLDER_API int gpuckpt_restarting(long *step)
{
	return 0;
}

GK_PLACEHOLDER_API const char *gpuckpt_strerror(int err)
{
	return strerror(err < 0 ? -err : err);
}
