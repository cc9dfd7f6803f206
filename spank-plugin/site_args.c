#include "config.h"

#include "site_args.h"
#include "values.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef GK_LIBDIR
#define GK_LIBDIR "/usr/local/lib"
#endif
#ifndef GK_LIBEXECDIR
#define GK_LIBEXECDIR "/usr/local/libexec"
#endif
#ifndef GK_SCONTROL
#define GK_SCONTROL "/usr/bin/scontrol"
#endif
#ifndef GK_LOCALSTATEDIR
#define GK_LOCALSTATEDIR "/var"
#endif

void gk_site_defaults(struct gk_site *s)
{
	memset(s, 0, sizeof(*s));
	s->default_on = 0;
	snprintf(s->bb_root, sizeof(s->bb_root), "%s/lib/gpuckpt/bb", GK_LOCALSTATEDIR);
	snprintf(s->runtime, sizeof(s->runtime), "%s/libgpuckpt.so.0", GK_LIBDIR);
	snprintf(s->stage, sizeof(s->stage), "%s/gpuckpt/gpuckpt-stage", GK_LIBEXECDIR);
	/* A prolog or epilog that Slurm times out drains the node; one that we
	 * time out only logs (scheduler-hooks/README.md). Sites with a
	 * PrologEpilogTimeout set this below it. */
	s->stage_timeout = 3600;
	s->keep = 2;
	s->on_bad_fresh = -1;
	s->interval = -1;
	s->mode = GK_MODE_AUTO;
	snprintf(s->shepherd, sizeof(s->shepherd), "%s/gpuckpt", GK_LIBEXECDIR);
	s->admin_comment = 1;
	snprintf(s->scontrol, sizeof(s->scontrol), "%s", GK_SCONTROL);
	s->record_days = 30;
}

/* A path setting: absolute, fits; "none" or "" clears it where that is allowed. */
static int set_path(char *dst, size_t len, const char *key, const char *value, int may_clear,
		    gk_error_t *err)
{
	if (may_clear && (value[0] == '\0' || strcmp(value, "none") == 0)) {
		dst[0] = '\0';
		return 0;
	}
	if (value[0] != '/') {
		gk_errprintf(err, "%s: '%s' is not an absolute path", key, value);
		return -EINVAL;
	}
	if (strlen(value) >= len) {
		gk_errprintf(err, "%s: path too long (%zu bytes)", key, strlen(value));
		return -EINVAL;
	}
	strcpy(dst, value);
	return 0;
}

/*
 * One function per plugstack.conf argument of settings.def (GK_SITE,
 * GK_CONF_SITE, GK_ENV_SITE rows), site_<key>(): 0, or -EINVAL with err set.
 */
#define GK_SITE(KEY, TYPE, RANGE, DEFAULT, HELP)                                        \
	static int site_##KEY(struct gk_site *s, const char *key, const char *value,     \
			      gk_error_t *err);
#define GK_CONF_SITE(ID, KEY, FLAGS, TYPE, RANGE, DEFAULT, HELP) \
	GK_SITE(KEY, TYPE, RANGE, DEFAULT, HELP)
#define GK_ENV_SITE(ID, KEY, FLAGS, TYPE, RANGE, DEFAULT, HELP) \
	GK_SITE(KEY, TYPE, RANGE, DEFAULT, HELP)
#include "common/settings.def"

static int site_default(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	(void)key;
	if (gk_parse_onoff(value, &s->default_on) < 0) {
		gk_errprintf(err, "default: invalid value '%s' (expected on or off)", value);
		return -EINVAL;
	}
	return 0;
}

static int site_bb_root(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	return set_path(s->bb_root, sizeof(s->bb_root), key, value, 0, err);
}

static int site_shared_root(struct gk_site *s, const char *key, const char *value,
			    gk_error_t *err)
{
	return set_path(s->shared_root, sizeof(s->shared_root), key, value, 1, err);
}

static int site_flush_root(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	return set_path(s->flush_root, sizeof(s->flush_root), key, value, 1, err);
}

static int site_runtime(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	return set_path(s->runtime, sizeof(s->runtime), key, value, 0, err);
}

static int site_stage(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	return set_path(s->stage, sizeof(s->stage), key, value, 1, err);
}

static int site_stage_timeout(struct gk_site *s, const char *key, const char *value,
			      gk_error_t *err)
{
	long n;

	(void)key;
	if (gk_parse_seconds(value, &n) < 0 || n > 86400) {
		gk_errprintf(err,
			     "stage_timeout: invalid value '%s' (expected seconds from 0 to 86400; "
			     "0: no limit)",
			     value);
		return -EINVAL;
	}
	s->stage_timeout = (unsigned)n;
	return 0;
}

static int site_config(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	return set_path(s->config, sizeof(s->config), key, value, 1, err);
}

static int site_keep(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	long n;

	(void)key;
	if (gk_parse_seconds(value, &n) < 0 || n < 1 || n > 1000) {
		gk_errprintf(err,
			     "keep: invalid value '%s' (expected a whole number from 1 to 1000)",
			     value);
		return -EINVAL;
	}
	s->keep = (unsigned)n;
	return 0;
}

