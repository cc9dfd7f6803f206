/*
 * error.h - the one way errors are handed back: a gk_error_t the caller owns,
 * filled by the function that failed with a sentence that names what is wrong
 * ("bb_root=/x: /x is writable by group or others (mode 0777)").
 *
 *	gk_error_t err;
 *	if (gk_image_open(dir, &opts, &m, &err) < 0)
 *		gk_error("%s", err.text);
 *
 * A function that fails says why once, in err. err may be NULL where the
 * caller does not want the text. gk_errprintf returns -1 so that a function
 * returning "-1 and err" can end in `return gk_errprintf(err, ...)`;
 * functions that return a negative errno set err and return their own value.
 *
 * Header only: the Slurm plugin, which links nothing of the runtime's, uses it
 * as well.
 */
#ifndef GK_ERROR_H
#define GK_ERROR_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/contract.h"

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

/* Empty, so that "no error" reads as "". */
static inline void gk_errclear(gk_error_t *err)
{
	if (err)
		err->text[0] = '\0';
}

#endif
