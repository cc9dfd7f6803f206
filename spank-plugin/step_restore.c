#include "config.h"

#include "step_restore.h"
#include "common/fsafe.h"
#include "image/ckptname.h"
#include "common/jobdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gk_plan_path(const char *bb_root, uint32_t job_id, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/.plan.%u", bb_root, job_id);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A small file read through a descriptor: no link followed, a regular file
 * of at most max bytes, owned by `owner` (or anyone when owner < 0) and, when
 * it must be root's, writable by nobody else. */
static int read_small(int dirfd, const char *name, long owner, size_t max, char **text, size_t *len,
		      gk_error_t *err)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	int fd, ret = 0;

	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", name,
			     ret == -ELOOP ? "a symbolic link; refused" : strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
		gk_errprintf(err, "%s: not a regular file of at most %zu bytes", name, max);
		ret = -EINVAL;
		goto out;
	}
	if (owner >= 0 && (st.st_uid != (uid_t)owner || (st.st_mode & (S_IWGRP | S_IWOTH)))) {
		gk_errprintf(err, "%s: not root's alone (uid %u, mode %04o); refused", name,
			     (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		ret = -EPERM;
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		gk_errprintf(err, "out of memory");
		goto out;
	}
	while (got < (size_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			ret = r < 0 ? -errno : -EIO;
			gk_errprintf(err, "%s: %s", name,
				     r < 0 ? strerror(errno) : "shrank while read");
			goto out;
		}
		got += (size_t)r;
	}
	buf[got] = 0;
	*text = buf;
	*len = got;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return ret;
}

/* Task `task`'s ckpt.N is committed in the step folder: each level opened
 * without following a link, from the step folder's descriptor. */
static int has_member(int stepfd, uint32_t task, uint64_t seq)
{
	char name[64];
	struct stat st;
	int taskfd, ckptfd, ret = 0;

	snprintf(name, sizeof(name), GK_TASK_PREFIX "%" PRIu32, task);
	taskfd = openat(stepfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (taskfd < 0)
		return 0;
	snprintf(name, sizeof(name), GK_CKPT_FMT, seq);
	ckptfd = openat(taskfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ckptfd >= 0) {
		ret = fstatat(ckptfd, GK_MANIFEST_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		      S_ISREG(st.st_mode);
		close(ckptfd);
	}
	close(taskfd);
	return ret;
}

/* From the prolog's plan, root's, in the burst-buffer root. */
static int from_plan(const struct gk_site *s, const struct gk_task_ids *ids, const char *step,
		     struct gk_plan_entry *e, gk_error_t *err)
{
	gk_error_t sub;
	char name[64], *text = NULL;
	size_t len = 0;
	int rootfd, ret;

	snprintf(name, sizeof(name), ".plan.%u", ids->job_id);
	/* Checked as the task folder's root was: root's alone all the way. */
	rootfd = gk_open_trusted_dir(s->bb_root, "bb_root", &sub);
	if (rootfd < 0) {
		gk_errprintf(err, "burst-buffer root: %s", sub.text);
		return rootfd;
	}
	ret = read_small(rootfd, name, 0, GK_PLAN_MAX, &text, &len, &sub);
	close(rootfd);
	if (ret == -ENOENT) {
		gk_errprintf(
		    err,
		    "no restore plan from the prolog (%s/%s): it did not run or failed (see "
		    "slurmd's log; a slurmd restarted after a crash with its cred_state skips "
		    "the prolog of a job that ran there before: docs/admins.md, When a node "
		    "fails); the task is not started, rather than restoring a set other "
		    "tasks of the step may not",
		    s->bb_root, name);
		return ret;
	}
	if (ret < 0) {
		gk_errprintf(err, "restore plan %s/%s", s->bb_root, sub.text);
		return ret;
	}
	ret = gk_plan_find(text, len, step, e, &sub);
	free(text);
	if (ret < 0) {
		gk_errprintf(err, "restore plan %s/%s: %s; refused", s->bb_root, name, sub.text);
		return ret;
	}
	if (ret == 0) {
		e->kind = GK_PLAN_FRESH;
		snprintf(e->reason, sizeof(e->reason), "the shared root holds no checkpoint of %s",
			 step);
	}
	return 0;
}

/* Keep the `max` highest of the numbers seen in top[] (highest first). */
static void keep_newest(uint64_t *top, size_t *n, size_t max, uint64_t seq)
{
	size_t i;

	if (*n == max && seq <= top[max - 1])
		return;
	i = *n < max ? (*n)++ : max - 1;
	while (i > 0 && top[i - 1] < seq) {
		top[i] = top[i - 1];
		i--;
	}
	top[i] = seq;
}

/*
 * Without staging: the newest set recorded in this node's step folder whose
 * every member is here (the runtime checks the data as it restores). The
 * folder is the job user's and this runs as root in task_init_privileged:
 * at most GK_JOBDIR_ENTRIES_MAX names are looked at, and of the set records
 * only the newest GK_STEP_SETS_READ by number are read, newest first, however
 * many the user made (note says so when there were more).
 */
static int from_folder(int stepfd, uint32_t ntasks, struct gk_plan_entry *e, char *note,
		       size_t notelen)
{
	uint64_t top[GK_STEP_SETS_READ], best = 0;
	size_t ntop = 0, nrec = 0, names = 0;
	struct gk_set_record found = {0}, r;
	char why[sizeof(e->reason)] = "", more[160] = "";
	struct dirent *de;
	int fd;
	DIR *d;

	memset(e, 0, sizeof(*e));
	note[0] = 0;
	fd = dup(stepfd);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		int ret = -errno;

		if (fd >= 0)
			close(fd);
		return ret;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		uint64_t seq;

		if (++names > GK_JOBDIR_ENTRIES_MAX) {
			snprintf(more, sizeof(more), "; the folder holds more than %u names, the "
				 "rest were not looked at", GK_JOBDIR_ENTRIES_MAX);
			break;
		}
		if (gk_set_name_parse(de->d_name, &seq) < 0 || seq == 0)
			continue;
		nrec++;
		keep_newest(top, &ntop, GK_STEP_SETS_READ, seq);
	}
	closedir(d);
	if (nrec > ntop || more[0])
		snprintf(note, notelen,
			 "only the newest %zu of %zu set records were read%s",
			 ntop, nrec, more);
	for (size_t i = 0; i < ntop && !best; i++) {
		uint64_t seq = top[i];
		gk_error_t sub;
		char *text = NULL, name[32];
		size_t len = 0;
		uint32_t t;

		snprintf(name, sizeof(name), GK_SET_PREFIX "%06" PRIu64, seq);
		if (read_small(stepfd, name, -1, GK_SETFILE_MAX, &text, &len, &sub) < 0 ||
		    gk_set_record_parse(text, len, &r, &sub) < 0 || r.sequence != seq) {
			free(text);
			continue;
		}
		free(text);
		/* The step's size first: the task folders looked at are this
		 * step's (from Slurm), not as many as the record says. */
		if (r.members != ntasks) {
			if (!why[0])
				snprintf(why, sizeof(why),
					 "set %" PRIu64 " has %" PRIu32 " tasks, this step %" PRIu32, seq,
					 r.members, ntasks);
			continue;
		}
		for (t = 0; t < r.members && has_member(stepfd, t, seq); t++)
			;
		if (t < r.members) {
			if (!why[0])
				snprintf(why, sizeof(why),
					 "set %" PRIu64 " lacks task %" PRIu32 "'s part here", seq, t);
			continue;
		}
		best = seq;
		found = r;
	}
	if (best) {
		e->kind = GK_PLAN_SET;
		e->sequence = best;
		e->id = found.id;
		e->members = found.members;
	} else {
		e->kind = GK_PLAN_FRESH;
		snprintf(e->reason, sizeof(e->reason), "no complete checkpoint set in this node's "
			 "step folder%s%s%s%s", note[0] ? " (" : "", note, note[0] ? ")" : "",
			 why[0] ? ": " : "");
		if (why[0]) {
			size_t used = strlen(e->reason);

			snprintf(e->reason + used, sizeof(e->reason) - used, "%s", why);
		}
	}
	return 0;
}

int gk_step_choose(const struct gk_site *s, const struct gk_task_ids *ids, uint32_t ntasks,
		   int taskfd, const char *task_dir, struct gk_step_choice *c, gk_error_t *err)
{
	struct gk_plan_entry e;
	char step[32];
	int stepfd, ret;

	memset(c, 0, sizeof(*c));
	gk_step_dirname(ids->step_id, step, sizeof(step));
	/* The checked task folder's parent: what the path names by now may differ. */
	stepfd = openat(taskfd, "..", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (stepfd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s/..: %s", task_dir, strerror(-ret));
		return ret;
	}
	c->from_plan = s->stage[0] && s->shared_root[0];
	ret = c->from_plan ? from_plan(s, ids, step, &e, err)
			   : from_folder(stepfd, ntasks, &e, c->note, sizeof(c->note));
	if (ret < 0) {
		if (!c->from_plan)
			gk_errprintf(err, "%s/..: %s", task_dir, strerror(-ret));
		goto out;
	}
	c->kind = e.kind;
	snprintf(c->reason, sizeof(c->reason), "%s", e.reason);
	if (e.kind != GK_PLAN_SET)
		goto out;
	if (e.members != ntasks) {
		c->kind = GK_PLAN_BAD;
		snprintf(c->reason, sizeof(c->reason),
			 "set %" PRIu64 " was taken by %" PRIu32 " tasks; this step has %" PRIu32,
			 e.sequence, e.members, ntasks);
		goto out;
	}
	c->sequence = e.sequence;
	c->id = e.id;
	snprintf(c->ckpt, sizeof(c->ckpt), "%s/" GK_CKPT_FMT, task_dir, e.sequence);
	if (!has_member(stepfd, ids->task_id, e.sequence)) {
		ret = -ENOENT;
		gk_errprintf(
		    err,
		    "set %" PRIu64 " is restored by every task of the step, but this task's part "
		    "(%s) is not on this node (staging it in failed? see slurmd's log); the task "
		    "is not started",
		    e.sequence, c->ckpt);
	}
out:
	close(stepfd);
	return ret;
}
