/*
 * seal.c - criu/SEAL, the shepherd's record of what it dumped: for whom (uid,
 * gid, job, step, task), what (the digest of every file of criu/, the SHA-256 of the
 * runtime's manifest.json beside it, and of each part's, proc.PID/manifest.json,
 * when several processes of the task wrote one), how to plug it back (the program's stdio,
 * for CRIU's --inherit-fd) and on what (the GPUs' UUIDs and names).
 *
 * CRIU restores whatever its images say, as root, so a crafted image must
 * never reach it. The restore trusts an image only when
 *   - SEAL carries root's Munge credential (SEAL.sig, gk_root_sign_at): a
 *     user can compute every digest of a seal, but cannot make munged say
 *     that uid 0 vouched for it. This is what holds even when criu/ came
 *     through a folder its user could write (the user's ckpt.N, the round
 *     trip through the shared root), whatever owner and mode it shows now;
 *   - the folder is root's alone (root:root 0700, opened without following a
 *     link) and its files are exactly those sealed, with their digests;
 *   - the descriptor that was checked is the one CRIU is given
 *     (gk_seal_verify hands it back): nothing is opened by name again.
 */
#include "config.h"

#include "image/image.h"
#include "common/error.h"
#include "image/seal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEAL_FORMAT "gpuckpt-seal"
/* 3: SEAL.sig, root's credential over SEAL. Version 2 seals had none and
 * are refused: anyone could have computed one. */
#define SEAL_VERSION 3
#define SEAL_MAX (4u << 20)

/* Read a regular file of dirfd through `add`, one 1 MiB block at a time. */
static int read_blocks(int dirfd, const char *name, uint64_t *size,
		       void (*add)(void *ctx, const void *buf, size_t len), void *ctx)
{
	static __thread char buf[1 << 20];
	struct stat st;
	int fd, ret = 0;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	for (;;) {
		ssize_t r = read(fd, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			break;
		}
		if (r == 0)
			break;
		add(ctx, buf, (size_t)r);
	}
	close(fd);
	if (ret == 0 && size)
		*size = (uint64_t)st.st_size;
	return ret;
}

static void add_sha256(void *ctx, const void *buf, size_t len)
{
	gk_sha256_update(ctx, buf, len);
}

int gk_file_sha256(int dirfd, const char *name, char hex[65], uint64_t *size)
{
	struct gk_sha256_state s;
	int ret;

	gk_sha256_init(&s);
	ret = read_blocks(dirfd, name, size, add_sha256, &s);
	/* Always: final releases libcrypto's state. */
	if (gk_sha256_final(&s, hex) < 0 && ret == 0)
		ret = -ENOMEM;
	return ret;
}

static void add_xxh64(void *ctx, const void *buf, size_t len)
{
	uint64_t *h = ctx;

	*h = gk_xxh64(buf, len, *h);
}

/*
 * The images' digest: XXH64 chained over 1 MiB blocks (each block's seed is
 * the hash so far). What makes the images trustworthy is that only root can
 * write criu/; the digest catches corruption, and must not cost more than
 * CRIU itself: SHA-256 ran at about 0.25 GB/s here, a driver-only checkpoint
 * of 16 GiB writes 16 GiB of images.
 */
int gk_file_digest(int dirfd, const char *name, char hex[65], uint64_t *size)
{
	uint64_t h = 0;
	int ret = read_blocks(dirfd, name, size, add_xxh64, &h);

	if (ret == 0)
		snprintf(hex, 65, "xxh64:%016llx", (unsigned long long)h);
	return ret;
}

int gk_uuid_format(const CUuuid *u, char out[64])
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	return snprintf(out, 64,
			"GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
			b[12], b[13], b[14], b[15]) == 40
		   ? 0
		   : -EINVAL;
}

