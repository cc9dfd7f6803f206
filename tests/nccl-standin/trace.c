/*
 * trace.c - GK_NCCL_STANDIN_TRACE=1 prints every call and its result on
 * stderr; ns_set_error() keeps the reason of the last failure for
 * ncclGetLastError, as NCCL keeps its last warning.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_standin.h"

static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static bool trace_on;
/* Per thread, so that one thread's failure does not overwrite another's text. */
static __thread char last_error[256];

static void trace_read_env(void)
{
	const char *v = getenv("GK_NCCL_STANDIN_TRACE");

	trace_on = v && *v && strcmp(v, "0") != 0;
}

const char *ns_result_name(ncclResult_t rc)
{
	switch (rc) {
	case ncclSuccess:
		return "ncclSuccess";
	case ncclUnhandledCudaError:
		return "ncclUnhandledCudaError";
	case ncclSystemError:
		return "ncclSystemError";
	case ncclInternalError:
		return "ncclInternalError";
	case ncclInvalidArgument:
		return "ncclInvalidArgument";
	case ncclInvalidUsage:
		return "ncclInvalidUsage";
	case ncclRemoteError:
		return "ncclRemoteError";
	case ncclInProgress:
		return "ncclInProgress";
	}
	return "(unknown ncclResult_t)";
}

ncclResult_t ns_traced(const char *fn, ncclResult_t rc, const char *fmt, ...)
{
	char detail[256];
	va_list ap;

	pthread_once(&trace_once, trace_read_env);
	if (!trace_on)
		return rc;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	/* One fprintf per line so that lines of concurrent threads do not interleave. */
	fprintf(stderr, "gk nccl stand-in[%d]: %s(%s) = %s%s%s\n", (int)getpid(), fn, detail,
		ns_result_name(rc), rc && rc != ncclInProgress && last_error[0] ? ": " : "",
		rc && rc != ncclInProgress ? last_error : "");
	return rc;
}

void ns_set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

const char *ns_last_error(void)
{
	return last_error;
}
