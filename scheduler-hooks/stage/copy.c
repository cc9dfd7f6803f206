/*
 * copy.c - copying one checkpoint folder, as root, by descriptors only.
 *
 * Every entry is looked at on the descriptor that will be read (fstat after
 * open with O_NOFOLLOW | O_NONBLOCK), not on a path: what is checked is what
 * is copied. Nothing of the source's modes survives: files are created 0600
 * and folders 0700 by root in the area, then handed to their owner with
 * fchown on the new descriptors, so a setuid bit, a link to elsewhere or a
 * device node can never come out of staging as root's.
 */
#include "config.h"

#include "stage.h"
#include "stage_log.h"
#include "common/fsafe.h"
#include "image/image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COPY_BLOCK (8u << 20)

static const char *kind_of(mode_t mode)
{
	return S_ISLNK(mode)    ? "a symbolic link"
	       : S_ISCHR(mode)  ? "a character device"
	       : S_ISBLK(mode)  ? "a block device"
	       : S_ISFIFO(mode) ? "a fifo"
	       : S_ISSOCK(mode) ? "a socket"
	       : S_ISDIR(mode)  ? "a folder"
				: "not a regular file";
}

static int copy_bytes(int in, int out, uint64_t *done)
{
	static char *buf;

	*done = 0;
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1u << 30, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS ||
			      errno == EOPNOTSUPP))
			break;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		*done += (uint64_t)n;
	}
	/* Another file system, or one without copy_file_range: by hand. */
	if (!buf && !(buf = malloc(COPY_BLOCK)))
		return -ENOMEM;
	for (;;) {
		ssize_t n = read(in, buf, COPY_BLOCK), w = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		while (w < n) {
			ssize_t k = write(out, buf + w, (size_t)(n - w));

			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				return -errno;
			w += k;
		}
		*done += (uint64_t)n;
	}
}

