/*
 * tree.c - the processes of the task's tree, and who owns them.
 * The shepherd is root; before it hands a process to CRIU or to the driver it
 * makes sure that process is the job's user's, in every one of its ids, so
 * that a user who got another user's process into the tree (or a setuid
 * program that kept its privileges) cannot have it dumped on its behalf.
 */
#include "config.h"

#include "shepherd/shepherd.h"
#include "common/error.h"
#include "common/shepherd_protocol.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int read_text(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return -errno;
	got = read(fd, buf, len - 1);
	close(fd);
	if (got < 0)
		return -errno;
	buf[got] = 0;
	return 0;
}

/* The children of every thread of pid (a thread may be the parent). */
static int add_children(pid_t pid, pid_t *pids, size_t max, size_t *n)
{
	char path[64], buf[8192];
	struct dirent *e;
	DIR *d;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(d)) && ret == 0) {
		char *p, *end;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children", (int)pid, e->d_name);
		if (read_text(path, buf, sizeof(buf)) < 0)
			continue; /* the thread ended meanwhile */
		for (p = buf;; p = end) {
			long v = strtol(p, &end, 10);

			if (end == p)
				break;
			if (*n == max) {
				ret = -E2BIG;
				break;
			}
			pids[(*n)++] = (pid_t)v;
		}
	}
	closedir(d);
	return ret;
}

int gk_tree_list(pid_t prog, pid_t *pids, size_t max, size_t *n, gk_error_t *err)
{
	int ret;

	*n = 0;
	if (max == 0)
		return -E2BIG;
	pids[(*n)++] = prog;
	/* Breadth first: pids[] grows while it is walked. */
	for (size_t i = 0; i < *n; i++) {
		ret = add_children(pids[i], pids, max, n);
		if (ret < 0) {
			gk_errprintf(err, "the tree of pid %d: %s", (int)prog,
				     ret == -E2BIG ? "more processes than the shepherd handles"
						   : strerror(-ret));
			return ret;
		}
	}
	return 0;
}

/* "Uid:\t1000\t1000\t1000\t1000": real, effective, saved, filesystem. */
static int ids_of(const char *status, const char *key, unsigned v[4])
{
	const char *p = strstr(status, key);

	return p && sscanf(p + strlen(key), "%u %u %u %u", &v[0], &v[1], &v[2], &v[3]) == 4
		   ? 0
		   : -EINVAL;
}

int gk_tree_check_owner(const pid_t *pids, size_t n, uid_t uid, gid_t gid, gk_error_t *err)
{
	for (size_t i = 0; i < n; i++) {
		char path[64], status[8192];
		unsigned u[4], g[4];
		int ret;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)pids[i]);
		ret = read_text(path, status, sizeof(status));
		/* A process that ended since the tree was listed (a short-lived
		 * child: the program runs `sleep`) is no one's to check: CRIU
		 * dumps the tree as it finds it, as the job's user. Failing the
		 * checkpoint for it lost it (tests/shepherd/stdio-criu.sh in CI:
		 * "pid N: cannot read its owner: No such file or directory"). */
		if (ret == -ENOENT || ret == -ESRCH)
			continue;
		if (ret < 0 || ids_of(status, "\nUid:", u) < 0 || ids_of(status, "\nGid:", g) < 0) {
			gk_errprintf(err, "pid %d: cannot read its owner: %s", (int)pids[i],
				     ret < 0 ? strerror(-ret) : "malformed status");
			return ret < 0 ? ret : -EIO;
		}
		for (int k = 0; k < 3; k++) {
			if (u[k] != uid) {
				gk_errprintf(err,
					     "pid %d runs as uid %u (%s), not the job's uid %u: "
					     "refusing to checkpoint it",
					     (int)pids[i], u[k],
					     k == 0   ? "real"
					     : k == 1 ? "effective"
						      : "saved",
					     (unsigned)uid);
				return -EPERM;
			}
			if (g[k] != gid) {
				gk_errprintf(err,
					     "pid %d runs as gid %u (%s), not the job's gid %u: "
					     "refusing to checkpoint it",
					     (int)pids[i], g[k],
					     k == 0   ? "real"
					     : k == 1 ? "effective"
						      : "saved",
					     (unsigned)gid);
				return -EPERM;
			}
		}
	}
	return 0;
}

int gk_pid_status_field(pid_t pid, const char *key, char *out, size_t outlen)
{
	char path[64], status[8192], *p, *end;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_text(path, status, sizeof(status)) < 0)
		return -ESRCH;
	p = strstr(status, key);
	if (!p)
		return -ENOENT;
	p += strlen(key);
	end = strchr(p, '\n');
	if (!end)
		end = p + strlen(p);
	snprintf(out, outlen, "%.*s", (int)(end - p), p);
	return 0;
}

int gk_pid_in_tree(pid_t pid, pid_t prog)
{
	char field[512];

	if (pid <= 1)
		return 0;
	/* Up the parents to the tree's root; a process reparented away from it
	 * (to the node's init process or a subreaper) is no longer of the task. */
	for (int hops = 0; hops < 4096 && pid > 1; hops++) {
		long ppid;

		if (pid == prog)
			return 1;
		if (gk_pid_status_field(pid, "\nPPid:", field, sizeof(field)) < 0)
			return 0;
		ppid = strtol(field, NULL, 10);
		if (ppid <= 0)
			return 0;
		pid = (pid_t)ppid;
	}
	return pid == prog;
}

