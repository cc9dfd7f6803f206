/*
 * settings_env.h - the names of gpuckpt's environment variables, from
 * settings.def, and the one place they are read.
 *
 *	GK_ENV(DIR)		"GPUCKPT_DIR": a string literal, for setenv,
 *				messages and tables ("GPUCKPT_" #ID; the test
 *				tests/common/settings-table.sh checks that every
 *				GK_ENV(ID) names a row of settings.def)
 *	gk_getenv(DIR)		getenv("GPUCKPT_DIR"), or secure_getenv for a
 *				row flagged GK_F_SECURE; an ID not in the table
 *				does not compile
 *	GK_ENV_PREFIX		"GPUCKPT_", what every name starts with
 */
#ifndef GK_SETTINGS_ENV_H
#define GK_SETTINGS_ENV_H

#include <stdlib.h>

#define GK_ENV_PREFIX "GPUCKPT_"
#define GK_ENV(ID) GK_ENV_PREFIX #ID

/* The FLAGS column of settings.def. */
#define GK_F_SECURE 1u
#define GK_F_README 2u
#define GK_F_TASK 4u
#define GK_F_CONTAINER 8u

enum gk_env_id {
#define GK_ENV_ONLY(ID, FLAGS, TYPE, RANGE, DEFAULT, HELP) GK_ENV_ID_##ID,
#include "common/settings.def"
	GK_ENV_COUNT
};

struct gk_env_info {
	const char *name; /* "GPUCKPT_..." */
	unsigned flags;	  /* GK_F_* */
};

static const struct gk_env_info gk_env_table[GK_ENV_COUNT] __attribute__((unused)) = {
#define GK_ENV_ONLY(ID, FLAGS, TYPE, RANGE, DEFAULT, HELP) [GK_ENV_ID_##ID] = {GK_ENV(ID), FLAGS},
#include "common/settings.def"
};

static inline const char *gk_env_get(enum gk_env_id id)
{
	const struct gk_env_info *e = &gk_env_table[id];

	return e->flags & GK_F_SECURE ? secure_getenv(e->name) : getenv(e->name);
}

#define gk_getenv(ID) gk_env_get(GK_ENV_ID_##ID)

#endif
