/*
 * tap.h - a minimal TAP producer for the C unit tests.
 *
 *	plan(3);
 *	ok(x == 1, "x is one");
 *	is_int(f(), 0, "f succeeds");
 *	is_str(name, "gpu0", "name");
 *	return done_testing();
 */
#ifndef GK_TAP_H
#define GK_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed, tap_planned;

static inline void plan(int n)
{
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

static inline int ok_(int cond, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static inline int ok_(int cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	tap_n++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond) {
		tap_failed++;
		printf("#   failed at %s:%d\n", file, line);
	}
	fflush(stdout);
	return cond;
}

#define ok(cond, ...) ok_(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...)                                                                     \
	do {                                                                                       \
		long long g_ = (long long)(got), w_ = (long long)(want);                           \
		if (!ok(g_ == w_, __VA_ARGS__))                                                    \
			printf("#   got %lld, expected %lld\n", g_, w_);                             \
	} while (0)

#define is_str(got, want, ...)                                                                     \
	do {                                                                                       \
		const char *g_ = (got), *w_ = (want);                                              \
		if (!ok(g_ && w_ && strcmp(g_, w_) == 0, __VA_ARGS__))                             \
			printf("#   got '%s', expected '%s'\n", g_ ? g_ : "(null)",                 \
			       w_ ? w_ : "(null)");                                                \
	} while (0)

/* A test left out for a stated reason: reported as skipped, never as passed. */
static inline void skip(const char *why)
{
	tap_n++;
	printf("ok %d # SKIP %s\n", tap_n, why);
	fflush(stdout);
}

static inline int done_testing(void)
{
	if (tap_planned && tap_n != tap_planned)
		printf("# planned %d tests but ran %d\n", tap_planned, tap_n);
	return tap_failed || (tap_planned && tap_n != tap_planned) ? 1 : 0;
}

/* For a test whose count is known only at its end: the plan goes last (TAP
 * allows it there), then the status. */
static inline int done_testing_plan_last(void)
{
	printf("1..%d\n", tap_n);
	fflush(stdout);
	return tap_failed ? 1 : 0;
}

#endif
