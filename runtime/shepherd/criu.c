/*
 * criu.c - finding CRIU and running it. No shell between the shepherd (root)
 * and CRIU: argv is built here and exec'ed, so nothing of the job's (paths,
 * names) is ever parsed as a command.
 */
#include "config.h"

#include "log.h"
#include "error.h"
#include "shepherd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const default_criu[] = {"/usr/sbin/criu", "/usr/local/sbin/criu"};

/* Close what the shepherd may have inherited (slurmstepd's descriptors):
 * CRIU restores into the task whatever it holds open. */
static void close_others(int keep)
{
	sigset_t none;

	/* The shepherd blocks its signals to read them from a signalfd; the
	 * mask is inherited across exec. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int fd = 3; fd < 1024; fd++)
		if (fd != keep && (fd < GK_CRIU_INHERIT_FD || fd > GK_CRIU_INHERIT_FD + 2))
			close(fd);
}

/* Run path with args; its stdout (up to outlen) comes back in out. */
static int run_capture(const char *path, char *const argv[], char *out, size_t outlen)
{
	int pfd[2], status;
	size_t got = 0;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		int ret = -errno;

		close(pfd[0]);
		close(pfd[1]);
		return ret;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 0);
		dup2(pfd[1], 1);
		dup2(null, 2);
		close_others(-1);
		execv(path, argv);
		_exit(127);
	}
	close(pfd[1]);
	while (got + 1 < outlen) {
		ssize_t r = read(pfd[0], out + got, outlen - 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	out[got] = 0;
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int check_version(const char *path, gk_error_t *err)
{
	char *const argv[] = {(char *)path, (char *)"--version", NULL};
	char out[1024];
	const char *v;
	int major = 0, minor = 0, ret;

	ret = run_capture(path, argv, out, sizeof(out));
	if (ret != 0) {
		gk_errprintf(err, "%s --version: %s", path,
			     ret < 0	  ? strerror(-ret)
			     : ret == 127 ? "cannot run it"
					  : "failed");
		return -ENOEXEC;
	}
	v = strstr(out, "Version: ");
	if (!v || sscanf(v + 9, "%d.%d", &major, &minor) < 1) {
		gk_errprintf(err, "%s --version: no version in its answer", path);
		return -ENOEXEC;
	}
	/* 3.x fails on current kernels' vDSO and lacks what CUDA needs. */
	if (major < GK_CRIU_MIN_MAJOR) {
		gk_errprintf(err, "%s is CRIU %d.%d; transparent mode needs %d or later", path,
			     major, minor, GK_CRIU_MIN_MAJOR);
		return -ENOTSUP;
	}
	return 0;
}

static int usable(const char *path, gk_error_t *err)
{
	struct stat st;

	if (path[0] != '/') {
		gk_errprintf(err, "%s: CRIU must be given as an absolute path", path);
		return -EINVAL;
	}
	if (stat(path, &st) < 0) {
		gk_errprintf(err, "%s: %s", path, strerror(errno));
		return -ENOENT;
	}
	/* Root runs it: a binary others could replace would run their code. */
	if (!S_ISREG(st.st_mode) || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		gk_errprintf(err, "%s: not a root-owned executable that only root can change",
			     path);
		return -EPERM;
	}
	if (!(st.st_mode & S_IXUSR)) {
		gk_errprintf(err, "%s: not executable", path);
		return -EACCES;
	}
	return 0;
}

int gk_criu_find(const char *want, char *path, size_t pathlen, gk_error_t *err)
{
	int ret;

	if (want && want[0]) {
		ret = usable(want, err);
		if (ret == 0)
			ret = check_version(want, err);
		if (ret == 0)
			snprintf(path, pathlen, "%s", want);
		return ret;
	}
	for (size_t i = 0; i < sizeof(default_criu) / sizeof(default_criu[0]); i++) {
		if (access(default_criu[i], X_OK) < 0)
			continue;
		ret = usable(default_criu[i], err);
		if (ret == 0)
			ret = check_version(default_criu[i], err);
		if (ret == 0)
			snprintf(path, pathlen, "%s", default_criu[i]);
		return ret;
	}
	gk_errprintf(err, "CRIU not found (looked for %s and %s; site setting criu=PATH)",
		     default_criu[0], default_criu[1]);
	return -ENOENT;
}

/*
 * What CRIU needs of root's capabilities. A container's root may lack some:
 * the GPU machine's lacks CAP_SYS_RESOURCE (CapEff 000001fffeffffff), and
 * every dump of another user's process failed there with "Can't get rlimit
 * 0: Operation not permitted" (prlimit(2) on another user's process needs
 * it) while the probe said ok. Those marked `others` matter only when the
 * processes are not root's own.
 */
static const struct {
	int bit;
	int alt; /* another capability that will do, or -1 */
	int others;
	const char *name, *without;
} criu_caps[] = {
    {21, 40, 0, "CAP_SYS_ADMIN",
     "CRIU cannot read the processes' memory mappings nor give them their pids back on "
     "restore (CAP_CHECKPOINT_RESTORE would do too)"},
    {19, -1, 0, "CAP_SYS_PTRACE", "CRIU cannot seize the processes to dump them"},
    {24, -1, 1, "CAP_SYS_RESOURCE",
     "CRIU cannot read another user's resource limits (\"Can't get rlimit 0: Operation not "
     "permitted\"), so no dump of a job that is not root's can work"},
    {7, -1, 1, "CAP_SETUID", "CRIU cannot give restored processes their user ids back"},
    {6, -1, 1, "CAP_SETGID", "CRIU cannot give restored processes their group ids back"},
    {5, -1, 1, "CAP_KILL", "CRIU cannot end another user's processes after the dump"},
    {1, -1, 1, "CAP_DAC_OVERRIDE", "CRIU cannot reopen another user's files on restore"},
};

int gk_criu_caps(const char *status, long uid, gk_error_t *err)
{
	char line[256], names[256] = "";
	const char *first = NULL;
	unsigned long long eff = 0;
	int found = 0;
	size_t used = 0;
	FILE *f = fopen(status, "re");

	if (!f) {
		gk_errprintf(err, "%s: %s", status, strerror(errno));
		return -errno;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			found = 1;
	fclose(f);
	if (!found) {
		gk_errprintf(err, "%s: no CapEff line", status);
		return -EINVAL;
	}
	for (size_t i = 0; i < sizeof(criu_caps) / sizeof(criu_caps[0]); i++) {
		int has = (eff >> criu_caps[i].bit) & 1;

		if (criu_caps[i].alt >= 0)
			has |= (eff >> criu_caps[i].alt) & 1;
		if (has || (criu_caps[i].others && uid == 0))
			continue;
		used +=
		    (size_t)snprintf(names + used, used < sizeof(names) ? sizeof(names) - used : 0,
				     "%s%s", used ? ", " : "", criu_caps[i].name);
		if (!first)
			first = criu_caps[i].without;
	}
	if (!first)
		return 0;
	gk_errprintf(err, "%s missing (CapEff %016llx): %s", names, eff, first);
	return -EPERM;
}

/* The last error lines of CRIU's log, joined with " | ". CRIU's failure
 * is the one message that does not go into a gk_error_t: its log lines
 * (often a path each) are what says why a dump or a restore failed, and
 * three of them do not fit in GK_ERRLEN; the caller gives a buffer of
 * GK_SHEP_ERRLEN. */
static void log_tail(const char *logpath, char *err, size_t errlen)
{
	char buf[16384], *lines[64];
	size_t nl = 0, used = 0, nerr = 0;
	ssize_t got;
	off_t size;
	int fd;

	if (!logpath || (fd = open(logpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	got = pread(fd, buf, sizeof(buf) - 1,
		    size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0);
	close(fd);
	if (got <= 0)
		return;
	buf[got] = 0;
	for (char *s = strtok(buf, "\n"); s; s = strtok(NULL, "\n")) {
		if (nl == 64) {
			memmove(lines, lines + 1, sizeof(lines[0]) * 63);
			nl--;
		}
		lines[nl++] = s;
	}
	for (size_t i = 0; i < nl; i++)
		if (strstr(lines[i], "Error") || strstr(lines[i], "error"))
			nerr++;
	for (size_t i = 0, shown = 0; i < nl; i++) {
		int is_err = strstr(lines[i], "Error") || strstr(lines[i], "error");

		/* The last three error lines, or the last three lines. */
		if (nerr ? (!is_err || nerr - shown++ > 3) : i + 3 < nl)
			continue;
		used += (size_t)snprintf(err + used, used < errlen ? errlen - used : 0, " | %s",
					 lines[i]);
		if (used >= errlen)
			break;
	}
}

int gk_criu_run(const char *criu, const char *const *args, int keep_fd, const int *inherit,
		int stdin_fd, const char *logpath, char *err, size_t errlen)
{
	const char *argv[64];
	size_t n = 0, used;
	int status;
	pid_t pid;

	argv[n++] = criu;
	for (; *args && n < 63; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	pid = fork();
	if (pid < 0) {
		snprintf(err, errlen, "criu: fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR), fds[3],
		    in = stdin_fd >= 0 ? fcntl(stdin_fd, F_DUPFD_CLOEXEC, 3) : -1;

		/* The task's stdio goes to CRIU above its own 0..2: with
		 * --shell-job CRIU keeps its own stdin for the terminal logic (a
		 * terminal to inherit, or /dev/null), and an --inherit-fd of
		 * fd[0] left it without one ("Can't send fd 0 into store", seen
		 * under Slurm). */
		for (int i = 0; i < 3; i++)
			fds[i] = inherit ? fcntl(inherit[i], F_DUPFD_CLOEXEC, 3) : -1;
		for (int i = 0; i < 3; i++) {
			if (fds[i] >= 0)
				dup2(fds[i], GK_CRIU_INHERIT_FD + i);
			dup2(i == 0 && in >= 0 ? in : null, i);
		}
		if (keep_fd >= 0)
			fcntl(keep_fd, F_SETFD, 0);
		close_others(keep_fd);
		execv(criu, (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			snprintf(err, errlen, "criu: waitpid: %s", strerror(errno));
			return -errno;
		}
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	used = (size_t)snprintf(err, errlen, "criu %s %s", argv[1],
				WIFEXITED(status) ? "failed" : "was killed");
	if (WIFEXITED(status))
		used += (size_t)snprintf(err + used, used < errlen ? errlen - used : 0,
					 " (exit %d)", WEXITSTATUS(status));
	else
		used += (size_t)snprintf(err + used, used < errlen ? errlen - used : 0,
					 " (signal %d)", WTERMSIG(status));
	if (used < errlen)
		log_tail(logpath, err + used, errlen - used);
	return -EIO;
}
