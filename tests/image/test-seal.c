/*
 * test-seal - criu/SEAL (runtime/image/seal.c), without the shepherd: a
 * sealed folder verifies and gives back what was sealed; refused are a
 * tampered, extra or missing file, a folder not root's, of the wrong mode or
 * a link in place of criu/, another user's seal, another manifest, a stdio
 * kind the shepherd never writes, and forgeries (no root's credential, a
 * user's credential over the right payload, a seal changed after root signed
 * it). The seal carries root's Munge credential: those tests need root and
 * munged, and skip, saying so, without them. Also the GPU UUIDs and stdio
 * kinds a seal may hold, and the list of processes the driver checkpointed
 * (parsed on its own).
 */
#include "config.h"
#include "image/image.h"
#include "common/log.h"
#include "image/seal.h"
#include "tap.h"
#include "common/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <munge.h>

static gk_error_t err;

/* ---- the seal ---- */

static int write_at(int dirfd, const char *name, const char *text)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ssize_t w;

	if (fd < 0)
		return -1;
	w = write(fd, text, strlen(text));
	close(fd);
	return w == (ssize_t)strlen(text) ? 0 : -1;
}

/* A sealed checkpoint folder: manifest.json beside criu/ with two images. */
static int make_sealed(const char *dir, int *ckptfd_out)
{
	static struct gk_seal s;
	int ckptfd, criufd, ret;

	mkdir(dir, 0700);
	ckptfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (ckptfd < 0 || write_at(ckptfd, GK_MANIFEST_FILE, "{\"format\": \"x\"}") < 0 ||
	    mkdirat(ckptfd, GK_CRIU_DIR, 0700) < 0)
		return -1;
	criufd = openat(ckptfd, GK_CRIU_DIR, O_RDONLY | O_DIRECTORY);
	if (write_at(criufd, "core-2.img", "core") < 0 || write_at(criufd, "pages-1.img", "pg") < 0)
		return -1;
	memset(&s, 0, sizeof(s));
	s.uid = 1234;
	s.gid = 1235;
	snprintf(s.job, sizeof(s.job), "77");
	snprintf(s.step, sizeof(s.step), "0");
	snprintf(s.stdio[0], sizeof(s.stdio[0]), "/dev/null");
	snprintf(s.stdio[1], sizeof(s.stdio[1]), "pipe:[4242]");
	snprintf(s.stdio[2], sizeof(s.stdio[2]), "/bb/77/slurm-77.out");
	s.have_stdio_task = 1;
	snprintf(s.stdio_task[0], sizeof(s.stdio_task[0]), "null");
	snprintf(s.stdio_task[1], sizeof(s.stdio_task[1]), "pipe");
	snprintf(s.stdio_task[2], sizeof(s.stdio_task[2]), "file");
	snprintf(s.socket, sizeof(s.socket), "gpuckpt-shepherd.1.00");
	s.cuda_processes = 2;
	s.have_cuda_pids = 1;
	s.ncuda_pids = 2;
	s.cuda_pids[0] = 4242;
	s.cuda_pids[1] = 4250;
	s.ngpus = 1;
	snprintf(s.gpus[0].uuid, sizeof(s.gpus[0].uuid),
		 "GPU-0123abcd-0000-1111-2222-333344445555");
	snprintf(s.gpus[0].name, sizeof(s.gpus[0].name), "NVIDIA H100 80GB HBM3");
	ret = gk_seal_write(ckptfd, criufd, &s, &err);
	close(criufd);
	*ckptfd_out = ckptfd;
	return ret;
}

static int verify(int ckptfd, uid_t uid, const char *want_in_err, int want_ret, const char *what)
{
	struct gk_seal s;
	int ret, criufd = -2;

	err.text[0] = 0;
	ret = gk_seal_verify(ckptfd, uid, &s, &criufd, &err);
	if (!ok(ret == want_ret && (!want_in_err || strstr(err.text, want_in_err)), "%s", what))
		printf("#   returned %d: %s\n", ret, err.text);
	if (criufd >= 0)
		close(criufd);
	return ret;
}

