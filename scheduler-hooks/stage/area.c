/*
 * area.c - ROOT/.gpuckpt-stage, root's 0700: where copies are made before
 * they are published with one rename, where folders go to be removed, and
 * the node's lock of each job. Nobody but root can reach into it, so what is
 * built there cannot be swapped, linked or read by a user while it is built;
 * and it lies in the root itself, on the same file system as the job
 * folders, so that the rename which publishes is one rename.
 */
#include "config.h"

#include "stage.h"
#include "common/fsafe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STALE_SECONDS (24 * 3600)

int area_open(int rootfd, const char *root, gk_error_t *err)
{
	struct stat st;
	int fd;

	if (mkdirat(rootfd, STAGE_AREA, 0700) < 0 && errno != EEXIST) {
		gk_errprintf(err, "%s/%s: cannot create: %s", root, STAGE_AREA, strerror(errno));
		return -errno;
	}
	fd = gk_open_dir_at(rootfd, STAGE_AREA, 0, &st);
	if (fd < 0) {
		gk_errprintf(err, "%s/%s: %s", root, STAGE_AREA,
			     fd == -EPERM   ? "not root's; refused"
			     : fd == -ELOOP ? "a symbolic link; refused"
					    : strerror(-fd));
		return fd;
	}
	if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0) {
		gk_errprintf(err, "%s/%s: chmod: %s", root, STAGE_AREA, strerror(errno));
		close(fd);
		return -errno;
	}
	return fd;
}

int area_lock(int areafd, uint32_t job, gk_error_t *err)
{
	/* One file; the lock of job N is its byte N (open file description
	 * locks: a file per job would pile up, and removing one under a
	 * waiter races). */
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = job, .l_len = 1};
	int fd = openat(areafd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0) {
		gk_errprintf(err, "lock: %s", strerror(errno));
		return -errno;
	}
	while (fcntl(fd, F_OFD_SETLKW, &fl) < 0) {
		if (errno == EINTR)
			continue;
		gk_errprintf(err, "lock of job %u: %s", job, strerror(errno));
		close(fd);
		return -errno;
	}
	return fd;
}

void area_name(const struct stage *st, const char *kind, char *buf, size_t len)
{
	static unsigned n;

	snprintf(buf, len, "%s.%s.%d.%u", kind, st->host, (int)getpid(), n++);
}

/* "<kind>.<host>.<pid>.<n>": the host and pid of the writer. */
static int writer_of(const char *name, char *host, size_t hostlen, pid_t *pid)
{
	const char *a = strchr(name, '.'), *b, *c;
	char *end;
	long v;

	if (!a || !(c = strrchr(name, '.')) || c == a)
		return -1;
	for (b = c - 1; b > a && *b != '.'; b--)
		;
	if (b == a || (size_t)(b - a - 1) >= hostlen)
		return -1;
	memcpy(host, a + 1, (size_t)(b - a - 1));
	host[b - a - 1] = 0;
	v = strtol(b + 1, &end, 10);
	if (end != c || v <= 0)
		return -1;
	*pid = (pid_t)v;
	return 0;
}

void area_clean(int areafd, const char *host)
{
	struct dirent *e;
	DIR *d;
	int fd = fcntl(areafd, F_DUPFD_CLOEXEC, 0);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		char who[80];
		struct stat st;
		pid_t pid;
		int gone;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "lock") ||
		    fstatat(areafd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		/* Another node's leftovers in a shared root are its own to
		 * clean, unless they are a day old. */
		gone = time(NULL) - st.st_mtime > STALE_SECONDS;
		if (!gone && writer_of(e->d_name, who, sizeof(who), &pid) == 0 && !strcmp(who, host))
			gone = kill(pid, 0) < 0 && errno == ESRCH;
		if (gone)
			gk_remove_tree(areafd, e->d_name, STAGE_REMOVE_DEPTH);
	}
	closedir(d);
}

int area_discard(const struct stage *st, int areafd, int parentfd, const char *name)
{
	char trash[160];
	int ret;

	area_name(st, "trash", trash, sizeof(trash));
	/* One rename takes it out of everyone's reach (and out of the job's
	 * folders, whatever is still running); then it is removed at leisure. */
	if (renameat2(parentfd, name, areafd, trash, RENAME_NOREPLACE) < 0)
		return errno == ENOENT ? 0 : -errno;
	ret = gk_remove_tree(areafd, trash, STAGE_REMOVE_DEPTH);
	return ret;
}