/* One regular file of `owner`'s, with no other link, into dstfd as to_uid. */
static int copy_file(int srcdir, const char *name, const char *label, uid_t owner, int dstdir,
		     uid_t to_uid, gid_t to_gid, uint64_t *bytes, gk_error_t *err)
{
	struct timespec times[2];
	struct stat st;
	uint64_t done = 0;
	int in, out, ret;

	/* O_NONBLOCK: a fifo put in the file's place cannot hold root at open. */
	in = openat(srcdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (in < 0) {
		ret = -errno;
		gk_errprintf(err, "%s/%s: %s", label, show(name),
			     ret == -ELOOP ? "a symbolic link; refused" : strerror(-ret));
		return ret == -ELOOP ? -EPERM : ret;
	}
	if (fstat(in, &st) < 0) {
		ret = -errno;
		gk_errprintf(err, "%s/%s: %s", label, show(name), strerror(-ret));
		goto out_in;
	}
	if (!S_ISREG(st.st_mode)) {
		gk_errprintf(err, "%s/%s is %s; refused", label, show(name), kind_of(st.st_mode));
		ret = -EPERM;
		goto out_in;
	}
	if (st.st_uid != owner) {
		gk_errprintf(err, "%s/%s belongs to uid %u, not uid %u; refused", label, show(name),
			     (unsigned)st.st_uid, (unsigned)owner);
		ret = -EPERM;
		goto out_in;
	}
	if (st.st_nlink != 1) {
		gk_errprintf(err,
			     "%s/%s has %lu hard links (a file linked in from elsewhere); refused",
			     label, show(name), (unsigned long)st.st_nlink);
		ret = -EPERM;
		goto out_in;
	}
	out = openat(dstdir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		ret = -errno;
		gk_errprintf(err, "%s (copy): %s", show(name), strerror(-ret));
		goto out_in;
	}
	ret = copy_bytes(in, out, &done);
	if (ret == 0 && done != (uint64_t)st.st_size) {
		gk_errprintf(err, "%s/%s changed while it was copied (%llu of %lld bytes)", label,
			     show(name), (unsigned long long)done, (long long)st.st_size);
		ret = -EAGAIN;
		goto out_out;
	}
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	if (ret == 0 && (futimens(out, times) < 0 || fsync(out) < 0 ||
			 fchown(out, to_uid, to_gid) < 0 || fchmod(out, 0600) < 0))
		ret = -errno;
	if (ret < 0)
		gk_errprintf(err, "%s (copy): %s", show(name), strerror(-ret));
	*bytes += done;
out_out:
	close(out);
out_in:
	close(in);
	return ret;
}

/* What a folder of a checkpoint is, for copy_dir. */
enum kind {
	TOP,  /* the checkpoint folder: files of uid's, criu/, parts */
	CRIU, /* criu/: files of root's only */
	PART, /* proc.PID (ckptname.h): files of uid's only */
};

static int copy_dir(int srcfd, const char *label, int dstfd, enum kind kind, uid_t uid, gid_t gid,
		    uint64_t *bytes, gk_error_t *err);

/* A folder inside the checkpoint folder: criu/, root's alone as the shepherd
 * made it, or a part, the job's user's; made 0700 by root in the copy, and a
 * part handed to its owner once full. */
static int copy_sub(int srcfd, const char *label, const char *name, enum kind kind, int dstfd,
		    uid_t uid, gid_t gid, uint64_t *bytes, gk_error_t *err)
{
	char sub[4200];
	struct stat st;
	int in, out, ret;

	snprintf(sub, sizeof(sub), "%s/%s", label, name);
	in = gk_open_dir_at(srcfd, name, kind == CRIU ? 0 : uid, &st);
	if (in < 0 || (kind == CRIU && (st.st_gid != 0 || (st.st_mode & 07777) != 0700))) {
		gk_errprintf(err,
			     kind == CRIU ? "%s: not a folder root:root 0700 (not written by the "
					    "shepherd); refused"
					  : "%s: not a folder of the checkpoint's owner; refused",
			     sub);
		if (in >= 0)
			close(in);
		return -EPERM;
	}
	if (mkdirat(dstfd, name, 0700) < 0 || (out = gk_open_dir_at(dstfd, name, 0, NULL)) < 0) {
		ret = -errno;
		gk_errprintf(err, "%s (copy): %s", sub, strerror(errno));
		close(in);
		return ret;
	}
	ret = copy_dir(in, sub, out, kind, uid, gid, bytes, err);
	if (ret == 0 && fsync(out) < 0)
		ret = -errno;
	if (ret == 0 && kind == PART && fchown(out, uid, gid) < 0)
		ret = -errno;
	close(in);
	close(out);
	return ret;
}

/*
 * The entries of srcfd into dstfd: the checkpoint folder's (files of uid's,
 * criu/ and the parts), criu/'s or a part's (files only).
 */
static int copy_dir(int srcfd, const char *label, int dstfd, enum kind kind, uid_t uid, gid_t gid,
		    uint64_t *bytes, gk_error_t *err)
{
	uid_t owner = kind == CRIU ? 0 : uid;
	struct dirent *e;
	size_t count = 0;
	int dfd, ret = 0;
	DIR *d;

	dfd = fcntl(srcfd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0 || !(d = fdopendir(dfd))) {
		ret = -errno;
		if (dfd >= 0)
			close(dfd);
		gk_errprintf(err, "%s: %s", label, strerror(-ret));
		return ret;
	}
	rewinddir(d);
	while (ret == 0 && (e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (++count > STAGE_MAX_ENTRIES) {
			gk_errprintf(err, "%s: more than %d entries; refused", label,
				     STAGE_MAX_ENTRIES);
			ret = -EPERM;
			break;
		}
		if (fstatat(srcfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = -errno;
			gk_errprintf(err, "%s/%s: %s", label, show(e->d_name), strerror(-ret));
			break;
		}
		if (S_ISDIR(st.st_mode) && kind == TOP) {
			int pid;

			if (!strcmp(e->d_name, GK_CRIU_DIR)) {
				ret = copy_sub(srcfd, label, e->d_name, CRIU, dstfd, uid, gid,
					       bytes, err);
				continue;
			}
			if (gk_ckpt_parse_part(e->d_name, &pid) == 0) {
				ret = copy_sub(srcfd, label, e->d_name, PART, dstfd, uid, gid,
					       bytes, err);
				continue;
			}
		}
		if (!S_ISREG(st.st_mode)) {
			gk_errprintf(err, "%s/%s is %s; refused", label, show(e->d_name),
				     kind_of(st.st_mode));
			ret = -EPERM;
			break;
		}
		ret = copy_file(srcfd, e->d_name, label, owner, dstfd, kind == CRIU ? 0 : uid,
				kind == CRIU ? 0 : gid, bytes, err);
	}
	closedir(d);
	return ret;
}

int copy_ckpt(int srcfd, const char *src_label, int dstfd, const char *name, uid_t uid, gid_t gid,
	      uint64_t *bytes, gk_error_t *err)
{
	int out, ret;

	*bytes = 0;
	if (mkdirat(dstfd, name, 0700) < 0) {
		gk_errprintf(err, "%s (copy): %s", name, strerror(errno));
		return -errno;
	}
	out = gk_open_dir_at(dstfd, name, 0, NULL);
	if (out < 0) {
		gk_errprintf(err, "%s (copy): %s", name, strerror(-out));
		unlinkat(dstfd, name, AT_REMOVEDIR);
		return out;
	}
	ret = copy_dir(srcfd, src_label, out, TOP, uid, gid, bytes, err);
	/* Handed over last: until now only root could reach into it. */
	if (ret == 0 && (fsync(out) < 0 || fchown(out, uid, gid) < 0)) {
		ret = -errno;
		gk_errprintf(err, "%s (copy): %s", name, strerror(-ret));
	}
	close(out);
	if (ret < 0)
		gk_remove_tree(dstfd, name, STAGE_MAX_DEPTH);
	return ret;
}