int gk_uuid_parse(const char *text, CUuuid *u)
{
	static const int dash[] = {8, 13, 18, 23};
	const char *p;
	int nb = 0;

	if (strncmp(text, "GPU-", 4) != 0 || strlen(text) != 40)
		return -EINVAL;
	p = text + 4;
	for (int i = 0; i < 36;) {
		unsigned v;

		if (i == dash[0] || i == dash[1] || i == dash[2] || i == dash[3]) {
			if (p[i] != '-')
				return -EINVAL;
			i++;
			continue;
		}
		if (sscanf(p + i, "%2x", &v) != 1 || !strchr("0123456789abcdef", p[i]) ||
		    !strchr("0123456789abcdef", p[i + 1]))
			return -EINVAL;
		u->bytes[nb++] = (char)v;
		i += 2;
	}
	return nb == 16 ? 0 : -EINVAL;
}

int gk_seal_cuda_pid(const struct gk_seal *s, pid_t pid)
{
	if (!s->have_cuda_pids)
		return 1;
	for (size_t i = 0; i < s->ncuda_pids; i++)
		if (s->cuda_pids[i] == pid)
			return 1;
	return 0;
}

int gk_stdio_kind_ok(const char *kind)
{
	static const char *const kinds[] = {"", "pipe", "socket", "file", "null", "tty"};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kind, kinds[i]))
			return 1;
	return 0;
}

