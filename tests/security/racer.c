/*
 * racer - what the attacking user runs in tests/security/: the moves of
 * issue 11's review, made as fast as the kernel lets a user make them.
 *
 *	racer swap DIR PREFIX TARGET [COUNT]
 *	    watch DIR (inotify); each time an entry whose name starts with
 *	    PREFIX appears, rename it away and put a symbolic link to TARGET
 *	    in its place; COUNT times (default 1)
 *	racer exchange DIR A B SECONDS
 *	    exchange the names DIR/A and DIR/B (renameat2 RENAME_EXCHANGE) in a
 *	    loop for SECONDS, leaving them as they were; SECONDS 0: once
 *	racer wait DIR PREFIX
 *	    return once an entry whose name starts with PREFIX is in DIR
 *	racer stop MATCH [CMD...]
 *	    wait for a process of the caller's own uid whose command line
 *	    contains MATCH, stop it (SIGSTOP), run CMD (sh -c) if given, then
 *	    let it go on (SIGCONT); without CMD leave it stopped and print its pid
 *
 * Each waits at most 60 seconds, prints "ready" once it watches, and
 * exits 0 when it did what it was asked, 1 when it never had the chance.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LIMIT_S 60

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void ready(void)
{
	printf("ready\n");
	fflush(stdout);
}

/* Wait for an entry of dirfd named PREFIX...: its name in found. */
static int wait_entry(const char *dir, const char *prefix, char *found, size_t len)
{
	char buf[64 * 1024] __attribute__((aligned(8)));
	double end = now() + LIMIT_S;
	int in = inotify_init1(IN_CLOEXEC);
	DIR *d;
	struct dirent *e;

	if (in < 0 || inotify_add_watch(in, dir, IN_CREATE | IN_MOVED_TO) < 0) {
		perror(dir);
		return -1;
	}
	ready();
	/* Already there (made before the watch)? */
	if ((d = opendir(dir))) {
		while ((e = readdir(d)))
			if (!strncmp(e->d_name, prefix, strlen(prefix))) {
				snprintf(found, len, "%s", e->d_name);
				closedir(d);
				close(in);
				return 0;
			}
		closedir(d);
	}
	while (now() < end) {
		struct pollfd pf = {.fd = in, .events = POLLIN};
		ssize_t n;

		if (poll(&pf, 1, 100) <= 0)
			continue;
		n = read(in, buf, sizeof(buf));
		for (char *p = buf; n > 0 && p < buf + n;) {
			struct inotify_event *ev = (struct inotify_event *)p;

			if (ev->len && !strncmp(ev->name, prefix, strlen(prefix))) {
				snprintf(found, len, "%s", ev->name);
				close(in);
				return 0;
			}
			p += sizeof(*ev) + ev->len;
		}
	}
	close(in);
	return -1;
}

static int swap(const char *dir, const char *prefix, const char *target, int count)
{
	char name[NAME_MAX + 1], away[PATH_MAX], path[PATH_MAX];
	int done = 0;

	while (done < count) {
		if (wait_entry(dir, prefix, name, sizeof(name)) < 0)
			break;
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		snprintf(away, sizeof(away), "%s/.away.%d.%s", dir, done, name);
		if (rename(path, away) == 0 && symlink(target, path) == 0)
			done++;
	}
	printf("swapped %d\n", done);
	return done == count ? 0 : 1;
}

static int exchange(const char *dir, const char *a, const char *b, double seconds)
{
	double end = now() + seconds;
	long n = 0;
	int fd = open(dir, O_RDONLY | O_DIRECTORY);

	if (fd < 0) {
		perror(dir);
		return 1;
	}
	ready();
	if (seconds == 0) {
		n = renameat2(fd, a, fd, b, RENAME_EXCHANGE) == 0;
		printf("exchanged %ld times\n", n);
		return n ? 0 : 1;
	}
	while (now() < end)
		if (renameat2(fd, a, fd, b, RENAME_EXCHANGE) == 0)
			n++;
	/* Leave the names as they were. */
	if (n % 2)
		renameat2(fd, a, fd, b, RENAME_EXCHANGE);
	printf("exchanged %ld times\n", n);
	return n ? 0 : 1;
}

/* A process of our uid (not us) whose command line holds match. */
static pid_t find_own(const char *match)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;

	while (d && !found && (e = readdir(d))) {
		char path[64], cmd[4096];
		struct stat st;
		ssize_t n;
		pid_t pid = (pid_t)atoi(e->d_name);
		int fd;

		if (pid <= 0 || pid == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d", (int)pid);
		if (stat(path, &st) < 0 || st.st_uid != getuid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (!cmd[i])
				cmd[i] = ' ';
		cmd[n] = 0;
		if (strstr(cmd, match) && !strstr(cmd, "racer"))
			found = pid;
	}
	if (d)
		closedir(d);
	return found;
}

static int stop(const char *match, const char *cmd)
{
	double end = now() + LIMIT_S;
	pid_t pid = 0;

	ready();
	while (now() < end && !(pid = find_own(match)))
		usleep(200);
	if (!pid || kill(pid, SIGSTOP) < 0) {
		printf("nothing to stop\n");
		return 1;
	}
	printf("stopped %d\n", (int)pid);
	fflush(stdout);
	if (!cmd)
		return 0;
	if (system(cmd) != 0)
		printf("the command failed\n");
	kill(pid, SIGCONT);
	return 0;
}

int main(int argc, char **argv)
{
	char name[NAME_MAX + 1];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 5 && !strcmp(argv[1], "swap"))
		return swap(argv[2], argv[3], argv[4], argc > 5 ? atoi(argv[5]) : 1);
	if (argc == 6 && !strcmp(argv[1], "exchange"))
		return exchange(argv[2], argv[3], argv[4], atof(argv[5]));
	if (argc == 4 && !strcmp(argv[1], "wait"))
		return wait_entry(argv[2], argv[3], name, sizeof(name)) < 0;
	if (argc >= 3 && !strcmp(argv[1], "stop"))
		return stop(argv[2], argc > 3 ? argv[3] : NULL);
	fprintf(stderr, "usage: see racer.c\n");
	return 2;
}
