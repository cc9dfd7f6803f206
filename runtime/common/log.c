#include "config.h"

#include "common/log.h"
#include "common/settings_env.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Notices by default: an operator sees what went wrong and when a checkpoint
 * was written or restored, a job's output is not filled with chatter.
 * GPUCKPT_LOG_LEVEL is read at first use. */
static int log_level = -1;

int gk_log_parse_level(const char *name, enum gk_log_level *level)
{
	static const char *const names[] = {"error", "warn", "notice", "info", "debug"};

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcasecmp(name, names[i]) == 0) {
			*level = (enum gk_log_level)i;
			return 0;
		}
	}
	if (strcasecmp(name, "warning") == 0) {
		*level = GK_LOG_WARN;
		return 0;
	}
	return -EINVAL;
}

void gk_log_set_level(enum gk_log_level level)
{
	__atomic_store_n(&log_level, (int)level, __ATOMIC_RELAXED);
}

int gk_log_enabled(enum gk_log_level level)
{
	int cur = __atomic_load_n(&log_level, __ATOMIC_RELAXED);

	if (cur < 0) {
		enum gk_log_level parsed = GK_LOG_NOTICE;
		const char *env = gk_getenv(LOG_LEVEL);

		if (env && *env && gk_log_parse_level(env, &parsed) < 0)
			parsed = GK_LOG_NOTICE;
		cur = (int)parsed;
		__atomic_store_n(&log_level, cur, __ATOMIC_RELAXED);
	}
	return (int)level <= cur;
}

void gk_log(enum gk_log_level level, const char *fmt, ...)
{
	static const char *const tags[] = {"", "warning: ", "", "", "debug: "};
	char line[2048];
	va_list ap;
	int n, m;

	if (!gk_log_enabled(level))
		return;
	n = snprintf(line, sizeof(line), "gpuckpt: %s", tags[level]);
	va_start(ap, fmt);
	m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		return;
	n += m;
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* One write per line so that lines of several tasks do not interleave. */
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

void gk_log_raw(const char *msg)
{
	size_t len = strlen(msg);

	while (len > 0) {
		ssize_t w = write(STDERR_FILENO, msg, len);

		if (w <= 0)
			return;
		msg += w;
		len -= (size_t)w;
	}
}
