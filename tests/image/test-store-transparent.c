/*
 * test-store-transparent - the store's side of transparent mode: a checkpoint
 * sealed by one party and published by another (gk_store_seal +
 * gk_store_publish), the criu/ folder that is not a data file, the
 * `transparent` flag of a listing, a prune by a user that leaves root's
 * transparent checkpoints alone, and gk_image_open of a checkpoint with criu/.
 */
#include "config.h"
#include "image/image.h"
#include "common/log.h"
#include "tap.h"
#include "common/error.h"
#include "fixture-manifest.h"
#include "fixture-root.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static gk_error_t err;

/* Seal a checkpoint, add criu/ (root 0700, one image), publish it. */
static int64_t transparent_checkpoint(unsigned keep)
{
	struct gk_store_txn txn;
	struct gk_manifest *m = empty_manifest("transparent");
	char tmpname[512];
	int64_t seq = -1;
	int fd;

	if (gk_store_begin(root, &txn, &err) < 0)
		goto out;
	if (gk_store_seal(&txn, m, NULL, &err) < 0)
		goto out;
	if (mkdirat(txn.dirfd, GK_CRIU_DIR, 0700) < 0)
		goto out_abort;
	fd = openat(txn.dirfd, GK_CRIU_DIR "/core-1.img", O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || write(fd, "img", 3) != 3)
		goto out_abort;
	close(fd);
	snprintf(tmpname, sizeof(tmpname), "%s", strrchr(txn.tmpdir, '/') + 1);
	if (gk_store_publish(root, tmpname, txn.sequence, keep, &err) < 0)
		goto out_abort;
	seq = (int64_t)txn.sequence;
	close(txn.dirfd);
	goto out;
out_abort:
	gk_store_abort(&txn);
out:
	gk_manifest_free(m);
	return seq;
}

int main(void)
{
	struct gk_load_opts lo = {.uid = geteuid(), .check_data = 1};
	char base[] = "/tmp/gpuckpt-test-store-t.XXXXXX", tmpname[512];
	struct gk_store_entry *list = NULL;
	struct gk_manifest *m, *opened = NULL;
	struct gk_store_txn txn;
	struct passwd *nobody;
	size_t n = 0;
	int ret, status;
	pid_t pid;

	plan(14);
	gk_log_set_level(GK_LOG_ERROR);
	if (!mkdtemp(base)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(root, sizeof(root), "%s/task0", base);

	ret = gk_store_begin(root, &txn, &err);
	m = empty_manifest("transparent");
	ret = ret ?: gk_store_seal(&txn, m, NULL, &err);
	snprintf(tmpname, sizeof(tmpname), "%s", strrchr(txn.tmpdir, '/') + 1);
	if (!ok(ret == 0 && exists(path_in(tmpname)) && !exists(path_in("ckpt.000001")),
		"seal writes the manifest and leaves the .tmp name"))
		printf("#   %s\n", err.text);
	ok(exists(txn.tmpdir) && faccessat(txn.dirfd, GK_MANIFEST_FILE, R_OK, 0) == 0,
	   "the sealed folder holds manifest.json");
	ret = gk_store_publish(root, "../etc", txn.sequence, 0, &err);
	ok(ret == -EINVAL, "publish refuses a name that is not a writer's folder");
	ret = gk_store_publish(root, tmpname, txn.sequence + 1, 0, &err);
	ok(ret == -EINVAL && exists(path_in(tmpname)),
	   "publish refuses a folder of another sequence number");
	mkdirat(txn.dirfd, GK_CRIU_DIR, 0700);
	ret = gk_store_publish(root, tmpname, txn.sequence, 0, &err);
	if (!ok(ret == 0 && exists(path_in("ckpt.000001/" GK_CRIU_DIR)) &&
		    !exists(path_in(tmpname)),
		"publish renames it to ckpt.000001, criu/ inside"))
		printf("#   %s\n", err.text);
	close(txn.dirfd);
	gk_manifest_free(m);

	ret = gk_image_open(path_in("ckpt.000001"), &lo, &opened, NULL, &err);
	if (!ok(ret == 0 && opened && opened->sequence == 1,
		"gk_image_open accepts a checkpoint holding criu/"))
		printf("#   %s\n", err.text);
	gk_manifest_free(opened);

	ok(transparent_checkpoint(0) == 2 && transparent_checkpoint(0) == 3,
	   "two more transparent checkpoints: seal, criu/, publish");
	ret = gk_store_list(root, &list, &n, &err);
	ok(ret == 0 && n == 3 && list[0].transparent && list[2].transparent,
	   "list marks them transparent");
	free(list);

	/* gk_store_commit is seal + publish, and a plain one is not transparent. */
	ret = gk_store_begin(root, &txn, &err);
	m = empty_manifest("transparent");
	ret = ret ?: gk_store_commit(&txn, m, 0, NULL, &err);
	gk_manifest_free(m);
	list = NULL;
	ret = ret ?: gk_store_list(root, &list, &n, &err);
	ok(ret == 0 && n == 4 && list[0].sequence == 4 && !list[0].transparent &&
	       list[1].transparent,
	   "commit still commits in one step; the result is not transparent");
	free(list);

	/* A user pruning its own root leaves root's transparent checkpoints. */
	nobody = getpwnam("nobody");
	if (geteuid() != 0 || !nobody) {
		skip("needs root and a user 'nobody' to prune as another user");
		skip("needs root and a user 'nobody' to prune as another user");
		skip("needs root and a user 'nobody' to prune as another user");
	} else {
		/* The user owns its root and ckpt.N, root owns criu/: as in a job. */
		for (const char *p = base; p; p = p == base ? root : NULL)
			ret = chown(p, nobody->pw_uid, nobody->pw_gid);
		for (int i = 1; i <= 4; i++) {
			char name[32];

			snprintf(name, sizeof(name), "ckpt.%06d", i);
			ret = chown(path_in(name), nobody->pw_uid, nobody->pw_gid);
		}
		pid = fork();
		if (pid == 0) {
			if (setgid(nobody->pw_gid) < 0 || setuid(nobody->pw_uid) < 0)
				_exit(100);
			_exit(gk_store_prune(root, 1, &err) == 0 ? 0 : 1);
		}
		waitpid(pid, &status, 0);
		ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		   "a prune by the user removes nothing");
		ok(exists(path_in("ckpt.000001")) && exists(path_in("ckpt.000002/" GK_CRIU_DIR)) &&
		       exists(path_in("ckpt.000003")),
		   "and leaves the transparent ones to the shepherd");
		ret = gk_store_prune(root, 1, &err);
		ok(ret == 3 && !exists(path_in("ckpt.000001")) && !exists(path_in("ckpt.000003")),
		   "root prunes them");
	}
	ok(exists(path_in("ckpt.000004")), "the newest is kept");
	ret = gk_store_publish(root, ".tmp.ckpt.000009.host.1", 9, 0, &err);
	ok(ret == -ENOENT, "publish of a folder that is not there fails");
	{
		char cmd[4200];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", base);
	}
	return done_testing();
}