/* Names CRIU writes: plain file names, nothing that climbs or hides. */
static int image_name_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > 255 || !strcmp(name, ".") || !strcmp(name, ".."))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (name[i] == '/' || (unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return 0;
	return 1;
}

/* The SHA-256 of a part's manifest: name/manifest.json under ckptfd, neither
 * followed if a link. */
static int part_sha256(int ckptfd, const char *name, char hex[65], gk_error_t *err)
{
	int pid, fd, ret;

	if (gk_ckpt_parse_part(name, &pid) < 0) {
		gk_errprintf(err, "%s: not a part's name", name);
		return -EINVAL;
	}
	fd = openat(ckptfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", name, strerror(errno));
		return ret;
	}
	ret = gk_file_sha256(fd, GK_MANIFEST_FILE, hex, NULL);
	close(fd);
	if (ret < 0)
		gk_errprintf(err, "%s/%s: %s", name, GK_MANIFEST_FILE, strerror(-ret));
	return ret;
}

int gk_seal_write(int ckptfd, int criufd, struct gk_seal *s, gk_error_t *err)
{
	struct json_object *root = json_object_new_object(), *files = json_object_new_object(),
			   *stdio = json_object_new_array(), *gpus = json_object_new_array();
	char hex[65];
	gk_error_t sub;
	const char *text;
	struct dirent *e;
	DIR *d = NULL;
	int fd = -1, dfd, ret = 0;
	size_t len;

	if (!root || !files || !stdio || !gpus) {
		ret = -ENOMEM;
		goto out_json;
	}
	ret = gk_file_sha256(ckptfd, GK_MANIFEST_FILE, hex, NULL);
	if (ret < 0) {
		gk_errprintf(err, "%s: %s", GK_MANIFEST_FILE, strerror(-ret));
		goto out_json;
	}
	json_object_object_add(root, "format", json_object_new_string(SEAL_FORMAT));
	json_object_object_add(root, "version", json_object_new_int(SEAL_VERSION));
	json_object_object_add(root, "uid", json_object_new_int64(s->uid));
	json_object_object_add(root, "gid", json_object_new_int64(s->gid));
	json_object_object_add(root, "job", json_object_new_string(s->job));
	json_object_object_add(root, "step", json_object_new_string(s->step));
	json_object_object_add(root, "task", json_object_new_int(s->task));
	json_object_object_add(root, "manifest_sha256", json_object_new_string(hex));
	json_object_object_add(root, "socket", json_object_new_string(s->socket));
	for (int i = 0; i < 3; i++)
		json_object_array_add(stdio, json_object_new_string(s->stdio[i]));
	json_object_object_add(root, "stdio", stdio);
	stdio = NULL;
	if (s->have_stdio_task) {
		struct json_object *kinds = json_object_new_array();

		for (int i = 0; kinds && i < 3; i++)
			json_object_array_add(kinds, json_object_new_string(s->stdio_task[i]));
		json_object_object_add(root, "stdio_task", kinds);
	}
	for (size_t i = 0; i < s->ngpus; i++) {
		struct json_object *g = json_object_new_object();

		json_object_object_add(g, "uuid", json_object_new_string(s->gpus[i].uuid));
		json_object_object_add(g, "name", json_object_new_string(s->gpus[i].name));
		json_object_array_add(gpus, g);
	}
	json_object_object_add(root, "gpus", gpus);
	gpus = NULL;
	if (s->nnode_gpus) {
		struct json_object *node = json_object_new_array();

		for (size_t i = 0; node && i < s->nnode_gpus; i++)
			json_object_array_add(node, json_object_new_string(s->node_gpus[i]));
		json_object_object_add(root, "node_gpus", node);
	}
	if (s->cuda_processes >= 0)
		json_object_object_add(root, "cuda_processes",
				       json_object_new_int(s->cuda_processes));
	if (s->have_cuda_pids) {
		struct json_object *list = json_object_new_array();

		for (size_t i = 0; list && i < s->ncuda_pids; i++)
			json_object_array_add(list, json_object_new_int((int)s->cuda_pids[i]));
		json_object_object_add(root, "cuda_pids", list);
	}
	if (s->nparts) {
		struct json_object *parts = json_object_new_object();

		for (size_t i = 0; parts && i < s->nparts && ret == 0; i++) {
			ret =
			    part_sha256(ckptfd, s->parts[i].name, s->parts[i].manifest_sha256, err);
			if (ret == 0)
				json_object_object_add(
				    parts, s->parts[i].name,
				    json_object_new_string(s->parts[i].manifest_sha256));
		}
		json_object_object_add(root, "parts", parts);
		if (ret < 0)
			goto out_json;
	}
	json_object_object_add(root, "criu_seconds", json_object_new_double(s->criu_seconds));
	json_object_object_add(root, "driver_seconds", json_object_new_double(s->driver_seconds));

	dfd = dup(criufd);
	if (dfd < 0 || !(d = fdopendir(dfd))) {
		ret = -errno;
		if (dfd >= 0)
			close(dfd);
		gk_errprintf(err, "criu/: %s", strerror(-ret));
		goto out_json;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		uint64_t size;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, GK_SEAL_FILE) || !strcmp(e->d_name, GK_SEAL_SIG_FILE))
			continue;
		if (!image_name_ok(e->d_name)) {
			gk_errprintf(err, "criu/: unexpected entry");
			ret = -EINVAL;
			goto out_dir;
		}
		ret = gk_file_digest(criufd, e->d_name, hex, &size);
		if (ret < 0) {
			gk_errprintf(err, "criu/%s: %s", e->d_name,
				     ret == -EINVAL ? "not a regular file" : strerror(-ret));
			goto out_dir;
		}
		json_object_object_add(files, e->d_name, json_object_new_string(hex));
		s->image_bytes += size;
	}
	json_object_object_add(root, "files", files);
	files = NULL;
	text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY);
	len = strlen(text);
	fd = openat(criufd, GK_SEAL_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0600);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len || fsync(fd) < 0) {
		ret = -errno;
		gk_errprintf(err, "criu/%s: %s", GK_SEAL_FILE, strerror(-ret));
		goto out_fd;
	}
	ret = gk_root_sign_at(text, len, criufd, GK_SEAL_SIG_FILE, &sub);
	if (ret < 0) {
		gk_errprintf(err,
			     "criu/%s: %s (a transparent checkpoint needs root's Munge "
			     "credential over its seal)",
			     GK_SEAL_SIG_FILE, sub.text);
		goto out_fd;
	}
	if (fsync(criufd) < 0) {
		ret = -errno;
		gk_errprintf(err, "criu/: fsync: %s", strerror(-ret));
	}
out_fd:
	if (fd >= 0)
		close(fd);
out_dir:
	closedir(d);
out_json:
	json_object_put(files);
	json_object_put(stdio);
	json_object_put(gpus);
	json_object_put(root);
	if (ret == -ENOMEM)
		gk_errprintf(err, "out of memory");
	return ret;
}

static const char *get_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : NULL;
}

