/*
 * sign.c - Munge credentials over a text's SHA-256: the one place where the
 * payloads gpuckpt signs are defined.
 *
 *	manifest.sig   "gpuckpt-manifest-sha256:<hex>", made by the job's user
 *	               (the runtime): a restore accepts only its own user's.
 *	criu/SEAL.sig  "gpuckpt-seal-sha256:<hex>", made by root (the
 *	               shepherd): only root's is accepted, so nobody else can
 *	               make a CRIU image that root will restore.
 *
 * Munge is already trusted by every Slurm cluster to say which user produced
 * a message: munged, alone holding the cluster's key, puts the caller's uid
 * into the credential, and any node can decode it. The prefix keeps one kind
 * from passing for the other (root also signs a manifest when the shepherd
 * writes one).
 */
#include "config.h"
#include "image/image.h"
#include "common/error.h"
#include "common/io.h"
#include "common/user.h"
#include "common/settings_env.h"

#include "common/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <munge.h>

#define MANIFEST_PREFIX "gpuckpt-manifest-sha256:"
#define SEAL_PREFIX "gpuckpt-seal-sha256:"
/* A credential over a payload of ~90 bytes is well under 1 KiB; anything
 * near this limit is not one of ours. */
#define SIG_MAX (64u << 10)

/* The socket a call talks to munged through: "" for munged's default. Sites
 * that run munged on another socket say so in GPUCKPT_MUNGE_SOCKET; it is
 * ignored in a set-uid program, where the environment belongs to someone
 * else, and for root's seal, which must come from the node's own munged. */
static const char *socket_of(int allow_env)
{
	const char *socket = allow_env ? gk_getenv(MUNGE_SOCKET) : NULL;

	return socket ? socket : "";
}

static munge_ctx_t new_ctx(const char *socket, gk_error_t *err)
{
	munge_ctx_t ctx = munge_ctx_create();

	if (!ctx) {
		gk_errprintf(err, "munge: out of memory");
		return NULL;
	}
	if (*socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
		gk_errprintf(err, "munge: cannot use socket %s: %s", socket,
			     munge_ctx_strerror(ctx));
		munge_ctx_destroy(ctx);
		return NULL;
	}
	return ctx;
}

/*
 * munged out of reach, remembered. A socket file nobody listens on (munged
 * stopped or crashed) costs every call 2.25 s of libmunge's connection
 * retries (10 tries, 50 ms longer each time), and a checkpoint after SIGTERM
 * has only seconds. So a failure that took that long is remembered for
 * UNREACHABLE_S, and calls through the same socket meanwhile fail at once,
 * with the same cause. One that came at once (no socket file) costs nothing
 * and is not remembered. The lock is only tried: a child forked while
 * another thread held it must still sign (it then asks munged itself).
 */
#define UNREACHABLE_S 60.0
#define SLOW_FAILURE_S 1.0

static pthread_mutex_t unreach_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char socket[128];
	double at; /* 0: nothing remembered */
	char why[200];
} unreach;

/* 1 (and why) when munged did not answer on socket less than
 * UNREACHABLE_S ago. */
static int known_unreachable(const char *socket, char *why, size_t n)
{
	double now = gk_now();
	int known;

	if (pthread_mutex_trylock(&unreach_lock))
		return 0;
	known = unreach.at > 0 && now - unreach.at < UNREACHABLE_S &&
		!strcmp(unreach.socket, socket);
	if (known)
		snprintf(why, n, "%s (%.0f s ago; not asked again for %.0f s after that, since each "
			 "try waits 2 s)", unreach.why, now - unreach.at, UNREACHABLE_S);
	pthread_mutex_unlock(&unreach_lock);
	return known;
}

static void remember_unreachable(const char *socket, double t0, const char *why)
{
	double now = gk_now();

	if (now - t0 < SLOW_FAILURE_S || strlen(socket) >= sizeof(unreach.socket) ||
	    pthread_mutex_trylock(&unreach_lock))
		return;
	snprintf(unreach.socket, sizeof(unreach.socket), "%s", socket);
	snprintf(unreach.why, sizeof(unreach.why), "%s", why);
	unreach.at = now;
	pthread_mutex_unlock(&unreach_lock);
}

/* A credential of the caller's uid over prefix + SHA-256(text), into
 * dirfd/name (created 0600, never through a link). */
