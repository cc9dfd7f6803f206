/* Unit tests: --gpu-checkpoint and its variables (spank-plugin/job_options.c). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "job_options.h"
#include "tap.h"

int main(void)
{
	struct gk_site site;
	struct gk_opts o;
	char err[GK_ERRLEN];
	int on = -1;

	plan(26);
	gk_site_defaults(&site);
	gk_opts_init(&o);

	is_int(gk_opts_set(&o, GK_OPT_CHECKPOINT, "on", err, sizeof(err)), 0, "on accepted");
	is_int(o.checkpoint, 1, "recorded as on");
	is_int(gk_opts_set(&o, GK_OPT_CHECKPOINT, "off", err, sizeof(err)), 0, "off accepted");
	is_int(o.checkpoint, 0, "recorded as off");
	is_int(gk_opts_set(&o, GK_OPT_CHECKPOINT, "yes", err, sizeof(err)), -EINVAL, "yes refused");
	ok(strstr(err, "--gpu-checkpoint") && strstr(err, "'yes'") && strstr(err, "on or off"),
	   "error names option, value and choices: %s", err);
	is_int(o.checkpoint, 0, "a refused value changes nothing");
	is_int(gk_opts_set(&o, GK_OPT_CHECKPOINT, "", err, sizeof(err)), -EINVAL, "empty refused");
	is_int(gk_opts_set(&o, GK_OPT_CHECKPOINT, NULL, err, sizeof(err)), -EINVAL,
	       "missing value refused");

	is_int(gk_opts_set(&o, GK_OPT_INTERVAL, "300", err, sizeof(err)), 0, "interval 300");
	is_int(o.interval, 300, "interval recorded");
	is_int(gk_opts_set(&o, GK_OPT_INTERVAL, "-5", err, sizeof(err)), -EINVAL,
	       "negative refused");
	ok(strstr(err, "--gpu-checkpoint-interval") != NULL, "error names the option: %s", err);
	is_int(gk_opts_set(&o, GK_OPT_INTERVAL, "10m", err, sizeof(err)), -EINVAL, "10m refused");
	is_int(gk_opts_set(&o, GK_OPT_INTERVAL, "99999999999", err, sizeof(err)), -EINVAL,
	       "absurdly long interval refused");

	is_int(gk_opts_set(&o, GK_OPT_ON_BAD, "fresh", err, sizeof(err)), 0, "on-bad fresh");
	is_int(gk_opts_set(&o, GK_OPT_ON_BAD, "retry", err, sizeof(err)), -EINVAL, "retry refused");

	is_int(gk_opts_check_env(GK_OPT_CHECKPOINT, "ON", err, sizeof(err)), -EINVAL,
	       "variable value ON refused (values are lower case)");
	ok(strstr(err, "GPUCKPT_CHECKPOINT") != NULL, "error names the variable: %s", err);

	/* Resolution: option, then variable, then the site's default. */
	gk_opts_init(&o);
	is_int(gk_opts_enabled(&o, NULL, &site, &on, err, sizeof(err)), 0, "nothing given");
	is_int(on, 0, "site default off");
	site.default_on = 1;
	gk_opts_enabled(&o, NULL, &site, &on, err, sizeof(err));
	is_int(on, 1, "site default on");
	gk_opts_enabled(&o, "off", &site, &on, err, sizeof(err));
	is_int(on, 0, "variable off beats site default on");
	o.checkpoint = 1;
	gk_opts_enabled(&o, "off", &site, &on, err, sizeof(err));
	is_int(on, 1, "option on beats variable off");
	o.checkpoint = -1;
	is_int(gk_opts_enabled(&o, "sometimes", &site, &on, err, sizeof(err)), -EINVAL,
	       "bad variable refused when resolving");
	ok(strstr(err, "sometimes") != NULL, "error names the value: %s", err);

	return done_testing();
}
