/*
 * sets.c - the checkpoint sets of steps of several tasks (runtime/image/
 * setfile.h, stepset.h) as staging sees them:
 *
 *	BB_ROOT/JOB/step.S/set.N        task 0's record: every task committed N
 *	SHARED_ROOT/JOB/step.S/set.N    its copy (root's)
 *	BB_ROOT/.plan.JOB               the prolog's restore plan (root's)
 *
 * A member's checkpoints are staged whole and all (flow.c asks
 * sets_task_is_member), and pruned by set, here in the prolog, never by count
 * per task: that could delete one task's part of the newest complete set.
 * The plan is decided from the shared root, which every node of the job sees
 * alike, so every node's plugin gives the tasks of a step the same set. On a
 * restart with a flush root, sets_from_flush first copies there the newest
 * sets the runtime flushed whole (the dead node's parts and task 0's records
 * may be nowhere else), so a node loss costs only the work since the last
 * set flushed whole.
 *
 * As everywhere in gpuckpt-stage: every file is reached through a descriptor
 * of a folder whose owner was checked, opened without following a link and
 * checked on its descriptor; copies are written in the root-only area and
 * published with one rename. The step folders of the shared root are handed
 * to the image library as /proc/self/fd/N of their checked descriptor, never
 * by a path.
 */
#include "config.h"

#include "stage.h"
#include "stage_log.h"
#include "spank-plugin/ckpt_dir.h"
#include "common/fsafe.h"
#include "image/image.h"
#include "image/setfile.h"
#include "image/stepset.h"
#include "image/ckptname.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A small regular file of `owner`'s with one link, through dirfd, no link
 * followed; its text in *text (malloc'ed). */
static int read_plain(int dirfd, const char *name, uid_t owner, size_t max, char **text,
		      size_t *len)
{
	struct stat sb;
	int fd, ret;

	*text = NULL;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) < 0) {
		ret = -errno;
		goto out;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_nlink != 1) {
		ret = -EPERM;
		goto out;
	}
	if (sb.st_uid != owner) {
		ret = -EPERM;
		goto out;
	}
	if ((size_t)sb.st_size > max) {
		ret = -EFBIG;
		goto out;
	}
	ret = gk_read_small(fd, (size_t)sb.st_size, text);
	*len = (size_t)sb.st_size;
out:
	close(fd);
	return ret < 0 ? ret : 0;
}

/* Why a checked open was refused, for a line. */
static const char *why_not(int ret)
{
	return ret == -ELOOP     ? "a symbolic link; refused"
	       : ret == -ENOTDIR ? "not a folder; refused"
	       : ret == -EPERM	 ? "belongs to someone else, or not a plain file; refused"
				 : strerror(-ret);
}

int sets_task_is_member(const struct stage *st, int taskfd)
{
	struct gk_store_entry *list = NULL;
	size_t count = 0;
	gk_error_t err;
	int member = 0;

	if (gk_store_list_at(taskfd, "task", &list, &count, &err) < 0)
		return 0;
	for (size_t k = 0; k < count && !member; k++) {
		struct gk_manifest *m = NULL;
		char *text = NULL;
		size_t len = 0;
		int ckptfd;

		if (!list[k].complete)
			continue;
		ckptfd = gk_open_dir_at(taskfd, strrchr(list[k].path, '/') + 1, st->uid, NULL);
		if (ckptfd < 0)
			continue;
		if (read_plain(ckptfd, GK_MANIFEST_FILE, st->uid, 16u << 20, &text, &len) == 0 &&
		    gk_manifest_parse(text, len, &m, &err) == 0)
			member = m->set_members > 0;
		gk_manifest_free(m);
		free(text);
		close(ckptfd);
	}
	free(list);
	return member;
}

/*
 * Copy the set record `name` of srcdir (owned by src_uid) to dstdir, as
 * owner:group, through the area: complete under its name or absent. One
 * already there is kept (a record never changes). 0, or <0.
 */
