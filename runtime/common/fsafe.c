/*
 * fsafe.c - folders opened by descriptors, owners checked on descriptors
 * (fsafe.h). No message goes through the log here: the plugin links this file
 * too, and it logs through Slurm.
 */
#include "config.h"

#include "common/fsafe.h"
#include "common/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define MAX_LEVELS 128
#define MAX_LINKS 40

int gk_mode_shared(mode_t mode)
{
	return (mode & (S_IWGRP | S_IWOTH)) != 0;
}

struct walk {
	int fds[MAX_LEVELS];
	size_t depth;		/* fds[depth] is the folder reached so far */
	char shown[PATH_MAX];	/* its path, for messages */
	const char *setting;	/* "bb_root" or NULL */
	const char *given;
	gk_error_t *err;
};

static int fail(struct walk *w, int ret, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct walk *w, int ret, const char *fmt, ...)
{
	char msg[PATH_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (w->setting)
		gk_errprintf(w->err, "%s=%s: %s", w->setting, w->given, msg);
	else
		gk_errprintf(w->err, "%s", msg);
	return ret;
}

static void pop_to(struct walk *w, size_t depth)
{
	while (w->depth > depth)
		close(w->fds[w->depth--]);
	if (depth == 0)
		snprintf(w->shown, sizeof(w->shown), "/");
}

static void shown_up(struct walk *w)
{
	char *slash = strrchr(w->shown, '/');

	if (slash && slash != w->shown)
		*slash = 0;
	else
		snprintf(w->shown, sizeof(w->shown), "/");
}

static void shown_down(struct walk *w, const char *name)
{
	size_t n = strlen(w->shown);

	snprintf(w->shown + n, sizeof(w->shown) - n, "%s%s", n > 1 ? "/" : "", name);
}

/* A folder on the trusted part of a path: root's, and writable only by root
 * (sticky allowed where it is not the last). */
static int check_trusted(struct walk *w, const struct stat *st, int last)
{
	char detail[64];

	/* Owned by the caller itself counts too: for root-run code that is
	 * root, and anyone else can change their own folders anyway (tests). */
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(detail, sizeof(detail), "%u", (unsigned)st->st_uid);
		return fail(w, -EPERM,
			    "%s is owned by uid %s; it must be root's (and writable only by root)",
			    w->shown, detail);
	}
	if (gk_mode_shared(st->st_mode) && (last || !(st->st_mode & S_ISVTX))) {
		snprintf(detail, sizeof(detail), "%04o", (unsigned)(st->st_mode & 07777));
		return fail(w, -EPERM,
			    "%s is writable by group or others (mode %s); it must be writable only "
			    "by root",
			    w->shown, detail);
	}
	return 0;
}

/*
 * Walk `path` from "/". user_mode: from the first folder owned by uid on,
 * every folder must be uid's and no link is followed.
 */
