/*
 * store.c - the checkpoint root: numbering, the commit protocol (temporary
 * directory, fsync, rename, fsync of the parent), listing and pruning.
 *
 * The rename is the commit: a checkpoint either has its final name and is
 * complete on disk, or it does not have it. Deletion renames first, for the
 * same reason in reverse.
 */
#include "config.h"
#include "common/clock.h"
#include "common/error.h"
#include "image/image.h"
#include "image/ckptname.h"
#include "common/fsafe.h"
#include "common/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A writer that has not finished in a day is gone, whatever its pid says now
 * (pids are reused; another node's pids cannot be asked at all). */
#define STALE_SECONDS (24 * 3600)
#define MAX_DEPTH 4

/* ---- names ---- */

/* Hostnames go into directory names; keep them to characters that need no
 * quoting anywhere and cannot hide a path separator. */
static void local_host(char *buf, size_t n)
{
	char host[256] = "";
	size_t j = 0;

	if (gethostname(host, sizeof(host) - 1) < 0)
		host[0] = 0;
	host[sizeof(host) - 1] = 0;
	for (size_t i = 0; host[i] && j + 1 < n && j < 64; i++) {
		char c = host[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';

		buf[j++] = ok ? c : '_';
	}
	if (j == 0 && n > 7)
		j = (size_t)snprintf(buf, n, "unknown");
	buf[j] = 0;
}

/* ".tmp.ckpt.N.HOST.PID" or ".trash.ckpt.N.PID" (host NULL) */
static int parse_writer(const char *name, const char *prefix, uint64_t *seq, char *host,
			size_t hostlen, pid_t *pid)
{
	const char *p, *dot;
	char *end;
	long v;

	if (strncmp(name, prefix, strlen(prefix)) != 0)
		return -1;
	p = gk_ckpt_parse_seq(name + strlen(prefix), seq);
	if (!p || *p != '.')
		return -1;
	p++;
	dot = strrchr(p, '.');
	if (host) {
		if (!dot || dot == p || (size_t)(dot - p) >= hostlen)
			return -1;
		memcpy(host, p, (size_t)(dot - p));
		host[dot - p] = 0;
		p = dot + 1;
	}
	if (!(*p >= '1' && *p <= '9'))
		return -1;
	errno = 0;
	v = strtol(p, &end, 10);
	if (errno || *end || v <= 0 || v > INT32_MAX)
		return -1;
	*pid = (pid_t)v;
	return 0;
}

static int pid_alive(pid_t pid)
{
	return kill(pid, 0) == 0 || errno == EPERM;
}

static int writer_gone(const char *host, pid_t pid, time_t mtime)
{
	char here[256];

	if (time(NULL) - mtime > STALE_SECONDS)
		return 1;
	if (!host)
		return !pid_alive(pid);
	local_host(here, sizeof(here));
	return strcmp(host, here) == 0 && !pid_alive(pid);
}

/* ---- removing ---- */

/* A link inside a checkpoint is unlinked, not its target (gk_remove_tree). */
static int remove_tree(int parentfd, const char *name)
{
	return gk_remove_tree(parentfd, name, MAX_DEPTH);
}

/* A rename that refuses to replace: rename(2) would silently replace an
 * empty directory that happens to have the target name. */
static int rename_noreplace(int fd, const char *from, const char *to)
{
	struct stat st;

	if (renameat2(fd, from, fd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	/* Filesystems without RENAME_NOREPLACE (some network ones): check,
	 * then rename; the root is one job's own directory, so nobody else
	 * creates names in it in between. */
	if (fstatat(fd, to, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	return renameat(fd, from, fd, to) < 0 ? -errno : 0;
}

static int delete_committed(int rootfd, const char *name, uint64_t seq)
{
	char trash[128];
	int ret;

	snprintf(trash, sizeof(trash), GK_CKPT_TRASH_PREFIX GK_CKPT_SEQ_FMT ".%d", seq,
		 (int)getpid());
	ret = rename_noreplace(rootfd, name, trash);
	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	return remove_tree(rootfd, trash);
}

/* ---- the root ---- */

/* The directory holding `path` (which has no trailing slash), synced so that
 * a directory just created in it survives a crash. */
static int sync_parent(const char *path)
{
	char parent[4096];
	const char *slash = strrchr(path, '/');
	int fd, ret = 0;

	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == path)
		snprintf(parent, sizeof(parent), "/");
	else
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* mkdir -p, 0700 for what it creates. A root created here must itself be
 * durable before anything committed inside it can be. */
static int make_root(const char *root)
{
	char path[4096];
	size_t len = strlen(root);
	int ret;

	if (len == 0 || len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, root, len + 1);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = 0;
	for (char *p = path + 1;; p++) {
		char saved = *p;

		if (saved != '/' && saved != 0)
			continue;
		*p = 0;
		if (mkdir(path, 0700) == 0) {
			ret = sync_parent(path);
			if (ret < 0)
				return ret;
		} else if (errno != EEXIST) {
			return -errno;
		}
		*p = saved;
		if (!saved)
			break;
	}
	return 0;
}

/* ROOT/NAME without a doubled slash when ROOT was given as "dir/". */
static int join(char *buf, size_t n, const char *root, const char *name)
{
	size_t len = strlen(root);
	int r = snprintf(buf, n, "%s%s%s", root, len && root[len - 1] == '/' ? "" : "/", name);

	return r < 0 || (size_t)r >= n ? -ENAMETOOLONG : 0;
}

static int open_root(const char *root, gk_error_t *err)
{
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		gk_errprintf(err, "%s: %s", root, strerror(errno));
	return fd < 0 ? -errno : fd;
}

/* A transparent checkpoint: criu/ is a real directory (a link is not).
 * Looked up from the checkpoint's own descriptor: "NAME/criu" as a path
 * would follow NAME if it had just been swapped for a link (root lists
 * users' folders). */
static int has_criu_dir(int rootfd, const char *name)
{
	int fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), yes;
	struct stat st;

	if (fd < 0)
		return 0;
	yes = fstatat(fd, GK_CRIU_DIR, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
	close(fd);
	return yes;
}

static int entry_cmp(const void *pa, const void *pb)
{
	const struct gk_store_entry *a = pa, *b = pb;

	if (a->complete != b->complete)
		return a->complete ? -1 : 1;
	if (a->sequence != b->sequence)
		return a->sequence > b->sequence ? -1 : 1;
	return strcmp(a->path, b->path);
}

/*
 * A stream over the open directory dirfd from its first entry, for the four
 * scans below. Through a dup, so that closedir() leaves dirfd open; the dup
 * shares its offset with dirfd, which an earlier scan may have left at the
 * end of the directory, hence the rewind. NULL with errno set on failure.
 */
static DIR *dir_stream(int dirfd)
{
	int fd = dup(dirfd), saved;
	DIR *d;

	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		saved = errno;
		close(fd);
		errno = saved;
		return NULL;
	}
	rewinddir(d);
	return d;
}

/* Every checkpoint of the root, and the highest sequence number in use by
 * any entry (committed, being written, or being deleted). */
static int scan_root(const char *root, int rootfd, struct gk_store_entry **entries, size_t *count,
		     uint64_t *max_seq, gk_error_t *err)
{
	struct gk_store_entry *list = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d;
	int ret = 0;

	*max_seq = 0;
	if (!(d = dir_stream(rootfd))) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", root, strerror(-ret));
		return ret;
	}
	while ((e = readdir(d))) {
		struct gk_store_entry ent;
		struct stat st;
		uint64_t seq;
		pid_t pid;

		memset(&ent, 0, sizeof(ent));
		if (gk_ckpt_parse(e->d_name, &seq) == 0) {
			ent.complete = 1;
		} else if (parse_writer(e->d_name, GK_CKPT_TMP_PREFIX, &seq, ent.writer_host,
					sizeof(ent.writer_host), &pid) == 0) {
			ent.writer_pid = pid;
		} else {
			if (parse_writer(e->d_name, GK_CKPT_TRASH_PREFIX, &seq, NULL, 0, &pid) ==
				0 &&
			    seq > *max_seq)
				*max_seq = seq;
			continue;
		}
		/* A link named like a checkpoint is not one of ours. */
		if (fstatat(rootfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (seq > *max_seq)
			*max_seq = seq;
		if (!entries)
			continue;
		ent.sequence = seq;
		ent.transparent = has_criu_dir(rootfd, e->d_name);
		if (!ent.complete)
			ent.stale = writer_gone(ent.writer_host, ent.writer_pid, st.st_mtime);
		if (join(ent.path, sizeof(ent.path), root, e->d_name) < 0)
			continue;
		if (n == cap) {
			struct gk_store_entry *grown;

			cap = cap ? cap * 2 : 16;
			grown = realloc(list, cap * sizeof(*list));
			if (!grown) {
				ret = -ENOMEM;
				gk_errprintf(err, "out of memory");
				goto out_dir;
			}
			list = grown;
		}
		list[n++] = ent;
	}
	if (entries) {
		if (n)
			qsort(list, n, sizeof(*list), entry_cmp);
		*entries = list;
		*count = n;
		list = NULL;
	}
out_dir:
	free(list);
	closedir(d);
	return ret;
}

int gk_store_list_at(int rootfd, const char *root, struct gk_store_entry **entries, size_t *n,
		     gk_error_t *err)
{
	uint64_t max_seq;

	*entries = NULL;
	*n = 0;
	return scan_root(root, rootfd, entries, n, &max_seq, err);
}

int gk_store_list(const char *root, struct gk_store_entry **entries, size_t *n, gk_error_t *err)
{
	int fd, ret;

	*entries = NULL;
	*n = 0;
	fd = open_root(root, err);
	if (fd < 0)
		return fd;
	ret = gk_store_list_at(fd, root, entries, n, err);
	close(fd);
	return ret;
}

int gk_store_next(const char *root, uint64_t *next, gk_error_t *err)
{
	uint64_t max_seq = 0;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ret;

	if (fd < 0) {
		ret = -errno;
		if (ret == -ENOENT) {
			*next = 1;
			return 0;
		}
		gk_errprintf(err, "%s: %s", root, strerror(-ret));
		return ret;
	}
	ret = scan_root(root, fd, NULL, NULL, &max_seq, err);
	close(fd);
	if (ret == 0)
		*next = max_seq + 1;
	return ret;
}

/* Leftovers of a prune that was killed half-way: never listed, never read. */
static void remove_dead_trash(int rootfd)
{
	struct dirent *e;
	DIR *d = dir_stream(rootfd);

	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;
		uint64_t seq;
		pid_t pid;

		if (parse_writer(e->d_name, GK_CKPT_TRASH_PREFIX, &seq, NULL, 0, &pid) < 0 ||
		    fstatat(rootfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (writer_gone(NULL, pid, st.st_mtime))
			remove_tree(rootfd, e->d_name);
	}
	closedir(d);
}

static struct gk_store_entry *find_entry(struct gk_store_entry *list, size_t n, uint64_t seq)
{
	for (size_t i = 0; i < n; i++)
		if (list[i].complete && list[i].sequence == seq)
			return &list[i];
	return NULL;
}

/* gk_store_prune_plan on an open root. */
static void plan_fd(int rootfd, struct gk_store_entry *list, size_t n, unsigned keep)
{
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		list[i].referenced = 0;
		if (!list[i].complete) {
			list[i].remove = list[i].stale;
			continue;
		}
		list[i].remove = kept >= keep;
		if (!list[i].remove)
			kept++;
	}
	/* Newest first, so that a checkpoint kept for a reference has its own
	 * references (none, in what the runtime writes) looked at too. */
	for (size_t i = 0; i < n; i++) {
		struct gk_ref *refs = NULL;
		size_t nrefs = 0;
		gk_error_t err;

		if (!list[i].complete || list[i].remove)
			continue;
		if (gk_chain_needs(rootfd, list[i].sequence, &refs, &nrefs, &err) < 0) {
			gk_warn("prune: %s: cannot tell which checkpoints it needs (%s); keeping "
				"every older one",
				list[i].path, err.text);
			for (size_t j = i + 1; j < n; j++)
				if (list[j].complete && list[j].remove) {
					list[j].remove = 0;
					list[j].referenced = 1;
				}
			continue;
		}
		for (size_t r = 0; r < nrefs; r++) {
			struct gk_store_entry *e = find_entry(list, n, refs[r].sequence);

			if (e && e->remove) {
				e->remove = 0;
				e->referenced = 1;
			}
		}
		gk_refs_free(refs, nrefs);
	}
}

int gk_store_prune_plan(const char *root, struct gk_store_entry *entries, size_t n, unsigned keep,
			gk_error_t *err)
{
	int fd = open_root(root, err);

	if (fd < 0)
		return fd;
	plan_fd(fd, entries, n, keep);
	close(fd);
	return 0;
}

void gk_store_prune_plan_at(int rootfd, struct gk_store_entry *entries, size_t n, unsigned keep)
{
	plan_fd(rootfd, entries, n, keep);
}

static int prune_fd(const char *root, int rootfd, unsigned keep, gk_error_t *err)
{
	struct gk_store_entry *list = NULL;
	size_t n = 0;
	uint64_t max_seq;
	int removed = 0, ret;

	ret = scan_root(root, rootfd, &list, &n, &max_seq, err);
	if (ret < 0)
		return ret;
	plan_fd(rootfd, list, n, keep);
	for (size_t i = 0; i < n; i++) {
		const struct gk_store_entry *e = &list[i];
		const char *name = strrchr(e->path, '/') + 1;
		int r;

		if (!e->remove)
			continue;
		/* criu/ is root's 0700: a user could rename the checkpoint to
		 * .trash but never empty it, leaving root's images behind in a
		 * name nobody lists. The shepherd prunes these as root. */
		if (e->transparent && geteuid() != 0) {
			gk_warn("prune: %s: transparent checkpoint left to the shepherd", e->path);
			continue;
		}
		r = e->complete ? delete_committed(rootfd, name, e->sequence)
				: remove_tree(rootfd, name);
		if (r < 0) {
			if (ret == 0) {
				gk_errprintf(err, "%s: cannot remove: %s", e->path, strerror(-r));
				ret = r;
			}
			continue;
		}
		gk_debug("prune: %s: removed", e->path);
		removed++;
	}
	remove_dead_trash(rootfd);
	free(list);
	return ret < 0 ? ret : removed;
}

int gk_store_remove(const char *root, uint64_t from, uint64_t to, gk_error_t *err)
{
	struct gk_store_entry *list = NULL;
	size_t n = 0;
	uint64_t max_seq;
	int fd, removed = 0, ret;

	fd = open_root(root, err);
	if (fd < 0)
		return fd;
	ret = scan_root(root, fd, &list, &n, &max_seq, err);
	for (size_t i = 0; ret == 0 && i < n; i++) {
		const struct gk_store_entry *e = &list[i];
		int r;

		if (!e->complete || e->sequence < from || e->sequence > to)
			continue;
		if (e->transparent && geteuid() != 0) {
			gk_warn("remove: %s: transparent checkpoint left to the shepherd", e->path);
			continue;
		}
		r = delete_committed(fd, strrchr(e->path, '/') + 1, e->sequence);
		if (r < 0) {
			gk_errprintf(err, "%s: cannot remove: %s", e->path, strerror(-r));
			ret = r;
			break;
		}
		removed++;
	}
	free(list);
	close(fd);
	return ret < 0 ? ret : removed;
}

int gk_store_prune_at(int rootfd, const char *root, unsigned keep, gk_error_t *err)
{
	return prune_fd(root, rootfd, keep, err);
}

int gk_store_prune(const char *root, unsigned keep, gk_error_t *err)
{
	int fd = open_root(root, err), ret;

	if (fd < 0)
		return fd;
	ret = prune_fd(root, fd, keep, err);
	close(fd);
	return ret;
}

/* ---- writing a checkpoint ---- */

/* A transaction in rootfd; sequence 0: the next free number. */
static int begin_fd(int rootfd, const char *root, uint64_t sequence, struct gk_store_txn *txn,
		    gk_error_t *err)
{
	char host[256], name[384];
	uint64_t max_seq;
	int ret;

	memset(txn, 0, sizeof(*txn));
	txn->dirfd = -1;
	txn->rootfd = -1;
	if (strlen(root) + sizeof(name) + 2 > sizeof(txn->tmpdir)) {
		gk_errprintf(err, "%s: path too long", root);
		return -ENAMETOOLONG;
	}
	ret = scan_root(root, rootfd, NULL, NULL, &max_seq, err);
	if (ret < 0)
		return ret;
	if (sequence && sequence <= max_seq) {
		gk_errprintf(err,
			     "%s already holds checkpoint %" PRIu64
			     " (or one being written or deleted); "
			     "cannot write %" PRIu64,
			     root, max_seq, sequence);
		return -EEXIST;
	}
	local_host(host, sizeof(host));
	for (int tries = 0;; tries++) {
		txn->sequence = (sequence ? sequence : max_seq + 1) + (uint64_t)tries;
		snprintf(name, sizeof(name), GK_CKPT_TMP_PREFIX GK_CKPT_SEQ_FMT ".%s.%d",
			 txn->sequence, host, (int)getpid());
		if (mkdirat(rootfd, name, 0700) == 0)
			break;
		/* Our own pid with this number: a transaction of this process
		 * that was never committed nor aborted. Take the next one. */
		if (errno != EEXIST || tries == 16 || sequence) {
			ret = -errno;
			gk_errprintf(err, "%s/%s: cannot create: %s", root, name, strerror(-ret));
			return ret;
		}
	}
	txn->dirfd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	txn->rootfd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	if (txn->dirfd < 0 || txn->rootfd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s/%s: %s", root, name, strerror(-ret));
		unlinkat(rootfd, name, AT_REMOVEDIR);
		if (txn->dirfd >= 0)
			close(txn->dirfd);
		if (txn->rootfd >= 0)
			close(txn->rootfd);
		txn->dirfd = txn->rootfd = -1;
		return ret;
	}
	snprintf(txn->root, sizeof(txn->root), "%s", root);
	join(txn->tmpdir, sizeof(txn->tmpdir), root, name);
	return 0;
}

int gk_store_begin_at(int rootfd, const char *root, struct gk_store_txn *txn, gk_error_t *err)
{
	return begin_fd(rootfd, root, 0, txn, err);
}

int gk_store_begin(const char *root, struct gk_store_txn *txn, gk_error_t *err)
{
	return gk_store_begin_seq(root, 0, txn, err);
}

int gk_store_begin_seq(const char *root, uint64_t sequence, struct gk_store_txn *txn,
		       gk_error_t *err)
{
	int rootfd, ret;

	memset(txn, 0, sizeof(*txn));
	txn->dirfd = -1;
	txn->rootfd = -1;
	ret = make_root(root);
	if (ret < 0) {
		gk_errprintf(err, "%s: cannot create: %s", root, strerror(-ret));
		return ret;
	}
	rootfd = open_root(root, err);
	if (rootfd < 0)
		return rootfd;
	ret = begin_fd(rootfd, root, sequence, txn, err);
	close(rootfd);
	return ret;
}

static int data_name_ok(const char *name)
{
	return gk_name_valid(name) && strcmp(name, GK_MANIFEST_FILE) != 0 &&
	       strcmp(name, GK_SIGNATURE_FILE) != 0;
}

int gk_store_create(struct gk_store_txn *txn, const char *name, int *fd, gk_error_t *err)
{
	if (txn->dirfd < 0) {
		gk_errprintf(err, "%s: no checkpoint is being written", name);
		return -EINVAL;
	}
	if (!data_name_ok(name)) {
		gk_errprintf(err, "data file name '%s' is not allowed", name);
		return -EINVAL;
	}
	*fd = openat(txn->dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (*fd < 0) {
		int ret = -errno;

		gk_errprintf(err, "%s/%s: %s", txn->tmpdir, name, strerror(-ret));
		return ret;
	}
	return 0;
}

/* The end of a transaction, committed or not: its descriptors closed. */
static void txn_close(struct gk_store_txn *txn)
{
	if (txn->dirfd >= 0)
		close(txn->dirfd);
	if (txn->rootfd >= 0)
		close(txn->rootfd);
	txn->dirfd = txn->rootfd = -1;
	txn->tmpdir[0] = 0;
}

void gk_store_abort(struct gk_store_txn *txn)
{
	const char *name;
	int ret;

	if (txn->dirfd >= 0) {
		close(txn->dirfd);
		txn->dirfd = -1;
	}
	if (txn->tmpdir[0] && txn->rootfd < 0)
		/* Detached (gk_store_detach): the writer is the job's user
		 * itself, in its own folder. */
		txn->rootfd = open(txn->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (txn->tmpdir[0] && txn->rootfd >= 0) {
		/* Through the root the transaction began in, not by path. */
		name = strrchr(txn->tmpdir, '/') + 1;
		ret = remove_tree(txn->rootfd, name);
		if (ret < 0)
			gk_warn("abort: %s: cannot remove: %s", txn->tmpdir, strerror(-ret));
	}
	txn_close(txn);
}

void gk_store_end(struct gk_store_txn *txn)
{
	txn_close(txn);
}

void gk_store_detach(struct gk_store_txn *txn)
{
	if (txn->dirfd >= 0)
		close(txn->dirfd);
	if (txn->rootfd >= 0)
		close(txn->rootfd);
	txn->dirfd = txn->rootfd = -1;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct gk_file_rec *)a)->name, ((const struct gk_file_rec *)b)->name);
}

static int is_criu_dir(int dirfd, const char *name)
{
	struct stat st;

	return !strcmp(name, GK_CRIU_DIR) && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode);
}

/* The data files of the directory, for a manifest that does not list them. */
static int list_files(struct gk_store_txn *txn, struct gk_manifest *m, gk_error_t *err)
{
	struct gk_file_rec *files = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d = dir_stream(txn->dirfd);
	int ret = 0;

	if (!d) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", txn->tmpdir, strerror(-ret));
		return ret;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, GK_MANIFEST_FILE) || !strcmp(e->d_name, GK_SIGNATURE_FILE))
			continue;
		if (is_criu_dir(txn->dirfd, e->d_name))
			continue;
		if (!data_name_ok(e->d_name) ||
		    fstatat(txn->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode)) {
			gk_errprintf(err, "%s/%s: not a data file of the checkpoint", txn->tmpdir,
				     e->d_name);
			ret = -EINVAL;
			goto out_dir;
		}
		if (n == cap) {
			struct gk_file_rec *grown;

			cap = cap ? cap * 2 : 8;
			grown = realloc(files, cap * sizeof(*files));
			if (!grown) {
				ret = -ENOMEM;
				gk_errprintf(err, "out of memory");
				goto out_dir;
			}
			files = grown;
		}
		memset(&files[n], 0, sizeof(files[n]));
		memcpy(files[n].name, e->d_name, strlen(e->d_name) + 1);
		files[n].size = (uint64_t)st.st_size;
		n++;
	}
	if (n)
		qsort(files, n, sizeof(*files), name_cmp);
	free(m->files);
	m->files = files;
	m->nfiles = n;
	files = NULL;
out_dir:
	free(files);
	closedir(d);
	return ret;
}

static int check_files(struct gk_store_txn *txn, const struct gk_manifest *m, gk_error_t *err)
{
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct gk_file_rec *f = &m->files[i];
		struct stat st;

		if (!data_name_ok(f->name)) {
			gk_errprintf(err, "data file name '%s' is not allowed", f->name);
			return -EINVAL;
		}
		if (fstatat(txn->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			gk_errprintf(err, "%s/%s: %s", txn->tmpdir, f->name, strerror(errno));
			return -errno;
		}
		if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != f->size) {
			gk_errprintf(err, "%s/%s is %lld bytes, the manifest says %" PRIu64,
				     txn->tmpdir, f->name, (long long)st.st_size, f->size);
			return -EINVAL;
		}
	}
	return 0;
}

static int write_file(int dirfd, const char *name, const char *text, size_t len)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	int ret = 0;

	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t w = write(fd, text, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			ret = -errno;
			break;
		}
		text += w;
		len -= (size_t)w;
	}
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	return ret;
}

/* Data written by the runtime may still sit in the page cache; the rename
 * must not reach the disk before the bytes it commits. */
static int sync_all(struct gk_store_txn *txn, gk_error_t *err)
{
	struct dirent *e;
	DIR *d = dir_stream(txn->dirfd);
	int ret = 0;

	if (!d) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", txn->tmpdir, strerror(-ret));
		return ret;
	}
	while ((e = readdir(d)) && ret == 0) {
		int f;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		/* The shepherd syncs its own folder; a user cannot open it. */
		if (is_criu_dir(txn->dirfd, e->d_name))
			continue;
		f = openat(txn->dirfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (f < 0 || fsync(f) < 0) {
			ret = -errno;
			gk_errprintf(err, "%s/%s: fsync: %s", txn->tmpdir, e->d_name,
				     strerror(-ret));
		}
		if (f >= 0)
			close(f);
	}
	closedir(d);
	if (ret == 0 && fsync(txn->dirfd) < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: fsync: %s", txn->tmpdir, strerror(-ret));
	}
	return ret;
}

int gk_store_seal(struct gk_store_txn *txn, struct gk_manifest *m, int *signed_out, gk_error_t *err)
{
	gk_error_t sub;
	struct gk_manifest *check = NULL;
	char *text = NULL;
	size_t len = 0;
	double t0 = gk_now(), t_manifest, t_signed;
	int ret;

	if (signed_out)
		*signed_out = 0;
	if (txn->dirfd < 0 || !txn->tmpdir[0]) {
		gk_errprintf(err, "commit: no checkpoint is being written");
		return -EINVAL;
	}
	m->sequence = txn->sequence;
	ret = m->nfiles ? check_files(txn, m, err) : list_files(txn, m, err);
	if (ret < 0)
		goto out_abort;
	ret = gk_manifest_to_json(m, &text, &len);
	if (ret < 0) {
		gk_errprintf(err, "%s: cannot build the manifest: %s", txn->tmpdir, strerror(-ret));
		goto out_abort;
	}
	/* The same checks a restore makes, before the checkpoint exists: a
	 * writer bug shows up here, not on the day the job needs to restart. */
	ret = gk_manifest_parse(text, len, &check, &sub);
	gk_manifest_free(check);
	if (ret < 0) {
		gk_errprintf(err, "%s: the manifest is not valid: %s", txn->tmpdir, sub.text);
		goto out_text;
	}
	ret = write_file(txn->dirfd, GK_MANIFEST_FILE, text, len);
	if (ret < 0) {
		gk_errprintf(err, "%s/%s: %s", txn->tmpdir, GK_MANIFEST_FILE, strerror(-ret));
		goto out_text;
	}
	t_manifest = gk_now();
	ret = gk_sign_at(text, len, txn->dirfd, GK_SIGNATURE_FILE, &sub);
	if (ret == -EHOSTUNREACH || ret == -EPROTO) {
		gk_warn("commit: %s: writing it unsigned: %s", txn->tmpdir, sub.text);
		unlinkat(txn->dirfd, GK_SIGNATURE_FILE, 0);
	} else if (ret < 0) {
		gk_errprintf(err, "%s", sub.text);
		goto out_text;
	} else if (signed_out) {
		*signed_out = 1;
	}
	t_signed = gk_now();
	ret = sync_all(txn, err);
	if (ret < 0)
		goto out_text;
	/* Where a slow commit's time went: the signature asks munged, the
	 * sync waits for the storage. */
	gk_info("commit: %s: sealed: manifest %.3f s, signature %.3f s, sync %.3f s", txn->tmpdir,
		t_manifest - t0, t_signed - t_manifest, gk_now() - t_signed);
	free(text);
	return 0;
out_text:
	free(text);
out_abort:
	gk_store_abort(txn);
	return ret;
}

int gk_store_publish_at(int rootfd, const char *root, const char *tmpname, uint64_t sequence,
			unsigned keep, gk_error_t *err)
{
	char final[64];
	char host[256];
	gk_error_t sub;
	struct stat st;
	uint64_t seq;
	pid_t pid;
	int ret, pr;

	/* The name may come from another process (the runtime, through the
	 * shepherd's socket): only a writer's folder of this very sequence. */
	if (strchr(tmpname, '/') ||
	    parse_writer(tmpname, GK_CKPT_TMP_PREFIX, &seq, host, sizeof(host), &pid) < 0 ||
	    seq != sequence) {
		gk_errprintf(err, "%s: not the folder of checkpoint %" PRIu64 " being written",
			     tmpname, sequence);
		return -EINVAL;
	}
	if (fstatat(rootfd, tmpname, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		ret = -errno;
		gk_errprintf(err, "%s/%s: %s", root, tmpname, strerror(-ret));
		return ret;
	}
	if (!S_ISDIR(st.st_mode)) {
		gk_errprintf(err, "%s/%s: not a directory", root, tmpname);
		return -ENOTDIR;
	}
	snprintf(final, sizeof(final), GK_CKPT_FMT, sequence);
	ret = rename_noreplace(rootfd, tmpname, final);
	if (ret < 0) {
		gk_errprintf(err, "%s/%s: cannot commit: %s", root, final, strerror(-ret));
		return ret;
	}
	if (fsync(rootfd) < 0) {
		/* Not known to be on disk: withdraw it rather than report a
		 * checkpoint as safe that a crash could still lose. */
		ret = -errno;
		gk_errprintf(err, "%s: fsync: %s", root, strerror(-ret));
		delete_committed(rootfd, final, sequence);
		return ret;
	}
	gk_debug("commit: %s/%s: committed", root, final);
	if (keep) {
		pr = prune_fd(root, rootfd, keep, &sub);
		if (pr < 0)
			gk_warn("prune: %s", sub.text);
	}
	return 0;
}

int gk_store_publish(const char *root, const char *tmpname, uint64_t sequence, unsigned keep,
		     gk_error_t *err)
{
	int rootfd = open_root(root, err), ret;

	if (rootfd < 0)
		return rootfd;
	ret = gk_store_publish_at(rootfd, root, tmpname, sequence, keep, err);
	close(rootfd);
	return ret;
}

int gk_store_commit(struct gk_store_txn *txn, struct gk_manifest *m, unsigned keep, int *signed_out,
		    gk_error_t *err)
{
	int ret = gk_store_seal(txn, m, signed_out, err);

	if (ret < 0)
		return ret;
	ret = gk_store_publish_at(txn->rootfd, txn->root, strrchr(txn->tmpdir, '/') + 1,
				  txn->sequence, keep, err);
	if (ret < 0) {
		gk_store_abort(txn);
		return ret;
	}
	txn_close(txn);
	return 0;
}

void gk_store_writer_name(uint64_t sequence, char *buf, size_t len)
{
	char host[256];

	local_host(host, sizeof(host));
	snprintf(buf, len, GK_CKPT_TMP_PREFIX GK_CKPT_SEQ_FMT ".%s.%d", sequence, host,
		 (int)getpid());
}
