/*
 * fixture-root.h - the folder a unit test of runtime/image works in (test-store,
 * test-store-transparent, test-sign) and paths in it. Header-only like tap.h:
 * each test is one file.
 */
#ifndef GK_FIXTURE_ROOT_H
#define GK_FIXTURE_ROOT_H

#include <stdio.h>
#include <sys/stat.h>

/* The test's folder, made by its main(). */
static char root[4096];

/* ROOT/NAME, in one of eight buffers used in turn, so that one test point can
 * name several paths. */
static inline char *path_in(const char *name)
{
	static char buf[8][4352];
	static int next;
	char *p = buf[next++ % 8];

	snprintf(p, sizeof(buf[0]), "%s/%s", root, name);
	return p;
}

/* Is there anything at PATH (a link counts, and is not followed)? */
static inline int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

#endif