static int get_int(struct json_object *o, const char *key, int64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
		return -EINVAL;
	*out = json_object_get_int64(v);
	return 0;
}

static int copy_str(char *dst, size_t n, const char *src)
{
	if (!src || strlen(src) >= n)
		return -EINVAL;
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

static int read_seal(int criufd, char **text, size_t *len, gk_error_t *err)
{
	struct stat st;
	char *buf;
	int fd = openat(criufd, GK_SEAL_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0) {
		gk_errprintf(err, "criu/%s: %s", GK_SEAL_FILE,
			     errno == ELOOP ? "is a symbolic link" : strerror(errno));
		return errno == ENOENT ? -ENOENT : -EPERM;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 || st.st_size > SEAL_MAX) {
		gk_errprintf(err, "criu/%s: not a root-owned regular file of sane size",
			     GK_SEAL_FILE);
		close(fd);
		return -EPERM;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		free(buf);
		close(fd);
		gk_errprintf(err, "criu/%s: cannot read it", GK_SEAL_FILE);
		return -EIO;
	}
	buf[st.st_size] = 0;
	close(fd);
	*text = buf;
	*len = (size_t)st.st_size;
	return 0;
}

static int parse_seal(struct json_object *root, struct gk_seal *s, gk_error_t *err)
{
	struct json_object *stdio, *gpus, *node, *files, *kinds;
	const char *fmt = get_str(root, "format");
	int64_t v, uid, gid, task;

	if (!fmt || strcmp(fmt, SEAL_FORMAT) || get_int(root, "version", &v) < 0 ||
	    v != SEAL_VERSION) {
		gk_errprintf(err, "criu/SEAL: not a version %d seal", SEAL_VERSION);
		return -EPROTO;
	}
	if (get_int(root, "uid", &uid) < 0 || get_int(root, "gid", &gid) < 0 ||
	    get_int(root, "task", &task) < 0 || uid < 0 || gid < 0 || uid > UINT32_MAX ||
	    gid > UINT32_MAX || task < 0 || task > INT32_MAX ||
	    copy_str(s->job, sizeof(s->job), get_str(root, "job")) < 0 ||
	    copy_str(s->step, sizeof(s->step), get_str(root, "step")) < 0 ||
	    copy_str(s->manifest_sha256, sizeof(s->manifest_sha256),
		     get_str(root, "manifest_sha256")) < 0 ||
	    copy_str(s->socket, sizeof(s->socket), get_str(root, "socket")) < 0 ||
	    !json_object_object_get_ex(root, "stdio", &stdio) ||
	    !json_object_is_type(stdio, json_type_array) || json_object_array_length(stdio) != 3 ||
	    !json_object_object_get_ex(root, "gpus", &gpus) ||
	    !json_object_is_type(gpus, json_type_array) ||
	    json_object_array_length(gpus) > GK_SEAL_MAX_GPUS) {
		gk_errprintf(err, "criu/SEAL: a field is missing or malformed");
		return -EINVAL;
	}
	s->uid = (uid_t)uid;
	s->gid = (gid_t)gid;
	s->task = (int)task;
	for (int i = 0; i < 3; i++) {
		struct json_object *e = json_object_array_get_idx(stdio, (size_t)i);

		if (!json_object_is_type(e, json_type_string) ||
		    copy_str(s->stdio[i], sizeof(s->stdio[i]), json_object_get_string(e)) < 0) {
			gk_errprintf(err, "criu/SEAL: stdio %d is malformed", i);
			return -EINVAL;
		}
	}
	/* Optional: seals written before the kinds were recorded lack it. */
	s->have_stdio_task = json_object_object_get_ex(root, "stdio_task", &kinds);
	if (s->have_stdio_task && (!json_object_is_type(kinds, json_type_array) ||
				   json_object_array_length(kinds) != 3)) {
		gk_errprintf(err, "criu/SEAL: stdio_task is malformed");
		return -EINVAL;
	}
	for (int i = 0; s->have_stdio_task && i < 3; i++) {
		struct json_object *e = json_object_array_get_idx(kinds, (size_t)i);

		if (!json_object_is_type(e, json_type_string) ||
		    copy_str(s->stdio_task[i], sizeof(s->stdio_task[i]),
			     json_object_get_string(e)) < 0 ||
		    !gk_stdio_kind_ok(s->stdio_task[i])) {
			gk_errprintf(err, "criu/SEAL: stdio_task %d is malformed", i);
			return -EINVAL;
		}
	}
	s->ngpus = json_object_array_length(gpus);
	for (size_t i = 0; i < s->ngpus; i++) {
		struct json_object *g = json_object_array_get_idx(gpus, i);
		CUuuid u;

		if (copy_str(s->gpus[i].uuid, sizeof(s->gpus[i].uuid), get_str(g, "uuid")) < 0 ||
		    gk_uuid_parse(s->gpus[i].uuid, &u) < 0 ||
		    copy_str(s->gpus[i].name, sizeof(s->gpus[i].name), get_str(g, "name")) < 0) {
			gk_errprintf(err, "criu/SEAL: GPU %zu is malformed", i);
			return -EINVAL;
		}
	}
	if (!json_object_object_get_ex(root, "files", &files) ||
	    !json_object_is_type(files, json_type_object)) {
		gk_errprintf(err, "criu/SEAL: no file list");
		return -EINVAL;
	}
	json_object_object_foreach(files, fname, fval)
	{
		if (!image_name_ok(fname) || !strcmp(fname, GK_SEAL_FILE) ||
		    !strcmp(fname, GK_SEAL_SIG_FILE) || !strcmp(fname, GK_SEAL_RESTORE_LOG) ||
		    !strcmp(fname, GK_SEAL_RESTORE_STATS) ||
		    !json_object_is_type(fval, json_type_string)) {
			gk_errprintf(err, "criu/SEAL: the file list is malformed");
			return -EINVAL;
		}
	}
	/* Optional: seals written before it was recorded have none (-1). */
	s->cuda_processes = -1;
	if (json_object_object_get_ex(root, "cuda_processes", &node)) {
		int64_t count;

		if (get_int(root, "cuda_processes", &count) < 0 || count < 0 || count > 4096) {
			gk_errprintf(err, "criu/SEAL: cuda_processes is malformed");
			return -EINVAL;
		}
		s->cuda_processes = (int)count;
	}
	/* Optional too; when both are there they agree. */
	s->have_cuda_pids = json_object_object_get_ex(root, "cuda_pids", &node);
	s->ncuda_pids = 0;
	if (s->have_cuda_pids) {
		size_t n = json_object_is_type(node, json_type_array)
			       ? json_object_array_length(node)
			       : GK_SEAL_MAX_CUDA_PIDS + 1;

		if (n > GK_SEAL_MAX_CUDA_PIDS ||
		    (s->cuda_processes >= 0 && n != (size_t)s->cuda_processes)) {
			gk_errprintf(err, "criu/SEAL: cuda_pids is malformed (not a list of "
					  "cuda_processes process ids)");
			return -EINVAL;
		}
		for (size_t i = 0; i < n; i++) {
			struct json_object *e = json_object_array_get_idx(node, i);
			int64_t pid = json_object_is_type(e, json_type_int) ? json_object_get_int64(e)
									    : 0;

			if (pid < 1 || pid > INT32_MAX) {
				gk_errprintf(err, "criu/SEAL: cuda_pids %zu is not a process id", i);
				return -EINVAL;
			}
			s->cuda_pids[s->ncuda_pids++] = (pid_t)pid;
		}
	}
	/* Optional: a task with one runtime, and older seals, have none. */
	s->nparts = 0;
	if (json_object_object_get_ex(root, "parts", &node)) {
		if (!json_object_is_type(node, json_type_object) ||
		    json_object_object_length(node) > GK_SEAL_MAX_PARTS) {
			gk_errprintf(err, "criu/SEAL: parts is malformed");
			return -EINVAL;
		}
		json_object_object_foreach(node, pname, pval)
		{
			struct gk_seal_part *p = &s->parts[s->nparts];
			int pid;

			if (gk_ckpt_parse_part(pname, &pid) < 0 ||
			    !json_object_is_type(pval, json_type_string) ||
			    copy_str(p->name, sizeof(p->name), pname) < 0 ||
			    copy_str(p->manifest_sha256, sizeof(p->manifest_sha256),
				     json_object_get_string(pval)) < 0 ||
			    strlen(p->manifest_sha256) != 64) {
				gk_errprintf(err, "criu/SEAL: part %zu is malformed", s->nparts);
				return -EINVAL;
			}
			s->nparts++;
		}
	}
	/* Optional: seals written before it was recorded have none. */
	s->nnode_gpus = 0;
	if (json_object_object_get_ex(root, "node_gpus", &node)) {
		if (!json_object_is_type(node, json_type_array) ||
		    json_object_array_length(node) > GK_SEAL_MAX_GPUS) {
			gk_errprintf(err, "criu/SEAL: node_gpus is malformed");
			return -EINVAL;
		}
		for (size_t i = 0; i < json_object_array_length(node); i++) {
			struct json_object *e = json_object_array_get_idx(node, i);
			CUuuid u;

			if (!json_object_is_type(e, json_type_string) ||
			    copy_str(s->node_gpus[i], sizeof(s->node_gpus[i]),
				     json_object_get_string(e)) < 0 ||
			    gk_uuid_parse(s->node_gpus[i], &u) < 0) {
				gk_errprintf(err, "criu/SEAL: node GPU %zu is malformed", i);
				return -EINVAL;
			}
			s->nnode_gpus = i + 1;
		}
	}
	return 0;
}

int gk_seal_parse(const char *text, size_t len, struct gk_seal *s, gk_error_t *err)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *root;
	int ret;

	memset(s, 0, sizeof(*s));
	if (!tok)
		return -ENOMEM;
	root = json_tokener_parse_ex(tok, text, (int)len);
	/* One object and nothing after it. */
	if (!root || !json_object_is_type(root, json_type_object) ||
	    json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		gk_errprintf(err, "criu/SEAL: not one JSON object");
		ret = -EINVAL;
	} else {
		ret = parse_seal(root, s, err);
	}
	json_object_put(root);
	json_tokener_free(tok);
	return ret;
}

