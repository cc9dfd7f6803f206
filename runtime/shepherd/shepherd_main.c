/*
 * shepherd_main.c - gpuckpt-shepherd: the commands (probe, run, restore,
 * attach) and how a tree is started under it. README.md beside this file
 * says who runs it and why it needs root; it is never installed setuid and
 * refuses to run without root, so a user running it by hand gets nothing.
 */
#include "config.h"

#include "common/fsafe.h"
#include "common/error.h"
#include "common/log.h"
#include "common/testhook.h"
#include "shepherd/shepherd.h"
#include "common/settings_env.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef GK_LIBEXECDIR
#define GK_LIBEXECDIR "/usr/local/libexec"
#endif

/* One line per reason, the first of them the one the plugin shows. */
static int probe(const struct gk_shep_opts *o)
{
	char path[4096];
	gk_error_t err;
	struct gk_cudackpt cu;
	int bad = 0;

	if (gk_criu_find(o->criu, path, sizeof(path), &err) < 0) {
		printf("criu: %s\n", err.text);
		bad = 1;
	}
	/* The probe runs where the shepherd will (the plugin runs it as root
	 * from slurmstepd), so its capabilities are the shepherd's. */
	if (gk_criu_caps("/proc/self/status", o->have_uid ? (long)o->uid : -1, &err) < 0) {
		printf("capabilities: %s\n", err.text);
		bad = 1;
	}
	if (gk_cudackpt_load(&cu, &err) < 0) {
		printf("driver: %s\n", err.text);
		bad = 1;
	}
	if (!bad)
		printf("ok\n");
	return bad;
}

/* Become the job's user for good: groups, gid, uid, in that order, and
 * make sure root cannot be regained. */
static int drop_to(uid_t uid, gid_t gid)
{
	struct passwd *pw = getpwuid(uid);

	if ((pw ? initgroups(pw->pw_name, gid) : setgroups(1, &gid)) < 0 || setgid(gid) < 0 ||
	    setuid(uid) < 0)
		return -errno;
	if (uid != 0 && (setuid(0) == 0 || geteuid() == 0))
		return -EPERM;
	return 0;
}

/* The checkpoint root exists before the tree starts, made by the user (an
 * application-mode checkpoint is written there as the user); root looks at
 * nothing on the way (it opens the result checked, gk_open_user_path). */
static int make_dir_as_user(const struct gk_shep_opts *o)
{
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char path[4096];

		if (drop_to(o->uid, o->gid) < 0)
			_exit(1);
		snprintf(path, sizeof(path), "%s", o->dir);
		for (char *p = path + 1;; p++) {
			char saved = *p;

			if (saved != '/' && saved != 0)
				continue;
			*p = 0;
			if (mkdir(path, 0700) < 0 && errno != EEXIST)
				_exit(1);
			*p = saved;
			if (!saved)
				break;
		}
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EACCES;
}

/*
 * run: the program, as the user, the shepherd's child. No PID namespace: the
 * CUDA driver fails in one whose /proc is the node's (cudaErrorOperatingSystem
 * at the first stream, H100, driver 580), and a namespace of its own with a
 * /proc of its own is a mount namespace CRIU would have to dump. The price:
 * a restore needs the program's process ids free on the new node (CRIU
 * fails the restore when one is taken).
 */
static int start_tree(struct gk_shepherd *sh)
{
	int exec_seen[2];
	pid_t pid;
	char c;

	/* Closed by the exec (or the child's end): until then the child is
	 * still root and not yet the program, and a trigger signal in that
	 * moment would find a process of the wrong user and refuse. */
	if (pipe2(exec_seen, O_CLOEXEC) < 0) {
		gk_error("transparent: run: pipe: %s", strerror(errno));
		return -errno;
	}
	pid = fork();
	if (pid < 0) {
		gk_error("transparent: run: fork: %s", strerror(errno));
		close(exec_seen[0]);
		close(exec_seen[1]);
		return -errno;
	}
	if (pid == 0) {
		sigset_t none;

		close(exec_seen[0]);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		/* A session whose leader is outside this PID namespace (getsid
		 * says 0: a shepherd started in a container, or under a CI
		 * runner, without a session of its own) is one CRIU refuses to
		 * dump ("A session leader ... is outside of its pid namespace"),
		 * --shell-job or not. Then the program leads a session of its
		 * own; it has no terminal to lose in that case, since the
		 * terminal's session is the invisible one. Under slurmstepd the
		 * task already leads its session and nothing changes. */
		if (getsid(0) == 0)
			(void)setsid();
		/* What the plugin's task environment would hold: the socket, the
		 * folder, and whether the runtime dumps device memory itself. */
		if (setenv(GK_ENV(SHEPHERD), sh->sockname, 1) < 0 ||
		    setenv(GK_ENV(DIR), sh->o->dir, 1) < 0 ||
		    setenv(GK_ENV(ASSIST), sh->o->assist ? "on" : "off", 1) < 0 ||
		    drop_to(sh->o->uid, sh->o->gid) < 0) {
			fprintf(stderr, "gpuckpt-shepherd: run: cannot become uid %u: %s\n",
				(unsigned)sh->o->uid, strerror(errno));
			_exit(127);
		}
		execvp(sh->o->argv[0], sh->o->argv);
		fprintf(stderr, "gpuckpt-shepherd: run: %s: %s\n", sh->o->argv[0], strerror(errno));
		_exit(127);
	}
	close(exec_seen[1]);
	while (read(exec_seen[0], &c, 1) < 0 && errno == EINTR)
		;
	close(exec_seen[0]);
	sh->prog = pid;
	return 0;
}

