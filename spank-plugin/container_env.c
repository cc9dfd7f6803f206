#include "config.h"

#include "container_env.h"
#include "common/fsafe.h"
#include "common/settings_env.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENV_MAX 8192

const char *const gk_container_vars[] = {
    GK_ENV(CHECKPOINT), GK_ENV(DIR),	     GK_ENV(RESTORE),	  GK_ENV(RESTART_COUNT),
    GK_ENV(KEEP),	  GK_ENV(INTERVAL),	     GK_ENV(ON_BAD_CHECKPOINT),
    GK_ENV(LOG_LEVEL),  GK_ENV(CONFIG),	     GK_ENV(MODE),	  GK_ENV(NO_TRANSPARENT),
    GK_ENV(SIGNALS),	  GK_ENV(REQUIRE_SIGNATURE), GK_ENV(ENABLE),	  "SLURM_JOB_ID",
    "SLURM_STEP_ID",	  "SLURM_PROCID",	     "SLURM_RESTART_COUNT",
    /* The step's tasks on this node share its memory for snapshots (snapshot.c). */
    "SLURM_NODEID",	  "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE", NULL,
};

int gk_is_bundle(const char *dir)
{
	gk_error_t err;
	struct stat st;
	int fd, rc;

	/* Root mounts it into every container of the node (podman's hook): the
	 * folder must be one nobody but root can change, along the whole path,
	 * and the mark root's own file in it, not a link to one. */
	fd = gk_open_trusted_dir(dir, NULL, &err);
	if (fd < 0)
		return 0;
	rc = fstatat(fd, GK_BUNDLE_MARK, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	     (st.st_uid == 0 || st.st_uid == geteuid());
	close(fd);
	return rc;
}

/* Append entry to out (sep-separated) unless it is there already. */
static int list_add(char *out, size_t len, char sep, const char *entry)
{
	size_t n = strlen(entry), used = strlen(out);
	const char *p = out;

	while (*p) {
		size_t m = strcspn(p, (char[]){sep, 0});

		if (m == n && strncmp(p, entry, n) == 0)
			return 0;
		p += m;
		if (*p)
			p++;
	}
	if (used + n + 2 > len)
		return -ENAMETOOLONG;
	if (used)
		out[used++] = sep;
	memcpy(out + used, entry, n + 1);
	return 0;
}

/* A path that a ':' or ',' list can hold (Apptainer splits on both). */
static int listable(const char *path)
{
	return path[0] == '/' && !strpbrk(path, ":,");
}

int gk_container_binds(const struct gk_site *s, const struct gk_task_ids *ids, const char *config,
		       char *out, size_t len)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;
	int rc = 0;

	if (len == 0)
		return -ENAMETOOLONG;
	out[0] = '\0';
	snprintf(dir, sizeof(dir), "%s", s->runtime);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (listable(dir) && gk_is_bundle(dir))
			rc = list_add(out, len, ':', dir);
	}
	if (snprintf(dir, sizeof(dir), "%s/%u", s->bb_root, ids->job_id) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	if (!rc && listable(dir))
		rc = list_add(out, len, ':', dir);
	if (!rc && stat(GK_MUNGE_DIR, &st) == 0 && S_ISDIR(st.st_mode))
		rc = list_add(out, len, ':', GK_MUNGE_DIR);
	if (!rc && config && config[0] && listable(config))
		rc = list_add(out, len, ':', config);
	return rc;
}

int gk_list_remove(const char *list, char sep, const char *drop, char *out, size_t len)
{
	const char *p = list ? list : "";

	if (len == 0)
		return -ENAMETOOLONG;
	out[0] = '\0';
	while (*p) {
		size_t m = strcspn(p, (char[]){sep, 0});
		const char *d = drop;
		int dropped = 0;

		while (*d && m) {
			size_t k = strcspn(d, ":");

			if (k == m && strncmp(d, p, m) == 0)
				dropped = 1;
			d += k;
			if (*d)
				d++;
		}
		if (m && !dropped) {
			size_t used = strlen(out);

			if (used + m + 2 > len)
				return -ENAMETOOLONG;
			if (used)
				out[used++] = sep;
			memcpy(out + used, p, m);
			out[used + m] = '\0';
		}
		p += m;
		if (*p)
			p++;
	}
	return 0;
}

static int set_or_fail(const struct gk_env *env, const char *name, const char *value,
		       gk_error_t *err)
{
	int rc = env->set(env->ctx, name, value, 1);

	if (rc < 0)
		gk_errprintf(err, "cannot set %s: %s", name, strerror(-rc));
	return rc;
}

