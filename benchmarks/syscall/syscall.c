/*
 * syscall.c - nanoseconds per call of glibc's syscall(2), for
 * benchmarks/syscall/run: the runtime exports its own syscall()
 * (runtime/core/interpose/uring.c) in every process it is preloaded into,
 * and libraries call syscall() on hot paths (futex waits and wakes, gettid).
 * One system call as cheap as the kernel has (getppid) makes the wrapper's
 * share as large as it can be.
 *
 *   syscall [--calls N]     prints: syscall: calls=N ns_per_call=X
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	long calls = 2000000, sum = 0;
	double t0;

	if (argc == 3 && !strcmp(argv[1], "--calls"))
		calls = strtol(argv[2], NULL, 10);
	else if (argc != 1) {
		fprintf(stderr, "usage: %s [--calls N]\n", argv[0]);
		return 2;
	}
	if (calls < 1) {
		fprintf(stderr, "syscall: --calls: want a positive number\n");
		return 2;
	}
	/* The first calls resolve symbols and fault pages in. */
	for (long i = 0; i < 1000; i++)
		sum += syscall(SYS_getppid);
	t0 = now();
	for (long i = 0; i < calls; i++)
		sum += syscall(SYS_getppid);
	printf("syscall: calls=%ld ns_per_call=%.2f (checksum %ld)\n", calls,
	       (now() - t0) * 1e9 / (double)calls, sum & 1);
	return 0;
}
