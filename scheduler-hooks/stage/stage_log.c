/*
 * stage_log.c - gpuckpt-stage's lines (stage_log.h).
 */
#include "config.h"

#include "stage_log.h"
#include "stage.h"

#include <stdarg.h>
#include <stdio.h>

static void vline(const char *prefix, const char *fmt, va_list ap)
{
	fputs(prefix, stdout);
	vfprintf(stdout, fmt, ap);
	fputc('\n', stdout);
	fflush(stdout);
}

void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("", fmt, ap);
	va_end(ap);
}

void warn_line(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("warning: ", fmt, ap);
	va_end(ap);
}

void error_line(struct stage *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vline("error: ", fmt, ap);
	va_end(ap);
	st->failed = 1;
}

const char *show(const char *name)
{
	static char bufs[4][1100];
	static int next;
	char *b = bufs[next++ % 4];
	size_t j = 0;

	for (size_t i = 0; name[i] && j + 5 < sizeof(bufs[0]); i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x20 || c > 0x7e || c == '\\')
			j += (size_t)snprintf(b + j, sizeof(bufs[0]) - j, "\\x%02x", c);
		else
			b[j++] = (char)c;
	}
	b[j] = 0;
	return b;
}