static void block_signals(const struct gk_shep_opts *o)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (unsigned i = 0; i < o->ntriggers; i++)
		sigaddset(&set, o->triggers[i].signo);
	sigprocmask(SIG_BLOCK, &set, NULL);
}

/*
 * SIGCHLD as a fresh process has it. An ignored SIGCHLD survives exec (from
 * whoever started slurmd, or a wrapper before us), and with it, or with
 * SA_NOCLDWAIT, the kernel reaps the program the moment it ends: its status
 * lost, and supervise.c, waiting for it, would wait forever.
 */
static void default_sigchld(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
}

/*
 * attach: let the program go. It waits in task_init for this byte
 * (spank-plugin/shepherd_launch.c), so it cannot end before the shepherd
 * has checked that it is its child (options.c) and SIGCHLD keeps its status
 * for us: a program let go before the exec, and ended at once, could be reaped
 * by whatever ran in this process meanwhile, a wrapper script for one (dash
 * reaps every child it has), and the task ended with 2, not its own status
 * (issue 29). A program already gone (Slurm killed it) is no failure here:
 * supervise.c collects its status.
 */
static void let_go(int fd)
{
	const char go = 'G';
	ssize_t n;

	while ((n = send(fd, &go, 1, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n < 0 && errno == ENOTSOCK)
		n = write(fd, &go, 1);
	if (n != 1)
		gk_info("transparent: --go-fd %d: %s (the program is gone already)", fd,
			n < 0 ? strerror(errno) : "short write");
	close(fd);
}

int main(int argc, char **argv)
{
	static struct gk_shep_opts o;
	static struct gk_shepherd sh;
	gk_error_t err;
	const char *name, *level;
	enum gk_log_level lv;
	int ret;

	ret = gk_shep_parse(argc, argv, &o, &err);
	if (ret == 1) {
		fputs(gk_shep_usage, stdout);
		return 0;
	}
	if (ret < 0) {
		fprintf(stderr, "gpuckpt-shepherd: %s\nTry 'gpuckpt-shepherd --help'.\n", err.text);
		return 2;
	}
	if (o.cmd == GK_SHEP_PROBE)
		return probe(&o);
	if (geteuid() != 0) {
		fprintf(stderr, "gpuckpt-shepherd: must run as root (the gpuckpt SPANK plugin "
				"starts it); refusing\n");
		return 1;
	}
	/* First: loading the driver starts its threads, which inherit the mask
	 * of the moment; one without the triggers blocked would take a SIGTERM
	 * and die by it. */
	block_signals(&o);
	default_sigchld();
	level = gk_getenv(LOG_LEVEL);
	if (level && *level && gk_log_parse_level(level, &lv) == 0)
		gk_log_set_level(lv);
	/* As early as can be: the program runs meanwhile, as it did when the
	 * plugin let it go before the exec. */
	if (o.go_fd > 0)
		let_go(o.go_fd);
	sh.o = &o;
	sh.listener = -1;
	sh.dirfd = -1;
	if (gk_criu_find(o.criu, sh.criu, sizeof(sh.criu), &err) < 0)
		gk_warn("transparent: %s; checkpoints will fail", err.text);
	else if (gk_criu_caps("/proc/self/status", (long)o.uid, &err) < 0)
		gk_warn("transparent: capabilities: %s; CRIU will fail", err.text);
	if (gk_cudackpt_load(&sh.cuda, &err) == 0)
		sh.have_cuda = 1;
	else
		gk_info("transparent: %s", err.text);
	/* The program's orphans come to us, not to init: after a checkpoint we
	 * reap the tree CRIU killed, so that its process ids are free again for
	 * a restore on this node (supervise.c, reap_leftovers). */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		gk_warn("transparent: PR_SET_CHILD_SUBREAPER: %s", strerror(errno));
	if (o.test_hook[0] && gk_test_hook_arm(o.test_hook, &err) < 0) {
		fprintf(stderr, "gpuckpt-shepherd: %s\n", err.text);
		return 2;
	}
	ret = make_dir_as_user(&o);
	if (ret < 0) {
		gk_error("transparent: %s: cannot make it as uid %u: %s", o.dir, (unsigned)o.uid,
			 strerror(-ret));
		return 1;
	}
	sh.dirfd = gk_open_user_path(o.dir, o.uid, &err);
	if (sh.dirfd < 0) {
		gk_error("transparent: checkpoint root: %s", err.text);
		return 1;
	}
	switch (o.cmd) {
	case GK_SHEP_RUN:
		sh.listener = gk_sock_listen(sh.sockname, sizeof(sh.sockname), &err);
		if (sh.listener < 0) {
			gk_error("transparent: socket: %s", err.text);
			return 1;
		}
		if (start_tree(&sh) < 0)
			return 1;
		break;
	case GK_SHEP_ATTACH:
		/* The plugin chose the name and put it in the task's environment
		 * (and so in ours) before it forked the tree. */
		name = gk_getenv(SHEPHERD);
		if (name && gk_sock_name_ok(name)) {
			snprintf(sh.sockname, sizeof(sh.sockname), "%s", name);
			sh.listener = gk_sock_listen_on(name, &err);
		} else {
			gk_errprintf(&err, "%s is not set", GK_ENV(SHEPHERD));
		}
		if (sh.listener < 0)
			gk_warn(
			    "transparent: socket: %s; checkpoints go without the runtime's help",
			    err.text);
		sh.prog = o.child;
		break;
	case GK_SHEP_RESTORE:
		if (gk_restore(&sh) < 0)
			return 1;
		break;
	default:
		return 2;
	}
	return gk_supervise(&sh);
}
