/*
 * criu.c - finding CRIU and running it. No shell between the shepherd (root)
 * and CRIU: argv is built here and exec'ed, so nothing of the job's (paths,
 * names) is ever parsed as a command.
 *
 * For a job that is not root's, CRIU runs as the job's user (issue 24,
 * hole 1): root's CRIU reopened every file of the restored tree at the path
 * in its images with root's rights, so a user who swapped a folder on that
 * path for a link to /etc got a read-write descriptor to root's file of the
 * same name and size. As the user, a reopen gets the user's rights. The
 * child sets the user's groups, gid and uid (no way back to root), and
 * keeps only these capabilities, as ambient ones, so that they survive the
 * exec of CRIU (which has no file capabilities) and go nowhere else:
 *
 *   CAP_CHECKPOINT_RESTORE  always (Linux 5.9): what `criu --unprivileged`
 *                           needs to read /proc/PID/map_files, give the
 *                           restored processes their pids back (clone3
 *                           set_tid) and their exe link (PR_SET_MM)
 *   CAP_SETPCAP             restore only, and only where this node's
 *                           bounding set is not full (a container's root,
 *                           the GPU machine's: no CAP_SYS_RESOURCE): CRIU's
 *                           restorer drops from each restored process's
 *                           bounding set what its images lack, and the
 *                           kernel asks CAP_SETPCAP for every drop, even of
 *                           a capability already gone ("Unable to drop
 *                           capability 24", CRIU 4.1.1). It lets CRIU add to
 *                           its inheritable set what the bounding set
 *                           holds, which gains nothing without a program
 *                           carrying inheritable file capabilities
 *
 * Not CAP_SYS_PTRACE: a process may trace its own user's processes without
 * it (with Yama's ptrace_scope at 1 or more CRIU would need it to dump:
 * the shepherd says so and the dump fails with CRIU's message). A bug in
 * CRIU fed by the user's processes now yields these two capabilities under
 * the user's uid, not root. And the user's own processes cannot trace this
 * CRIU or open its /proc/PID/fd (the kernel refuses a tracer whose
 * permitted capabilities are not a superset of the tracee's).
 *
 * What CRIU cannot do as the user (README.md, "CRIU as the job's user"):
 * TCP repair (--tcp-established, --tcp-close: CAP_NET_ADMIN), namespaces,
 * another uid or a setuid process in the tree, files the user cannot open
 * (a restore fails rather than get them), restoring resource limits above
 * the user's hard limits. A job of root's (uid 0) runs CRIU as root, as
 * before: its files are root's anyway.
 */
#include "config.h"

#include "common/log.h"
#include "common/error.h"
#include "shepherd/shepherd.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

static const char *const default_criu[] = {"/usr/sbin/criu", "/usr/local/sbin/criu"};

/* Close what the shepherd may have inherited (slurmstepd's descriptors):
 * CRIU restores into the task whatever it holds open. */
static void close_others(int keep, int keep2)
{
	sigset_t none;

	/* The shepherd blocks its signals to read them from a signalfd; the
	 * mask is inherited across exec. */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int fd = 3; fd < 1024; fd++)
		if (fd != keep && fd != keep2 &&
		    (fd < GK_CRIU_INHERIT_FD || fd > GK_CRIU_INHERIT_FD + 2))
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
		close_others(-1, -1);
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
 * What the shepherd (root) needs of root's capabilities to run CRIU. A
 * container's root may lack some: the GPU machine's lacks CAP_SYS_RESOURCE
 * (CapEff 000001fffeffffff). For a root job CRIU runs as root and needs
 * them itself; for another user's job CRIU runs as that user with
 * CAP_CHECKPOINT_RESTORE (criu.c, top), so root needs only what it takes
 * to become the user and hand that on. CAP_SYS_RESOURCE, which root's
 * CRIU needed to read another user's rlimits ("Can't get rlimit 0:
 * Operation not permitted"), is no longer needed: the user reads its own.
 */
