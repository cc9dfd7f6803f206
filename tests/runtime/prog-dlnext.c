/*
 * dlsym(RTLD_NEXT, ...) must keep meaning "after the caller" with libgpuckpt's
 * dlsym in front of glibc's: library A asks for the gk_probe() after its own,
 * which is B's. Resolved relative to libgpuckpt instead, it would get A's.
 */
#include <stdio.h>

char gk_probe_next_from_a(void);
int gk_dlnext_b_loaded(void);

int main(void)
{
	char c = gk_dlnext_b_loaded() ? gk_probe_next_from_a() : '?';

	printf("next after A: %c\n", c);
	return c == 'B' ? 0 : 1;
}