static int copy_record(const struct stage *st, int srcdir, const char *name, uid_t src_uid,
		       int areafd, int dstdir, uid_t uid, gid_t gid, const char *step)
{
	struct gk_set_record r;
	gk_error_t err;
	char *text = NULL, tmp[160];
	size_t len = 0;
	uint64_t seq;
	struct stat sb;
	int fd, ret;

	if (fstatat(dstdir, name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
		return 0;
	ret = read_plain(srcdir, name, src_uid, GK_SETFILE_MAX, &text, &len);
	if (ret < 0)
		return ret;
	/* Only a record the runtime would take is carried. */
	if (gk_set_name_parse(name, &seq) < 0 || gk_set_record_parse(text, len, &r, &err) < 0 ||
	    r.sequence != seq) {
		ret = -EBADMSG;
		goto out;
	}
	area_name(st, "set", tmp, sizeof(tmp));
	fd = openat(areafd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (write(fd, text, len) != (ssize_t)len || fchown(fd, uid, gid) < 0 || fsync(fd) < 0)
		ret = errno ? -errno : -EIO;
	close(fd);
	if (ret == 0 && renameat2(areafd, tmp, dstdir, name, RENAME_NOREPLACE) < 0) {
		ret = errno == EEXIST ? 0 : -errno; /* another node's copy won */
	} else if (ret == 0) {
		fsync(dstdir);
		say("staged %s %s/%s", st->verb, step, name);
	}
	unlinkat(areafd, tmp, 0);
out:
	free(text);
	return ret;
}

/* Every set record of srcdir to dstdir. */
static int records_copy(struct stage *st, int srcdir, uid_t src_uid, int areafd, int dstdir,
			uid_t uid, gid_t gid, const char *step, const char *from, const char *to)
{
	struct dirent *e;
	DIR *d;
	int dfd = fcntl(srcdir, F_DUPFD_CLOEXEC, 0), failed = 0;

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return -EIO;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		uint64_t seq;
		int ret;

		if (gk_set_name_parse(e->d_name, &seq) < 0)
			continue;
		ret = copy_record(st, srcdir, e->d_name, src_uid, areafd, dstdir, uid, gid, step);
		if (ret < 0) {
			error_line(st, "%s/%s: copy to %s failed: %s", from, show(e->d_name), to,
				   ret == -EPERM ? "not a plain file of its owner's" : strerror(-ret));
			failed = 1;
		}
	}
	closedir(d);
	return failed ? -EIO : 0;
}

int sets_records_out(struct stage *st, int stepfd, int s_stepfd, const char *step)
{
	char from[4200], to[4200];

	snprintf(from, sizeof(from), "%s/%u/%s", st->bb_root, st->job, step);
	snprintf(to, sizeof(to), "%s/%u/%s", st->shared_root, st->job, step);
	return records_copy(st, stepfd, st->uid, st->shared_area, s_stepfd, 0, 0, step, from, to);
}

int sets_records_in(struct stage *st, int s_stepfd, int stepfd, const char *step)
{
	char from[4200], to[4200];

	snprintf(from, sizeof(from), "%s/%u/%s", st->shared_root, st->job, step);
	snprintf(to, sizeof(to), "%s/%u/%s", st->bb_root, st->job, step);
	return records_copy(st, s_stepfd, 0, st->bb_area, stepfd, st->uid, st->gid, step, from, to);
}

/* ---- sets the runtime flushed (prolog, before the plan) ---- */

/* A set record of the flush root (the user's), parsed. */
struct flushed {
	uint64_t sequence;
	struct gk_set_record r;
};

static int flushed_newest_first(const void *a, const void *b)
{
	const struct flushed *x = a, *y = b;

	return x->sequence < y->sequence ? 1 : x->sequence > y->sequence ? -1 : 0;
}

/* The set records of the flush step folder f_stepfd that parse, newest
 * first (malloc'ed). A record is read as a plain file of the user's, at most
 * GK_SETFILE_MAX bytes, as copy_record reads one. */
static size_t flushed_records(const struct stage *st, int f_stepfd, struct flushed **out)
{
	struct flushed *list = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d;
	int dfd = fcntl(f_stepfd, F_DUPFD_CLOEXEC, 0);

	*out = NULL;
	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	rewinddir(d);
	while ((e = readdir(d)) && n < STAGE_MAX_CKPTS) {
		struct gk_set_record r;
		gk_error_t err;
		char *text = NULL;
		size_t len = 0;
		uint64_t seq;

		if (gk_set_name_parse(e->d_name, &seq) < 0)
			continue;
		if (read_plain(f_stepfd, e->d_name, st->uid, GK_SETFILE_MAX, &text, &len) == 0 &&
		    gk_set_record_parse(text, len, &r, &err) == 0 && r.sequence == seq &&
		    r.members > 0) {
			if (n == cap) {
				struct flushed *grown =
				    realloc(list, (cap = cap ? cap * 2 : 16) * sizeof(*list));

				if (!grown) {
					free(text);
					break;
				}
				list = grown;
			}
			list[n].sequence = seq;
			list[n++].r = r;
		}
		free(text);
	}
	closedir(d);
	if (n)
		qsort(list, n, sizeof(*list), flushed_newest_first);
	*out = list;
	return n;
}

/*
 * Whether task.T/ckpt.N of the flush step folder is set r's part of task T:
 * a committed checkpoint folder of the user's whose manifest names the set
 * (its id, task count, this task). 1, or 0 with why[] saying what is not so.
 */
static int flushed_part(const struct stage *st, int f_stepfd, const struct gk_set_record *r,
			uint32_t t, char *why, size_t len)
{
	struct gk_manifest *m = NULL;
	gk_error_t err;
	char task[32], name[64], *text = NULL;
	size_t tlen = 0;
	int taskfd, ckptfd, ok = 0, ret;

	snprintf(task, sizeof(task), "task.%u", t);
	snprintf(name, sizeof(name), GK_CKPT_FMT, r->sequence);
	taskfd = gk_open_dir_at(f_stepfd, task, st->uid, NULL);
	ckptfd = taskfd < 0 ? taskfd : gk_open_dir_at(taskfd, name, st->uid, NULL);
	if (ckptfd < 0) {
		snprintf(why, len, "%s/%s %s", task, name,
			 ckptfd == -ENOENT ? "was not flushed" : why_not(ckptfd));
		goto out;
	}
	ret = read_plain(ckptfd, GK_MANIFEST_FILE, st->uid, 16u << 20, &text, &tlen);
	if (ret < 0) {
		snprintf(why, len, "%s/%s is not committed there (%s: %s)", task, name,
			 GK_MANIFEST_FILE, ret == -ENOENT ? "none" : why_not(ret));
		goto out;
	}
	if (gk_manifest_parse(text, tlen, &m, &err) < 0) {
		snprintf(why, len, "%s/%s: %s: %.300s", task, name, GK_MANIFEST_FILE, err.text);
		goto out;
	}
	if (m->sequence != r->sequence || m->set_id != r->id || m->set_members != r->members ||
	    m->set_member != t)
		snprintf(why, len,
			 "%s/%s is not this set's part of task %u (its manifest names set %016" PRIx64
			 ", member %u of %u)",
			 task, name, t, m->set_id, m->set_member, m->set_members);
	else
		ok = 1;
out:
	gk_manifest_free(m);
	free(text);
	if (ckptfd >= 0)
		close(ckptfd);
	if (taskfd >= 0)
		close(taskfd);
	return ok;
}

/* The newest set complete in the shared step folder `step` (0: none, or no
 * such folder). */
static uint64_t shared_newest(const struct stage *st, int sjobfd, const char *step)
{
	struct gk_stepset *sets = NULL;
	gk_error_t err;
	char label[4200];
	uint64_t newest = 0;
	uint32_t ntasks;
	size_t n = 0;
	int s_stepfd;

	if (sjobfd < 0)
		return 0;
	s_stepfd = gk_open_dir_at(sjobfd, step, 0, NULL);
	if (s_stepfd < 0)
		return 0;
	snprintf(label, sizeof(label), "%s/%u/%s", st->shared_root, st->job, step);
	if (gk_stepset_list_at(s_stepfd, label, &sets, &n, &ntasks, &err) == 0)
		for (size_t i = 0; i < n && !newest; i++)
			if (sets[i].complete)
				newest = sets[i].sequence;
	free(sets);
	close(s_stepfd);
	return newest;
}

/* Copy flushed set r of step `step` (every part checked by flushed_part)
 * into the shared root, its record last. 0, or <0 (a line said why). */
static int flushed_copy(struct stage *st, int *sjobfd, int f_stepfd, const char *step,
			const struct gk_set_record *r)
{
	char jobname[16], setname[32], name[64];
	int s_stepfd, ret = 0;

	snprintf(jobname, sizeof(jobname), "%u", st->job);
	snprintf(name, sizeof(name), GK_CKPT_FMT, r->sequence);
	gk_set_name(r->sequence, setname, sizeof(setname));
	if (*sjobfd < 0) {
		*sjobfd = stage_shared_job(st, jobname);
		if (*sjobfd < 0)
			return *sjobfd;
	}
	s_stepfd = stage_root_dir(*sjobfd, step);
	if (s_stepfd < 0) {
		error_line(st, "%s/%s/%s: %s; flushed set %" PRIu64 " not used", st->shared_root,
			   jobname, step, why_not(s_stepfd), r->sequence);
		return s_stepfd;
	}
	for (uint32_t t = 0; t < r->members && ret == 0; t++) {
		char task[32], src[4400], dst[4400], what[200];
		struct stat sb;
		int taskfd, s_taskfd, ckptfd;

		snprintf(task, sizeof(task), "task.%u", t);
		snprintf(src, sizeof(src), "%s/%s/%s/%s/%s", st->flush_root, jobname, step, task,
			 name);
		snprintf(dst, sizeof(dst), "%s/%s/%s/%s/%s", st->shared_root, jobname, step, task,
			 name);
		snprintf(what, sizeof(what), "%s/%s/%s", step, task, name);
		s_taskfd = stage_root_dir(s_stepfd, task);
		if (s_taskfd < 0) {
			error_line(st, "%s/%s/%s/%s: %s; flushed set %" PRIu64 " not used",
				   st->shared_root, jobname, step, task, why_not(s_taskfd),
				   r->sequence);
			ret = s_taskfd;
			break;
		}
		/* A part the shared root has already (staged out by an epilog,
		 * or another node's prolog was quicker) stays: the plan checks
		 * that it is this set's. */
		if (fstatat(s_taskfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
			close(s_taskfd);
			continue;
		}
		/* The folders flushed_part checked, opened again: whatever the
		 * user swapped in since is checked as it is copied. */
		taskfd = gk_open_dir_at(f_stepfd, task, st->uid, NULL);
		ckptfd = taskfd < 0 ? taskfd : gk_open_dir_at(taskfd, name, st->uid, NULL);
		if (ckptfd < 0) {
			error_line(st, "%s: %s; flushed set %" PRIu64 " not used", src,
				   why_not(ckptfd), r->sequence);
			ret = ckptfd;
		} else {
			ret = stage_move(st, ckptfd, src, st->shared_area, s_taskfd, name, dst, what, 1);
		}
		if (ckptfd >= 0)
			close(ckptfd);
		if (taskfd >= 0)
			close(taskfd);
		close(s_taskfd);
	}
	/* The record last: in the shared root a set is complete only once
	 * every part is there. */
	if (ret == 0) {
		ret = copy_record(st, f_stepfd, setname, st->uid, st->shared_area, s_stepfd, 0, 0,
				  step);
		if (ret < 0)
			error_line(st, "%s/%s/%s/%s: copy to %s failed: %s", st->flush_root, jobname,
				   step, setname, st->shared_root,
				   ret == -EPERM ? "not a plain file of its owner's" : strerror(-ret));
	}
	close(s_stepfd);
	return ret;
}

void sets_from_flush(struct stage *st, int *sjobfd, int fjobfd)
{
	struct dirent *e;
	DIR *d;
	int dfd = fcntl(fjobfd, F_DUPFD_CLOEXEC, 0);

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		struct flushed *recs = NULL;
		char step[32];
		uint64_t s_newest;
		uint32_t step_id;
		unsigned copied = 0;
		size_t n;
		int f_stepfd;

		if (gk_step_parse(e->d_name, &step_id) < 0)
			continue;
		snprintf(step, sizeof(step), "%.31s", e->d_name);
		f_stepfd = gk_open_dir_at(fjobfd, step, st->uid, NULL);
		if (f_stepfd < 0)
			continue;
		n = flushed_records(st, f_stepfd, &recs);
		s_newest = n ? shared_newest(st, *sjobfd, step) : 0;
		for (size_t i = 0; i < n && copied < st->keep; i++) {
			char why[600];
			int whole = 1;

			if (recs[i].sequence <= s_newest) {
				say("plan: %s: flushed set %" PRIu64 " not copied: the shared root has "
				    "set %" PRIu64 " complete, as new or newer",
				    step, recs[i].sequence, s_newest);
				break;
			}
			for (uint32_t t = 0; t < recs[i].r.members && whole; t++)
				whole = flushed_part(st, f_stepfd, &recs[i].r, t, why, sizeof(why));
			if (!whole) {
				say("plan: %s: flushed set %" PRIu64 " incomplete in %s/%u/%s: %s; "
				    "not used",
				    step, recs[i].sequence, st->flush_root, st->job, step, why);
				continue;
			}
			if (flushed_copy(st, sjobfd, f_stepfd, step, &recs[i].r) < 0)
				continue;
			copied++;
			if (s_newest)
				snprintf(why, sizeof(why), "set %" PRIu64, s_newest);
			else
				snprintf(why, sizeof(why), "none");
			say("plan: %s: flushed set %" PRIu64 " copied from the flush root %s/%u/%s to "
			    "the shared root (complete there; newest complete in the shared root: %s)",
			    step, recs[i].sequence, st->flush_root, st->job, step, why);
		}
		free(recs);
		close(f_stepfd);
	}
	closedir(d);
}

/* ---- the plan, and the prune by set (prolog) ---- */

struct note_ctx {
	const char *step;
};

static void note(void *arg, const char *line)
{
	const struct note_ctx *c = arg;

	say("plan: %s: %s", c->step, line);
}

/*
 * Keep, in a step folder of the shared root, the members of the newest
 * `keep` complete sets (and anything newer) and of the set the plan restores
 * (older, when the newer ones failed their checks); remove older checkpoints
 * and set records.
 */
static void prune_step(struct stage *st, int s_stepfd, const char *stepdir, const char *step,
		       uint64_t planned)
{
	struct gk_stepset *sets = NULL;
	gk_error_t err;
	uint64_t from = 0;
	uint32_t ntasks;
	unsigned complete = 0;
	size_t n = 0;
	struct dirent *e;
	DIR *d;
	int dfd;

	if (gk_stepset_list(stepdir, &sets, &n, &ntasks, &err) < 0)
		return;
	for (size_t i = 0; i < n && !from; i++)
		if (sets[i].complete && ++complete == st->keep)
			from = sets[i].sequence;
	free(sets);
	if (!from)
		return;
	if (planned && planned < from)
		from = planned;
	dfd = fcntl(s_stepfd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		struct gk_store_entry *list = NULL;
		size_t count = 0;
		uint64_t seq;
		uint32_t task;
		int taskfd;

		if (gk_set_name_parse(e->d_name, &seq) == 0) {
			if (seq < from && unlinkat(s_stepfd, e->d_name, 0) == 0)
				say("pruned %s/%u/%s/%s", st->shared_root, st->job, step, e->d_name);
			continue;
		}
		if (gk_task_parse(e->d_name, &task) < 0)
			continue;
		taskfd = gk_open_dir_at(s_stepfd, e->d_name, 0, NULL);
		if (taskfd < 0)
			continue;
		if (gk_store_list_at(taskfd, e->d_name, &list, &count, &err) == 0) {
			for (size_t k = 0; k < count; k++) {
				const char *name = strrchr(list[k].path, '/') + 1;

				if (!list[k].complete || list[k].sequence >= from)
					continue;
				if (area_discard(st, st->shared_area, taskfd, name) == 0)
					say("pruned %s/%u/%s/%s/%s", st->shared_root, st->job, step,
					    e->d_name, name);
			}
		}
		free(list);
		close(taskfd);
	}
	closedir(d);
}

/* The plan's text: the magic line, then one line per step. */
struct plan_text {
	char *buf;
	size_t len, cap;
};

static int plan_add(struct plan_text *p, const char *line, size_t n)
{
	if (p->len + n + 1 > p->cap) {
		size_t cap = (p->cap ? p->cap * 2 : 4096) + n;
		char *grown = realloc(p->buf, cap);

		if (!grown)
			return -ENOMEM;
		p->buf = grown;
		p->cap = cap;
	}
	memcpy(p->buf + p->len, line, n);
	p->len += n;
	p->buf[p->len] = '\0';
	return 0;
}

/* BB_ROOT/.plan.JOB, root's 0600, whole: written in the area, renamed. */
static int plan_publish(struct stage *st, const struct plan_text *p)
{
	char name[32], tmp[160];
	int fd, ret = 0;

	snprintf(name, sizeof(name), ".plan.%u", st->job);
	area_name(st, "plan", tmp, sizeof(tmp));
	fd = openat(st->bb_area, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, p->buf, p->len) != (ssize_t)p->len || fsync(fd) < 0)
		ret = errno ? -errno : -EIO;
	close(fd);
	if (ret == 0 && renameat(st->bb_area, tmp, st->bbfd, name) < 0)
		ret = -errno;
	if (ret < 0)
		unlinkat(st->bb_area, tmp, 0);
	else
		fsync(st->bbfd);
	return ret;
}

void sets_plan_drop(const struct stage *st, uint32_t job)
{
	char name[32];

	snprintf(name, sizeof(name), ".plan.%u", job);
	unlinkat(st->bbfd, name, 0);
}

int sets_plan(struct stage *st, int sjobfd, struct planned **out, size_t *nout)
{
	static const char magic[] = "gpuckpt-plan 1\n";
	struct plan_text p = {0};
	struct planned *pl = NULL;
	size_t npl = 0;
	struct dirent *e;
	DIR *d = NULL;
	int dfd, ret;

	*out = NULL;
	*nout = 0;
	sets_plan_drop(st, st->job);
	ret = plan_add(&p, magic, sizeof(magic) - 1);
	if (ret < 0)
		goto out;
	/* No shared folder of this job (or another job's): every step starts afresh. */
	dfd = sjobfd < 0 ? -1 : fcntl(sjobfd, F_DUPFD_CLOEXEC, 0);
	if (dfd >= 0 && !(d = fdopendir(dfd)))
		close(dfd);
	if (d)
		rewinddir(d);
	while (d && (e = readdir(d))) {
		struct gk_load_opts lo = {.uid = st->uid, .check_data = 1};
		struct gk_plan_entry ent;
		struct note_ctx c = {e->d_name};
		gk_error_t err;
		char stepdir[64], line[1024];
		uint32_t step_id;
		int s_stepfd, n;

		if (gk_step_parse(e->d_name, &step_id) < 0)
			continue;
		s_stepfd = gk_open_dir_at(sjobfd, e->d_name, 0, NULL);
		if (s_stepfd < 0)
			continue;
		/* The checked folder itself, whatever its path names by now. */
		snprintf(stepdir, sizeof(stepdir), "/proc/self/fd/%d/.", s_stepfd);
		memset(&ent, 0, sizeof(ent));
		if (gk_stepset_plan(stepdir, &lo, &ent, note, &c, &err) < 0) {
			/* The plan is still whole, and says so for this step. */
			ent.kind = GK_PLAN_BAD;
			snprintf(ent.reason, sizeof(ent.reason),
				 "its folder in the shared root "
				 "cannot be read: %.400s",
				 err.text);
			error_line(st, "plan: %s/%u/%s: %s", st->shared_root, st->job, e->d_name,
				   err.text);
		}
		snprintf(ent.step, sizeof(ent.step), "%.31s", e->d_name);
		n = gk_plan_format(&ent, line, sizeof(line));
		if (n > 0) {
			plan_add(&p, line, (size_t)n);
			line[n - 1] = '\0';
			say("plan: %s", line);
		}
		if (ent.kind == GK_PLAN_SET) {
			struct planned *grown = realloc(pl, (npl + 1) * sizeof(*pl));

			if (grown) {
				pl = grown;
				snprintf(pl[npl].step, sizeof(pl[npl].step), "%.31s", e->d_name);
				pl[npl++].sequence = ent.sequence;
			}
		}
		prune_step(st, s_stepfd, stepdir, e->d_name,
			   ent.kind == GK_PLAN_SET ? ent.sequence : 0);
		close(s_stepfd);
	}
	if (d)
		closedir(d);
	ret = p.buf ? plan_publish(st, &p) : -ENOMEM;
	if (ret < 0)
		error_line(st, "%s/.plan.%u: cannot write the restore plan: %s", st->bb_root, st->job,
			   strerror(-ret));
out:
	free(p.buf);
	*out = pl;
	*nout = npl;
	return ret;
}