/* Every file of the folder is sealed with its hash, and every sealed file is
 * there; only SEAL itself and the log of an earlier restore are not sealed. */
static int check_files(int criufd, struct json_object *files, uint64_t *bytes, gk_error_t *err)
{
	struct dirent *e;
	size_t seen = 0;
	DIR *d;
	int dfd = dup(criufd), ret = 0;

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		gk_errprintf(err, "criu/: %s", strerror(errno));
		return -EIO;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		struct json_object *want;
		struct stat st;
		uint64_t size = 0;
		char hex[65];
		int r;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, GK_SEAL_FILE) || !strcmp(e->d_name, GK_SEAL_SIG_FILE))
			continue;
		if (fstatat(criufd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != 0) {
			gk_errprintf(err, "criu/%s: not a root-owned regular file", e->d_name);
			ret = -EPERM;
			break;
		}
		/* Written by a restore from here (a root job's CRIU writes its
		 * statistics too): a second restore must not be refused. */
		if (!strcmp(e->d_name, GK_SEAL_RESTORE_LOG) || !strcmp(e->d_name, GK_SEAL_RESTORE_STATS))
			continue;
		if (!json_object_object_get_ex(files, e->d_name, &want) ||
		    !json_object_is_type(want, json_type_string)) {
			gk_errprintf(err, "criu/%s: not in the seal", e->d_name);
			ret = -EBADMSG;
			break;
		}
		r = gk_file_digest(criufd, e->d_name, hex, &size);
		if (r < 0 || strcmp(hex, json_object_get_string(want)) != 0) {
			gk_errprintf(err, "criu/%s: %s", e->d_name,
				     r < 0 ? strerror(-r) : "its checksum differs from the seal's");
			ret = -EBADMSG;
			break;
		}
		*bytes += size;
		seen++;
	}
	closedir(d);
	if (ret == 0 && seen != (size_t)json_object_object_length(files)) {
		json_object_object_foreach(files, name, val)
		{
			(void)val;
			if (faccessat(criufd, name, F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
				gk_errprintf(err, "criu/%s: sealed but missing", name);
				break;
			}
		}
		ret = -EBADMSG;
	}
	return ret;
}

