/* Test library A: defines gk_probe() and asks for the next one after itself. */
#define _GNU_SOURCE
#include <dlfcn.h>

char gk_probe(void);
char gk_probe_next_from_a(void);

char gk_probe(void)
{
	return 'A';
}

char gk_probe_next_from_a(void)
{
	char (*next)(void) = (char (*)(void))dlsym(RTLD_NEXT, "gk_probe");

	return next ? next() : '?';
}
