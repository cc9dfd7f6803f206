/*
 * publish.c - what stage-in, stage-out and the flushed sets (sets.c) share:
 * a folder of root's in the shared tree, the shared job folder with its
 * record, and one checkpoint copied through a root-only area, checked and
 * published with one rename.
 */
#include "config.h"

#include "stage.h"
#include "stage_log.h"
#include "common/fsafe.h"
#include "common/testhook.h"
#include "image/image.h"
#include "image/seal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

const char *stage_why(int ret)
{
	return ret == -ELOOP     ? "a symbolic link; refused"
	       : ret == -ENOTDIR ? "not a folder; refused"
	       : ret == -EPERM	 ? "belongs to someone else; refused"
				 : strerror(-ret);
}

/* A folder of root's below a folder of root's (the shared tree). */
int stage_root_dir(int parentfd, const char *name)
{
	if (mkdirat(parentfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	return gk_open_dir_at(parentfd, name, 0, NULL);
}

/*
 * The copy, in the area, before it is published: criu/ must carry root's
 * seal (else the checkpoint is not published); the rest is what the runtime
 * checks again on restore, and decides then (fail or start afresh, as the
 * job asked): here a problem is only reported.
 */
static int check_copy(struct stage *st, int copyfd, int dstdir, const char *label)
{
	struct gk_load_opts lo = {.uid = st->uid, .check_data = 1};
	struct gk_manifest *m = NULL;
	gk_error_t err;
	struct gk_seal *seal;
	struct stat sb;
	int ret;

	/* An increment's bases are looked for where it is published: they
	 * are staged before it (oldest first). */
	ret = gk_image_open_in(dstdir, copyfd, label, &lo, &m, NULL, &err);
	gk_manifest_free(m);
	if (ret < 0)
		warn_line("%s fails its checks (%s); staged anyway: the restore checks it again "
			  "and refuses it",
			  label, err.text);
	if (fstatat(copyfd, GK_CRIU_DIR, &sb, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	seal = calloc(1, sizeof(*seal));
	if (!seal)
		return -ENOMEM;
	ret = gk_seal_verify(copyfd, st->uid, seal, NULL, &err);
	free(seal);
	if (ret == -EHOSTUNREACH) {
		warn_line("%s: seal not checked (%s); the restore checks it", label, err.text);
		return 0;
	}
	if (ret < 0) {
		error_line(st, "%s: %s; not staged", label, err.text);
		return ret;
	}
	return 0;
}

/*
 * Copy one checkpoint: srcfd (checked, the job's user's) into the area of
 * the destination, check, publish as dstdir/name. 0, or <0 when it did not
 * arrive (the line said why). both: the line names source and destination
 * (a flushed set's part copied into the shared root), else the far end only.
 */
int stage_move(struct stage *st, int srcfd, const char *label, int areafd, int dstdir,
	       const char *name, const char *dst_label, const char *what, int both)
{
	gk_error_t err;
	char tmp[160];
	uint64_t bytes = 0;
	double t0 = now_s();
	int copyfd, ret;

	area_name(st, st->verb, tmp, sizeof(tmp));
	ret = copy_ckpt(srcfd, label, areafd, tmp, st->uid, st->gid, &bytes, &err);
	if (ret < 0) {
		error_line(st, "%s; not staged", err.text);
		return ret;
	}
	copyfd = gk_open_dir_at(areafd, tmp, st->uid, NULL);
	ret = copyfd < 0 ? copyfd : check_copy(st, copyfd, dstdir, label);
	if (copyfd >= 0)
		close(copyfd);
	gk_test_hook("stage-copied");
	/* One rename publishes it, into the folder that was checked. */
	if (ret == 0 && renameat2(areafd, tmp, dstdir, name, RENAME_NOREPLACE) < 0) {
		ret = -errno;
		if (ret == -EEXIST)
			say("%s: already there (staged meanwhile); this copy dropped", dst_label);
		else
			error_line(st, "%s: cannot publish: %s", dst_label, strerror(-ret));
	}
	if (ret < 0) {
		area_discard(st, areafd, areafd, tmp);
		return ret == -EEXIST ? 0 : ret;
	}
	fsync(dstdir);
	if (both)
		say("copied %s: %llu bytes in %.2f s from %s to %s", what,
		    (unsigned long long)bytes, now_s() - t0, label, dst_label);
	else
		say("staged %s %s: %llu bytes in %.2f s %s %s", st->verb, what,
		    (unsigned long long)bytes, now_s() - t0, strcmp(st->verb, "out") ? "from" : "to",
		    strcmp(st->verb, "out") ? label : dst_label);
	return 0;
}

/* SHARED/JOB, root's, with its record; an earlier job's folder of the same
 * id is removed first. */
int stage_shared_job(struct stage *st, const char *jobname)
{
	struct job_ident now, rec;
	gk_error_t err;
	char who[128];
	int fd, ret;

	if (job_ident(st, &now, &err) < 0) {
		warn_line("%s; the shared folder is recorded for uid %u only", err.text,
			  (unsigned)st->uid);
		memset(&now, 0, sizeof(now));
	}
	now.uid = st->uid;
	fd = gk_open_dir_at(st->sharedfd, jobname, 0, NULL);
	if (fd >= 0 && record_read(fd, &rec) == 0 && !record_ours(&rec, &now)) {
		close(fd);
		record_show(&rec, who, sizeof(who));
		ret = area_discard(st, st->shared_area, st->sharedfd, jobname);
		if (ret < 0) {
			error_line(st, "%s/%s holds an earlier job with this id (%s) and cannot be "
				       "removed: %s; not staged",
				   st->shared_root, jobname, who, strerror(-ret));
			return ret;
		}
		say("removed %s/%s: it held the checkpoints of an earlier job with this id (%s)",
		    st->shared_root, jobname, who);
		fd = -ENOENT;
	}
	if (fd == -ENOENT)
		fd = stage_root_dir(st->sharedfd, jobname);
	if (fd < 0) {
		error_line(st, "%s/%s: %s; not staged", st->shared_root, jobname, stage_why(fd));
		return fd;
	}
	ret = record_write(fd, &now);
	if (ret < 0)
		warn_line("%s/%s/%s: %s", st->shared_root, jobname, STAGE_RECORD, strerror(-ret));
	return fd;
}
