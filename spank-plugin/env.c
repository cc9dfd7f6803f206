/*
 * env.c - LD_PRELOAD's list in a task's environment (env.h).
 */
#include "config.h"

#include "env.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Next LD_PRELOAD entry after *p (separators ':' and ' '); 0 when none is left. */
static size_t next_entry(const char **p)
{
	while (**p == ':' || **p == ' ')
		(*p)++;
	return strcspn(*p, ": ");
}

int gk_preload_has(const char *list, const char *lib)
{
	size_t liblen = strlen(lib), n;
	const char *p = list;

	while ((n = next_entry(&p)) > 0) {
		if (n == liblen && strncmp(p, lib, n) == 0)
			return 1;
		p += n;
	}
	return 0;
}

int gk_preload_add(const char *cur, const char *lib, char *out, size_t len)
{
	int n;

	if (!cur || !*cur)
		n = snprintf(out, len, "%s", lib);
	else if (gk_preload_has(cur, lib))
		n = snprintf(out, len, "%s", cur);
	else
		n = snprintf(out, len, "%s:%s", cur, lib);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int gk_preload_remove(const char *cur, const char *lib, char *out, size_t len)
{
	size_t liblen = strlen(lib), used = 0, n;
	const char *p = cur ? cur : "";

	if (len == 0)
		return -ENAMETOOLONG;
	out[0] = '\0';
	while ((n = next_entry(&p)) > 0) {
		if (!(n == liblen && strncmp(p, lib, n) == 0)) {
			if (used + n + 2 > len)
				return -ENAMETOOLONG;
			if (used)
				out[used++] = ':';
			memcpy(out + used, p, n);
			used += n;
			out[used] = '\0';
		}
		p += n;
	}
	return 0;
}
