/*
 * Unit tests: a task's program handed to gpuckpt-shepherd attach
 * (spank-plugin/shepherd_launch.c, runtime/shepherd/options.c) when the
 * program ends at once. The plugin's own code runs as in a task: a "task
 * process" calls gk_shepherd_launch(), its fork is the program and calls
 * gk_shepherd_task_start() as task_init does, and the task process becomes
 * the real gpuckpt-shepherd. The task must end with the program's own status.
 *
 * What can take the program away between its start and the shepherd's check
 * (issue 29, e2e-shepherd.sh 3 on Slurm 24.11): whatever runs in the task's
 * process before the shepherd's own code, as a site's wrapper script. dash,
 * the tests' /bin/sh, catches SIGCHLD and reaps every child it has, its
 * inherited ones too; a wrapper started with SIGCHLD ignored has the kernel
 * reap them at once. This test's stand-in wrapper (the test binary itself,
 * called gk-wrapper) does either, for as long as the program lives (at most
 * 2 seconds), so a program that may end before the shepherd has taken it as
 * its child always does.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spank-plugin/shepherd_launch.h"
#include "tap.h"

#define PROG_STATUS 7

static char shep[PATH_MAX], root[] = "/tmp/gk-test-handoff.XXXXXX";
/* The GPUs in the plan (task_init_privileged's view, NULL: none) and the ones
 * the task has in task_init, after Slurm bound GPUs to it (NULL: unset). */
static const char *plan_gpus, *task_gpus;

/* The wrapper: hold while the program lives, reaping it ("reap") or with
 * SIGCHLD ignored ("ignore"), then exec the real shepherd with our arguments. */
static int wrapper(int argc, char **argv)
{
	const char *real = getenv("GK_TEST_REAL_SHEPHERD"), *mode = getenv("GK_TEST_WRAPPER");
	pid_t child = 0;

	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], "--child") == 0)
			child = (pid_t)atoi(argv[i + 1]);
	if (!real || !mode || child <= 0) {
		fprintf(stderr,
			"gk-wrapper: GK_TEST_REAL_SHEPHERD, GK_TEST_WRAPPER, --child needed\n");
		return 99;
	}
	if (strcmp(mode, "ignore") == 0)
		signal(SIGCHLD, SIG_IGN);
	/* What the shepherd would see: its CUDA_VISIBLE_DEVICES. */
	if (strcmp(mode, "gpus") == 0) {
		char path[PATH_MAX];
		FILE *f;

		snprintf(path, sizeof(path), "%s/gpus", getenv("GK_TEST_ROOT"));
		f = fopen(path, "we");
		if (f) {
			fputs(getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES")
							     : "(unset)",
			      f);
			fclose(f);
		}
	}
	for (int i = 0; i < 200; i++) {
		if (strcmp(mode, "reap") == 0 && waitpid(child, NULL, WNOHANG) == child)
			break;
		if (strcmp(mode, "ignore") == 0 && kill(child, 0) < 0 && errno == ESRCH)
			break;
		usleep(10000);
	}
	argv[0] = (char *)real;
	execv(real, argv);
	fprintf(stderr, "gk-wrapper: %s: %s\n", real, strerror(errno));
	return 99;
}

/* The parent's /proc/PID/status line `key`, "" when none. */
static void parent_status(const char *key, char *out, size_t len)
{
	char path[64], line[512];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/status", (int)getppid());
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, strlen(key)) == 0)
			snprintf(out, len, "%s", line + strlen(key));
	fclose(f);
}

/* The program: let go as task_init lets it, it ends at once. Under the
 * "ignore" wrapper it ends once the wrapper ignores SIGCHLD (or once the
 * real shepherd runs, when that comes first), so that its end falls where the
 * kernel would reap it. */
