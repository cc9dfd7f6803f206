/*
 * fsafe.h - opening and removing folders as root without trusting a path
 * that a user could change (SECURITY.md, "Root-run file operations").
 *
 * Root-run parts (the SPANK plugin, gpuckpt-stage, gpuckpt-shepherd) reach
 * a job's files in two steps:
 *
 *   1. a site folder (bb_root, shared_root): every folder on its path must be
 *      root's and writable by nobody else, so that only root can change what
 *      the path names (for a caller that is not root: root's or its own). A sticky folder (/tmp) is allowed on the way: its
 *      entries can be renamed only by their owners. Links on the way are
 *      followed only where root made them in such a folder.
 *   2. below it, one level at a time: openat(O_NOFOLLOW | O_DIRECTORY) from
 *      the descriptor of the level above, then the owner and type checked on
 *      the new descriptor (fstat), never on a path. Whatever a user renames
 *      afterwards, the descriptor stays on the folder that was checked.
 *
 * Functions return a descriptor (>= 0) or a negative errno; where they take
 * err they say there what is wrong with which path.
 */
#ifndef GK_FSAFE_H
#define GK_FSAFE_H

#include "common/error.h"

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

/*
 * Open the site folder `path` (absolute) for step 1. `setting` names where
 * the path came from, for the message ("bb_root", "--shared-root").
 * -EPERM when a folder on the way is not root's or is writable by group or
 * others (err: "bb_root=/x: /x is writable by group or others (mode 0777);
 * it must be root's and writable only by root"), -ENOENT, -ENOTDIR, ...
 */
int gk_open_trusted_dir(const char *path, const char *setting, gk_error_t *err);

/*
 * Open `path` (absolute) as a folder of `uid`: a trusted prefix as in
 * gk_open_trusted_dir, then, from the first folder that is uid's, only
 * folders of uid's reached without following any link. The last one must
 * be uid's. For a checkpoint root given whole (gpuckpt-shepherd --dir).
 */
int gk_open_user_path(const char *path, uid_t uid, gk_error_t *err);

/*
 * Open `path` (absolute), named by an administrator running a tool as root,
 * as gk_open_user_path does for the owner of the first folder on the way
 * that is not root's: links are followed only where root made them in a
 * folder only root can change; from that folder on, every folder must have
 * the same owner and no link is followed. A path of root's folders alone
 * must be trusted all the way. So a link a user put on the way can never
 * lead root into another user's folders (`gpuckpt prune` as root).
 */
int gk_open_owned_path(const char *path, gk_error_t *err);

/*
 * Step 2: open the folder `name` of dirfd without following a link and
 * check, on the new descriptor, that it is a folder owned by `uid` (or by
 * anyone when uid is (uid_t)-1). -ELOOP: a symbolic link; -ENOTDIR: not a
 * folder; -EPERM: another owner (*st, when given, says whose).
 */
int gk_open_dir_at(int dirfd, const char *name, uid_t uid, struct stat *st);

/*
 * Remove `name` under parentfd and everything below it, at most max_depth
 * levels deep, never following a link (a link is unlinked, not its target).
 * Each level is opened from the descriptor of the one above, so a rename
 * during the walk cannot lead it out of the tree. ENOENT is not an error.
 */
int gk_remove_tree(int parentfd, const char *name, int max_depth);

/* 1 when `mode` of a folder lets group or others change its entries. */
int gk_mode_shared(mode_t mode);

#endif
