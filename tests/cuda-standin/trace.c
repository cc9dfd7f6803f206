/*
 * trace.c - GPUCKPT_STANDIN_TRACE=1 prints every call and its result to
 * stderr; si_msg() explains refusals that an error code alone would leave
 * unclear (a bad environment variable, a module that does not load).
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "standin.h"

static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static bool trace_on;

static void trace_read_env(void)
{
	const char *v = getenv("GPUCKPT_STANDIN_TRACE");

	trace_on = v && *v && strcmp(v, "0") != 0;
}

bool si_tracing(void)
{
	pthread_once(&trace_once, trace_read_env);
	return trace_on;
}

CUresult si_traced(const char *fn, CUresult rc, const char *fmt, ...)
{
	char detail[256];
	va_list ap;

	if (!si_tracing())
		return rc;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	/* One fprintf per line so that lines of concurrent threads do not interleave. */
	fprintf(stderr, "gpuckpt stand-in: %s(%s) = %s\n", fn, detail, si_error_name(rc));
	return rc;
}

void si_msg(const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "gpuckpt stand-in: %s\n", line);
}

uint64_t si_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