#define FOR_ROOT 1   /* a job of root's: CRIU runs as root */
#define FOR_USER 2   /* another user's: CRIU runs as that user */
#define FOR_USER_B 4 /* another user's, where the bounding set is not full */
static const struct {
	int bit;
	int alt; /* another capability that will do, or -1 */
	int who;
	const char *name, *without;
} criu_caps[] = {
    {21, 40, FOR_ROOT, "CAP_SYS_ADMIN",
     "CRIU cannot read the processes' memory mappings nor give them their pids back on "
     "restore (CAP_CHECKPOINT_RESTORE would do too)"},
    {40, -1, FOR_USER, "CAP_CHECKPOINT_RESTORE",
     "CRIU, run as the job's user, cannot be given it, so it cannot read the processes' "
     "memory mappings nor give them their pids back (Linux 5.9 or later has it)"},
    {19, -1, FOR_ROOT, "CAP_SYS_PTRACE", "CRIU cannot seize the processes to dump them"},
    {7, -1, FOR_USER, "CAP_SETUID", "the shepherd cannot run CRIU as the job's user"},
    {6, -1, FOR_USER, "CAP_SETGID", "the shepherd cannot give CRIU the job's groups"},
    {8, -1, FOR_USER_B, "CAP_SETPCAP",
     "CRIU, run as the job's user, cannot trim the restored processes' bounding set, which "
     "this node's is not full"},
};

