/*
 * settings-dump - runtime/common/settings.def as tab-separated lines, for the
 * tests that check the documentation against it (tests/man/settings-table.sh):
 *
 *	KIND  VARIABLE  CONF_KEY  PLUGSTACK_KEY  FLAGS  TYPE  RANGE  DEFAULT  HELP
 *
 * KIND is the row's macro (env, conf, conf_site, env_site, site); an empty
 * field is "-"; FLAGS are letters: s secure, r docs/users.md, t task, c container.
 */
#include "config.h"

#include "common/settings_env.h"

#include <stdio.h>

static const char *f(const char *s)
{
	return s && *s ? s : "-";
}

static void row(const char *kind, const char *var, const char *conf, const char *plug,
		unsigned flags, const char *type, const char *range, const char *dflt,
		const char *help)
{
	char fl[8], *p = fl;

	if (flags & GK_F_SECURE)
		*p++ = 's';
	if (flags & GK_F_README)
		*p++ = 'r';
	if (flags & GK_F_TASK)
		*p++ = 't';
	if (flags & GK_F_CONTAINER)
		*p++ = 'c';
	*p = 0;
	printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", kind, f(var), f(conf), f(plug), f(fl), f(type),
	       f(range), f(dflt), f(help));
}

int main(void)
{
#define GK_ENV_ONLY(ID, FL, T, R, D, H) row("env", GK_ENV(ID), NULL, NULL, FL, T, R, D, H);
#define GK_CONF(ID, K, FL, T, R, D, H) row("conf", GK_ENV(ID), #K, NULL, FL, T, R, D, H);
#define GK_CONF_SITE(ID, K, FL, T, R, D, H) row("conf_site", GK_ENV(ID), #K, #K, FL, T, R, D, H);
#define GK_ENV_SITE(ID, K, FL, T, R, D, H) row("env_site", GK_ENV(ID), NULL, #K, FL, T, R, D, H);
#define GK_SITE(K, T, R, D, H) row("site", NULL, NULL, #K, 0, T, R, D, H);
#include "common/settings.def"
	return 0;
}