static void program(const char *mode)
{
	gk_error_t err;
	char v[128];

	if (gk_shepherd_task_start(task_gpus, &err) < 0)
		_exit(100);
	for (int i = 0; mode && strcmp(mode, "ignore") == 0 && i < 5000; i++) {
		parent_status("Name:\t", v, sizeof(v));
		if (strncmp(v, "gpuckpt-shep", 12) == 0)
			break;
		parent_status("SigIgn:\t", v, sizeof(v));
		if (strtoull(v, NULL, 16) & (1ULL << (SIGCHLD - 1)))
			break;
		usleep(1000);
	}
	_exit(PROG_STATUS);
}

/* Wait for pid at most `secs`; kill it after. Its status, or -1 when killed. */
static int wait_bounded(pid_t pid, int secs)
{
	int status;

	for (int i = 0; i < secs * 100; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

static void slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, len - 1);

	buf[n > 0 ? n : 0] = '\0';
	if (fd >= 0)
		close(fd);
}

/* A task as Slurm starts it, through the plugin; wrapper NULL: the shepherd
 * itself. Its status (-1: still running after 20 s); its stderr in errbuf. */
static int run_task(const char *how, char *errbuf, size_t errlen)
{
	static struct gk_tplan p;
	char errpath[PATH_MAX];
	gk_error_t err;
	pid_t task;
	int fd;

	memset(&p, 0, sizeof(p));
	p.kind = GK_TPLAN_ATTACH;
	p.mode = GK_MODE_TRANSPARENT;
	snprintf(p.socket, sizeof(p.socket), "gpuckpt.12.0.0.%08lx%024x", (long)getpid(), 0);
	if (how)
		snprintf(p.shepherd, sizeof(p.shepherd), "%s/gk-wrapper", root);
	else
		snprintf(p.shepherd, sizeof(p.shepherd), "%s", shep);
	snprintf(p.dir, sizeof(p.dir), "%s/ckpt", root);
	p.keep = 2;
	p.ids = (struct gk_task_ids){12, 0, 0, 0, 0, 1};
	if (plan_gpus) {
		snprintf(p.gpus, sizeof(p.gpus), "%s", plan_gpus);
		p.have_gpus = 1;
	}
	snprintf(errpath, sizeof(errpath), "%s/stderr", root);
	fflush(NULL);
	task = fork();
	if (task == 0) {
		fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(98);
		if (how)
			setenv("GK_TEST_WRAPPER", how, 1);
		if (gk_shepherd_launch(&p, &err) < 0) {
			fprintf(stderr, "gk_shepherd_launch: %s\n", err.text);
			_exit(97);
		}
		program(how);
	}
	fd = wait_bounded(task, 20);
	slurp(errpath, errbuf, errlen);
	return fd;
}

/* gpuckpt-shepherd attach --child pid, run in a fresh process of which
 * `own` makes pid a child that ended with status 5 and was not reaped. */
