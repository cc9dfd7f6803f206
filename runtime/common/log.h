/*
 * log.h - one logging module for the runtime, the command-line tool and the
 * plugin's helpers. Messages go to stderr as
 *	gpuckpt: <operation>: <object>: <what happened>
 * The level comes from GPUCKPT_LOG_LEVEL (error, warn, notice, info, debug),
 * read once. notice, the default, adds to warnings the few lines a job's
 * output should always show: a checkpoint written, a checkpoint restored.
 */
#ifndef GK_LOG_H
#define GK_LOG_H

enum gk_log_level {
	GK_LOG_ERROR = 0,
	GK_LOG_WARN = 1,
	GK_LOG_NOTICE = 2,
	GK_LOG_INFO = 3,
	GK_LOG_DEBUG = 4,
};

/* Parse a level name; returns -EINVAL for anything else. */
int gk_log_parse_level(const char *name, enum gk_log_level *level);

/* Set the level (the configuration does this once; tests may too). */
void gk_log_set_level(enum gk_log_level level);
int gk_log_enabled(enum gk_log_level level);

void gk_log(enum gk_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define gk_error(...) gk_log(GK_LOG_ERROR, __VA_ARGS__)
#define gk_warn(...) gk_log(GK_LOG_WARN, __VA_ARGS__)
#define gk_notice(...) gk_log(GK_LOG_NOTICE, __VA_ARGS__)
#define gk_info(...) gk_log(GK_LOG_INFO, __VA_ARGS__)
#define gk_debug(...)                                                                              \
	do {                                                                                       \
		if (gk_log_enabled(GK_LOG_DEBUG))                                                  \
			gk_log(GK_LOG_DEBUG, __VA_ARGS__);                                         \
	} while (0)

/* Async-signal-safe: writes a fixed message with write(2), no formatting. */
void gk_log_raw(const char *msg);

#endif
