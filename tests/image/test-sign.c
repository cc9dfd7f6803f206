/*
 * test-sign - the Munge signature of a manifest: signing, checking, a
 * changed manifest, another uid, replays, and munged out of reach (forced
 * with GPUCKPT_MUNGE_SOCKET, so it is tested whether munged runs or not):
 * no socket file, and a socket file nobody listens on (a munged that
 * stopped), which libmunge tries for 2.25 s and gpuckpt then does not try
 * again for a while.
 * What needs a running munged is skipped, with the reason, when it is not.
 */
#include "config.h"
#include "image/image.h"
#include "common/log.h"
#include "tap.h"
#include "common/error.h"
#include "fixture-root.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOWHERE "/nonexistent/gpuckpt-test/munge.socket"

static gk_error_t err;

static void write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		perror(path);
	if (fd >= 0)
		close(fd);
}

/* A committed checkpoint with one host region; returns its directory. */
static const char *small_checkpoint(void)
{
	static char path[512];
	struct gk_store_txn txn;
	struct gk_manifest *m = gk_manifest_new();
	char data[64] = "registered host state";
	time_t now = time(NULL);
	struct tm tm;
	int fd, is_signed;

	gmtime_r(&now, &tm);
	strftime(m->created, sizeof(m->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	strcpy(m->hostname, "testhost");
	m->uid = geteuid();
	m->pid = getpid();
	m->chunk_size = 4096;
	m->nregions = 1;
	m->regions = calloc(1, sizeof(*m->regions));
	strcpy(m->regions[0].name, "state");
	strcpy(m->regions[0].file, GK_HOST_DATA_FILE);
	m->regions[0].size = sizeof(data);
	m->regions[0].nchunks = 1;
	m->regions[0].chunks = calloc(1, sizeof(struct gk_chunk));
	m->regions[0].chunks[0].sum = gk_sum(GK_SUM_XXH3, data, sizeof(data));
	if (gk_store_begin(path_in("root"), &txn, &err) < 0 ||
	    gk_store_create(&txn, GK_HOST_DATA_FILE, &fd, &err) < 0)
		return NULL;
	if (write(fd, data, sizeof(data)) < 0)
		perror("write");
	close(fd);
	if (gk_store_commit(&txn, m, 0, &is_signed, &err) < 0)
		return NULL;
	snprintf(path, sizeof(path), "%s/ckpt.%06llu", path_in("root"),
		 (unsigned long long)m->sequence);
	gk_manifest_free(m);
	return path;
}

int main(void)
{
	static const char text[] = "{\"a manifest\": 1}\n";
	struct gk_load_opts lo = {.uid = geteuid(), .check_data = 1};
	struct gk_manifest *m = NULL;
	const char *sig, *ck;
	char buf[64] = "";
	struct stat st;
	int ret, fd, is_signed = 1, reachable;

	plan(21);
	gk_log_set_level(GK_LOG_ERROR);
	snprintf(root, sizeof(root), "/tmp/gpuckpt-test-sign.XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	sig = path_in("manifest.sig");

	/* munged out of reach. */
	setenv("GPUCKPT_MUNGE_SOCKET", NOWHERE, 1);
	ret = gk_sign(text, strlen(text), sig, &err);
	ok(ret == -EHOSTUNREACH && strstr(err.text, "cannot reach munged to sign"),
	   "signing without munged: -EHOSTUNREACH, said so");
	ok(lstat(sig, &st) < 0, "and no signature file is left");
	ret = gk_check_signature(text, strlen(text), sig, geteuid(), &err);
	is_int(ret, -ENOENT, "checking a missing signature: -ENOENT");
	write_text(sig, "MUNGE:AwQFAAA=:\n");
	ret = gk_check_signature(text, strlen(text), sig, geteuid(), &err);
	ok(ret == -EHOSTUNREACH && strstr(err.text, "cannot reach munged to check the signature"),
	   "checking without munged: -EHOSTUNREACH, said so");
	write_text(sig, "\n\n");
	ret = gk_check_signature(text, strlen(text), sig, geteuid(), &err);
	ok(ret == -EBADMSG && strstr(err.text, "is not a Munge credential"),
	   "an empty signature file is not a credential");
	unlink(sig);
	if (symlink(path_in("elsewhere"), sig) < 0)
		perror("symlink");
	ret = gk_check_signature(text, strlen(text), sig, geteuid(), &err);
	ok(ret == -EPERM && strstr(err.text, "is a symbolic link"),
	   "a signature that is a link is refused");
	unlink(sig);

	/* An image whose signature cannot be checked. */
	unsetenv("GPUCKPT_MUNGE_SOCKET");
	ck = small_checkpoint();
	ok(ck != NULL, "a small checkpoint is written");
	if (ck) {
		char path[600];

		snprintf(path, sizeof(path), "%s/%s", ck, GK_SIGNATURE_FILE);
		if (lstat(path, &st) < 0)
			write_text(path, "MUNGE:AwQFAAA=:\n"); /* unsigned: give it one */
		setenv("GPUCKPT_MUNGE_SOCKET", NOWHERE, 1);
		lo.require_signature = 1;
		ret = gk_image_open(ck, &lo, &m, &is_signed, &err);
		ok(ret == -EHOSTUNREACH && !m &&
		       strstr(err.text, "manifest.sig: cannot reach munged"),
		   "a required signature that cannot be checked refuses the image");
		lo.require_signature = 0;
		ret = gk_image_open(ck, &lo, &m, &is_signed, &err);
		ok(ret == 0 && m && is_signed == 0,
		   "an optional one lets it open, reported as not signed");
		gk_manifest_free(m);
		unsetenv("GPUCKPT_MUNGE_SOCKET");
	} else {
		printf("#   %s\n", err.text);
		skip("no checkpoint");
		skip("no checkpoint");
	}

	/* With munged. */
	ret = gk_sign(text, strlen(text), sig, &err);
	reachable = ret != -EHOSTUNREACH;
	if (!reachable) {
		for (int i = 0; i < 8; i++)
			skip("munged is not reachable on its default socket");
		goto out;
	}
	is_int(ret, 0, "signing with munged");
	fd = open(sig, O_RDONLY);
	if (fd >= 0) {
		if (read(fd, buf, 6) < 0)
			perror("read");
		fstat(fd, &st);
		close(fd);
	}
	ok(!strncmp(buf, "MUNGE:", 6) && (st.st_mode & 0777) == 0600,
	   "the signature is a Munge credential in a 0600 file");
	ret = gk_check_signature(text, strlen(text), sig, geteuid(), &err);
	if (!ok(ret == 0, "the signature checks"))
		printf("#   %s\n", err.text);
	ret = gk_check_signature(text, strlen(text), sig, geteuid(), &err);
	ok(ret == 0, "and checks again (a replayed credential is accepted)");
	ret = gk_check_signature("{\"a manifest\": 2}\n", strlen(text), sig, geteuid(), &err);
	ok(ret == -EBADMSG && strstr(err.text, "the manifest was changed after it was signed"),
	   "a changed manifest is refused");
	ret = gk_check_signature(text, strlen(text), sig, geteuid() + 1, &err);
	ok(ret == -EPERM && strstr(err.text, "the manifest was signed by ") &&
	       strstr(err.text, ", not by "),
	   "a signature by another uid is refused, naming both");
	if (ck) {
		char path[600];

		snprintf(path, sizeof(path), "%s/%s", ck, GK_SIGNATURE_FILE);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%s", ck, GK_MANIFEST_FILE);
		fd = open(path, O_RDONLY);
		{
			static char mtext[65536];
			ssize_t n = fd >= 0 ? read(fd, mtext, sizeof(mtext) - 1) : -1;

			if (fd >= 0)
				close(fd);
			snprintf(path, sizeof(path), "%s/%s", ck, GK_SIGNATURE_FILE);
			ret = n > 0 ? gk_sign(mtext, (size_t)n, path, &err) : -EIO;
		}
		lo.require_signature = 1;
		ret = ret ? ret : gk_image_open(ck, &lo, &m, &is_signed, &err);
		ok(ret == 0 && m && is_signed == 1,
		   "a signed image opens with the signature required");
		gk_manifest_free(m);
		ret = gk_image_open(ck, &(struct gk_load_opts){.uid = geteuid() + 1}, &m,
				    &is_signed, &err);
		ok(ret == -EPERM && strstr(err.text, "is owned by"),
		   "and is refused for another owner");
	} else {
		skip("no checkpoint");
		skip("no checkpoint");
	}
out:
	/* A socket file nobody listens on, as a stopped munged leaves: the
	 * first call waits through libmunge's retries; the next ones through
	 * the same socket are not sent, and say so; another socket is asked. */
	{
		struct sockaddr_un sa = {.sun_family = AF_UNIX};
		int sd = socket(AF_UNIX, SOCK_STREAM, 0);

		static const char name[] = "/deaf.socket";
		size_t rl = strlen(root);

		/* Copied, not formatted: root is a short mkdtemp name. */
		if (rl + sizeof(name) <= sizeof(sa.sun_path)) {
			memcpy(sa.sun_path, root, rl);
			memcpy(sa.sun_path + rl, name, sizeof(name));
		}
		if (sd < 0 || bind(sd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			perror("deaf socket");
		setenv("GPUCKPT_MUNGE_SOCKET", sa.sun_path, 1);
		ret = gk_sign(text, strlen(text), sig, &err);
		ok(ret == -EHOSTUNREACH && strstr(err.text, "cannot reach munged to sign") &&
			   !strstr(err.text, "not asked again"),
		   "a socket nobody listens on: signing fails after libmunge's retries (%s)",
		   err.text);
		ret = gk_sign(text, strlen(text), sig, &err);
		ok(ret == -EHOSTUNREACH && strstr(err.text, "cannot reach munged to sign") &&
			   strstr(err.text, "not asked again for 60 s"),
		   "... the next signing through it is not sent, and says why (%s)", err.text);
		write_text(sig, "MUNGE:AwQFAAA=:\n");
		ret = gk_check_signature(text, strlen(text), sig, geteuid(), &err);
		ok(ret == -EHOSTUNREACH &&
			   strstr(err.text, "cannot reach munged to check the signature") &&
			   strstr(err.text, "not asked again"),
		   "... nor is a check");
		setenv("GPUCKPT_MUNGE_SOCKET", NOWHERE, 1);
		ret = gk_sign(text, strlen(text), sig, &err);
		ok(ret == -EHOSTUNREACH && !strstr(err.text, "not asked again"),
		   "another socket is asked (%s)", err.text);
		unsetenv("GPUCKPT_MUNGE_SOCKET");
		unlink(sig);
		if (sd >= 0)
			close(sd);
	}
	if (fork() == 0) {
		execlp("rm", "rm", "-rf", root, (char *)NULL);
		_exit(127);
	}
	wait(NULL);
	return done_testing();
}