static int attach_zombie(int own, char *errbuf, size_t errlen)
{
	char errpath[PATH_MAX], num[24];
	pid_t t, z = 0;
	siginfo_t si;
	int fd, status;

	snprintf(errpath, sizeof(errpath), "%s/stderr", root);
	if (!own) {
		z = fork();
		if (z == 0)
			_exit(5);
		memset(&si, 0, sizeof(si));
		waitid(P_PID, z, &si, WEXITED | WNOWAIT);
	}
	fflush(NULL);
	t = fork();
	if (t == 0) {
		fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(98);
		if (own) {
			z = fork();
			if (z == 0)
				_exit(5);
			memset(&si, 0, sizeof(si));
			waitid(P_PID, z, &si, WEXITED | WNOWAIT);
		}
		snprintf(num, sizeof(num), "%d", (int)z);
		snprintf(errpath, sizeof(errpath), "%s/ckpt", root);
		execl(shep, shep, "attach", "--child", num, "--dir", errpath, "--uid", "0", "--gid",
		      "0", "--job", "12", "--step", "0", "--task", "0", (char *)NULL);
		_exit(96);
	}
	status = wait_bounded(t, 20);
	if (!own)
		waitpid(z, NULL, 0);
	slurp(errpath, errbuf, errlen);
	return status;
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_builddir");
	char self[PATH_MAX], link[PATH_MAX + 32], errbuf[8192];
	ssize_t n;
	int rc;

	if (strcmp(strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0], "gk-wrapper") == 0)
		return wrapper(argc, argv);
	if (geteuid() != 0) {
		printf("1..0 # SKIP gpuckpt-shepherd runs only as root\n");
		return 0;
	}
	snprintf(shep, sizeof(shep), "%s/runtime/gpuckpt-shepherd", top ? top : "..");
	if (access(shep, X_OK) < 0) {
		printf("Bail out! %s is not built\n", shep);
		return 1;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0 || !mkdtemp(root)) {
		printf("Bail out! /proc/self/exe or mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	self[n] = '\0';
	snprintf(link, sizeof(link), "%s/gk-wrapper", root);
	if (symlink(self, link) < 0) {
		printf("Bail out! symlink %s: %s\n", link, strerror(errno));
		return 1;
	}
	setenv("GK_TEST_REAL_SHEPHERD", shep, 1);
	setenv("GK_TEST_ROOT", root, 1);
	plan(12);

	rc = run_task(NULL, errbuf, sizeof(errbuf));
	is_int(rc, PROG_STATUS, "a program that ends at once: the task ends with its own status");
	ok(!strstr(errbuf, "not a child process"), "... and the shepherd took it as its child");

	rc = run_task("reap", errbuf, sizeof(errbuf));
	is_int(rc, PROG_STATUS,
	       "a wrapper that reaps every child (as dash does) before the shepherd: the task "
	       "still ends with the program's status");
	ok(!strstr(errbuf, "not a child process"),
	   "... and no 'not a child process' (the program could not end before the check)");
	if (rc != PROG_STATUS)
		printf("# stderr: %s\n", errbuf);

	rc = run_task("ignore", errbuf, sizeof(errbuf));
	is_int(rc, PROG_STATUS,
	       "a wrapper that ignores SIGCHLD (the kernel reaps at once): the task still ends "
	       "with the program's status, not lost nor waited for forever");
	ok(!strstr(errbuf, "not a child process"), "... and no 'not a child process'");
	if (rc != PROG_STATUS)
		printf("# stderr: %s\n", errbuf);

	rc = attach_zombie(1, errbuf, sizeof(errbuf));
	is_int(rc, 5,
	       "attach --child of its own child that already ended: accepted, its status "
	       "collected");
	ok(!strstr(errbuf, "not a child process"), "... not refused");
	rc = attach_zombie(0, errbuf, sizeof(errbuf));
	is_int(rc, 2, "attach --child of an ended process that is another's child: refused");
	ok(strstr(errbuf, "not a child process of this shepherd") != NULL,
	   "... saying it is not a child process of this shepherd");

	/* Slurm binds a task's GPUs (--gpus-per-task, --gpu-bind) after the plan
	 * is made: the shepherd must see the task's, which task_init sends. */
	plan_gpus = "0,1";
	task_gpus = "1";
	rc = run_task("gpus", errbuf, sizeof(errbuf));
	snprintf(link, sizeof(link), "%s/gpus", root);
	slurp(link, errbuf, sizeof(errbuf));
	is_str(errbuf, "1",
	       "the shepherd sees the GPUs Slurm bound to the task (1), not the plan's (0,1)");
	task_gpus = "1;rm";
	rc = run_task("gpus", errbuf, sizeof(errbuf));
	ok(rc == 127 && strstr(errbuf, "CUDA_VISIBLE_DEVICES is not a list of GPUs") != NULL,
	   "a value that is not a GPU list: the task does not start, saying why (%d)", rc);
	if (!strstr(errbuf, "CUDA_VISIBLE_DEVICES is not a list of GPUs"))
		printf("# stderr: %s\n", errbuf);

	snprintf(link, sizeof(link), "rm -rf '%s'", root);
	if (system(link) != 0)
		printf("# could not remove %s\n", root);
	return done_testing();
}