static int munge_answers(void)
{
	char *cred = NULL;
	int ok_ = munge_encode(&cred, NULL, NULL, 0) == EMUNGE_SUCCESS;

	free(cred);
	return ok_;
}

/* What a user can do: ask munged, as that user, for a credential over the
 * very payload root would sign (its format is no secret), and put it in
 * SEAL.sig. */
static int forged_sig(uid_t uid, int ckptfd)
{
	char seal[1 << 16], payload[128], buf[4096], *cred = NULL;
	int pfd[2], status, fd;
	ssize_t n;
	pid_t pid;

	fd = openat(ckptfd, GK_CRIU_DIR "/" GK_SEAL_FILE, O_RDONLY);
	n = fd < 0 ? -1 : read(fd, seal, sizeof(seal));
	if (fd >= 0)
		close(fd);
	if (n <= 0 || pipe(pfd) < 0)
		return -1;
	snprintf(payload, sizeof(payload), "gpuckpt-seal-sha256:");
	gk_sha256_hex(seal, (size_t)n, payload + strlen(payload));
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		if (setgid(uid) < 0 || setuid(uid) < 0 ||
		    munge_encode(&cred, NULL, payload, (int)strlen(payload)) != EMUNGE_SUCCESS ||
		    write(pfd[1], cred, strlen(cred)) < 0)
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	n = read(pfd[0], buf, sizeof(buf));
	close(pfd[0]);
	waitpid(pid, &status, 0);
	if (n <= 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	fd = openat(ckptfd, GK_CRIU_DIR "/" GK_SEAL_SIG_FILE, O_WRONLY | O_TRUNC | O_CREAT, 0600);
	if (fd < 0 || write(fd, buf, (size_t)n) != n)
		return -1;
	close(fd);
	return 0;
}

/* Root's credential over a SEAL a test changed: what a genuine seal of that
 * text would carry, so that what is checked next is the text itself. */
static void resign(int ckptfd, const char *text)
{
	int criufd = openat(ckptfd, GK_CRIU_DIR, O_RDONLY | O_DIRECTORY);
	gk_error_t sub;

	if (criufd < 0 || gk_root_sign_at(text, strlen(text), criufd, GK_SEAL_SIG_FILE, &sub) < 0)
		printf("# cannot sign the changed seal as root\n");
	if (criufd >= 0)
		close(criufd);
}

#define SEAL_TESTS 19

static void seal(void)
{
	char base[] = "/tmp/gpuckpt-test-seal.XXXXXX", dir[256], other[256], cmd[600];
	struct gk_seal s;
	int ckptfd, otherfd, criufd = -1;

	if (geteuid() != 0) {
		for (int i = 0; i < SEAL_TESTS; i++)
			skip("needs root: criu/ must be root's");
		return;
	}
	if (!munge_answers()) {
		for (int i = 0; i < SEAL_TESTS; i++)
			skip("needs munged: a seal carries root's Munge credential");
		return;
	}
	if (!mkdtemp(base))
		return;
	snprintf(dir, sizeof(dir), "%s/ckpt.000001", base);
	err.text[0] = 0;
	ok(make_sealed(dir, &ckptfd) == 0, "seal a folder of two images%s%s",
	   err.text[0] ? ": " : "", err.text);
	if (verify(ckptfd, 1234, NULL, 0, "the sealed folder verifies") == 0) {
		gk_seal_verify(ckptfd, 1234, &s, &criufd, &err);
		ok(s.gid == 1235 && !strcmp(s.job, "77") && !strcmp(s.stdio[1], "pipe:[4242]") &&
		       s.have_stdio_task && !strcmp(s.stdio_task[0], "null") &&
		       !strcmp(s.stdio_task[2], "file") && s.ngpus == 1 &&
		       !strcmp(s.gpus[0].name, "NVIDIA H100 80GB HBM3") &&
		       !strcmp(s.socket, "gpuckpt-shepherd.1.00") && s.image_bytes == 6 &&
		       s.cuda_processes == 2 && s.have_cuda_pids && s.ncuda_pids == 2 &&
		       s.cuda_pids[1] == 4250,
		   "and gives back what was sealed (the stdio kinds, and the processes the "
		   "driver checkpointed and their count, too)");
		ok(criufd >= 0 && faccessat(criufd, "core-2.img", F_OK, 0) == 0,
		   "and the descriptor of the very folder it checked");
		if (criufd >= 0)
			close(criufd);
	} else {
		skip("nothing to compare");
		skip("nothing to compare");
	}
	verify(ckptfd, 1000, "sealed for uid 1234", -EPERM, "another user's seal is refused");
	{
		char text[8192] = "", *at;
		int fd = openat(ckptfd, GK_CRIU_DIR "/" GK_SEAL_FILE, O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;

		if (fd >= 0)
			close(fd);
		text[n > 0 ? n : 0] = 0;
		at = strstr(text, "\"file\"");
		if (at)
			memcpy(at + 1, "tape", 4);
		write_at(ckptfd, GK_CRIU_DIR "/" GK_SEAL_FILE, text);
		resign(ckptfd, text);
		verify(ckptfd, 1234, "stdio_task 2 is malformed", -EINVAL,
		       "a stdio kind the shepherd never writes is refused (root's credential over it)");
		if (at)
			memcpy(at + 1, "file", 4);
		write_at(ckptfd, GK_CRIU_DIR "/" GK_SEAL_FILE, text);
		resign(ckptfd, text);
	}

	write_at(ckptfd, GK_CRIU_DIR "/" GK_SEAL_RESTORE_LOG, "log");
	write_at(ckptfd, GK_CRIU_DIR "/" GK_SEAL_RESTORE_STATS, "stats");
	verify(ckptfd, 1234, NULL, 0,
	       "a restore's log and CRIU's statistics of it beside the images are allowed (a "
	       "root job's second restore from the folder was refused)");

	write_at(ckptfd, GK_CRIU_DIR "/pages-1.img", "PG");
	verify(ckptfd, 1234, "pages-1.img: its checksum differs", -EBADMSG,
	       "a changed image is refused");
	write_at(ckptfd, GK_CRIU_DIR "/pages-1.img", "pg");

	write_at(ckptfd, GK_CRIU_DIR "/extra.img", "x");
	verify(ckptfd, 1234, "extra.img: not in the seal", -EBADMSG, "an extra file is refused");
	unlinkat(ckptfd, GK_CRIU_DIR "/extra.img", 0);

	rename(strcat(strcpy(other, dir), "/criu/core-2.img"), strcat(strcpy(cmd, base), "/core"));
	verify(ckptfd, 1234, "core-2.img: sealed but missing", -EBADMSG,
	       "a missing file is refused");
	rename(cmd, other);

	write_at(ckptfd, GK_MANIFEST_FILE, "{\"format\": \"y\"}");
	verify(ckptfd, 1234, "not the manifest the seal was made with", -EBADMSG,
	       "criu/ under another manifest is refused");
	write_at(ckptfd, GK_MANIFEST_FILE, "{\"format\": \"x\"}");

	fchownat(ckptfd, GK_CRIU_DIR, 1234, 1234, 0);
	verify(ckptfd, 1234, "not root:root 0700", -EPERM, "criu/ not root's is refused");
	fchownat(ckptfd, GK_CRIU_DIR, 0, 0, 0);

	fchmodat(ckptfd, GK_CRIU_DIR, 0755, 0);
	verify(ckptfd, 1234, "mode 0755", -EPERM, "criu/ of mode 0755 is refused");
	fchmodat(ckptfd, GK_CRIU_DIR, 0700, 0);

	/* A link in place of criu/, to a folder that is itself valid. */
	snprintf(other, sizeof(other), "%s/ckpt.000002", base);
	make_sealed(other, &otherfd);
	renameat(ckptfd, GK_CRIU_DIR, ckptfd, "criu.real");
	snprintf(cmd, sizeof(cmd), "%s/criu", other);
	if (symlinkat(cmd, ckptfd, GK_CRIU_DIR) < 0)
		printf("# symlink: %s\n", strerror(errno));
	verify(ckptfd, 1234, "not a directory", -EPERM,
	       "a symbolic link in place of criu/ is "
	       "refused");
	unlinkat(ckptfd, GK_CRIU_DIR, 0);
	renameat(ckptfd, "criu.real", ckptfd, GK_CRIU_DIR);
	verify(ckptfd, 1234, NULL, 0, "put back, it verifies again");

	/* Forgeries: every digest of a seal can be computed by anyone; only
	 * root's credential over it cannot. */
	renameat(ckptfd, GK_CRIU_DIR "/" GK_SEAL_SIG_FILE, ckptfd, "sig.real");
	verify(ckptfd, 1234, "carries no credential of root's", -EPERM,
	       "a seal without root's credential is refused");
	if (forged_sig(65534, ckptfd) == 0)
		verify(ckptfd, 1234, "not by root; refused", -EPERM,
		       "a user's own credential over the right payload is refused");
	else
		skip("munged would not make nobody's credential");
	renameat(ckptfd, "sig.real", ckptfd, GK_CRIU_DIR "/" GK_SEAL_SIG_FILE);
	verify(ckptfd, 1234, NULL, 0, "root's credential back: it verifies");
	{
		/* The seal edited after root signed it: another uid, say. */
		char text[1 << 16];
		int fd = openat(ckptfd, GK_CRIU_DIR "/" GK_SEAL_FILE, O_RDWR);
		ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);
		char *p;

		if (n > 0) {
			text[n] = 0;
			p = strstr(text, "1234");
			if (p)
				memcpy(p, "1000", 4);
			if (pwrite(fd, text, (size_t)n, 0) != n)
				printf("# rewrite failed\n");
		}
		if (fd >= 0)
			close(fd);
		verify(ckptfd, 1000, "changed after it was signed", -EBADMSG,
		       "a seal changed after root signed it is refused");
	}
	close(otherfd);
	close(ckptfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		printf("# cannot remove %s\n", base);
}

/* A seal's text with `extra` (", \"key\": value") added, parsed on its own. */
static int parse_extra(const char *extra, struct gk_seal *s)
{
	char text[2048];
	int n = snprintf(
	    text, sizeof(text),
	    "{\"format\": \"gpuckpt-seal\", \"version\": 3, \"uid\": 1001, \"gid\": 1001, "
	    "\"job\": \"42\", \"step\": \"0\", \"task\": 0, \"manifest_sha256\": \"%064d\", "
	    "\"socket\": \"\", \"stdio\": [\"\", \"\", \"\"], \"gpus\": [], "
	    "\"files\": {}%s}",
	    0, extra);

	err.text[0] = 0;
	return gk_seal_parse(text, (size_t)n, s, &err);
}

/* A seal's text with cuda_processes and cuda_pids as given (a JSON value,
 * or NULL for none), parsed on its own: no root or munged needed. */
static int parse_with(const char *count, const char *pids, struct gk_seal *s)
{
	char extra[512];

	snprintf(extra, sizeof(extra), "%s%s%s%s", count ? ", \"cuda_processes\": " : "",
		 count ? count : "", pids ? ", \"cuda_pids\": " : "", pids ? pids : "");
	return parse_extra(extra, s);
}

/* Which processes the driver checkpointed (cuda_pids): what a restore asks
 * the driver about. */
static void cuda_pids(void)
{
	static struct gk_seal s;
	int ret;

	ret = parse_with("2", "[4242, 4250]", &s);
	ok(ret == 0 && s.have_cuda_pids && s.ncuda_pids == 2 && gk_seal_cuda_pid(&s, 4250) &&
	       !gk_seal_cuda_pid(&s, 4243),
	   "cuda_pids: the processes the driver checkpointed are read back, and only they are "
	   "named (%d: %s)",
	   ret, err.text);
	ret = parse_with("2", NULL, &s);
	ok(ret == 0 && !s.have_cuda_pids && gk_seal_cuda_pid(&s, 4243),
	   "a seal from before cuda_pids names every process (the restore asks each, as before)");
	ret = parse_with("3", "[4242, 4250]", &s);
	ok(ret == -EINVAL && strstr(err.text, "cuda_pids is malformed"),
	   "cuda_pids of another length than cuda_processes is refused (%s)", err.text);
	ret = parse_with(NULL, "[4242, 0]", &s);
	ok(ret == -EINVAL && strstr(err.text, "cuda_pids 1 is not a process id"),
	   "a pid of 0 in cuda_pids is refused (%s)", err.text);
	ret = parse_with(NULL, "[\"4242\"]", &s);
	ok(ret == -EINVAL && strstr(err.text, "cuda_pids 0 is not a process id"),
	   "a pid written as a string is refused (%s)", err.text);
	ret = parse_with(NULL, "{\"pid\": 4242}", &s);
	ok(ret == -EINVAL && strstr(err.text, "cuda_pids is malformed"),
	   "cuda_pids that is not a list is refused (%s)", err.text);
}

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* The parts of a task of several runtimes' processes (proc.PID beside
 * criu/), as a seal names them: parsed on their own, then, as root with
 * munged, bound by their manifests' digests. */
#define PARTS_ROOT_TESTS 5
static void parts(void)
{
	static struct gk_seal s;
	char base[] = "/tmp/gpuckpt-test-parts.XXXXXX", dir[256], cmd[600];
	int ret, ckptfd, criufd;

	ret = parse_extra(
	    ", \"parts\": {\"proc.4242\": \"" HEX64 "\", \"proc.4250\": \"" HEX64 "\"}", &s);
	ok(ret == 0 && s.nparts == 2 && !strcmp(s.parts[1].name, "proc.4250") &&
	       !strcmp(s.parts[0].manifest_sha256, HEX64),
	   "parts: each part's folder and its manifest's digest are read back (%d: %s)", ret,
	   err.text);
	ret = parse_extra("", &s);
	ok(ret == 0 && s.nparts == 0, "a seal without parts (one runtime, or older) has none");
	ret = parse_extra(", \"parts\": {\"proc.04242\": \"" HEX64 "\"}", &s);
	ok(ret == -EINVAL && strstr(err.text, "part 0 is malformed"),
	   "a part's name other than proc.PID, in its one spelling, is refused (%s)", err.text);
	ret = parse_extra(", \"parts\": {\"../ckpt.000001\": \"" HEX64 "\"}", &s);
	ok(ret == -EINVAL && strstr(err.text, "part 0 is malformed"),
	   "a part's name that leaves the folder is refused (%s)", err.text);
	ret = parse_extra(", \"parts\": {\"proc.4242\": \"abc\"}", &s);
	ok(ret == -EINVAL && strstr(err.text, "part 0 is malformed"),
	   "a part's digest that is not one is refused (%s)", err.text);
	ret = parse_extra(", \"parts\": [\"proc.4242\"]", &s);
	ok(ret == -EINVAL && strstr(err.text, "parts is malformed"),
	   "parts that is not an object is refused (%s)", err.text);

	if (geteuid() != 0 || !munge_answers()) {
		for (int i = 0; i < PARTS_ROOT_TESTS; i++)
			skip("needs root and munged: criu/ must be root's, its seal root's "
			     "credential");
		return;
	}
	if (!mkdtemp(base))
		return;
	snprintf(dir, sizeof(dir), "%s/ckpt.000001", base);
	mkdir(dir, 0700);
	ckptfd = open(dir, O_RDONLY | O_DIRECTORY);
	mkdirat(ckptfd, "proc.4242", 0700);
	mkdirat(ckptfd, "proc.4250", 0700);
	write_at(ckptfd, "proc.4242/" GK_MANIFEST_FILE, "{\"part\": 4242}");
	write_at(ckptfd, "proc.4250/" GK_MANIFEST_FILE, "{\"part\": 4250}");
	write_at(ckptfd, GK_MANIFEST_FILE, "{\"format\": \"x\"}");
	mkdirat(ckptfd, GK_CRIU_DIR, 0700);
	criufd = openat(ckptfd, GK_CRIU_DIR, O_RDONLY | O_DIRECTORY);
	write_at(criufd, "core-2.img", "core");
	memset(&s, 0, sizeof(s));
	s.uid = 1234;
	s.gid = 1235;
	s.cuda_processes = -1;
	s.nparts = 2;
	snprintf(s.parts[0].name, sizeof(s.parts[0].name), "proc.4242");
	snprintf(s.parts[1].name, sizeof(s.parts[1].name), "proc.4250");
	err.text[0] = 0;
	ok(gk_seal_write(ckptfd, criufd, &s, &err) == 0 && strlen(s.parts[1].manifest_sha256) == 64,
	   "a seal over two parts is written with their manifests' digests%s%s",
	   err.text[0] ? ": " : "", err.text);
	close(criufd);
	verify(ckptfd, 1234, NULL, 0, "it verifies");
	write_at(ckptfd, "proc.4250/" GK_MANIFEST_FILE, "{\"part\": 9999}");
	verify(ckptfd, 1234, "proc.4250/manifest.json: not the manifest the seal was made with",
	       -EBADMSG, "a part whose manifest changed is refused");
	write_at(ckptfd, "proc.4250/" GK_MANIFEST_FILE, "{\"part\": 4250}");
	renameat(ckptfd, "proc.4242", ckptfd, "swap");
	renameat(ckptfd, "proc.4250", ckptfd, "proc.4242");
	renameat(ckptfd, "swap", ckptfd, "proc.4250");
	verify(ckptfd, 1234, "not the manifest the seal was made with", -EBADMSG,
	       "two parts swapped are refused");
	renameat(ckptfd, "proc.4242", ckptfd, "swap");
	renameat(ckptfd, "proc.4250", ckptfd, "proc.4242");
	renameat(ckptfd, "swap", ckptfd, "proc.4250");
	renameat(ckptfd, "proc.4250", ckptfd, "gone");
	verify(ckptfd, 1234, "proc.4250: No such file", -EBADMSG, "a missing part is refused");
	close(ckptfd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	if (system(cmd) != 0)
		printf("# cannot remove %s\n", base);
}

int main(void)
{
	CUuuid u;
	char text[64];

	plan(SEAL_TESTS + 3 + 6 + 6 + PARTS_ROOT_TESTS);
	gk_log_set_level(GK_LOG_ERROR);
	seal();
	cuda_pids();
	parts();
	ok(gk_stdio_kind_ok("file") && gk_stdio_kind_ok("") && !gk_stdio_kind_ok("tape") &&
	       !gk_stdio_kind_ok("FILE"),
	   "stdio: only the kinds the shepherd records are valid in a seal");
	ok(gk_uuid_parse("GPU-0123abcd-0000-1111-2222-333344445555", &u) == 0 &&
	       gk_uuid_format(&u, text) == 0 &&
	       !strcmp(text, "GPU-0123abcd-0000-1111-2222-333344445555"),
	   "GPU UUIDs parse and print back the same");
	ok(gk_uuid_parse("GPU-0123abcd-0000-1111-2222-33334444555", &u) < 0 &&
	       gk_uuid_parse("MIG-0123abcd-0000-1111-2222-333344445555", &u) < 0 &&
	       gk_uuid_parse("GPU-0123ABCD-0000-1111-2222-333344445555", &u) < 0,
	   "malformed UUIDs are refused");
	return done_testing();
}
