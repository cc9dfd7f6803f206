/*
 * verify.c - opening a checkpoint for restore or inspection: nothing is
 * handed out until the directory, its owner, the manifest, the signature and
 * (when asked) every byte of data have been checked. A checkpoint that fails
 * any of it is refused whole; it is never loaded half-way.
 */
#include "config.h"
#include "image/image.h"
#include "common/error.h"
#include "common/log.h"
#include "image/ckptname.h"
#include "common/user.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Far above any real manifest (a few MiB for thousands of allocations), low
 * enough that a corrupt size cannot make us allocate the machine away. */
#define MANIFEST_MAX (256u << 20)
/* Read size while checking data: large enough that the syscall cost
 * vanishes, small enough to stay in L2/L3 between read and hash. */
#define READ_BLOCK (4u << 20)
#define MAX_THREADS 16
/* Below this much data, starting threads costs more than it saves. */
#define THREAD_MIN_BYTES (64ull << 20)

/* Whose the files must be: the checkpoint's user's, or root's for a held copy. */
static uid_t files_uid(const struct gk_load_opts *opts)
{
	return opts->held_by_root ? 0 : opts->uid;
}

/* Only the owner may have written anything the restore will trust. */
static int check_owner(const char *what, const struct stat *st, uid_t uid, gk_error_t *err)
{
	char have[64], want[64];

	if (st->st_uid != uid) {
		gk_user_name(st->st_uid, have, sizeof(have));
		gk_user_name(uid, want, sizeof(want));
		gk_errprintf(err, "%s is owned by %s (uid %u), not by %s (uid %u)", what, have,
			     (unsigned)st->st_uid, want, (unsigned)uid);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		gk_errprintf(err, "%s is writable by %s (mode %04o)", what,
			     (st->st_mode & S_IWGRP) && (st->st_mode & S_IWOTH) ? "group and others"
			     : (st->st_mode & S_IWGRP)				? "its group"
										: "others",
			     (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Open a file of the checkpoint without following a symbolic link, and check
 * that it is a regular file of the right owner. */
static int open_member(int dirfd, const char *name, uid_t uid, int *fd_out, struct stat *st,
		       gk_error_t *err)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	int ret;

	if (fd < 0) {
		ret = -errno;
		if (ret == -ELOOP) {
			gk_errprintf(err, "%s is a symbolic link; refusing to follow it", name);
			return -EPERM;
		}
		gk_errprintf(err, "%s: %s", name, strerror(-ret));
		return ret == -ENOENT ? -ENOENT : ret == -EACCES ? -EPERM : -EIO;
	}
	if (fstat(fd, st) < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", name, strerror(-ret));
		close(fd);
		return -EIO;
	}
	if (!S_ISREG(st->st_mode)) {
		gk_errprintf(err, "%s is not a regular file", name);
		close(fd);
		return -EINVAL;
	}
	ret = check_owner(name, st, uid, err);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	*fd_out = fd;
	return 0;
}

static int read_manifest(int dirfd, uid_t uid, char **text, size_t *len, gk_error_t *err)
{
	struct stat st;
	char *buf;
	int fd, ret;

	ret = open_member(dirfd, GK_MANIFEST_FILE, uid, &fd, &st, err);
	if (ret == -ENOENT)
		gk_errprintf(err, "no %s: not a checkpoint, or one that was never committed",
			     GK_MANIFEST_FILE);
	if (ret < 0)
		return ret;
	if (st.st_size > MANIFEST_MAX) {
		gk_errprintf(err, "%s is too large (%lld bytes)", GK_MANIFEST_FILE,
			     (long long)st.st_size);
		ret = -EINVAL;
		goto out_close;
	}
	ret = gk_read_small(fd, (size_t)st.st_size, &buf);
	if (ret < 0) {
		gk_errprintf(err, "%s: %s", GK_MANIFEST_FILE,
			     ret == -EIO ? "file shrank while being read" : strerror(-ret));
		goto out_close;
	}
	*text = buf;
	*len = (size_t)st.st_size;
out_close:
	close(fd);
	return ret;
}

/* ---- data ---- */

/* The data files a checkpoint reads: its own, then those of the checkpoints
 * it refers to (format 3), each open once. */
struct file_table {
	size_t n;
	struct open_file {
		uint64_t sequence; /* 0: the checkpoint's own */
		const char *name;  /* the manifest's */
		char label[GK_NAME_MAX + 32]; /* "ckpt.000005/device0.data" for messages */
		int fd;
	} *f;
};

static int table_fd(const struct file_table *t, uint64_t sequence, const char *name,
		    const char **label)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->f[i].sequence == sequence && strcmp(t->f[i].name, name) == 0) {
			*label = t->f[i].label;
			return t->f[i].fd;
		}
	*label = name;
	return -1;
}

struct unit {
	int fd;
	const char *file;
	uint64_t offset, len, expect;
	size_t object; /* allocation or region index */
	int region;
	int zero; /* of a zero part (format 5): no file, the bytes are zeros */
	uint32_t chunk;
};

struct checker {
	const struct gk_manifest *m;
	const int *cancel;
	struct unit *units;
	size_t nunits;
	size_t next; /* next unit to take (atomic) */
	pthread_mutex_t lock;
	size_t first_bad; /* lowest failed unit; nunits when none */
	int ret;
	gk_error_t err;
};

static void report(struct checker *k, size_t i, int ret, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void report(struct checker *k, size_t i, int ret, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&k->lock);
	/* Threads finish out of order; the problem reported is the first one
	 * in manifest order, so that a run always names the same one. */
	if (i < k->first_bad) {
		k->first_bad = i;
		k->ret = ret;
		va_start(ap, fmt);
		gk_verrprintf(&k->err, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&k->lock);
}

static void unit_name(const struct checker *k, const struct unit *u, char *buf, size_t n)
{
	if (u->region)
		snprintf(buf, n, "host region '%s'", k->m->regions[u->object].name);
	else
		snprintf(buf, n, "allocation %zu (0x%" PRIx64 ")", u->object,
			 k->m->allocs[u->object].address);
}

static void check_unit(struct checker *k, size_t i, uint8_t *buf)
{
	const struct unit *u = &k->units[i];
	struct gk_sum_state st;
	uint64_t done = 0;
	char what[128];

	if (u->zero) {
		if (gk_sum_zeros(gk_sum_algo_of(k->m->version), u->len) != u->expect) {
			unit_name(k, u, what, sizeof(what));
			report(k, i, -EBADMSG,
			       "%s, chunk %" PRIu32
			       ", is recorded as all zero, but its checksum is "
			       "not that of zeros: the manifest was changed",
			       what, u->chunk);
		}
		return;
	}
	gk_sum_init(&st, gk_sum_algo_of(k->m->version));
	while (done < u->len) {
		size_t want = u->len - done > READ_BLOCK ? READ_BLOCK : (size_t)(u->len - done);
		ssize_t r = pread(u->fd, buf, want, (off_t)(u->offset + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			unit_name(k, u, what, sizeof(what));
			if (r < 0)
				report(k, i, -EIO, "%s: read error at offset %" PRIu64 " (%s): %s",
				       u->file, u->offset + done, what, strerror(errno));
			else
				report(k, i, -EBADMSG, "%s: ends at offset %" PRIu64 ", inside %s",
				       u->file, u->offset + done, what);
			return;
		}
		gk_sum_update(&st, buf, (size_t)r);
		done += (uint64_t)r;
	}
	if (gk_sum_digest(&st) != u->expect) {
		unit_name(k, u, what, sizeof(what));
		report(k, i, -EBADMSG, "%s: checksum mismatch in %s, chunk %" PRIu32, u->file, what,
		       u->chunk);
	}
}

static void *checker_thread(void *arg)
{
	struct checker *k = arg;
	uint8_t *buf = malloc(READ_BLOCK);

	if (!buf) {
		report(k, 0, -ENOMEM, "out of memory checking data");
		return NULL;
	}
	for (;;) {
		size_t i = __atomic_fetch_add(&k->next, 1, __ATOMIC_RELAXED);

		if (i >= k->nunits)
			break;
		if (k->cancel && __atomic_load_n(k->cancel, __ATOMIC_ACQUIRE)) {
			report(k, 0, -ECANCELED, "the check was stopped: the process is ending");
			break;
		}
		/* Units past a known failure cannot change the answer. */
		pthread_mutex_lock(&k->lock);
		if (i > k->first_bad) {
			pthread_mutex_unlock(&k->lock);
			break;
		}
		pthread_mutex_unlock(&k->lock);
		check_unit(k, i, buf);
	}
	free(buf);
	return NULL;
}

/* The chunks of `size` bytes at `offset` of a file: those of an object from
 * its chunk `first` on. */
static size_t add_units(struct unit *u, int fd, const char *file, uint64_t offset, uint64_t size,
			const struct gk_chunk *chunks, uint32_t first, uint64_t chunk_size,
			size_t object, int region)
{
	uint32_t n = gk_chunk_count(size, chunk_size);

	for (uint32_t c = 0; c < n; c++) {
		uint64_t start = (uint64_t)c * chunk_size;

		u[c] = (struct unit){
		    .fd = fd,
		    .file = file,
		    .offset = offset + start,
		    .len = size - start < chunk_size ? size - start : chunk_size,
		    .expect = chunks[first + c].sum,
		    .object = object,
		    .region = region,
		    .chunk = first + c,
		};
	}
	return n;
}

static int check_data(const struct gk_manifest *m, const struct file_table *files,
		      const int *cancel, gk_error_t *err)
{
	struct checker k = {.m = m, .cancel = cancel};
	pthread_t tids[MAX_THREADS];
	uint64_t bytes = 0;
	size_t n = 0, nthreads = 1, started = 0;
	long cpus;
	int ret;

	for (size_t i = 0; i < m->nallocs; i++) {
		n += m->allocs[i].nchunks;
		bytes += m->allocs[i].size;
	}
	for (size_t i = 0; i < m->nregions; i++) {
		n += m->regions[i].nchunks;
		bytes += m->regions[i].size;
	}
	if (n == 0)
		return 0;
	k.units = calloc(n, sizeof(*k.units));
	if (!k.units)
		return -ENOMEM;
	for (size_t i = 0; i < m->nallocs; i++) {
		const struct gk_alloc_rec *a = &m->allocs[i];

		for (uint32_t p = 0; p < a->nparts; p++) {
			const struct gk_part *part = &a->parts[p];
			const char *label = "(zeros)";
			int fd =
			    part->zero ? -1 : table_fd(files, part->sequence, part->file, &label);
			size_t added = add_units(
			    k.units + k.nunits, fd, label, part->offset, part->size, a->chunks,
			    (uint32_t)(part->start / m->chunk_size), m->chunk_size, i, 0);

			for (size_t u = 0; u < added; u++)
				k.units[k.nunits + u].zero = part->zero;
			k.nunits += added;
		}
	}
	for (size_t i = 0; i < m->nregions; i++) {
		const struct gk_region_rec *r = &m->regions[i];
		const char *label;
		int fd = table_fd(files, 0, r->file, &label);

		k.nunits += add_units(k.units + k.nunits, fd, label, r->offset, r->size, r->chunks,
				      0, m->chunk_size, i, 1);
	}
	k.first_bad = k.nunits;
	pthread_mutex_init(&k.lock, NULL);
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (bytes >= THREAD_MIN_BYTES && cpus > 1)
		nthreads = cpus > MAX_THREADS ? MAX_THREADS : (size_t)cpus;
	if (nthreads > k.nunits)
		nthreads = k.nunits;
	for (size_t t = 1; t < nthreads; t++) {
		if (pthread_create(&tids[t], NULL, checker_thread, &k) != 0)
			break;
		started++;
	}
	checker_thread(&k);
	for (size_t t = 1; t <= started; t++)
		pthread_join(tids[t], NULL);
	ret = k.ret;
	if (ret < 0)
		gk_errprintf(err, "%s", k.err.text);
	pthread_mutex_destroy(&k.lock);
	free(k.units);
	return ret;
}

/* ---- the checkpoint ---- */

/* Open one data file of a checkpoint into the table: no link, the owner's,
 * the size the manifest gives. */
static int open_data(int dirfd, uint64_t sequence, const struct gk_file_rec *f, uid_t uid,
		     struct file_table *t, gk_error_t *err)
{
	struct open_file *o = &t->f[t->n];
	struct stat st;
	int ret;

	o->sequence = sequence;
	o->name = f->name;
	if (sequence)
		snprintf(o->label, sizeof(o->label), GK_CKPT_FMT "/%s", sequence, f->name);
	else
		snprintf(o->label, sizeof(o->label), "%s", f->name);
	ret = open_member(dirfd, f->name, uid, &o->fd, &st, err);
	if (ret == -ENOENT) {
		gk_errprintf(err, "%s is missing", o->label);
		return -EBADMSG;
	}
	if (ret < 0) {
		/* open_member names the bare file. */
		if (sequence && err) {
			gk_error_t sub;

			gk_errprintf(&sub, "%s", err->text);
			gk_errprintf(err, GK_CKPT_FMT "/%s", sequence, sub.text);
		}
		return ret;
	}
	t->n++;
	if ((uint64_t)st.st_size != f->size) {
		gk_errprintf(err, "%s is %lld bytes, the manifest says %" PRIu64, o->label,
			     (long long)st.st_size, f->size);
		return -EBADMSG;
	}
	posix_fadvise(o->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	return 0;
}

/* The folder that holds the checkpoint `dir` (its checkpoint root). */
static int open_parent(const char *dir, gk_error_t *err)
{
	char parent[4096];
	size_t n = strlen(dir);
	int fd;

	if (n >= sizeof(parent)) {
		gk_errprintf(err, "path too long");
		return -ENAMETOOLONG;
	}
	memcpy(parent, dir, n + 1);
	while (n > 1 && parent[n - 1] == '/')
		parent[--n] = 0;
	while (n > 0 && parent[n - 1] != '/')
		n--;
	while (n > 1 && parent[n - 1] == '/')
		n--;
	if (n == 0)
		snprintf(parent, sizeof(parent), ".");
	else
		parent[n] = 0;
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		gk_errprintf(err, "%s: %s", parent, strerror(errno));
		return -EIO;
	}
	return fd;
}

/*
 * A checkpoint this one refers to: the sibling folder ckpt.<sequence>, the
 * owner's, holding the checkpoint whose id the reference names, with the
 * files it lists. Its data is checked later, chunk by chunk, against this
 * checkpoint's own checksums; its signature is not needed for that.
 */
static int open_ref(int rootfd, const struct gk_ref *r, uid_t uid, struct file_table *t,
		    gk_error_t *err)
{
	char name[32], *text = NULL;
	gk_error_t sub;
	struct gk_manifest *base = NULL;
	struct stat st;
	size_t len;
	int fd, ret;

	snprintf(name, sizeof(name), GK_CKPT_FMT, r->sequence);
	fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = errno;
		if (ret == ENOENT)
			gk_errprintf(err,
				     "it is an increment of %s, which is not there (pruned, or not "
				     "staged with it)",
				     name);
		else
			gk_errprintf(
			    err, "it is an increment of %s, which cannot be opened: %s", name,
			    ret == ELOOP || ret == ENOTDIR ? "not a folder" : strerror(ret));
		return ret == EACCES ? -EPERM : -EBADMSG;
	}
	if (fstat(fd, &st) < 0) {
		ret = -EIO;
		gk_errprintf(err, "%s: %s", name, strerror(errno));
		goto out;
	}
	ret = check_owner(name, &st, uid, err);
	if (ret < 0)
		goto out;
	ret = read_manifest(fd, uid, &text, &len, &sub);
	if (ret == 0)
		ret = gk_manifest_parse(text, len, &base, &sub);
	if (ret < 0) {
		gk_errprintf(err, "its base %s is damaged: %s", name, sub.text);
		ret = ret == -ENOMEM ? ret : -EBADMSG;
		goto out;
	}
	if (base->version < 3 || strcmp(base->id, r->id) != 0) {
		gk_errprintf(err, "%s is not the checkpoint it was built on (id %s, expected %s)",
			     name, base->version < 3 ? "none" : base->id, r->id);
		ret = -EBADMSG;
		goto out;
	}
	for (size_t i = 0; i < r->nfiles && ret == 0; i++)
		ret = open_data(fd, r->sequence, &r->files[i], uid, t, err);
out:
	gk_manifest_free(base);
	free(text);
	close(fd);
	return ret;
}

static int open_files(const char *dir, int dirfd, int rootfd, const struct gk_manifest *m,
		      uid_t uid, struct file_table *t, gk_error_t *err)
{
	int own_root = -1, ret = 0;

	for (size_t i = 0; i < m->nfiles && ret == 0; i++)
		ret = open_data(dirfd, 0, &m->files[i], uid, t, err);
	if (ret < 0 || !m->nrefs)
		return ret;
	if (rootfd < 0) {
		own_root = open_parent(dir, err);
		if (own_root < 0)
			return own_root;
		rootfd = own_root;
	}
	for (size_t i = 0; i < m->nrefs && ret == 0; i++)
		ret = open_ref(rootfd, &m->refs[i], uid, t, err);
	if (own_root >= 0)
		close(own_root);
	return ret;
}

static int check_signature(const char *dir, int dirfd, const char *text, size_t len,
			   const struct gk_load_opts *opts, uid_t signer, int *signed_out,
			   gk_error_t *err)
{
	gk_error_t sub;
	struct stat st;
	int ret;

	*signed_out = 0;
	if (fstatat(dirfd, GK_SIGNATURE_FILE, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT) {
			gk_errprintf(err, "%s: %s", GK_SIGNATURE_FILE, strerror(errno));
			return -EIO;
		}
		if (opts->require_signature) {
			gk_errprintf(err, "%s is not signed, and a signature is required",
				     GK_MANIFEST_FILE);
			return -EBADMSG;
		}
		return 0;
	}
	if (S_ISLNK(st.st_mode)) {
		gk_errprintf(err, "%s is a symbolic link; refusing to follow it",
			     GK_SIGNATURE_FILE);
		return -EPERM;
	}
	ret = check_owner(GK_SIGNATURE_FILE, &st, files_uid(opts), err);
	if (ret < 0)
		return ret;
	/* Whoever wrote the file, the credential in it says who signed. */
	ret = gk_check_signature_at(text, len, dirfd, GK_SIGNATURE_FILE, signer, &sub);
	if (ret == -EHOSTUNREACH && !opts->require_signature) {
		gk_warn("open: %s: signature not checked: %s", dir, sub.text);
		return 0;
	}
	if (ret < 0) {
		gk_errprintf(err, "%s: %s", GK_SIGNATURE_FILE, sub.text);
		return ret == -ENOENT ? -EBADMSG : ret;
	}
	*signed_out = 1;
	return 0;
}

int gk_image_open_in(int rootfd, int dirfd, const char *dir, const struct gk_load_opts *opts,
		     struct gk_manifest **out, int *signed_by_munge, gk_error_t *err)
{
	struct gk_manifest *m = NULL;
	char *text = NULL;
	gk_error_t sub;
	struct file_table files = {0, NULL};
	size_t len = 0, nfiles;
	struct stat st;
	uid_t signer = opts->uid;
	int is_signed = 0, ret;

	*out = NULL;
	if (signed_by_munge)
		*signed_by_munge = 0;
	if (opts->uid == GK_UID_OF_MANIFEST && !opts->held_by_root) {
		gk_errprintf(err, "whose checkpoint it must be was not said");
		return -EINVAL;
	}
	if (fstat(dirfd, &st) < 0) {
		ret = -EIO;
		gk_errprintf(err, "%s", strerror(errno));
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		gk_errprintf(err, "not a directory");
		ret = -EINVAL;
		goto out;
	}
	ret = check_owner("the directory", &st, files_uid(opts), err);
	if (ret < 0)
		goto out;
	ret = read_manifest(dirfd, files_uid(opts), &text, &len, err);
	if (ret < 0)
		goto out;
	ret = gk_manifest_parse(text, len, &m, &sub);
	if (ret < 0) {
		gk_errprintf(err, "%s: %s", GK_MANIFEST_FILE, sub.text);
		goto out_text;
	}
	if (opts->held_by_root) {
		/* Root's files say nothing of whose checkpoint it is: the manifest
		 * says, and the signature must agree with it. */
		signer = opts->uid == GK_UID_OF_MANIFEST ? m->uid : opts->uid;
		if (m->uid != signer) {
			char have[64], want[64];

			gk_user_name(m->uid, have, sizeof(have));
			gk_user_name(signer, want, sizeof(want));
			gk_errprintf(err, "%s names %s (uid %u) as its writer, not %s (uid %u)",
				     GK_MANIFEST_FILE, have, (unsigned)m->uid, want,
				     (unsigned)signer);
			ret = -EPERM;
			goto out_manifest;
		}
	}
	if (opts->exe && m->exe[0] && strcmp(opts->exe, m->exe) != 0) {
		gk_errprintf(err, "%s", m->exe);
		ret = -ESRCH;
		goto out_manifest;
	}
	ret = check_signature(dir, dirfd, text, len, opts, signer, &is_signed, err);
	if (ret < 0)
		goto out_manifest;
	nfiles = m->nfiles;
	for (size_t i = 0; i < m->nrefs; i++)
		nfiles += m->refs[i].nfiles;
	files.f = calloc(nfiles ? nfiles : 1, sizeof(*files.f));
	if (!files.f) {
		ret = -ENOMEM;
		goto out_manifest;
	}
	ret = open_files(dir, dirfd, rootfd, m, files_uid(opts), &files, err);
	if (ret == 0 && opts->check_data)
		ret = check_data(m, &files, opts->cancel, err);
	for (size_t i = 0; i < files.n; i++)
		close(files.f[i].fd);
	free(files.f);
	if (ret < 0)
		goto out_manifest;
	*out = m;
	m = NULL;
	if (signed_by_munge)
		*signed_by_munge = is_signed;
out_manifest:
	gk_manifest_free(m);
out_text:
	free(text);
out:
	if (ret == -ENOMEM)
		gk_errprintf(err, "out of memory");
	return ret;
}

int gk_image_open_at(int dirfd, const char *dir, const struct gk_load_opts *opts,
		     struct gk_manifest **out, int *signed_by_munge, gk_error_t *err)
{
	return gk_image_open_in(-1, dirfd, dir, opts, out, signed_by_munge, err);
}

int gk_image_open(const char *dir, const struct gk_load_opts *opts, struct gk_manifest **out,
		  int *signed_by_munge, gk_error_t *err)
{
	struct stat st;
	int dirfd, ret;

	*out = NULL;
	if (signed_by_munge)
		*signed_by_munge = 0;
	if (lstat(dir, &st) < 0) {
		ret = -errno;
		gk_errprintf(err, "%s", strerror(-ret));
		return ret == -ENOENT ? -ENOENT : ret == -EACCES ? -EPERM : -EIO;
	}
	if (S_ISLNK(st.st_mode)) {
		gk_errprintf(err, "is a symbolic link; give the checkpoint directory itself");
		return -EPERM;
	}
	if (!S_ISDIR(st.st_mode)) {
		gk_errprintf(err, "not a directory");
		return -EINVAL;
	}
	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s", strerror(-ret));
		return ret == -EACCES ? -EPERM : -EIO;
	}
	ret = gk_image_open_at(dirfd, dir, opts, out, signed_by_munge, err);
	close(dirfd);
	return ret;
}