static int sign_at(const char *prefix, int allow_env, const char *text, size_t len, int dirfd,
		   const char *name, gk_error_t *err)
{
	char payload[64 + 65], *cred = NULL, why[400];
	const char *socket = socket_of(allow_env);
	size_t plen = strlen(prefix);
	munge_ctx_t ctx;
	munge_err_t e;
	int fd, ret = 0;
	double t0;

	if (known_unreachable(socket, why, sizeof(why))) {
		gk_errprintf(err, "cannot reach munged to sign: %s", why);
		return -EHOSTUNREACH;
	}
	memcpy(payload, prefix, plen);
	gk_sha256_hex(text, len, payload + plen);
	ctx = new_ctx(socket, err);
	if (!ctx)
		return -ENOMEM;
	/* The longest life munged allows: a checkpoint is restored hours or
	 * days later, and expiry is accepted on check anyway (see below). */
	munge_ctx_set(ctx, MUNGE_OPT_TTL, (int)MUNGE_TTL_MAXIMUM);
	t0 = gk_now();
	e = munge_encode(&cred, ctx, payload, (int)(plen + 64));
	if (e == EMUNGE_SOCKET) {
		remember_unreachable(socket, t0, munge_ctx_strerror(ctx));
		gk_errprintf(err, "cannot reach munged to sign: %s", munge_ctx_strerror(ctx));
		ret = -EHOSTUNREACH;
		goto out_ctx;
	}
	if (e != EMUNGE_SUCCESS) {
		gk_errprintf(err, "munge could not sign: %s", munge_ctx_strerror(ctx));
		ret = -EPROTO;
		goto out_ctx;
	}
	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", name, strerror(-ret));
		goto out_cred;
	}
	ret = gk_write_all(fd, cred, strlen(cred));
	if (ret == 0)
		ret = gk_write_all(fd, "\n", 1);
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret < 0) {
		gk_errprintf(err, "%s: %s", name, strerror(-ret));
		unlinkat(dirfd, name, 0);
	}
out_cred:
	free(cred);
out_ctx:
	munge_ctx_destroy(ctx);
	return ret;
}

/* The credential in dirfd/name: a regular file (not a link) of sane size. */
static int read_cred(int dirfd, const char *name, char **out, gk_error_t *err)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0;
	int fd, ret = 0;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ELOOP) {
			gk_errprintf(err, "%s is a symbolic link", name);
			return -EPERM;
		}
		gk_errprintf(err, "%s: %s", name, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", name, strerror(-ret));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > SIG_MAX) {
		gk_errprintf(err, "%s is not a signature (%s)", name,
			     S_ISREG(st.st_mode) ? "too large" : "not a regular file");
		ret = -EBADMSG;
		goto out_close;
	}
	ret = gk_read_small(fd, (size_t)st.st_size, &buf);
	if (ret < 0) {
		gk_errprintf(err, "%s: %s", name,
			     ret == -EIO ? "file shrank while being read" : strerror(-ret));
		goto out_close;
	}
	n = (size_t)st.st_size;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r' ||
			 buf[n - 1] == '\t'))
		n--;
	buf[n] = 0;
	if (n == 0 || strlen(buf) != n) {
		gk_errprintf(err, "%s is not a Munge credential", name);
		ret = -EBADMSG;
		goto out_free;
	}
	*out = buf;
	buf = NULL;
out_free:
	free(buf);
out_close:
	close(fd);
	return ret;
}

/*
 * Decode the credential in dirfd/name; 0 when it carries prefix +
 * SHA-256(text), with *signer the uid munged put into it. -EBADMSG: not a
 * valid credential, or over something else (err says which);
 * -EHOSTUNREACH: munged out of reach; -ENOENT, -EPERM from reading it.
 */
