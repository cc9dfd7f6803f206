/*
 * root_path.c - folders root may write into, reached safely (root_path.h).
 */
#include "config.h"

#include "root_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* Root's, and no one else may change what it holds. A sticky folder lets
 * others add entries but not touch root's: crossing it is safe, keeping
 * files in it is not (a user could take a name first). */
static int root_only(const struct stat *st, int may_be_sticky)
{
	if (st->st_uid != 0)
		return 0;
	if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
		return 1;
	return may_be_sticky && (st->st_mode & S_ISVTX);
}

static int is_link(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

int gk_root_dir_open(const char *path, gk_error_t *err)
{
	char comp[256];
	const char *p = path;
	struct stat st;
	int fd, next;

	if (path[0] != '/') {
		gk_errprintf(err, "%s: not an absolute path", path);
		return -EINVAL;
	}
	fd = open("/", DIR_FLAGS);
	if (fd < 0) {
		gk_errprintf(err, "/: %s", strerror(errno));
		return -errno;
	}
	for (;;) {
		size_t n;

		while (*p == '/')
			p++;
		n = strcspn(p, "/");
		/* fd is the folder reached so far: the last one when n is 0. */
		if (fstat(fd, &st) < 0 || !root_only(&st, n != 0)) {
			gk_errprintf(
			    err,
			    "%.*s: not root's, or writable by others: root will not write below it",
			    (int)(p - path) ? (int)(p - path) : 1, path);
			close(fd);
			return -EPERM;
		}
		if (n == 0)
			return fd;
		if (n >= sizeof(comp) || (n == 2 && p[0] == '.' && p[1] == '.')) {
			gk_errprintf(err, "%s: bad component '%.*s'", path, (int)n, p);
			close(fd);
			return -EINVAL;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		next = openat(fd, comp, DIR_FLAGS);
		if (next < 0) {
			int e = errno;

			/* O_DIRECTORY|O_NOFOLLOW on a link fails with ENOTDIR or ELOOP. */
			if (is_link(fd, comp))
				e = ELOOP;
			gk_errprintf(err, "%.*s: %s", (int)(p - path + n), path,
				     e == ELOOP ? "a symbolic link" : strerror(e));
			close(fd);
			return -e;
		}
		close(fd);
		fd = next;
		p += n;
	}
}

int gk_root_subdir(int dirfd, const char *name, mode_t mode, gk_error_t *err)
{
	struct stat st;
	int fd;

	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, "..")) {
		gk_errprintf(err, "'%s': not a folder name", name);
		return -EINVAL;
	}
	if (mkdirat(dirfd, name, mode) < 0 && errno != EEXIST) {
		gk_errprintf(err, "%s: cannot create: %s", name, strerror(errno));
		return -errno;
	}
	fd = openat(dirfd, name, DIR_FLAGS);
	if (fd < 0) {
		int e = is_link(dirfd, name) ? ELOOP : errno;

		gk_errprintf(err, "%s: %s", name, e == ELOOP ? "a symbolic link" : strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || !root_only(&st, 0)) {
		gk_errprintf(err, "%s: not root's, or writable by others", name);
		close(fd);
		return -EPERM;
	}
	return fd;
}

int gk_user_subdir(int dirfd, const char *name, uid_t uid)
{
	struct stat st;
	int fd;

	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	fd = openat(dirfd, name, DIR_FLAGS);
	if (fd < 0)
		return errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno;
	if (fstat(fd, &st) < 0 || st.st_uid != uid) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int gk_root_private_file(int dirfd, const char *name, int flags, int replace)
{
	if (!name[0] || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EINVAL;
	for (int tries = 0; tries < 2; tries++) {
		struct stat st;
		int fd =
		    openat(dirfd, name,
			   flags | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
		int isdir = 0;

		if (fd >= 0) {
			if (fstat(fd, &st) < 0) {
				int e = errno;

				close(fd);
				return -e;
			}
			if (S_ISREG(st.st_mode) && st.st_uid == 0 &&
			    !(st.st_mode & (S_IRWXG | S_IRWXO)) && st.st_nlink == 1)
				return fd;
			isdir = S_ISDIR(st.st_mode);
			close(fd);
		} else if (!replace || (errno != ELOOP && errno != EISDIR && errno != ENXIO)) {
			return -errno;
		} else {
			isdir = errno == EISDIR;
		}
		if (!replace || tries)
			return -EPERM;
		if (unlinkat(dirfd, name, isdir ? AT_REMOVEDIR : 0) < 0 && errno != ENOENT)
			return -errno;
	}
	return -EPERM;
}

int gk_lock_bounded(int fd, unsigned ms)
{
	const struct timespec nap = {0, 10 * 1000 * 1000};
	struct timespec t0, now;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		long long waited;

		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		clock_gettime(CLOCK_MONOTONIC, &now);
		waited = (long long)(now.tv_sec - t0.tv_sec) * 1000 +
			 (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (waited >= (long long)ms)
			return -ETIMEDOUT;
		nanosleep(&nap, NULL);
	}
}
