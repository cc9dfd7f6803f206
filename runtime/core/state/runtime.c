/*
 * runtime.c - the state of the runtime in one process (runtime.h), read by
 * every part; loading and starting it are start.c's.
 */
#include "config.h"

#include "core/state/runtime.h"

#include <unistd.h>

struct gk_runtime gk_rt;

const char *gk_runtime_dir(void)
{
	return gk_rt.settings.dir[0] ? gk_rt.settings.dir : "(none)";
}

void gk_program_exe(char *exe, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", exe, len - 1);

	exe[n > 0 ? n : 0] = 0;
}
