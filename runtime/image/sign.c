/*
 * sign.c - a Munge credential over the manifest's SHA-256. Munge is already
 * trusted by every Slurm cluster to say which user produced a message, so a
 * manifest signed this way cannot be forged by another user, and a restored
 * job can insist on its own user's checkpoints.
 */
#include "config.h"
#include "image.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <munge.h>

#define PAYLOAD_PREFIX "gpuckpt-manifest-sha256:"
#define PAYLOAD_LEN (sizeof(PAYLOAD_PREFIX) - 1 + 64)
/* A credential over a 88-byte payload is well under 1 KiB; anything near
 * this limit is not one of ours. */
#define SIG_MAX (64u << 10)

static munge_ctx_t new_ctx(char *err, size_t errlen)
{
	/* Sites that run munged on another socket say so here; ignored in a
	 * set-uid program, where the environment belongs to someone else. */
	const char *socket = secure_getenv("GPUCKPT_MUNGE_SOCKET");
	munge_ctx_t ctx = munge_ctx_create();

	if (!ctx) {
		snprintf(err, errlen, "munge: out of memory");
		return NULL;
	}
	if (socket && *socket && munge_ctx_set(ctx, MUNGE_OPT_SOCKET, socket) != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "munge: cannot use socket %s: %s", socket,
			 munge_ctx_strerror(ctx));
		munge_ctx_destroy(ctx);
		return NULL;
	}
	return ctx;
}

static void user_name(uid_t uid, char *buf, size_t n)
{
	struct passwd pw, *res = NULL;
	char tmp[1024];

	if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res)
		snprintf(buf, n, "%s", res->pw_name);
	else
		snprintf(buf, n, "uid %u", (unsigned)uid);
}

static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int gk_sign(const char *text, size_t len, const char *sigpath, char *err, size_t errlen)
{
	char payload[PAYLOAD_LEN + 1], *cred = NULL;
	munge_ctx_t ctx;
	munge_err_t e;
	int fd, ret = 0;

	memcpy(payload, PAYLOAD_PREFIX, sizeof(PAYLOAD_PREFIX) - 1);
	gk_sha256_hex(text, len, payload + sizeof(PAYLOAD_PREFIX) - 1);
	ctx = new_ctx(err, errlen);
	if (!ctx)
		return -ENOMEM;
	/* The longest life munged allows: a checkpoint is restored hours or
	 * days later, and expiry is accepted on check anyway (see below). */
	munge_ctx_set(ctx, MUNGE_OPT_TTL, (int)MUNGE_TTL_MAXIMUM);
	e = munge_encode(&cred, ctx, payload, (int)PAYLOAD_LEN);
	if (e == EMUNGE_SOCKET) {
		snprintf(err, errlen, "cannot reach munged to sign the manifest: %s",
			 munge_ctx_strerror(ctx));
		ret = -EHOSTUNREACH;
		goto out_ctx;
	}
	if (e != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "munge could not sign the manifest: %s",
			 munge_ctx_strerror(ctx));
		ret = -EPROTO;
		goto out_ctx;
	}
	fd = open(sigpath, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", sigpath, strerror(-ret));
		goto out_cred;
	}
	ret = write_all(fd, cred, strlen(cred));
	if (ret == 0)
		ret = write_all(fd, "\n", 1);
	if (ret == 0 && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && ret == 0)
		ret = -errno;
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", sigpath, strerror(-ret));
		unlink(sigpath);
	}
out_cred:
	free(cred);
out_ctx:
	munge_ctx_destroy(ctx);
	return ret;
}

static int read_signature(const char *sigpath, char **out, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0;
	int fd, ret = 0;

	fd = open(sigpath, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		if (ret == -ELOOP) {
			snprintf(err, errlen, "%s is a symbolic link", sigpath);
			return -EPERM;
		}
		snprintf(err, errlen, "%s: %s", sigpath, strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", sigpath, strerror(-ret));
		goto out_close;
	}
	if (!S_ISREG(st.st_mode) || st.st_size > SIG_MAX) {
		snprintf(err, errlen, "%s is not a signature (%s)", sigpath,
			 S_ISREG(st.st_mode) ? "too large" : "not a regular file");
		ret = -EBADMSG;
		goto out_close;
	}
	ret = gk_read_small(fd, (size_t)st.st_size, &buf);
	if (ret < 0) {
		snprintf(err, errlen, "%s: %s", sigpath,
			 ret == -EIO ? "file shrank while being read" : strerror(-ret));
		goto out_close;
	}
	n = (size_t)st.st_size;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r' ||
			 buf[n - 1] == '\t'))
		n--;
	buf[n] = 0;
	if (n == 0 || strlen(buf) != n) {
		snprintf(err, errlen, "%s is not a Munge credential", sigpath);
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

int gk_check_signature(const char *text, size_t len, const char *sigpath, uid_t uid, char *err,
		       size_t errlen)
{
	char *cred = NULL, hex[65], signer[64], owner[64];
	void *payload = NULL;
	int plen = 0, ret = 0;
	uid_t cuid;
	gid_t cgid;
	munge_ctx_t ctx;
	munge_err_t e;

	ret = read_signature(sigpath, &cred, err, errlen);
	if (ret < 0)
		return ret;
	ctx = new_ctx(err, errlen);
	if (!ctx) {
		ret = -ENOMEM;
		goto out_cred;
	}
	e = munge_decode(cred, ctx, &payload, &plen, &cuid, &cgid);
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
		snprintf(err, errlen, "cannot reach munged to check the signature: %s",
			 munge_ctx_strerror(ctx));
		ret = -EHOSTUNREACH;
		goto out_payload;
	case EMUNGE_NO_MEMORY:
		snprintf(err, errlen, "munge: out of memory");
		ret = -ENOMEM;
		goto out_payload;
	default:
		snprintf(err, errlen, "the signature is not a valid Munge credential: %s",
			 munge_ctx_strerror(ctx));
		ret = -EBADMSG;
		goto out_payload;
	}
	if (!payload || plen != (int)PAYLOAD_LEN ||
	    memcmp(payload, PAYLOAD_PREFIX, sizeof(PAYLOAD_PREFIX) - 1) != 0) {
		snprintf(err, errlen, "the signature is not a gpuckpt manifest signature");
		ret = -EBADMSG;
		goto out_payload;
	}
	if (cuid != uid) {
		user_name(cuid, signer, sizeof(signer));
		user_name(uid, owner, sizeof(owner));
		snprintf(err, errlen, "the manifest was signed by %s (uid %u), not by %s (uid %u)",
			 signer, (unsigned)cuid, owner, (unsigned)uid);
		ret = -EPERM;
		goto out_payload;
	}
	gk_sha256_hex(text, len, hex);
	if (memcmp((char *)payload + sizeof(PAYLOAD_PREFIX) - 1, hex, 64) != 0) {
		snprintf(err, errlen,
			 "the manifest was changed after it was signed (its SHA-256 "
			 "no longer matches the signature)");
		ret = -EBADMSG;
	}
out_payload:
	free(payload);
	munge_ctx_destroy(ctx);
out_cred:
	free(cred);
	return ret;
}
