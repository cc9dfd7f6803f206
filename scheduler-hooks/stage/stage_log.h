/*
 * stage_log.h - gpuckpt-stage's lines: its stdout, which the plugin copies
 * into slurmd's log line by line. Its own, rather than runtime/common's log,
 * which is the runtime's (levels, GPUCKPT_LOG_LEVEL, a job's stderr).
 */
#ifndef GK_STAGE_LOG_H
#define GK_STAGE_LOG_H

struct stage;

/* One line for slurmd's log (the plugin copies each line there). Names a
 * user chose go through show() first: they are printed escaped. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void warn_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void error_line(struct stage *st, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* name with control characters, bytes above 0x7e and backslashes as \xNN,
 * in one of a few rotating buffers. */
const char *show(const char *name);

#endif