int gk_container_inject(const struct gk_site *s, const struct gk_task_ids *ids,
			const struct gk_env *env, gk_error_t *err)
{
	char *binds, *cur, *val, name[64];
	int rc, have;

	binds = malloc(ENV_MAX);
	cur = malloc(ENV_MAX);
	val = malloc(ENV_MAX);
	if (!binds || !cur || !val) {
		rc = -ENOMEM;
		gk_errprintf(err, "out of memory");
		goto out_free;
	}
	have = env->get(env->ctx, GK_ENV(CONFIG), cur, ENV_MAX);
	rc = gk_container_binds(s, ids, have == 1 ? cur : NULL, binds, ENV_MAX);
	if (rc < 0) {
		gk_errprintf(err, "%s: too long", GK_ENV(BIND));
		goto out_free;
	}
	rc = set_or_fail(env, GK_ENV(BIND), binds, err);
	if (!rc)
		rc = set_or_fail(env, GK_ENV(RUNTIME), s->runtime, err);

	/* Apptainer: its bind list, the user's entries first. */
	if (!rc) {
		have = env->get(env->ctx, "APPTAINER_BIND", cur, ENV_MAX);
		if (have != 1)
			cur[0] = '\0';
		for (const char *p = binds; !rc && *p;) {
			size_t m = strcspn(p, ":");

			snprintf(val, ENV_MAX, "%.*s", (int)m, p);
			rc = list_add(cur, ENV_MAX, ',', val);
			p += m + (p[m] == ':');
		}
		if (!rc && cur[0])
			rc = set_or_fail(env, "APPTAINER_BIND", cur, err);
		else if (rc)
			gk_errprintf(err, "APPTAINER_BIND: too long");
	}
	/* The runtime after whatever the user asked Apptainer to preload. */
	if (!rc) {
		have = env->get(env->ctx, "APPTAINERENV_LD_PRELOAD", cur, ENV_MAX);
		rc = gk_preload_add(have == 1 ? cur : "", s->runtime, val, ENV_MAX);
		if (!rc)
			rc = set_or_fail(env, "APPTAINERENV_LD_PRELOAD", val, err);
		else
			gk_errprintf(err, "APPTAINERENV_LD_PRELOAD: too long");
	}
	for (const char *const *v = gk_container_vars; !rc && *v; v++) {
		snprintf(name, sizeof(name), "APPTAINERENV_%s", *v);
		have = env->get(env->ctx, *v, val, ENV_MAX);
		if (have == 1)
			rc = set_or_fail(env, name, val, err);
		else if (strncmp(*v, GK_ENV_PREFIX, strlen(GK_ENV_PREFIX)) == 0)
			/* Not set for this task (GPUCKPT_RESTORE on a fresh start):
			 * none inherited from an enclosing step either. */
			rc = env->unset(env->ctx, name);
	}

out_free:
	free(binds);
	free(cur);
	free(val);
	return rc;
}

int gk_container_uninject(const struct gk_site *s, const struct gk_env *env, gk_error_t *err)
{
	char *binds, *cur, *out, name[64];
	int rc = 0;

	binds = malloc(ENV_MAX);
	cur = malloc(ENV_MAX);
	out = malloc(ENV_MAX);
	if (!binds || !cur || !out) {
		rc = -ENOMEM;
		gk_errprintf(err, "out of memory");
		goto out_free;
	}
	if (env->get(env->ctx, GK_ENV(BIND), binds, ENV_MAX) != 1)
		binds[0] = '\0';
	if (binds[0] && env->get(env->ctx, "APPTAINER_BIND", cur, ENV_MAX) == 1) {
		rc = gk_list_remove(cur, ',', binds, out, ENV_MAX);
		if (!rc)
			rc = out[0] ? env->set(env->ctx, "APPTAINER_BIND", out, 1)
				    : env->unset(env->ctx, "APPTAINER_BIND");
	}
	if (!rc && env->get(env->ctx, "APPTAINERENV_LD_PRELOAD", cur, ENV_MAX) == 1) {
		rc = gk_preload_remove(cur, s->runtime, out, ENV_MAX);
		if (!rc)
			rc = out[0] ? env->set(env->ctx, "APPTAINERENV_LD_PRELOAD", out, 1)
				    : env->unset(env->ctx, "APPTAINERENV_LD_PRELOAD");
	}
	for (const char *const *v = gk_container_vars; !rc && *v; v++) {
		if (strncmp(*v, GK_ENV_PREFIX, strlen(GK_ENV_PREFIX)) != 0 ||
		    strcmp(*v, GK_ENV(CHECKPOINT)) == 0)
			continue;
		snprintf(name, sizeof(name), "APPTAINERENV_%s", *v);
		rc = env->unset(env->ctx, name);
	}
	if (!rc)
		rc = env->set(env->ctx, "APPTAINERENV_" GK_ENV(CHECKPOINT), "off", 1);
	if (!rc)
		rc = env->unset(env->ctx, GK_ENV(BIND));
	if (!rc)
		rc = env->unset(env->ctx, GK_ENV(RUNTIME));
	if (rc < 0)
		gk_errprintf(err, "cannot change the containers' environment: %s", strerror(-rc));

out_free:
	free(binds);
	free(cur);
	free(out);
	return rc;
}

int gk_container_of(const struct gk_env *env, const char *argv0, char *out, size_t len)
{
	/* The runtimes whose command line starts the program in a container. */
	static const char *const runtimes[] = {"podman",      "podman-hpc", "apptainer",
					       "singularity", "enroot",	    NULL};
	static const char *const pyxis_vars[] = {GK_ENV(CONTAINER), "PYXIS_CONTAINER_IMAGE",
						 "PYXIS_CONTAINER_NAME", NULL};
	char v[16];
	const char *base;

	out[0] = '\0';
	for (int i = 0; pyxis_vars[i]; i++) {
		int rc = env->get(env->ctx, pyxis_vars[i], v, sizeof(v));

		/* GPUCKPT_CONTAINER holds "pyxis"; pyxis's own hold an image or a name. */
		if ((i == 0 && rc == 1 && strcmp(v, "pyxis") == 0) ||
		    (i > 0 && (rc == -ENAMETOOLONG || (rc == 1 && v[0])))) {
			snprintf(out, len, "pyxis");
			return 1;
		}
	}
	if (!argv0)
		return 0;
	base = strrchr(argv0, '/');
	base = base ? base + 1 : argv0;
	for (int i = 0; runtimes[i]; i++)
		if (strcmp(base, runtimes[i]) == 0) {
			snprintf(out, len, "%s", base);
			return 1;
		}
	return 0;
}