static int site_on_bad_checkpoint(struct gk_site *s, const char *key, const char *value,
				  gk_error_t *err)
{
	(void)key;
	if (gk_parse_on_bad(value, &s->on_bad_fresh) < 0) {
		gk_errprintf(err, "on_bad_checkpoint: invalid value '%s' (expected fail or fresh)",
			     value);
		return -EINVAL;
	}
	return 0;
}

static int site_interval(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	(void)key;
	if (gk_parse_seconds(value, &s->interval) < 0) {
		gk_errprintf(err, "interval: invalid value '%s' (expected seconds, 0 or more)",
			     value);
		return -EINVAL;
	}
	return 0;
}

static int site_log_level(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	static const char *const levels[] = {"error", "warn", "notice", "info", "debug"};

	(void)key;
	for (unsigned i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		if (strcmp(value, levels[i]) == 0) {
			strcpy(s->log_level, value);
			return 0;
		}
	}
	gk_errprintf(err,
		     "log_level: invalid value '%s' (expected error, warn, notice, info or debug)",
		     value);
	return -EINVAL;
}

static int site_mode(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	(void)key;
	if (gk_parse_mode(value, &s->mode) < 0) {
		gk_errprintf(err, "mode: invalid value '%s' (expected auto, app or transparent)",
			     value);
		return -EINVAL;
	}
	return 0;
}

static int site_criu(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	return set_path(s->criu, sizeof(s->criu), key, value, 1, err);
}

static int site_shepherd(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	return set_path(s->shepherd, sizeof(s->shepherd), key, value, 0, err);
}

static int site_metrics(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	return set_path(s->metrics, sizeof(s->metrics), key, value, 1, err);
}

static int site_admin_comment(struct gk_site *s, const char *key, const char *value,
			      gk_error_t *err)
{
	(void)key;
	if (gk_parse_onoff(value, &s->admin_comment) < 0) {
		gk_errprintf(err, "admin_comment: invalid value '%s' (expected on or off)", value);
		return -EINVAL;
	}
	return 0;
}

static int site_scontrol(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	return set_path(s->scontrol, sizeof(s->scontrol), key, value, 0, err);
}

static int site_record_days(struct gk_site *s, const char *key, const char *value,
			    gk_error_t *err)
{
	long n;

	(void)key;
	if (gk_parse_seconds(value, &n) < 0 || n > 36500) {
		gk_errprintf(err,
			     "record_days: invalid value '%s' (expected days from 0 to 36500; "
			     "0: records are kept forever)",
			     value);
		return -EINVAL;
	}
	s->record_days = (unsigned)n;
	return 0;
}

/* The arguments and their parsers, in settings.def's order. */
static const struct {
	const char *key;
	int (*set)(struct gk_site *s, const char *key, const char *value, gk_error_t *err);
} site_keys[] = {
#define GK_SITE(KEY, TYPE, RANGE, DEFAULT, HELP) {#KEY, site_##KEY},
#define GK_CONF_SITE(ID, KEY, FLAGS, TYPE, RANGE, DEFAULT, HELP) \
	GK_SITE(KEY, TYPE, RANGE, DEFAULT, HELP)
#define GK_ENV_SITE(ID, KEY, FLAGS, TYPE, RANGE, DEFAULT, HELP) \
	GK_SITE(KEY, TYPE, RANGE, DEFAULT, HELP)
#include "common/settings.def"
};

int gk_site_set(struct gk_site *s, const char *key, const char *value, gk_error_t *err)
{
	char known[512];
	size_t n = 0;

	for (unsigned i = 0; i < sizeof(site_keys) / sizeof(site_keys[0]); i++)
		if (strcmp(key, site_keys[i].key) == 0)
			return site_keys[i].set(s, key, value, err);
	known[0] = '\0';
	for (unsigned i = 0; i < sizeof(site_keys) / sizeof(site_keys[0]) && n < sizeof(known); i++)
		n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s", i ? ", " : "",
				      site_keys[i].key);
	gk_errprintf(err, "unknown argument '%s' (known: %s)", key, known);
	return -EINVAL;
}

int gk_site_parse(struct gk_site *s, int argc, char *const argv[], gk_error_t *err)
{
	gk_site_defaults(s);
	for (int i = 0; i < argc; i++) {
		const char *eq = strchr(argv[i], '=');
		char key[64];
		size_t klen;
		int rc;

		if (!eq) {
			gk_errprintf(err, "argument '%s' is not key=value", argv[i]);
			return -EINVAL;
		}
		klen = (size_t)(eq - argv[i]);
		if (klen == 0 || klen >= sizeof(key)) {
			gk_errprintf(err, "argument '%s' has no valid key", argv[i]);
			return -EINVAL;
		}
		memcpy(key, argv[i], klen);
		key[klen] = '\0';
		rc = gk_site_set(s, key, eq + 1, err);
		if (rc < 0)
			return rc;
	}
	return 0;
}
