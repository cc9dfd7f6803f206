/*
 * error.h - the one way errors are handed back: a gk_error_t the caller owns,
 * filled by the function that failed with a sentence that names what is wrong
 * ("bb_root=/x: /x is writable by group or others (mode 0777)").
 *
 *	gk_error_t err;
 *	if (gk_store_open(path, &store, &err) < 0)
 *		log_error("%s", err.text);
 *
 * A function that fails says why once, in err; the caller may put its own
 * context in front with gk_errprefix. err may be NULL where the caller does
 * not want the text. gk_errprintf returns -1 so that a function returning
 * "-1 and err" can end in `return gk_errprintf(err, ...)`; functions that
 * return a negative errno set err and return their own value.
 *
 * Header only: the Slurm plugin, which links nothing of the runtime's, uses it
 * as well.
 */
#ifndef GK_ERROR_H
#define GK_ERROR_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "contract.h"

typedef struct gk_error {
	char text[GK_ERRLEN];
} gk_error_t;

static inline int gk_verrprintf(gk_error_t *err, const char *fmt, va_list ap)
{
	if (err)
		vsnprintf(err->text, sizeof(err->text), fmt, ap);
	return -1;
}

__attribute__((format(printf, 2, 3))) static inline int gk_errprintf(gk_error_t *err,
								     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gk_verrprintf(err, fmt, ap);
	va_end(ap);
	return -1;
}

/* "PREFIX: what was there": context added by a caller to a callee's text
 * (cut at GK_ERRLEN - 1 bytes, as snprintf cuts). */
__attribute__((format(printf, 2, 3))) static inline void gk_errprefix(gk_error_t *err,
								      const char *fmt, ...)
{
	char was[GK_ERRLEN];
	size_t n;
	va_list ap;

	if (!err)
		return;
	memcpy(was, err->text, sizeof(was));
	was[sizeof(was) - 1] = '\0';
	va_start(ap, fmt);
	vsnprintf(err->text, sizeof(err->text), fmt, ap);
	va_end(ap);
	n = strlen(err->text);
	if (n + 2 < sizeof(err->text)) {
		memcpy(err->text + n, ": ", 3);
		n += 2;
		strncat(err->text + n, was, sizeof(err->text) - n - 1);
	}
}

/* Empty, so that "no error" reads as "". */
static inline void gk_errclear(gk_error_t *err)
{
	if (err)
		err->text[0] = '\0';
}

#endif
