#include "config.h"

#include "ckpt_dir.h"
#include "common/fsafe.h"
#include "image/ckptname.h"
#include "common/jobdir.h"

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
		n = snprintf(buf, len, GK_STEP_PREFIX "batch");
	else if (step_id == GK_STEP_INTERACTIVE)
		n = snprintf(buf, len, GK_STEP_PREFIX "interactive");
	else if (step_id == GK_STEP_EXTERN)
		n = snprintf(buf, len, GK_STEP_PREFIX "extern");
	else
		n = snprintf(buf, len, GK_STEP_PREFIX "%u", step_id);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A number of 1 to 10 digits without a leading zero (the one spelling). */
static int parse_u32(const char *s, uint32_t *out)
{
	unsigned long long v = 0;
	size_t n = strlen(s);

	if (n == 0 || n > 10 || (n > 1 && s[0] == '0'))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

int gk_step_parse(const char *name, uint32_t *step_id)
{
	const char *name_id;
	char canon[32];

	if (strncmp(name, GK_STEP_PREFIX, GK_STEP_PREFIX_LEN) != 0)
		return -EINVAL;
	name_id = name + GK_STEP_PREFIX_LEN;
	if (!strcmp(name_id, "batch"))
		*step_id = GK_STEP_BATCH;
	else if (!strcmp(name_id, "interactive"))
		*step_id = GK_STEP_INTERACTIVE;
	else if (!strcmp(name_id, "extern"))
		*step_id = GK_STEP_EXTERN;
	else if (parse_u32(name_id, step_id) < 0 || *step_id >= GK_STEP_INTERACTIVE)
		return -EINVAL;
	/* Only a name gk_step_dirname would write. */
	if (gk_step_dirname(*step_id, canon, sizeof(canon)) < 0 || strcmp(canon, name))
		return -EINVAL;
	return 0;
}

int gk_task_parse(const char *name, uint32_t *task_id)
{
	if (strncmp(name, GK_TASK_PREFIX, GK_TASK_PREFIX_LEN) != 0)
		return -EINVAL;
	return parse_u32(name + GK_TASK_PREFIX_LEN, task_id);
}

int gk_job_parse(const char *name, uint32_t *job_id)
{
	return parse_u32(name, job_id) < 0 || *job_id == 0 ? -EINVAL : 0;
}

int gk_task_dir_path(const char *root, const struct gk_task_ids *ids, char *buf, size_t len)
{
	char step[32];
	int n;

	if (gk_step_dirname(ids->step_id, step, sizeof(step)) < 0)
		return -ENAMETOOLONG;
	n = snprintf(buf, len, "%s/%u/%s/" GK_TASK_PREFIX "%u", root, ids->job_id, step,
		     ids->task_id);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/*
 * One level: make name under parent (0700, given to uid:gid), or open the one
 * there without following a link and check it is a folder owned by uid, 0700.
 * Returns the open folder or a negative errno; *made says whether it was new.
 */
static int make_level(int parent, const char *path, const char *name, uid_t uid, gid_t gid,
		      int *made, gk_error_t *err)
{
	struct stat st;
	char tmp[64];
	int fd, rc;

	/* The tasks of a step start at once and each makes the step's folder:
	 * made under a name of its own, given to the user, then renamed into
	 * place (never over anything), it is never seen at its name while it is
	 * still root's, which a sibling task would refuse. */
	*made = 0;
	snprintf(tmp, sizeof(tmp), ".tmp.%.32s.%ld", name, (long)getpid());
	if (mkdirat(parent, tmp, 0700) == 0) {
		fd = openat(parent, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && fchown(fd, uid, gid) == 0 &&
		    renameat2(parent, tmp, parent, name, RENAME_NOREPLACE) == 0) {
			*made = 1;
			return fd;
		}
		if (fd >= 0)
			close(fd);
		unlinkat(parent, tmp, AT_REMOVEDIR);
	} else if (errno != EEXIST) {
		rc = -errno;
		gk_errprintf(err, "%s: cannot create: %s", path, strerror(-rc));
		return rc;
	}
	/* There already (made by a sibling, or an earlier step): it must be the user's. */
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		rc = -errno;
		if (rc == -ELOOP || rc == -ENOTDIR)
			gk_errprintf(err, "%s: not a folder (a symbolic link or a file); refused",
				     path);
		else
			gk_errprintf(err, "%s: cannot open: %s", path, strerror(-rc));
		return rc;
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		gk_errprintf(err, "%s: cannot stat: %s", path, strerror(-rc));
		goto out_close;
	}
	if (st.st_uid != uid) {
		rc = -EPERM;
		gk_errprintf(err, "%s: belongs to uid %u, not to the job's user (uid %u); refused",
			     path, (unsigned)st.st_uid, (unsigned)uid);
		goto out_close;
	}
	if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0) {
		rc = -errno;
		gk_errprintf(err, "%s: cannot set mode 0700: %s", path, strerror(-rc));
		goto out_close;
	}
	return fd;

out_close:
	close(fd);
	return rc;
}

