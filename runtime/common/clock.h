/*
 * clock.h - seconds on a monotonic clock, for the timing lines of
 * checkpoints, restores and transfers.
 */
#ifndef GK_CLOCK_H
#define GK_CLOCK_H

#include <time.h>

static inline double gk_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif
