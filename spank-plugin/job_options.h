/*
 * job_options.h - what a user asks for: --gpu-checkpoint=on|off and the options
 * beside it, each with an environment variable that gives the same setting.
 * Slurm removes an sbatch option from the job's environment, so srun steps in
 * a batch script see only the variable; the plugin sets it for them.
 *
 *	option                       variable                     values
 *	--gpu-checkpoint             GPUCKPT_CHECKPOINT           on | off
 *	--gpu-checkpoint-interval    GPUCKPT_INTERVAL             seconds, 0 = only on signals
 *	--gpu-checkpoint-on-bad      GPUCKPT_ON_BAD_CHECKPOINT    fail | fresh
 *	--gpu-checkpoint-mode        GPUCKPT_MODE                 auto | app | transparent
 *
 * An option given on the command line wins over the variable, the variable
 * over the site's default.
 */
#ifndef GK_JOB_OPTIONS_H
#define GK_JOB_OPTIONS_H

#include <stddef.h>

#include "common/settings_env.h"
#include "site_args.h"
#include "values.h"

enum gk_option_id {
	GK_OPT_CHECKPOINT = 1,
	GK_OPT_INTERVAL = 2,
	GK_OPT_ON_BAD = 3,
	GK_OPT_MODE = 4,
};

/* Each option's variable: GK_ENV(CHECKPOINT), GK_ENV(INTERVAL),
 * GK_ENV(ON_BAD_CHECKPOINT), GK_ENV(MODE) (settings.def). */

/* Values given on the command line; -1 = not given. */
struct gk_opts {
	int checkpoint; /* 0 off, 1 on */
	long interval;
	int on_bad_fresh;
	int mode; /* enum gk_mode */
};

void gk_opts_init(struct gk_opts *o);

/* The option's long name and the variable for an option id. */
const char *gk_option_name(enum gk_option_id id);
const char *gk_option_env(enum gk_option_id id);
/* The same as settings.def's id (GK_ENV_COUNT for none), for gk_env_get(). */
enum gk_env_id gk_option_var(enum gk_option_id id);
/* What it takes, for messages: "on or off", "fail or fresh", ... */
const char *gk_option_expected(enum gk_option_id id);

/*
 * Record an option's value (from Slurm's option callback; NULL when none was
 * given: --gpu-checkpoint alone means on). On a bad value returns -EINVAL
 * with err naming the option, the value and what is expected.
 */
int gk_opts_set(struct gk_opts *o, enum gk_option_id id, const char *value, gk_error_t *err);

/* Check a variable's value the same way; err names the variable. */
int gk_opts_check_env(enum gk_option_id id, const char *value, gk_error_t *err);

/*
 * --gpu-checkpoint-interval, -on-bad and -mode only do something for a job
 * that is checkpointed: given while checkpointing is off (on = 0), the first
 * of them is refused with err naming it. 0 otherwise.
 */
int gk_opts_check_given(const struct gk_opts *o, int on, gk_error_t *err);

/*
 * Is checkpointing on for this job or step? The option if given, else the
 * variable (env_value, NULL when unset), else the site's default. A bad
 * variable value returns -EINVAL with err naming it.
 */
int gk_opts_enabled(const struct gk_opts *o, const char *env_value, const struct gk_site *s,
		    int *on, gk_error_t *err);

/* The mode, by the same rule: option, else variable, else the site's mode=. */
int gk_opts_mode(const struct gk_opts *o, const char *env_value, const struct gk_site *s,
		 enum gk_mode *mode, gk_error_t *err);

#endif
