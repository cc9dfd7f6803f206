/*
 * site_args.h - the site's settings for the plugin: key=value arguments after
 * the plugin's path in plugstack.conf. Every default is set first; an unknown
 * key or a bad value is refused with a message naming it. The keys are the
 * GK_SITE, GK_CONF_SITE and GK_ENV_SITE rows of runtime/common/settings.def,
 * each parsed in site_args.c's site_<key>().
 *
 *	required /usr/lib/x86_64-linux-gnu/slurm/spank_gpuckpt.so \
 *		bb_root=/local/bb shared_root=/shared/gpuckpt default=off keep=2
 *
 * Each argument's default, range and meaning: settings.def (its GK_SITE rows,
 * and GK_CONF_SITE/GK_ENV_SITE for keep, on_bad_checkpoint, interval,
 * log_level, mode and config, which give the runtime's variable the site's
 * value; unset, the runtime's own default holds: for log_level, notice).
 * spank-gpuckpt(8) documents them (tests/man/settings-table.sh).
 */
#ifndef GK_SITE_ARGS_H
#define GK_SITE_ARGS_H

#include <limits.h>
#include <stddef.h>

#include "common/contract.h" /* GK_ERRLEN, enum gk_mode: the runtime's (runtime/common) */
#include "common/error.h"    /* gk_error_t: the runtime's, too */

struct gk_site {
	int default_on;
	char bb_root[PATH_MAX];
	char shared_root[PATH_MAX]; /* "" = no shared root, no staging */
	char flush_root[PATH_MAX];  /* "" = no flush while the job runs */
	char runtime[PATH_MAX];
	char stage[PATH_MAX];	/* "" = no staging */
	unsigned stage_timeout; /* seconds; 0 = no limit */
	char config[PATH_MAX]; /* "" = the runtime's compiled-in default */
	unsigned keep;
	int on_bad_fresh;   /* -1 = not set here, 0 = fail, 1 = fresh */
	long interval;	    /* -1 = not set here */
	char log_level[16]; /* "" = not set here */
	enum gk_mode mode;
	char criu[PATH_MAX];	 /* "" = the shepherd's default */
	char shepherd[PATH_MAX]; /* folder holding gpuckpt-shepherd */
	char metrics[PATH_MAX];	 /* "" = no metrics file */
	int admin_comment;
	char scontrol[PATH_MAX];
	unsigned record_days; /* 0 = records are never swept */
};

void gk_site_defaults(struct gk_site *s);

/*
 * Defaults, then each "key=value" of argv in order. Returns 0, or -EINVAL with
 * err naming the argument and what is wrong; *s then holds the defaults and
 * the arguments before the bad one.
 */
int gk_site_parse(struct gk_site *s, int argc, char *const argv[], gk_error_t *err);

/* Apply one key=value. */
int gk_site_set(struct gk_site *s, const char *key, const char *value, gk_error_t *err);

#endif
