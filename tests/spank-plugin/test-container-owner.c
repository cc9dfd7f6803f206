/*
 * Unit tests: the record that ties a rootful podman's container to its job
 * (spank-plugin/container_owner.c): the plugin's side (gk_owner_record, as
 * root in task_init_privileged) and the hook's (gk_owner_find, walking up
 * from podman's parent). The processes below stand in for podman (a child)
 * and podman run from a shell (a grandchild); this process is the task.
 * tests/security/container-attacks.sh drives the hook itself.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spank-plugin/container_owner.h"
#include "spank-plugin/task_env.h"
#include "tap.h"

#include "fake_env.h"

#define N 13

/* In a child (depth 1) or grandchild (2): gk_owner_find's rc, and 1 more
 * when it found job 12 of uid 4321, of this process, with its binds. */
static int find_below(const char *dir, int depth, char *why, size_t len)
{
	int fds[2], status;
	pid_t task = getpid(), pid;
	char buf[GK_ERRLEN + 16] = "";
	ssize_t n;

	if (pipe(fds) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		struct gk_owner o;
		gk_error_t err = {{0}};
		int rc, good;

		if (depth == 2 && fork() != 0) {
			wait(NULL);
			_exit(0);
		}
		rc = gk_owner_find(dir, &o, &err);
		good = rc == 0 && o.job_id == 12 && o.uid == 4321 && o.pid == task &&
		       gk_owner_lists(&o, "/bb/12") && gk_owner_lists(&o, "/site/gpuckpt.conf") &&
		       !gk_owner_lists(&o, "/bb/1") && !gk_owner_lists(&o, "/bb/12/x");
		dprintf(fds[1], "%d %s", rc + good, err.text);
		_exit(0);
	}
	close(fds[1]);
	n = read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	waitpid(pid, &status, 0);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	snprintf(why, len, "%s", strchr(buf, ' ') ? strchr(buf, ' ') + 1 : "");
	return atoi(buf);
}

int main(void)
{
	static struct fake_env fe;
	struct gk_env env = {fget, fset, funset, &fe};
	struct gk_task_ids ids = {12, 0, 0, 4321, 4321, 1};
	char root[] = "/tmp/gk-test-owner.XXXXXX", dir[256], rec[512], stale[512], why[GK_ERRLEN];
	unsigned long long start;
	gk_error_t err = {{0}};
	struct stat st;
	pid_t ppid;
	int fd;

	plan(N);
	if (geteuid() != 0) {
		for (int i = 0; i < N; i++)
			skip("needs root (the hook trusts only root's records)");
		return done_testing();
	}
	if (!mkdtemp(root)) {
		printf("Bail out! mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/gpuckpt/tasks", root);

	is_int(find_below(dir, 1, why, sizeof(why)), -ENOENT, "no record folder: none found");
	ok(strstr(why, "does not exist") != NULL, "and the hook is told why (%s)", why);

	fset(&fe, "GPUCKPT_BIND", "/bundle:/bb/12:/site/gpuckpt.conf", 1);
	if (!val(&fe, "GPUCKPT_BIND")) /* (fake_env.h's helpers: keeps -Wunused quiet) */
		mkckpt(root, "unused", 0);
	is_int(gk_owner_record(dir, &env, &ids, &err), 0, "the task's record is written (%s)",
	       err.text);
	ok(stat(dir, &st) == 0 && st.st_uid == 0 && (st.st_mode & 07777) == 0700,
	   "its folder is made root's, 0700");
	gk_proc_start(getpid(), &ppid, &start);
	snprintf(rec, sizeof(rec), "%s/%d-%llu", dir, (int)getpid(), start);
	ok(stat(rec, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & 022),
	   "named by the task's pid and start time, root's, writable by root alone");

	is_int(find_below(dir, 1, why, sizeof(why)), 1,
	       "podman, the task's child, finds the job, its user and the listed paths only");
	is_int(find_below(dir, 2, why, sizeof(why)), 1,
	       "so does podman run by a shell of the task's (a grandchild)");

	/* A record of a process that is gone: swept at the next record. */
	snprintf(stale, sizeof(stale), "%s/%d-1", dir, (int)ppid);
	close(open(stale, O_CREAT | O_WRONLY, 0600));
	is_int(gk_owner_record(dir, &env, &ids, &err), 0, "written again");
	ok(access(stale, F_OK) < 0 && access(rec, F_OK) == 0,
	   "a record whose start time is not its process's is swept, the live one kept");

	/* Not root's: not believed. */
	if (chown(rec, 4321, 4321) < 0)
		printf("# chown %s: %s\n", rec, strerror(errno));
	is_int(find_below(dir, 1, why, sizeof(why)), -EINVAL, "a record not root's is refused");
	ok(strstr(why, "not a task record of root's") != NULL, "naming the record (%s)", why);
	if (chown(rec, 0, 0) < 0)
		printf("# chown %s: %s\n", rec, strerror(errno));

	/* What root wrote, but not a record this code reads. */
	fd = open(rec, O_WRONLY | O_TRUNC);
	dprintf(fd, "gpuckpt-task 1\npid %d\nstart %llu\njob 12\nuid me\n", (int)getpid(), start);
	close(fd);
	is_int(find_below(dir, 1, why, sizeof(why)), -EINVAL, "a malformed record is refused");

	unlink(rec);
	is_int(find_below(dir, 1, why, sizeof(why)), -ENOENT,
	       "no record of any ancestor: none found (%s)", why);

	snprintf(rec, sizeof(rec), "rm -rf '%s'", root);
	if (system(rec) != 0)
		printf("# %s failed\n", rec);
	return done_testing();
}
