/* Unit tests: plugstack.conf arguments (spank-plugin/site_args.c). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "spank-plugin/site_args.h"
#include "tap.h"

static int parse(struct gk_site *s, gk_error_t *err, int n, ...)
{
	char *argv[16];
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		argv[i] = va_arg(ap, char *);
	va_end(ap);
	gk_errclear(err);
	return gk_site_parse(s, n, argv, err);
}

/*
 * settings.def against site_args.c: each plugstack.conf argument the table
 * lists is accepted with each value its range lists (enum and on/off rows),
 * and a plugin-only argument's documented default, set, changes nothing.
 */
static char table_wrong[1024];

static void note(const char *key, const char *what)
{
	size_t n = strlen(table_wrong);

	snprintf(table_wrong + n, sizeof(table_wrong) - n, " %s(%s)", key, what);
}

static void table_row(const char *key, const char *type, const char *range, const char *dflt,
		      int own)
{
	static struct gk_site d, s;
	gk_error_t err;
	char buf[256], *save = NULL;

	gk_site_defaults(&d);
	if (own && *dflt && !strchr(dflt, '/')) {
		s = d;
		if (gk_site_set(&s, key, dflt, &err) < 0 || memcmp(&s, &d, sizeof(s)) != 0)
			note(key, dflt);
	}
	if (strcmp(type, "enum") != 0 && strcmp(type, "onoff") != 0)
		return;
	snprintf(buf, sizeof(buf), "%s", range);
	for (char *v = strtok_r(buf, ", ", &save); v; v = strtok_r(NULL, ", ", &save)) {
		s = d;
		if (gk_site_set(&s, key, v, &err) < 0)
			note(key, v);
	}
}

static void table_checks(void)
{
	unsigned n = 0;

#define GK_SITE(KEY, TYPE, RANGE, DEFAULT, HELP) \
	table_row(#KEY, TYPE, RANGE, DEFAULT, 1);  \
	n++;
#define GK_CONF_SITE(ID, KEY, FLAGS, TYPE, RANGE, DEFAULT, HELP) \
	table_row(#KEY, TYPE, RANGE, DEFAULT, 0);                  \
	n++;
#define GK_ENV_SITE(ID, KEY, FLAGS, TYPE, RANGE, DEFAULT, HELP) \
	table_row(#KEY, TYPE, RANGE, DEFAULT, 0);                 \
	n++;
#include "common/settings.def"
	ok(n >= 19, "settings.def: %u plugstack.conf arguments", n);
	ok(!table_wrong[0], "settings.def: each plugin-only default is the built-in one, each "
			    "listed value is accepted%s%s", table_wrong[0] ? ": not" : "", table_wrong);
}

int main(void)
{
	struct gk_site s;
	gk_error_t err;

	plan(40);

	is_int(parse(&s, &err, 0), 0, "no arguments: defaults");
	is_int(s.default_on, 0, "default is off");
	is_int(s.keep, 2, "keep defaults to 2");
	is_int(s.on_bad_fresh, -1, "on_bad_checkpoint left to the runtime");
	is_int(s.interval, -1, "interval left to the runtime");
	is_str(s.shared_root, "", "no shared root by default");
	ok(s.bb_root[0] == '/', "bb_root has an absolute default (%s)", s.bb_root);
	ok(strstr(s.runtime, "libgpuckpt.so") != NULL, "runtime defaults to the installed library");

	is_int(parse(&s, &err, 6, "default=on", "bb_root=/local/bb", "shared_root=/shared/ck",
		     "keep=3", "on_bad_checkpoint=fresh", "interval=600"),
	       0, "a full set of arguments");
	is_int(s.default_on, 1, "default=on");
	is_str(s.bb_root, "/local/bb", "bb_root");
	is_str(s.shared_root, "/shared/ck", "shared_root");
	is_int(s.keep, 3, "keep");
	is_int(s.on_bad_fresh, 1, "on_bad_checkpoint=fresh");
	is_int(s.interval, 600, "interval");

	is_int(parse(&s, &err, 3, "runtime=/opt/g/libgpuckpt.so", "log_level=debug", "stage=none"),
	       0, "runtime, log_level, stage=none");
	is_str(s.stage, "", "stage=none turns staging off");
	is_str(s.log_level, "debug", "log_level");

	is_str(s.flush_root, "", "no flush root by default");
	is_int(parse(&s, &err, 1, "flush_root=/shared/flush"), 0, "flush_root");
	is_str(s.flush_root, "/shared/flush", "flush_root set");
	is_int(parse(&s, &err, 1, "flush_root=shared/flush"), -EINVAL,
	       "relative flush_root refused");

	is_int(s.record_days, 30, "record_days defaults to 30");
	is_int(parse(&s, &err, 1, "record_days=0"), 0, "record_days=0: records kept forever");
	is_int(s.record_days, 0, "record_days=0 set");
	is_int(parse(&s, &err, 1, "record_days=soon"), -EINVAL, "record_days: a bad value refused");

	is_int(parse(&s, &err, 2, "keep=5", "colour=blue"), -EINVAL, "unknown key refused");
	ok(strstr(err.text, "unknown argument 'colour'") != NULL, "error names the key: %s",
	   err.text);
	ok(strstr(err.text, "bb_root") != NULL, "error lists the known keys");

	is_int(parse(&s, &err, 1, "default=maybe"), -EINVAL, "default=maybe refused");
	ok(strstr(err.text, "default") && strstr(err.text, "maybe"),
	   "error names key and value: %s", err.text);
	is_int(parse(&s, &err, 1, "bb_root=relative/dir"), -EINVAL, "relative bb_root refused");
	ok(strstr(err.text, "not an absolute path") != NULL, "error says why: %s", err.text);
	is_int(parse(&s, &err, 1, "keep=0"), -EINVAL, "keep=0 refused");
	is_int(parse(&s, &err, 1, "keep=many"), -EINVAL, "keep=many refused");
	is_int(parse(&s, &err, 1, "justaword"), -EINVAL, "argument without '=' refused");
	ok(strstr(err.text, "justaword") != NULL, "error names the argument: %s", err.text);
	is_int(parse(&s, &err, 1, "log_level=loud"), -EINVAL, "log_level=loud refused");

	table_checks();
	return done_testing();
}
