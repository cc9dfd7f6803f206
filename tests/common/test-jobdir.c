/*
 * test-jobdir - a job's folder walked by root (runtime/common/jobdir.h):
 * what the job's user can plant there must not make the walk unbounded
 * (issue 24's review: the epilog read the events of every task folder the
 * user made, one file hard-linked into all of them, with no limit).
 */
#include "config.h"
#include "common/events.h"
#include "common/jobdir.h"
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char top[] = "/tmp/gk-test-jobdir.XXXXXX";

static int count_task(void *arg, const char *step, uint32_t task, int taskfd)
{
	(void)step;
	(void)task;
	(void)taskfd;
	(*(unsigned *)arg)++;
	return 0;
}

static int remove_all(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	return system(cmd);
}

int main(void)
{
	char path[256], *buf = NULL;
	unsigned tasks = 0, made = GK_JOBDIR_TASKS_MAX + 100;
	size_t len = 0;
	int jobfd, fd, ret;

	plan(6);
	if (!mkdtemp(top)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(path, sizeof(path), "%s/step.0", top);
	mkdir(path, 0700);
	for (unsigned t = 0; t < made; t++) {
		snprintf(path, sizeof(path), "%s/step.0/task.%u", top, t);
		if (mkdir(path, 0700) < 0) {
			fprintf(stderr, "mkdir %s: %s\n", path, strerror(errno));
			remove_all();
			return 1;
		}
	}
	jobfd = open(top, O_RDONLY | O_DIRECTORY);

	/* One events file, the runtime's own, then hard-linked into another
	 * task folder: reading it again there would cost the user nothing. */
	snprintf(path, sizeof(path), "%s/step.0/task.0/" GK_EVENTS_FILE, top);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ok(fd >= 0 && write(fd, "x\n", 2) == 2, "an events file is written");
	close(fd);
	fd = open(top, O_RDONLY | O_DIRECTORY);
	{
		int t0 = openat(fd, "step.0/task.0", O_RDONLY | O_DIRECTORY);

		ret = gk_events_read_at(t0, getuid(), &buf, &len);
		is_int(ret, 0, "a task's own events file is read");
		free(buf);
		buf = NULL;
		snprintf(path, sizeof(path), "%s/step.0/task.1/" GK_EVENTS_FILE, top);
		{
			char src[256];

			snprintf(src, sizeof(src), "%s/step.0/task.0/" GK_EVENTS_FILE, top);
			ok(link(src, path) == 0, "the same file linked into task.1");
		}
		ret = gk_events_read_at(t0, getuid(), &buf, &len);
		is_int(ret, -EPERM, "an events file with a second link is refused, not read");
		free(buf);
		close(t0);
	}
	close(fd);

	ret = gk_jobdir_walk(jobfd, getuid(), count_task, &tasks);
	ok(tasks <= GK_JOBDIR_TASKS_MAX, "at most %u task folders are visited (visited %u of %u)",
	   GK_JOBDIR_TASKS_MAX, tasks, made);
	is_int(ret, -E2BIG, "and the walk says it stopped short");
	close(jobfd);
	remove_all();
	return done_testing();
}