static int check_at(const char *prefix, int allow_env, const char *text, size_t len, int dirfd,
		    const char *name, const char *what, uid_t *signer, gk_error_t *err)
{
	char *cred = NULL, hex[65], why[400];
	const char *socket = socket_of(allow_env);
	size_t plen = strlen(prefix);
	void *payload = NULL;
	int n = 0, ret = 0;
	uid_t cuid;
	gid_t cgid;
	munge_ctx_t ctx;
	munge_err_t e;
	double t0;

	ret = read_cred(dirfd, name, &cred, err);
	if (ret < 0)
		return ret;
	if (known_unreachable(socket, why, sizeof(why))) {
		gk_errprintf(err, "cannot reach munged to check the signature: %s", why);
		ret = -EHOSTUNREACH;
		goto out_cred;
	}
	ctx = new_ctx(socket, err);
	if (!ctx) {
		ret = -ENOMEM;
		goto out_cred;
	}
	t0 = gk_now();
	e = munge_decode(cred, ctx, &payload, &n, &cuid, &cgid);
	switch (e) {
	case EMUNGE_SUCCESS:
	/* munged still returns the payload and the encoding uid for these
	 * three (its decoder keeps them; munge_decode(3) says so for the
	 * payload): expiry is normal for a checkpoint restored days after it
	 * was written, a replay is every restore after the first, and a
	 * rewound credential comes from another node's clock. */
	case EMUNGE_CRED_EXPIRED:
	case EMUNGE_CRED_REPLAYED:
	case EMUNGE_CRED_REWOUND:
		break;
	case EMUNGE_SOCKET:
		remember_unreachable(socket, t0, munge_ctx_strerror(ctx));
		gk_errprintf(err, "cannot reach munged to check the signature: %s",
			     munge_ctx_strerror(ctx));
		ret = -EHOSTUNREACH;
		goto out_payload;
	case EMUNGE_NO_MEMORY:
		gk_errprintf(err, "munge: out of memory");
		ret = -ENOMEM;
		goto out_payload;
	default:
		gk_errprintf(err, "the signature is not a valid Munge credential: %s",
			     munge_ctx_strerror(ctx));
		ret = -EBADMSG;
		goto out_payload;
	}
	if (!payload || n != (int)(plen + 64) || memcmp(payload, prefix, plen) != 0) {
		gk_errprintf(err, "the signature is not a gpuckpt %s signature", what);
		ret = -EBADMSG;
		goto out_payload;
	}
	gk_sha256_hex(text, len, hex);
	if (memcmp((char *)payload + plen, hex, 64) != 0) {
		gk_errprintf(
		    err,
		    "the %s was changed after it was signed (its SHA-256 no longer matches "
		    "the signature)",
		    what);
		ret = -EBADMSG;
		goto out_payload;
	}
	*signer = cuid;
out_payload:
	free(payload);
	munge_ctx_destroy(ctx);
out_cred:
	free(cred);
	return ret;
}

/* "dir/name" split for the path-taking calls (the runtime, in its own
 * folder, and tests). */
static int open_parent(const char *path, const char **name)
{
	const char *slash = strrchr(path, '/');
	char dir[4096];

	if (!slash) {
		*name = path;
		return open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if ((size_t)(slash - path) >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = 0;
	*name = slash + 1;
	return open(slash == path ? "/" : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int gk_sign_at(const char *text, size_t len, int dirfd, const char *name, gk_error_t *err)
{
	return sign_at(MANIFEST_PREFIX, 1, text, len, dirfd, name, err);
}

int gk_sign(const char *text, size_t len, const char *sigpath, gk_error_t *err)
{
	const char *name;
	int dirfd = open_parent(sigpath, &name), ret;

	if (dirfd < 0) {
		gk_errprintf(err, "%s: %s", sigpath, strerror(errno));
		return -errno;
	}
	ret = sign_at(MANIFEST_PREFIX, 1, text, len, dirfd, name, err);
	close(dirfd);
	return ret;
}

int gk_check_signature_at(const char *text, size_t len, int dirfd, const char *name, uid_t uid,
			  gk_error_t *err)
{
	char signer[64], owner[64];
	uid_t cuid;
	int ret = check_at(MANIFEST_PREFIX, 1, text, len, dirfd, name, "manifest", &cuid, err);

	if (ret < 0)
		return ret;
	if (cuid != uid) {
		gk_user_name(cuid, signer, sizeof(signer));
		gk_user_name(uid, owner, sizeof(owner));
		gk_errprintf(err, "the manifest was signed by %s (uid %u), not by %s (uid %u)",
			     signer, (unsigned)cuid, owner, (unsigned)uid);
		return -EPERM;
	}
	return 0;
}

int gk_check_signature(const char *text, size_t len, const char *sigpath, uid_t uid,
		       gk_error_t *err)
{
	const char *name;
	int dirfd = open_parent(sigpath, &name), ret;

	if (dirfd < 0) {
		gk_errprintf(err, "%s: %s", sigpath, strerror(errno));
		return -errno;
	}
	ret = gk_check_signature_at(text, len, dirfd, name, uid, err);
	close(dirfd);
	return ret;
}

int gk_root_sign_at(const char *text, size_t len, int dirfd, const char *name, gk_error_t *err)
{
	if (geteuid() != 0) {
		gk_errprintf(err, "only root signs a seal");
		return -EPERM;
	}
	return sign_at(SEAL_PREFIX, 0, text, len, dirfd, name, err);
}

int gk_root_check_at(const char *text, size_t len, int dirfd, const char *name, gk_error_t *err)
{
	char signer[64];
	uid_t cuid;
	int ret = check_at(SEAL_PREFIX, 0, text, len, dirfd, name, "seal", &cuid, err);

	if (ret < 0)
		return ret;
	if (cuid != 0) {
		gk_user_name(cuid, signer, sizeof(signer));
		gk_errprintf(err, "%s was made by %s (uid %u), not by root; refused", name, signer,
			     (unsigned)cuid);
		return -EPERM;
	}
	return 0;
}