int gk_pid_has_agent(pid_t pid)
{
	char dir[64], path[128], comm[32];
	struct dirent *e;
	int found = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	d = opendir(dir);
	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%.20s/comm", dir, e->d_name);
		found = read_text(path, comm, sizeof(comm)) >= 0 &&
			strcmp(comm, GK_AGENT_THREAD "\n") == 0;
	}
	closedir(d);
	return found;
}

/* 1 when a mapping of pid's names a file whose path holds needle. */
static int maps_has(pid_t pid, const char *needle)
{
	char path[64], line[4096];
	int found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

int gk_pid_runtime_catches(pid_t pid, int signo)
{
	char field[64];
	unsigned long long caught;

	if (signo < 1 || signo > 64 || gk_pid_status_field(pid, "\nSigCgt:", field, sizeof(field)) < 0 ||
	    sscanf(field, "%llx", &caught) != 1 || !((caught >> (signo - 1)) & 1))
		return 0;
	return maps_has(pid, "/libgpuckpt.so");
}

int gk_pid_opencl_runtime(pid_t pid, int signo)
{
	return gk_pid_runtime_catches(pid, signo) && gk_pid_has_agent(pid) &&
	       maps_has(pid, "/libOpenCL.so");
}

int gk_tree_signal(pid_t prog, int signo, int runtime)
{
	size_t n = 0;
	int sent = 0;
	pid_t *pids = calloc(GK_SHEP_MAX_PROCS, sizeof(*pids));

	if (!pids || gk_tree_list(prog, pids, GK_SHEP_MAX_PROCS, &n, NULL) < 0) {
		free(pids);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		/* A process of the runtime's: it catches signo and its agent
		 * thread runs (a child forked without exec has the handler but
		 * not the thread). The others get the signal "as usual": the
		 * value lets it through a forked child's handler, which holds
		 * one from outside (core/control/trigger.h). */
		int ours = gk_pid_runtime_catches(pids[i], signo) && gk_pid_has_agent(pids[i]);
		union sigval v = {.sival_int = GK_SIGVAL_AS_USUAL};

		if (ours != runtime)
			continue;
		if ((runtime ? kill(pids[i], signo) : sigqueue(pids[i], signo, v)) == 0)
			sent++;
	}
	free(pids);
	return sent;
}

int gk_tree_kill(pid_t prog, int signo)
{
	pid_t *pids = calloc(GK_SHEP_MAX_PROCS, sizeof(*pids));
	size_t n = 0;
	int sent = 0;

	if (!pids)
		return kill(prog, signo) == 0;
	if (gk_tree_list(prog, pids, GK_SHEP_MAX_PROCS, &n, NULL) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++)
		if (kill(pids[i], signo) == 0)
			sent++;
	if (!n)
		sent = kill(prog, signo) == 0;
	free(pids);
	return sent;
}

/* The first descriptor of pids whose link's target `match` accepts: 1 with
 * *pid, *fdnum and path filled, 0 none. */
static int find_fd(const pid_t *pids, size_t n, int (*match)(const char *path, const void *arg),
		   const void *arg, pid_t *pid, int *fdnum, char *path, size_t pathlen)
{
	for (size_t i = 0; i < n; i++) {
		char dir[64], link[320];
		struct dirent *e;
		DIR *d;

		snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pids[i]);
		d = opendir(dir);
		if (!d)
			continue; /* ended meanwhile */
		while ((e = readdir(d))) {
			ssize_t len;

			if (e->d_name[0] == '.')
				continue;
			snprintf(link, sizeof(link), "%s/%.200s", dir, e->d_name);
			len = readlink(link, path, pathlen - 1);
			if (len <= 0)
				continue;
			path[len] = 0;
			if (match(path, arg)) {
				*pid = pids[i];
				*fdnum = atoi(e->d_name);
				closedir(d);
				return 1;
			}
		}
		closedir(d);
	}
	path[0] = 0;
	return 0;
}

static int begins_with(const char *path, const void *prefix)
{
	return !strncmp(path, prefix, strlen(prefix));
}

int gk_tree_find_open(const pid_t *pids, size_t n, const char *prefix, pid_t *pid, char *path,
		      size_t pathlen)
{
	int fdnum;

	return find_fd(pids, n, begins_with, prefix, pid, &fdnum, path, pathlen);
}

/* "/proc/P/task/T/..." with T != P: a file of a thread that is not its
 * process's first. */
static int names_thread_file(const char *path, const void *arg)
{
	char *end;
	long p, t;

	(void)arg;
	if (strncmp(path, "/proc/", 6))
		return 0;
	p = strtol(path + 6, &end, 10);
	if (end == path + 6 || strncmp(end, "/task/", 6))
		return 0;
	t = strtol(end + 6, &end, 10);
	return t > 0 && (*end == '/' || *end == 0) && t != p;
}

int gk_tree_find_thread_file(const pid_t *pids, size_t n, pid_t *pid, int *fdnum, char *path,
			     size_t pathlen)
{
	return find_fd(pids, n, names_thread_file, NULL, pid, fdnum, path, pathlen);
}

pid_t gk_find_process(const char *prefix)
{
	struct dirent *e;
	DIR *d = opendir("/proc");
	pid_t found = 0;

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		char path[64], comm[64];
		char *end;
		long v = strtol(e->d_name, &end, 10);

		if (*end || v <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", v);
		if (read_text(path, comm, sizeof(comm)) == 0 &&
		    !strncmp(comm, prefix, strlen(prefix)))
			found = (pid_t)v;
	}
	closedir(d);
	return found;
}
