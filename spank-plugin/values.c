/*
 * values.c - the values a setting takes (values.h).
 */
#include "config.h"

#include "values.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int gk_parse_onoff(const char *text, int *on)
{
	if (!text)
		return -EINVAL;
	if (strcmp(text, "on") == 0) {
		*on = 1;
		return 0;
	}
	if (strcmp(text, "off") == 0) {
		*on = 0;
		return 0;
	}
	return -EINVAL;
}

int gk_parse_seconds(const char *text, long *seconds)
{
	char *end;
	long v;

	if (!text || text[0] < '0' || text[0] > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(text, &end, 10);
	/* A year is plenty; anything bigger is a typo. */
	if (errno || *end != '\0' || v > 366L * 24 * 3600)
		return -EINVAL;
	*seconds = v;
	return 0;
}

int gk_parse_on_bad(const char *text, int *fresh)
{
	if (!text)
		return -EINVAL;
	if (strcmp(text, "fail") == 0) {
		*fresh = 0;
		return 0;
	}
	if (strcmp(text, "fresh") == 0) {
		*fresh = 1;
		return 0;
	}
	return -EINVAL;
}

int gk_parse_mode(const char *text, enum gk_mode *mode)
{
	if (!text)
		return -EINVAL;
	if (strcmp(text, "auto") == 0)
		*mode = GK_MODE_AUTO;
	else if (strcmp(text, "app") == 0)
		*mode = GK_MODE_APP;
	else if (strcmp(text, "transparent") == 0)
		*mode = GK_MODE_TRANSPARENT;
	else
		return -EINVAL;
	return 0;
}

const char *gk_mode_name(enum gk_mode mode)
{
	switch (mode) {
	case GK_MODE_AUTO:
		return "auto";
	case GK_MODE_APP:
		return "app";
	case GK_MODE_TRANSPARENT:
		return "transparent";
	}
	return "?";
}
