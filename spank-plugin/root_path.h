/*
 * root_path.h - opening folders as root without being led astray by a user.
 *
 * The plugin's prolog and epilog run as root on a node where the job's user
 * may still have processes (see issue 11's threat model). So the folders root
 * writes into (the shared root's records, the metrics folder) are opened
 * from "/" one component at a time with O_NOFOLLOW, and each must be root's
 * and writable by no one else (a sticky folder such as /tmp may be crossed:
 * nobody can rename or remove root's entries in it); the files are then
 * reached through the descriptor, never by path again. The job's own
 * folders on the burst buffer are the user's: they are opened below a
 * checked root the same way, their owner checked, and only read.
 */
#ifndef GK_ROOT_PATH_H
#define GK_ROOT_PATH_H

#include <stddef.h>
#include <sys/types.h>

#include "common/error.h" /* gk_error_t (runtime/common) */

/*
 * Open the folder `path` (absolute) for root's use: every component a real
 * folder (no links), root's, not writable by group or others except for
 * sticky ones on the way; the last one not sticky-writable either.
 * Returns an O_DIRECTORY descriptor, or a negative errno with err saying
 * which component is wrong.
 */
int gk_root_dir_open(const char *path, gk_error_t *err);

/*
 * The folder `name` inside dirfd, made (mode, root's) when missing; an
 * existing one must pass the same checks. A descriptor, or a negative errno.
 */
int gk_root_subdir(int dirfd, const char *name, mode_t mode, gk_error_t *err);

/*
 * Open `name` inside dirfd (no links, no ".." or '/'), a folder owned by
 * `uid`. A descriptor, or a negative errno (-ENOENT when missing, -EPERM
 * when it is someone else's or not a folder).
 */
int gk_user_subdir(int dirfd, const char *name, uid_t uid);

/*
 * Open `name` in the root-only folder dirfd (made when missing, 0600, with
 * `flags` such as O_RDWR) as a file that only root can open: a regular file
 * of root's, no access for group or others, one link, reached without
 * following links or blocking on a FIFO. With `replace`, anything else there
 * (a link, a file someone may have opened while its mode let them) is
 * removed and the file made afresh, so no descriptor opened by anyone else
 * refers to it; without, it is refused (-ELOOP for a link, -EPERM for the
 * rest). A descriptor or a negative errno.
 */
int gk_root_private_file(int dirfd, const char *name, int flags, int replace);

/*
 * flock(fd, LOCK_EX), waiting at most ms milliseconds: root's callbacks
 * never wait without a bound. 0; -ETIMEDOUT when a holder kept it that long;
 * another negative errno (-ENOLCK, -EOPNOTSUPP, -ENOSYS: the file system
 * has no locks).
 */
int gk_lock_bounded(int fd, unsigned ms);

#endif
