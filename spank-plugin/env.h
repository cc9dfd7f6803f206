/*
 * env.h - a task's environment, behind callbacks so tests need no Slurm, and
 * the LD_PRELOAD list in it. Below both task_env.c and container_env.c,
 * which put the runtime into a task and into its container.
 */
#ifndef GK_ENV_H
#define GK_ENV_H

#include <stddef.h>

/* The task's environment, behind callbacks so tests need no Slurm. */
struct gk_env {
	/* 1 and the value in buf, 0 if unset, or a negative errno. */
	int (*get)(void *ctx, const char *name, char *buf, size_t len);
	int (*set)(void *ctx, const char *name, const char *value, int overwrite);
	int (*unset)(void *ctx, const char *name);
	void *ctx;
};

/* 1 if lib is an entry of the LD_PRELOAD list (entries are split on ':'
 * and ' ', as ld.so does). */
int gk_preload_has(const char *list, const char *lib);

/* LD_PRELOAD with lib appended unless it is already there (entries are split
 * on ':' and ' ', as ld.so does). -ENAMETOOLONG if out is too small. */
int gk_preload_add(const char *cur, const char *lib, char *out, size_t len);

/* LD_PRELOAD without lib; out is "" if nothing else remains. */
int gk_preload_remove(const char *cur, const char *lib, char *out, size_t len);

#endif