int gk_task_dir_open(int rootfd, const char *root, const struct gk_task_ids *ids, gk_error_t *err)
{
	char names[3][32];
	char path[4096];
	int fds[4] = {rootfd, -1, -1, -1};
	int made[3] = {0, 0, 0};
	int level, rc = 0;
	size_t plen;

	snprintf(names[0], sizeof(names[0]), "%u", ids->job_id);
	if (gk_step_dirname(ids->step_id, names[1], sizeof(names[1])) < 0)
		return -ENAMETOOLONG;
	snprintf(names[2], sizeof(names[2]), GK_TASK_PREFIX "%u", ids->task_id);
	if (strlen(root) + 3 + sizeof(names) >= sizeof(path)) {
		gk_errprintf(err, "burst-buffer root %s: path too long", root);
		return -ENAMETOOLONG;
	}
	plen = (size_t)snprintf(path, sizeof(path), "%s", root);
	for (level = 0; level < 3; level++) {
		plen += (size_t)snprintf(path + plen, sizeof(path) - plen, "/%s", names[level]);
		fds[level + 1] = make_level(fds[level], path, names[level], ids->uid, ids->gid,
					    &made[level], err);
		if (fds[level + 1] < 0) {
			rc = fds[level + 1];
			goto out_undo;
		}
	}
	rc = fds[3];
	fds[3] = -1;
	goto out_close;

out_undo:
	/* Leave nothing behind that this call made (upper levels made here, now empty). */
	while (--level >= 0) {
		if (made[level])
			unlinkat(fds[level], names[level], AT_REMOVEDIR);
	}
out_close:
	for (int i = 1; i < 4; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return rc;
}

int gk_task_dir_make(const char *root, const char *setting, const struct gk_task_ids *ids,
		     gk_error_t *err)
{
	int rootfd, fd;

	/* The site's folder must be one only root can change; below it every
	 * level is the job's user's and is opened without following links. */
	rootfd = gk_open_trusted_dir(root, setting, err);
	if (rootfd < 0)
		return rootfd;
	fd = gk_task_dir_open(rootfd, root, ids, err);
	close(rootfd);
	return fd;
}

/* A committed name, as the runtime writes and reads it (ckptname.h). */
static int ckpt_number(const char *name, unsigned long long *num)
{
	uint64_t seq;

	if (gk_ckpt_parse(name, &seq) < 0)
		return -EINVAL;
	*num = seq;
	return 0;
}

int gk_find_committed_at(int fd, char *newest, size_t len)
{
	unsigned long long best = 0;
	struct dirent *de;
	int found = 0, dfd;
	DIR *d;

	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		int e = errno;

		close(dfd);
		return -e;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		unsigned long long num;
		struct stat st;
		int cfd, ok;

		if (ckpt_number(de->d_name, &num) < 0)
			continue;
		/* The manifest is asked of ckpt.N's own descriptor: a path
		 * "ckpt.N/manifest.json" would follow a link swapped in for
		 * ckpt.N after this look. O_PATH: only search permission is
		 * needed, as for the path. */
		cfd = openat(fd, de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (cfd < 0)
			continue;
		ok = fstatat(cfd, GK_MANIFEST_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		     S_ISREG(st.st_mode);
		close(cfd);
		if (!ok)
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

int gk_find_committed(const char *dir, char *newest, size_t len)
{
	int fd, ret;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	ret = gk_find_committed_at(fd, newest, len);
	close(fd);
	return ret;
}