int gk_seal_verify(int ckptfd, uid_t uid, struct gk_seal *s, int *criufd_out, gk_error_t *err)
{
	struct json_object *root = NULL, *files;
	char *text = NULL, hex[65];
	gk_error_t sub;
	struct stat st;
	size_t len = 0;
	int criufd, ret;

	memset(s, 0, sizeof(*s));
	if (criufd_out)
		*criufd_out = -1;
	criufd = openat(ckptfd, GK_CRIU_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (criufd < 0) {
		ret = errno;
		gk_errprintf(err, "criu/: %s",
			     ret == ELOOP || ret == ENOTDIR ? "not a directory (a symbolic link?)"
							    : strerror(ret));
		return ret == ENOENT ? -ENOENT : -EPERM;
	}
	if (fstat(criufd, &st) < 0 || st.st_uid != 0 || st.st_gid != 0 ||
	    (st.st_mode & 07777) != 0700) {
		gk_errprintf(err, "criu/: owned by %u:%u mode %04o, not root:root 0700",
			     (unsigned)st.st_uid, (unsigned)st.st_gid,
			     (unsigned)(st.st_mode & 07777));
		ret = -EPERM;
		goto out_dir;
	}
	ret = read_seal(criufd, &text, &len, err);
	if (ret < 0)
		goto out_dir;
	/* Who made it comes first: nothing else in a seal is believed before
	 * root's credential over its exact bytes. */
	ret = gk_root_check_at(text, len, criufd, GK_SEAL_SIG_FILE, &sub);
	if (ret < 0) {
		gk_errprintf(err, "criu/%s: %s", ret == -ENOENT ? GK_SEAL_SIG_FILE : "SEAL",
			     ret == -ENOENT
				 ? "missing: the seal carries no credential of root's, so "
				   "anyone could have made it; refused"
				 : sub.text);
		if (ret == -ENOENT)
			ret = -EPERM;
		goto out_json;
	}
	root = json_tokener_parse(text);
	if (!root || !json_object_is_type(root, json_type_object)) {
		gk_errprintf(err, "criu/SEAL: not JSON");
		ret = -EINVAL;
		goto out_json;
	}
	ret = parse_seal(root, s, err);
	if (ret < 0)
		goto out_json;
	if (s->uid != uid) {
		gk_errprintf(err, "criu/SEAL: sealed for uid %u, not for uid %u", (unsigned)s->uid,
			     (unsigned)uid);
		ret = -EPERM;
		goto out_json;
	}
	json_object_object_get_ex(root, "files", &files);
	ret = check_files(criufd, files, &s->image_bytes, err);
	if (ret < 0)
		goto out_json;
	ret = gk_file_sha256(ckptfd, GK_MANIFEST_FILE, hex, NULL);
	if (ret < 0 || strcmp(hex, s->manifest_sha256) != 0) {
		/* criu/ moved under another checkpoint's manifest. */
		gk_errprintf(err, "%s: %s", GK_MANIFEST_FILE,
			     ret < 0 ? strerror(-ret) : "not the manifest the seal was made with");
		ret = -EBADMSG;
		goto out_json;
	}
	for (size_t i = 0; i < s->nparts; i++) {
		ret = part_sha256(ckptfd, s->parts[i].name, hex, err);
		if (ret == 0 && strcmp(hex, s->parts[i].manifest_sha256) != 0) {
			/* Another checkpoint's part moved under this seal. */
			gk_errprintf(err, "%s/%s: not the manifest the seal was made with",
				     s->parts[i].name, GK_MANIFEST_FILE);
			ret = -EBADMSG;
		}
		if (ret < 0) {
			ret = -EBADMSG; /* a part not there is as bad as one changed */
			break;
		}
	}
out_json:
	json_object_put(root);
	free(text);
out_dir:
	if (ret == 0 && criufd_out)
		*criufd_out = criufd;
	else
		close(criufd);
	return ret;
}