int gk_criu_caps(const char *status, long uid, gk_error_t *err)
{
	char line[256], names[256] = "";
	const char *first = NULL;
	unsigned long long eff = 0;
	int found = 0, who;
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
	who = uid == 0 ? FOR_ROOT : uid > 0 ? FOR_USER : FOR_ROOT | FOR_USER;
	if ((who & FOR_USER) && !gk_criu_bounding_full(status))
		who |= FOR_USER_B;
	for (size_t i = 0; i < sizeof(criu_caps) / sizeof(criu_caps[0]); i++) {
		int has = (eff >> criu_caps[i].bit) & 1;

		if (criu_caps[i].alt >= 0)
			has |= (eff >> criu_caps[i].alt) & 1;
		if (has || !(criu_caps[i].who & who))
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
static void log_tail(int fd, char *err, size_t errlen)
{
	char buf[16384], *lines[64];
	size_t nl = 0, used = 0, nerr = 0;
	ssize_t got;
	struct stat st;
	off_t size;

	if (fd < 0 || fstat(fd, &st) < 0)
		return;
	size = st.st_size;
	got = pread(fd, buf, sizeof(buf) - 1,
		    size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0);
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

int gk_criu_as_user(struct gk_criu_as *as, uid_t uid, gid_t gid, int restore, gk_error_t *err)
{
	struct passwd *pw;
	int n = GK_CRIU_MAX_GROUPS;

	memset(as, 0, sizeof(*as));
	as->uid = uid;
	as->gid = gid;
	if (uid == 0)
		return 0;
	/* The groups slurmstepd gives the job's processes (initgroups): CRIU
	 * restores each process's groups only when they differ from its own,
	 * which takes CAP_SETGID. Looked up here: not after fork. */
	pw = getpwuid(uid);
	if (pw && getgrouplist(pw->pw_name, gid, as->groups, &n) >= 0) {
		as->ngroups = n;
	} else if (pw) {
		gk_errprintf(err, "uid %u: more than %d groups", (unsigned)uid, GK_CRIU_MAX_GROUPS);
		return -E2BIG;
	} else {
		as->groups[0] = gid;
		as->ngroups = 1;
	}
	as->caps = 1ULL << CAP_CHECKPOINT_RESTORE;
	if (restore && !gk_criu_bounding_full("/proc/self/status"))
		as->caps |= 1ULL << CAP_SETPCAP;
	return 0;
}

int gk_criu_bounding_full(const char *status)
{
	char line[256];
	unsigned long long bnd = 0, want;
	int last = 40, found = 0;
	FILE *f = fopen(status, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapBnd: %llx", &bnd) == 1)
			found = 1;
	fclose(f);
	f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	if (f) {
		if (fscanf(f, "%d", &last) != 1 || last < 0 || last > 63)
			last = 40;
		fclose(f);
	}
	want = last == 63 ? ~0ULL : (1ULL << (last + 1)) - 1;
	return found && (bnd & want) == want;
}

/* In the child, before exec: the job's user with as->caps alone (the top of
 * this file says which and why). Async-signal-safe calls only. */
static int become(const struct gk_criu_as *as)
{
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	uid_t r, e, sv;

	if (setgroups((size_t)as->ngroups, as->groups) < 0 ||
	    setresgid(as->gid, as->gid, as->gid) < 0)
		return -1;
	/* Keep the permitted set across the uid change, then cut it down. */
	if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setresuid(as->uid, as->uid, as->uid) < 0)
		return -1;
	memset(data, 0, sizeof(data));
	data[0].effective = data[0].permitted = data[0].inheritable = (uint32_t)as->caps;
	data[1].effective = data[1].permitted = data[1].inheritable = (uint32_t)(as->caps >> 32);
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -1;
	for (int c = 0; c < 64; c++)
		if (((as->caps >> c) & 1) && prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) < 0)
			return -1;
	prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	/* No way back: every uid is the user's, and setuid(0) must fail. */
	if (getresuid(&r, &e, &sv) < 0 || r != as->uid || e != as->uid || sv != as->uid ||
	    setuid(0) == 0)
		return -1;
	return 0;
}

int gk_criu_fd(int fd)
{
	int r = fcntl(fd, F_DUPFD_CLOEXEC, GK_CRIU_INHERIT_FD + 3);

	return r < 0 ? -errno : r;
}

int gk_criu_run(const char *criu, const char *const *args, const int keep[2], const int *inherit,
		int stdin_fd, int log_fd, const struct gk_criu_as *as, char *err, size_t errlen)
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
		/* Copies above every fd about to be set (0..2, 10..12), so that
		 * no dup2 below overwrites one still to be used. */
		const int above = GK_CRIU_INHERIT_FD + 3;
		int null = fcntl(open("/dev/null", O_RDWR | O_CLOEXEC), F_DUPFD_CLOEXEC, above),
		    fds[3], in = stdin_fd >= 0 ? fcntl(stdin_fd, F_DUPFD_CLOEXEC, above) : -1,
		    log = log_fd >= 0 ? fcntl(log_fd, F_DUPFD_CLOEXEC, above) : -1;

		/* The task's stdio goes to CRIU above its own 0..2: with
		 * --shell-job CRIU keeps its own stdin for the terminal logic (a
		 * terminal to inherit, or /dev/null), and an --inherit-fd of
		 * fd[0] left it without one ("Can't send fd 0 into store", seen
		 * under Slurm). Its log (`-o -`) is its stdout: a file root
		 * opened in root's criu/, which CRIU as the user could not open
		 * by name; writing to an inherited descriptor asks no rights. */
		for (int i = 0; i < 3; i++)
			fds[i] = inherit ? fcntl(inherit[i], F_DUPFD_CLOEXEC, above) : -1;
		for (int i = 0; i < 3; i++) {
			if (fds[i] >= 0)
				dup2(fds[i], GK_CRIU_INHERIT_FD + i);
			dup2(i == 0 && in >= 0 ? in : i == 1 && log >= 0 ? log : null, i);
		}
		for (int i = 0; i < 2; i++)
			if (keep[i] >= 0)
				fcntl(keep[i], F_SETFD, 0);
		close_others(keep[0], keep[1]);
		if (as && as->uid != 0 && (chdir("/") < 0 || become(as) < 0))
			_exit(126);
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
	if (WIFEXITED(status) && WEXITSTATUS(status) == 126)
		used += (size_t)snprintf(err + used, used < errlen ? errlen - used : 0,
					 " (could not become uid %u with its capabilities)",
					 as ? (unsigned)as->uid : 0);
	else if (WIFEXITED(status))
		used += (size_t)snprintf(err + used, used < errlen ? errlen - used : 0,
					 " (exit %d)", WEXITSTATUS(status));
	else
		used += (size_t)snprintf(err + used, used < errlen ? errlen - used : 0,
					 " (signal %d)", WTERMSIG(status));
	if (used < errlen)
		log_tail(log_fd, err + used, errlen - used);
	return -EIO;
}
