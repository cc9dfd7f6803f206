/*
 * values.h - the values a setting takes, as the site writes them in
 * plugstack.conf (site_args.c) and a user gives them as options or variables
 * (job_options.c): on|off, seconds, fail|fresh, a mode. A module of its own
 * that both use, so that neither reaches into the other.
 */
#ifndef GK_VALUES_H
#define GK_VALUES_H

#include "common/contract.h" /* enum gk_mode */

/* Parse values; -EINVAL for anything else. */
int gk_parse_onoff(const char *text, int *on);
int gk_parse_seconds(const char *text, long *seconds);
int gk_parse_on_bad(const char *text, int *fresh);
int gk_parse_mode(const char *text, enum gk_mode *mode);
const char *gk_mode_name(enum gk_mode mode);

#endif
