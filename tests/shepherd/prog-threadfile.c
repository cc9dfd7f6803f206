/*
 * prog-threadfile - a program holding a descriptor on a /proc file of one of
 * its threads (/proc/self/task/TID/comm), as glibc's pthread_setname_np does
 * for a moment when it names another thread, and as a JAX job under Slurm was
 * caught doing at a checkpoint. CRIU dumps such a descriptor but cannot
 * restore it: it opens files before it creates threads (criu issue #1553).
 *
 *   prog-threadfile hold N    keeps the descriptor open until the end
 *   prog-threadfile blink N   closes it 700 ms after it printed "count 20"
 *                             (thread-files.sh sends SIGTERM then: the
 *                             shepherd passes it on only after the dump)
 *   prog-threadfile flicker N a thread opens it, holds it 18 ms, closes it
 *                             and waits 2 ms, over and over: open 90 % of
 *                             the time, so a look at the running tree that
 *                             finds it closed says little about the moment
 *                             CRIU seizes it
 *
 * Counts to N on stdout, a line each 50 ms ("count K"), then "done". It
 * ignores SIGTERM, as stdio-criu.sh's counter does: outside Slurm the
 * shepherd passes the signal on after CRIU dumped.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile pid_t thread_tid;

static void *sleeper(void *arg)
{
	(void)arg;
	thread_tid = (pid_t)syscall(SYS_gettid);
	for (;;)
		pause();
	return NULL;
}

static void *flicker(void *arg)
{
	const char *path = arg;

	for (;;) {
		int fd = open(path, O_RDONLY);

		usleep(18000);
		if (fd >= 0)
			close(fd);
		usleep(2000);
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct sigaction sa = {.sa_handler = SIG_IGN};
	char path[64];
	pthread_t t, f;
	int fd, blink, n;
	double at20 = 0;

	if (argc != 3 ||
	    (strcmp(argv[1], "hold") && strcmp(argv[1], "blink") && strcmp(argv[1], "flicker"))) {
		fprintf(stderr, "usage: prog-threadfile hold|blink|flicker N\n");
		return 2;
	}
	blink = !strcmp(argv[1], "blink");
	n = atoi(argv[2]);
	sigaction(SIGTERM, &sa, NULL);
	if (pthread_create(&t, NULL, sleeper, NULL))
		return 1;
	while (!thread_tid)
		usleep(1000);
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)thread_tid);
	if (!strcmp(argv[1], "flicker")) {
		if (pthread_create(&f, NULL, flicker, path))
			return 1;
		printf("flickering %s\n", path);
		for (int i = 1; i <= n; i++) {
			printf("count %d\n", i);
			fflush(stdout);
			usleep(50000);
		}
		printf("done\n");
		return 0;
	}
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	printf("holding %s as fd %d\n", path, fd);
	for (int i = 1; i <= n; i++) {
		printf("count %d\n", i);
		fflush(stdout);
		usleep(50000);
		if (i == 20)
			at20 = now();
		if (blink && fd >= 0 && at20 > 0 && now() - at20 >= 0.7) {
			close(fd);
			fd = -1;
			printf("closed the thread's file\n");
		}
	}
	printf("done\n");
	return 0;
}
