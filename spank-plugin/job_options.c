#include "config.h"

#include "job_options.h"
#include "common/settings_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gk_opts_init(struct gk_opts *o)
{
	o->checkpoint = -1;
	o->interval = -1;
	o->on_bad_fresh = -1;
	o->mode = -1;
}

const char *gk_option_name(enum gk_option_id id)
{
	switch (id) {
	case GK_OPT_CHECKPOINT:
		return "gpu-checkpoint";
	case GK_OPT_INTERVAL:
		return "gpu-checkpoint-interval";
	case GK_OPT_ON_BAD:
		return "gpu-checkpoint-on-bad";
	case GK_OPT_MODE:
		return "gpu-checkpoint-mode";
	}
	return "?";
}

enum gk_env_id gk_option_var(enum gk_option_id id)
{
	switch (id) {
	case GK_OPT_CHECKPOINT:
		return GK_ENV_ID_CHECKPOINT;
	case GK_OPT_INTERVAL:
		return GK_ENV_ID_INTERVAL;
	case GK_OPT_ON_BAD:
		return GK_ENV_ID_ON_BAD_CHECKPOINT;
	case GK_OPT_MODE:
		return GK_ENV_ID_MODE;
	}
	return GK_ENV_COUNT;
}

const char *gk_option_env(enum gk_option_id id)
{
	enum gk_env_id v = gk_option_var(id);

	return v < GK_ENV_COUNT ? gk_env_table[v].name : "?";
}

const char *gk_option_expected(enum gk_option_id id)
{
	switch (id) {
	case GK_OPT_CHECKPOINT:
		return "on or off";
	case GK_OPT_INTERVAL:
		return "seconds, 0 or more";
	case GK_OPT_ON_BAD:
		return "fail or fresh";
	case GK_OPT_MODE:
		return "auto, app or transparent";
	}
	return "?";
}

/* Parse one value into the field for id; *o untouched on error. */
static int parse_into(struct gk_opts *o, enum gk_option_id id, const char *value)
{
	switch (id) {
	case GK_OPT_CHECKPOINT:
		return gk_parse_onoff(value, &o->checkpoint);
	case GK_OPT_INTERVAL:
		return gk_parse_seconds(value, &o->interval);
	case GK_OPT_ON_BAD:
		return gk_parse_on_bad(value, &o->on_bad_fresh);
	case GK_OPT_MODE: {
		enum gk_mode m;

		if (gk_parse_mode(value, &m) < 0)
			return -EINVAL;
		o->mode = (int)m;
		return 0;
	}
	}
	return -EINVAL;
}

int gk_opts_set(struct gk_opts *o, enum gk_option_id id, const char *value, gk_error_t *err)
{
	/* --gpu-checkpoint alone is on (its value is optional, so that it never
	 * takes the next word of the command line for one). */
	if (id == GK_OPT_CHECKPOINT && (!value || !value[0]))
		value = "on";
	if (!value) {
		gk_errprintf(err, "--%s needs a value (%s)", gk_option_name(id),
			     gk_option_expected(id));
		return -EINVAL;
	}
	if (parse_into(o, id, value) < 0) {
		gk_errprintf(err, "--%s: invalid value '%s' (expected %s)", gk_option_name(id),
			     value ? value : "", gk_option_expected(id));
		return -EINVAL;
	}
	return 0;
}

int gk_opts_check_env(enum gk_option_id id, const char *value, gk_error_t *err)
{
	struct gk_opts scratch;

	gk_opts_init(&scratch);
	if (parse_into(&scratch, id, value) < 0) {
		gk_errprintf(err, "%s: invalid value '%s' (expected %s)", gk_option_env(id),
			     value ? value : "", gk_option_expected(id));
		return -EINVAL;
	}
	return 0;
}

int gk_opts_check_given(const struct gk_opts *o, int on, gk_error_t *err)
{
	char num[24];
	enum gk_option_id id;
	const char *value;

	if (on)
		return 0;
	if (o->interval >= 0) {
		id = GK_OPT_INTERVAL;
		snprintf(num, sizeof(num), "%ld", o->interval);
		value = num;
	} else if (o->on_bad_fresh >= 0) {
		id = GK_OPT_ON_BAD;
		value = o->on_bad_fresh ? "fresh" : "fail";
	} else if (o->mode >= 0) {
		id = GK_OPT_MODE;
		value = gk_mode_name((enum gk_mode)o->mode);
	} else {
		return 0;
	}
	gk_errprintf(err,
		     "--%s=%s has no effect: checkpointing is off for this job (add "
		     "--gpu-checkpoint=on, or set %s=on)",
		     gk_option_name(id), value, GK_ENV(CHECKPOINT));
	return -EINVAL;
}

int gk_opts_enabled(const struct gk_opts *o, const char *env_value, const struct gk_site *s,
		    int *on, gk_error_t *err)
{
	if (o->checkpoint >= 0) {
		*on = o->checkpoint;
		return 0;
	}
	if (env_value) {
		if (gk_opts_check_env(GK_OPT_CHECKPOINT, env_value, err) < 0)
			return -EINVAL;
		return gk_parse_onoff(env_value, on);
	}
	*on = s->default_on;
	return 0;
}

int gk_opts_mode(const struct gk_opts *o, const char *env_value, const struct gk_site *s,
		 enum gk_mode *mode, gk_error_t *err)
{
	if (o->mode >= 0) {
		*mode = (enum gk_mode)o->mode;
		return 0;
	}
	if (env_value) {
		if (gk_opts_check_env(GK_OPT_MODE, env_value, err) < 0)
			return -EINVAL;
		return gk_parse_mode(env_value, mode);
	}
	*mode = s->mode;
	return 0;
}
