/*
 * fake_env.h - a task environment for the plugin's unit tests: a small table
 * of name/value pairs behind the gk_env callbacks (fget, fset, funset), and
 * mkckpt to lay out checkpoint folders. Included by the tests only.
 */
#ifndef GK_TEST_FAKE_ENV_H
#define GK_TEST_FAKE_ENV_H

#include <fcntl.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fake_env {
	char name[32][64];
	char value[32][4096];
	int n;
};

static int find(struct fake_env *e, const char *name)
{
	for (int i = 0; i < e->n; i++)
		if (strcmp(e->name[i], name) == 0)
			return i;
	return -1;
}

static int fget(void *ctx, const char *name, char *buf, size_t len)
{
	struct fake_env *e = ctx;
	int i = find(e, name);

	if (i < 0)
		return 0;
	if (strlen(e->value[i]) >= len)
		return -ENAMETOOLONG;
	strcpy(buf, e->value[i]);
	return 1;
}

static int fset(void *ctx, const char *name, const char *value, int overwrite)
{
	struct fake_env *e = ctx;
	int i = find(e, name);

	if (i >= 0 && !overwrite)
		return 0;
	if (i < 0) {
		i = e->n++;
		snprintf(e->name[i], sizeof(e->name[i]), "%s", name);
	}
	snprintf(e->value[i], sizeof(e->value[i]), "%s", value);
	return 0;
}

static int funset(void *ctx, const char *name)
{
	struct fake_env *e = ctx;
	int i = find(e, name);

	if (i >= 0) {
		e->n--;
		memmove(e->name[i], e->name[e->n], sizeof(e->name[i]));
		memmove(e->value[i], e->value[e->n], sizeof(e->value[i]));
	}
	return 0;
}

static const char *val(struct fake_env *e, const char *name)
{
	int i = find(e, name);

	return i < 0 ? NULL : e->value[i];
}

static void mkckpt(const char *dir, const char *name, int with_manifest)
{
	char p[4096];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	mkdir(p, 0700);
	if (with_manifest) {
		snprintf(p, sizeof(p), "%s/%s/manifest.json", dir, name);
		close(open(p, O_CREAT | O_WRONLY, 0600));
	}
}

#endif
