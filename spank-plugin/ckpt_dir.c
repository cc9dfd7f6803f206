#include "config.h"

#include "ckpt_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gk_step_dirname(uint32_t step_id, char *buf, size_t len)
{
	int n;

	if (step_id == GK_STEP_BATCH)
		n = snprintf(buf, len, "step.batch");
	else if (step_id == GK_STEP_INTERACTIVE)
		n = snprintf(buf, len, "step.interactive");
	else if (step_id == GK_STEP_EXTERN)
		n = snprintf(buf, len, "step.extern");
	else
		n = snprintf(buf, len, "step.%u", step_id);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int gk_task_dir_path(const char *root, const struct gk_task_ids *ids, char *buf, size_t len)
{
	char step[32];
	int n;

	if (gk_step_dirname(ids->step_id, step, sizeof(step)) < 0)
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "%s/%u/%s/task.%u", root, ids->job_id, step, ids->task_id);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * A new level appears whole or not at all: made under a temporary name, given
 * to uid:gid, then renamed into place (never over an existing one). The tasks
 * of a step that share a node start at once and each make the same job and
 * step folders: made in place, one task could find the folder another had
 * just made, still root's, and refuse it as not the user's. -EEXIST when the
 * level exists (made by another task, or earlier).
 */
static int make_new(int parent, const char *name, uid_t uid, gid_t gid)
{
	char tmp[96];
	struct stat st;
	int fd, rc;

	snprintf(tmp, sizeof(tmp), ".new.%.40s.%d", name, (int)getpid());
	if (mkdirat(parent, tmp, 0700) < 0)
		return -errno;
	fd = openat(parent, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		goto out_rmdir;
	}
	if (fchown(fd, uid, gid) < 0 || fchmod(fd, 0700) < 0) {
		rc = -errno;
		goto out_close;
	}
	if (renameat2(parent, tmp, parent, name, RENAME_NOREPLACE) < 0) {
		rc = -errno;
		/* Filesystems without RENAME_NOREPLACE: look, then rename. */
		if ((rc != -EINVAL && rc != -ENOSYS) ||
		    fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			goto out_close;
		if (renameat(parent, tmp, parent, name) < 0) {
			rc = -errno;
			goto out_close;
		}
	}
	close(fd);
	return 0;

out_close:
	close(fd);
out_rmdir:
	unlinkat(parent, tmp, AT_REMOVEDIR);
	return rc == -ENOTEMPTY ? -EEXIST : rc;
}

/*
 * One level: make name under parent (0700, the user's), open it without
 * following a link, check it is a folder owned by uid (or new), mode 0700.
 * Returns the open folder or a negative errno; *made says whether it was new.
 */
static int make_level(int parent, const char *path, const char *name, uid_t uid, gid_t gid,
		      int *made, char *err, size_t errlen)
{
	struct stat st;
	int fd, rc;

	rc = make_new(parent, name, uid, gid);
	*made = rc == 0;
	if (rc < 0 && rc != -EEXIST) {
		snprintf(err, errlen, "%s: cannot create: %s", path, strerror(-rc));
		return rc;
	}
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ELOOP || rc == -ENOTDIR)
			snprintf(err, errlen,
				 "%s: not a folder (a symbolic link or a file); refused", path);
		else
			snprintf(err, errlen, "%s: cannot open: %s", path, strerror(-rc));
		goto out_rmdir;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(-rc));
		goto out_close;
	}
	/* Made just now by root: hand it over. Found: it must already be the user's. */
	if (*made && st.st_uid != uid && fchown(fd, uid, gid) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot give to uid %u: %s", path, (unsigned)uid,
			 strerror(-rc));
		goto out_close;
	}
	if (!*made && st.st_uid != uid) {
		rc = -EPERM;
		snprintf(err, errlen,
			 "%s: belongs to uid %u, not to the job's user (uid %u); refused", path,
			 (unsigned)st.st_uid, (unsigned)uid);
		goto out_close;
	}
	if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: cannot set mode 0700: %s", path, strerror(-rc));
		goto out_close;
	}
	return fd;

out_close:
	close(fd);
out_rmdir:
	if (*made)
		unlinkat(parent, name, AT_REMOVEDIR);
	*made = 0;
	return rc;
}

int gk_task_dir_make(const char *root, const struct gk_task_ids *ids, char *err, size_t errlen)
{
	char names[3][32];
	char path[4096];
	int fds[4] = {-1, -1, -1, -1};
	int made[3] = {0, 0, 0};
	int level, rc = 0;
	size_t plen;

	snprintf(names[0], sizeof(names[0]), "%u", ids->job_id);
	if (gk_step_dirname(ids->step_id, names[1], sizeof(names[1])) < 0)
		return -ENAMETOOLONG;
	snprintf(names[2], sizeof(names[2]), "task.%u", ids->task_id);
	if (strlen(root) + 3 + sizeof(names) >= sizeof(path)) {
		snprintf(err, errlen, "burst-buffer root %s: path too long", root);
		return -ENAMETOOLONG;
	}

	fds[0] = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fds[0] < 0) {
		rc = -errno;
		snprintf(err, errlen, "burst-buffer root %s: %s", root, strerror(-rc));
		return rc;
	}
	plen = (size_t)snprintf(path, sizeof(path), "%s", root);
	for (level = 0; level < 3; level++) {
		plen += (size_t)snprintf(path + plen, sizeof(path) - plen, "/%s", names[level]);
		fds[level + 1] = make_level(fds[level], path, names[level], ids->uid, ids->gid,
					    &made[level], err, errlen);
		if (fds[level + 1] < 0) {
			rc = fds[level + 1];
			goto out_undo;
		}
	}
	goto out_close;

out_undo:
	/* Leave nothing behind that this call made (upper levels made here, now empty). */
	while (--level >= 0) {
		if (made[level])
			unlinkat(fds[level], names[level], AT_REMOVEDIR);
	}
out_close:
	for (int i = 0; i < 4; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return rc;
}

/* ckpt.<digits> and nothing else. */
static int ckpt_number(const char *name, unsigned long long *num)
{
	char *end;

	if (strncmp(name, "ckpt.", 5) != 0 || name[5] < '0' || name[5] > '9')
		return -EINVAL;
	errno = 0;
	*num = strtoull(name + 5, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

int gk_find_committed(const char *dir, char *newest, size_t len)
{
	unsigned long long best = 0;
	struct dirent *de;
	int found = 0, fd;
	DIR *d;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(fd);
	if (!d) {
		int e = errno;

		close(fd);
		return -e;
	}
	while ((de = readdir(d))) {
		unsigned long long num;
		struct stat st;
		char manifest[300];

		if (ckpt_number(de->d_name, &num) < 0)
			continue;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		snprintf(manifest, sizeof(manifest), "%s/manifest.json", de->d_name);
		if (fstatat(fd, manifest, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (!found || num > best) {
			best = num;
			found = 1;
			if ((size_t)snprintf(newest, len, "%s", de->d_name) >= len) {
				closedir(d);
				return -ENAMETOOLONG;
			}
		}
	}
	closedir(d);
	return found;
}
