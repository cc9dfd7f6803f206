/* Unit tests: --gpu-checkpoint and its variables (spank-plugin/job_options.c). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "spank-plugin/job_options.h"
#include "tap.h"

int main(void)
{
	struct gk_site site;
	struct gk_opts o;
	gk_error_t err;
	int on = -1;

	plan(37);
	gk_site_defaults(&site);
	gk_opts_init(&o);

	is_int(gk_opts_set(&o, GK_OPT_CHECKPOINT, "on", &err), 0, "on accepted");
	is_int(o.checkpoint, 1, "recorded as on");
	is_int(gk_opts_set(&o, GK_OPT_CHECKPOINT, "off", &err), 0, "off accepted");
	is_int(o.checkpoint, 0, "recorded as off");
	is_int(gk_opts_set(&o, GK_OPT_CHECKPOINT, "yes", &err), -EINVAL, "yes refused");
	ok(strstr(err.text, "--gpu-checkpoint") && strstr(err.text, "'yes'") &&
	       strstr(err.text, "on or off"),
	   "error names option, value and choices: %s", err.text);
	is_int(o.checkpoint, 0, "a refused value changes nothing");
	/* Its value is optional: --gpu-checkpoint alone is on (NULL from Slurm,
	 * or "" where the option travels to the node without a value). */
	o.checkpoint = 0;
	is_int(gk_opts_set(&o, GK_OPT_CHECKPOINT, NULL, &err), 0, "no value: on");
	is_int(o.checkpoint, 1, "recorded as on");
	o.checkpoint = 0;
	is_int(gk_opts_set(&o, GK_OPT_CHECKPOINT, "", &err), 0, "empty value: on");
	is_int(o.checkpoint, 1, "recorded as on");
	is_int(gk_opts_set(&o, GK_OPT_INTERVAL, NULL, &err), -EINVAL,
	       "the interval without a value is refused");
	is_str(err.text, "--gpu-checkpoint-interval needs a value (seconds, 0 or more)",
	       "... naming the option and what it takes");
	o.checkpoint = 0;

	is_int(gk_opts_set(&o, GK_OPT_INTERVAL, "300", &err), 0, "interval 300");
	is_int(o.interval, 300, "interval recorded");
	is_int(gk_opts_set(&o, GK_OPT_INTERVAL, "-5", &err), -EINVAL, "negative refused");
	ok(strstr(err.text, "--gpu-checkpoint-interval") != NULL, "error names the option: %s",
	   err.text);
	is_int(gk_opts_set(&o, GK_OPT_INTERVAL, "10m", &err), -EINVAL, "10m refused");
	is_int(gk_opts_set(&o, GK_OPT_INTERVAL, "99999999999", &err), -EINVAL,
	       "absurdly long interval refused");

	is_int(gk_opts_set(&o, GK_OPT_ON_BAD, "fresh", &err), 0, "on-bad fresh");
	is_int(gk_opts_set(&o, GK_OPT_ON_BAD, "retry", &err), -EINVAL, "retry refused");

	is_int(gk_opts_check_env(GK_OPT_CHECKPOINT, "ON", &err), -EINVAL,
	       "variable value ON refused (values are lower case)");
	ok(strstr(err.text, "GPUCKPT_CHECKPOINT") != NULL, "error names the variable: %s",
	   err.text);

	/* Resolution: option, then variable, then the site's default. */
	gk_opts_init(&o);
	is_int(gk_opts_enabled(&o, NULL, &site, &on, &err), 0, "nothing given");
	is_int(on, 0, "site default off");
	site.default_on = 1;
	gk_opts_enabled(&o, NULL, &site, &on, &err);
	is_int(on, 1, "site default on");
	gk_opts_enabled(&o, "off", &site, &on, &err);
	is_int(on, 0, "variable off beats site default on");
	o.checkpoint = 1;
	gk_opts_enabled(&o, "off", &site, &on, &err);
	is_int(on, 1, "option on beats variable off");
	o.checkpoint = -1;
	is_int(gk_opts_enabled(&o, "sometimes", &site, &on, &err), -EINVAL,
	       "bad variable refused when resolving");
	ok(strstr(err.text, "sometimes") != NULL, "error names the value: %s", err.text);

	/* The other options need checkpointing on. */
	gk_opts_init(&o);
	is_int(gk_opts_check_given(&o, 0, &err), 0, "off, nothing else given: fine");
	gk_opts_set(&o, GK_OPT_INTERVAL, "60", &err);
	is_int(gk_opts_check_given(&o, 1, &err), 0, "an interval with checkpointing on");
	is_int(gk_opts_check_given(&o, 0, &err), -EINVAL,
	       "an interval with checkpointing off is refused");
	is_str(err.text,
	       "--gpu-checkpoint-interval=60 has no effect: checkpointing is off for this job (add "
	       "--gpu-checkpoint=on, or set GPUCKPT_CHECKPOINT=on)",
	       "... saying what it would need");
	gk_opts_init(&o);
	gk_opts_set(&o, GK_OPT_MODE, "transparent", &err);
	is_int(gk_opts_check_given(&o, 0, &err), -EINVAL, "a mode too");
	ok(strstr(err.text, "--gpu-checkpoint-mode=transparent has no effect") != NULL,
	   "... named: %s", err.text);
	gk_opts_init(&o);
	gk_opts_set(&o, GK_OPT_ON_BAD, "fresh", &err);
	is_int(gk_opts_check_given(&o, 0, &err), -EINVAL, "and on-bad");

	return done_testing();
}