static int walk(struct walk *w, const char *path, int user_mode, uid_t uid)
{
	char todo[2 * PATH_MAX], name[NAME_MAX + 1], detail[64];
	int links = 0, in_user = 0, ret;
	const char *p;
	struct stat st;

	w->depth = 0;
	if (path[0] != '/')
		return fail(w, -EINVAL, "%s%s: not an absolute path", w->given, "");
	if (strlen(path) >= PATH_MAX)
		return fail(w, -ENAMETOOLONG, "%s%s: path too long", w->given, "");
	snprintf(w->shown, sizeof(w->shown), "/");
	w->fds[0] = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (w->fds[0] < 0 || fstat(w->fds[0], &st) < 0)
		return fail(w, -errno, "%s: %s", "/", strerror(errno));
	snprintf(todo, sizeof(todo), "%s", path);
	ret = check_trusted(w, &st, path[strspn(path, "/")] == 0);
	if (ret < 0)
		goto out;
	p = todo;
	for (;;) {
		size_t len;
		int last, fd;

		p += strspn(p, "/");
		if (!*p)
			break;
		len = strcspn(p, "/");
		if (len > NAME_MAX) {
			ret = fail(w, -ENAMETOOLONG, "%s: a name on the way is too long%s",
				   w->given, "");
			goto out;
		}
		memcpy(name, p, len);
		name[len] = 0;
		p += len;
		last = p[strspn(p, "/")] == 0;
		if (!strcmp(name, "."))
			continue;
		if (!strcmp(name, "..")) {
			if (in_user) {
				ret = fail(w, -EINVAL, "%s: '..' below %s", w->given, w->shown);
				goto out;
			}
			if (w->depth > 0) {
				close(w->fds[w->depth--]);
				shown_up(w);
			}
			continue;
		}
		if (fstatat(w->fds[w->depth], name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = -errno;
			shown_down(w, name);
			fail(w, ret, "%s: %s", w->shown, strerror(-ret));
			goto out;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX], rest[PATH_MAX];
			ssize_t n;

			shown_down(w, name);
			/* A link is followed only where root made it, in a folder
			 * only root can change: the admin's own (/var/run -> /run). */
			if (in_user) {
				/* Named with whoever made it: an administrator
				 * sees whose link it was (issue 24). */
				snprintf(detail, sizeof(detail), "%u", (unsigned)st.st_uid);
				ret = fail(w, -ELOOP, "%s is a symbolic link made by uid %s; refused",
					   w->shown, detail);
				goto out;
			}
			if (st.st_uid != 0) {
				snprintf(detail, sizeof(detail), "%u", (unsigned)st.st_uid);
				ret = fail(w, -EPERM,
					   "%s is a symbolic link made by uid %s, not by root; refused",
					   w->shown, detail);
				goto out;
			}
			if (++links > MAX_LINKS) {
				ret = fail(w, -ELOOP, "%s: too many symbolic links%s", w->given,
					   "");
				goto out;
			}
			n = readlinkat(w->fds[w->depth], name, target, sizeof(target) - 1);
			if (n <= 0) {
				ret = fail(w, -EIO, "%s: cannot read the link%s", w->shown, "");
				goto out;
			}
			target[n] = 0;
			shown_up(w);
			snprintf(rest, sizeof(rest), "%s", p);
			if ((size_t)snprintf(todo, sizeof(todo), "%s/%s", target, rest) >=
			    sizeof(todo)) {
				ret = fail(w, -ENAMETOOLONG, "%s: path too long%s", w->given, "");
				goto out;
			}
			if (target[0] == '/')
				pop_to(w, 0);
			p = todo;
			continue;
		}
		shown_down(w, name);
		if (!S_ISDIR(st.st_mode)) {
			ret = fail(w, -ENOTDIR, "%s: not a folder%s", w->shown, "");
			goto out;
		}
		if (w->depth + 1 >= MAX_LEVELS) {
			ret = fail(w, -ENAMETOOLONG, "%s: too deep%s", w->given, "");
			goto out;
		}
		fd = openat(w->fds[w->depth], name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0) {
			ret = -errno;
			if (fd >= 0)
				close(fd);
			fail(w, ret, "%s: %s", w->shown, strerror(-ret));
			goto out;
		}
		w->fds[++w->depth] = fd;
		/* Any user: the owner of the first folder that is not root's. */
		if (user_mode && uid == (uid_t)-1 && st.st_uid != 0)
			uid = st.st_uid;
		if (user_mode && uid != 0 && uid != (uid_t)-1 && (in_user || st.st_uid == uid)) {
			if (st.st_uid != uid) {
				snprintf(detail, sizeof(detail), "%u, not by uid %u", (unsigned)st.st_uid,
					 (unsigned)uid);
				ret = fail(w, -EPERM, "%s is owned by uid %s; refused", w->shown,
					   detail);
				goto out;
			}
			in_user = 1;
			continue;
		}
		ret = check_trusted(w, &st, last);
		if (ret < 0)
			goto out;
	}
	if (user_mode && uid != 0 && uid != (uid_t)-1 && !in_user) {
		snprintf(detail, sizeof(detail), "%u", (unsigned)uid);
		ret = fail(w, -EPERM, "%s is root's, not the job's user's (uid %s)", w->shown,
			   detail);
		goto out;
	}
	ret = w->fds[w->depth];
	if (w->depth == 0)
		return ret; /* "/" itself: its descriptor is the only one, and the answer */
	w->depth--;
out:
	pop_to(w, 0);
	close(w->fds[0]);
	return ret;
}

int gk_open_trusted_dir(const char *path, const char *setting, gk_error_t *err)
{
	struct walk w = {.setting = setting, .given = path, .err = err};

	return walk(&w, path, 0, 0);
}

int gk_open_user_path(const char *path, uid_t uid, gk_error_t *err)
{
	struct walk w = {.given = path, .err = err};

	return walk(&w, path, 1, uid);
}

int gk_open_owned_path(const char *path, gk_error_t *err)
{
	struct walk w = {.given = path, .err = err};

	return walk(&w, path, 1, (uid_t)-1);
}

int gk_open_dir_at(int dirfd, const char *name, uid_t uid, struct stat *st)
{
	struct stat s;
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		int e = errno;

		/* O_NOFOLLOW | O_DIRECTORY on a link: ELOOP or ENOTDIR by kernel. */
		if ((e == ELOOP || e == ENOTDIR) &&
		    fstatat(dirfd, name, &s, AT_SYMLINK_NOFOLLOW) == 0) {
			if (st)
				*st = s;
			return S_ISLNK(s.st_mode) ? -ELOOP : -ENOTDIR;
		}
		return -e;
	}
	if (fstat(fd, &s) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	if (st)
		*st = s;
	if (uid != (uid_t)-1 && s.st_uid != uid) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

int gk_remove_tree(int parentfd, const char *name, int max_depth)
{
	struct dirent *e;
	DIR *d;
	int fd, ret = 0;

	fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != ENOTDIR && errno != ELOOP)
			return -errno;
		return unlinkat(parentfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	}
	d = fdopendir(fd);
	if (!d) {
		ret = -errno;
		close(fd);
		return ret;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT && !ret)
				ret = -errno;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int r = max_depth > 0 ? gk_remove_tree(fd, e->d_name, max_depth - 1)
					      : -ELOOP;

			if (r < 0 && !ret)
				ret = r;
		} else if (unlinkat(fd, e->d_name, 0) < 0 && errno != ENOENT && !ret) {
			ret = -errno;
		}
	}
	closedir(d);
	if (unlinkat(parentfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && !ret)
		ret = -errno;
	return ret;
}
