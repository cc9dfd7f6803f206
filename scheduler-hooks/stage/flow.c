/*
 * flow.c - stage in (prolog) and stage out (epilog).
 *
 *	node-local:  BB_ROOT/JOB/step.S/task.T/ckpt.N/       the job's user's, 0700
 *	shared:      SHARED_ROOT/JOB/step.S/task.T/ckpt.N/   folders root's 0700, each
 *	                                                     checkpoint as on the node
 *	                                                     (the user's files, root's criu/)
 *
 * A checkpoint is copied into the root-only area of the destination root,
 * checked there, and published into its task folder with one rename: it is
 * complete under its final name or not there. A committed checkpoint never
 * changes, so one already present under its name is not copied again.
 * The per-job lock keeps two gpuckpt-stage of one job on a node (an epilog
 * and a cron sweep, two epilogs run by hand) from working on it at once;
 * across nodes, each works in its own area names (host and pid in them).
 */
#include "config.h"

#include "stage.h"
#include "stage_log.h"
#include "spank-plugin/ckpt_dir.h"
#include "common/fsafe.h"
#include "image/image.h"
#include "image/setfile.h"
#include "image/seal.h"
#include "common/testhook.h"
#include "image/ckptname.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The entries of a folder, by name (malloc'ed array of malloc'ed names). */
static int read_names(int fd, char ***names, size_t *n)
{
	struct dirent *e;
	size_t cap = 0;
	DIR *d;
	int dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	*names = NULL;
	*n = 0;
	if (dfd < 0 || !(d = fdopendir(dfd))) {
		int ret = -errno;

		if (dfd >= 0)
			close(dfd);
		return ret;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (*n == cap) {
			char **grown = realloc(*names, (cap = cap ? cap * 2 : 16) * sizeof(char *));

			if (!grown)
				break;
			*names = grown;
		}
		(*names)[(*n)++] = strdup(e->d_name);
	}
	closedir(d);
	return 0;
}

static void free_names(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/*
 * What staging copies from a task folder: the newest `keep` committed
 * checkpoints and the older ones they are increments of (their unchanged data
 * lies in those: the manifest's references), oldest first, so that a base is
 * published before an increment that refers to it. The rule is the prune's
 * (gk_store_prune_plan_at): what a prune keeps is what is staged, and a
 * checkpoint whose references cannot be read keeps every older one. all: every
 * committed one (a member of a step's sets, pruned by set: sets.c).
 */
/* Whether the open checkpoint folder dirfd holds its manifest as a regular
 * file. Asked of the folder's descriptor, never of "ckpt.N/manifest.json" in
 * the task folder: the job's user can swap ckpt.N for a link between the open
 * and the question, and root must not follow it. */
static int holds_manifest(int dirfd)
{
	struct stat sb;

	return fstatat(dirfd, GK_MANIFEST_FILE, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(sb.st_mode);
}

static int wanted(const struct stage *st, int taskfd, const char *label, int all,
		  char names[][64], size_t *n)
{
	struct gk_store_entry *list = NULL;
	size_t count = 0;
	gk_error_t err;
	int ret = gk_store_list_at(taskfd, label, &list, &count, &err);

	*n = 0;
	if (ret < 0)
		return ret;
	/* Committed: a folder ckpt.N holding its manifest (scan_root already
	 * refused links named like one). One without is neither counted nor
	 * staged. */
	for (size_t k = 0; k < count; k++) {
		const char *name = strrchr(list[k].path, '/') + 1;
		int fd;

		if (!list[k].complete)
			continue;
		fd = openat(taskfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || !holds_manifest(fd))
			list[k].complete = list[k].stale = 0;
		if (fd >= 0)
			close(fd);
	}
	gk_store_prune_plan_at(taskfd, list, count, all ? UINT_MAX : st->keep);
	for (size_t k = 0; k < count && *n < STAGE_MAX_CKPTS; k++)
		if (list[k].complete && !list[k].remove)
			snprintf(names[(*n)++], 64, "%s", strrchr(list[k].path, '/') + 1);
	free(list);
	/* The listing is newest first: oldest first for publishing. */
	for (size_t i = 0; i < *n / 2; i++) {
		char t[64];

		memcpy(t, names[i], 64);
		memcpy(names[i], names[*n - 1 - i], 64);
		memcpy(names[*n - 1 - i], t, 64);
	}
	return 0;
}

/* ---- out ---- */

/* Committed in taskfd: a folder of uid's holding its manifest. */
static int committed_at(int taskfd, const char *name, uid_t uid)
{
	int fd = gk_open_dir_at(taskfd, name, uid, NULL), ok;

	if (fd < 0)
		return 0;
	ok = holds_manifest(fd);
	close(fd);
	return ok;
}

/* One task: its newest checkpoints (and their bases) to the shared task
 * folder, but for those the runtime flushed already (f_taskfd, or -1): a
 * stage-in takes those from the flush root. 0 when all of them are in one
 * or the other now. */
static int task_out(struct stage *st, int taskfd, int s_taskfd, int f_taskfd, const char *rel)
{
	gk_error_t err;
	char label[4300], dst[4300], names[STAGE_MAX_CKPTS][64], what[200];
	size_t n = 0;
	int unsafe = 0, ret, member;

	snprintf(label, sizeof(label), "%s/%u/%s", st->bb_root, st->job, rel);
	/* A set member's parts are staged all (whole checkpoints, never
	 * increments), and never pruned here by count per task. */
	member = sets_task_is_member(st, taskfd);
	ret = wanted(st, taskfd, label, member, names, &n);
	if (ret < 0) {
		error_line(st, "%s: %s", label, strerror(-ret));
		return ret;
	}
	for (size_t i = 0; i < n; i++) {
		char src[4400];
		struct stat sb;
		int ckptfd;

		snprintf(src, sizeof(src), "%s/%s", label, names[i]);
		snprintf(dst, sizeof(dst), "%s/%u/%s/%s", st->shared_root, st->job, rel, names[i]);
		snprintf(what, sizeof(what), "%s/%s", rel, names[i]);
		if (fstatat(s_taskfd, names[i], &sb, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		/* A set member's part always goes to the shared root: the
		 * restore plan is made from there alone (sets.c). */
		if (!member && f_taskfd >= 0 && committed_at(f_taskfd, names[i], st->uid)) {
			say("%s: flushed while the job ran; not copied again", what);
			continue;
		}
		ckptfd = gk_open_dir_at(taskfd, names[i], st->uid, NULL);
		if (ckptfd < 0) {
			error_line(st, "%s: %s; not staged", src, stage_why(ckptfd));
			unsafe = 1;
			continue;
		}
		/* Tests pause here to swap the folders around. */
		gk_test_hook("stage-out-opened");
		if (stage_move(st, ckptfd, src, st->shared_area, s_taskfd, names[i], dst, what, 0) < 0)
			unsafe = 1;
		close(ckptfd);
	}
	ret = member ? 0 : gk_store_prune_at(s_taskfd, label, st->keep, &err);
	if (ret < 0)
		warn_line("prune: %s", err.text);
	return unsafe ? -EAGAIN : 0;
}

int stage_out(struct stage *st)
{
	gk_error_t err;
	char jobname[16], **steps = NULL;
	size_t nsteps = 0;
	int lockfd, jobfd, sjobfd = -1, fjobfd = -1, all_safe = 1;

	snprintf(jobname, sizeof(jobname), "%u", st->job);
	lockfd = area_lock(st->bb_area, st->job, &err);
	if (lockfd < 0) {
		error_line(st, "%s", err.text);
		return lockfd;
	}
	/* The restore plan was for the run that just ended. */
	sets_plan_drop(st, st->job);
	jobfd = gk_open_dir_at(st->bbfd, jobname, st->uid, NULL);
	if (jobfd == -ENOENT)
		goto out;
	if (jobfd < 0) {
		error_line(st, "%s/%s: %s; not staged", st->bb_root, jobname, stage_why(jobfd));
		goto out;
	}
	sjobfd = stage_shared_job(st, jobname);
	if (sjobfd < 0)
		goto out;
	if (st->flushfd >= 0)
		fjobfd = gk_open_dir_at(st->flushfd, jobname, st->uid, NULL);
	read_names(jobfd, &steps, &nsteps);
	for (size_t i = 0; i < nsteps; i++) {
		char **tasks = NULL;
		size_t ntasks = 0;
		uint32_t id;
		int stepfd, s_stepfd, f_stepfd;

		/* Only what gpuckpt makes is staged; the node's copy is kept
		 * when anything else is there (it may be all there is of it). */
		if (gk_step_parse(steps[i], &id) < 0) {
			warn_line("%s/%s/%s: not a folder gpuckpt made; left on the burst buffer",
				  st->bb_root, jobname, show(steps[i]));
			all_safe = 0;
			continue;
		}
		stepfd = gk_open_dir_at(jobfd, steps[i], st->uid, NULL);
		s_stepfd = stepfd < 0 ? -1 : stage_root_dir(sjobfd, steps[i]);
		if (stepfd < 0 || s_stepfd < 0) {
			error_line(st, "%s/%s/%s: %s; not staged", stepfd < 0 ? st->bb_root : st->shared_root,
				   jobname, steps[i], stage_why(stepfd < 0 ? stepfd : s_stepfd));
			all_safe = 0;
			if (stepfd >= 0)
				close(stepfd);
			continue;
		}
		f_stepfd = fjobfd < 0 ? -1 : gk_open_dir_at(fjobfd, steps[i], st->uid, NULL);
		read_names(stepfd, &tasks, &ntasks);
		for (size_t k = 0; k < ntasks; k++) {
			char rel[160];
			int taskfd, s_taskfd, f_taskfd;
			uint64_t seq;

			/* A set record: sets_records_out below. */
			if (gk_set_name_parse(tasks[k], &seq) == 0)
				continue;
			/* What NCCL ranks dumped and ended by a checkpoint left of
			 * their agreement: nothing of any checkpoint; it goes with
			 * the node's copy. */
			if (gk_nccl_rendezvous_name_is(tasks[k]))
				continue;
			if (gk_task_parse(tasks[k], &id) < 0) {
				warn_line("%s/%s/%s/%s: not a folder gpuckpt made; left on the burst "
					  "buffer",
					  st->bb_root, jobname, steps[i], show(tasks[k]));
				all_safe = 0;
				continue;
			}
			snprintf(rel, sizeof(rel), "%s/%s", steps[i], tasks[k]);
			taskfd = gk_open_dir_at(stepfd, tasks[k], st->uid, NULL);
			s_taskfd = taskfd < 0 ? -1 : stage_root_dir(s_stepfd, tasks[k]);
			if (taskfd < 0 || s_taskfd < 0) {
				error_line(st, "%s/%s/%s: %s; not staged",
					   taskfd < 0 ? st->bb_root : st->shared_root, jobname, rel,
					   stage_why(taskfd < 0 ? taskfd : s_taskfd));
				all_safe = 0;
			} else {
				f_taskfd = f_stepfd < 0 ? -1
							: gk_open_dir_at(f_stepfd, tasks[k], st->uid,
									 NULL);
				if (task_out(st, taskfd, s_taskfd, f_taskfd, rel) < 0)
					all_safe = 0;
				if (f_taskfd >= 0)
					close(f_taskfd);
			}
			if (taskfd >= 0)
				close(taskfd);
			if (s_taskfd >= 0)
				close(s_taskfd);
		}
		free_names(tasks, ntasks);
		/* The step's set records, written by its task 0 on its node. */
		if (sets_records_out(st, stepfd, s_stepfd, steps[i]) < 0)
			all_safe = 0;
		close(stepfd);
		close(s_stepfd);
		if (f_stepfd >= 0)
			close(f_stepfd);
	}
	free_names(steps, nsteps);
	close(jobfd);
	jobfd = -1;
	/* Everything that matters is on shared storage: the node's copy goes.
	 * If the job comes back here, stage-in brings it back. */
	if (all_safe) {
		int ret = area_discard(st, st->bb_area, st->bbfd, jobname);

		if (ret < 0)
			warn_line("%s/%s: cannot remove: %s", st->bb_root, jobname, strerror(-ret));
	} else {
		say("kept %s/%s: not every checkpoint reached %s", st->bb_root, jobname,
		    st->shared_root);
	}
out:
	if (jobfd >= 0)
		close(jobfd);
	if (sjobfd >= 0)
		close(sjobfd);
	if (fjobfd >= 0)
		close(fjobfd);
	close(lockfd);
	return st->failed ? -1 : 0;
}

/* ---- in ---- */

/* Is SHARED/JOB this job's? 1 yes, 0 no (the line said why). */
static int shared_job_in(struct stage *st, int sjobfd, const char *jobname)
{
	struct job_ident now, rec;
	gk_error_t err;
	char was[128], is[128];

	if (record_read(sjobfd, &rec) < 0)
		return 1; /* written before records: the files' owners still decide */
	if (job_ident(st, &now, &err) < 0) {
		warn_line("%s; only the owner of %s/%s is compared", err.text, st->shared_root,
			  jobname);
		memset(&now, 0, sizeof(now));
	}
	now.uid = st->uid;
	if (record_ours(&rec, &now))
		return 1;
	record_show(&rec, was, sizeof(was));
	record_show(&now, is, sizeof(is));
	error_line(st,
		   "%s/%s holds the checkpoints of an earlier job with this id (%s), not of this "
		   "one (%s); not staged in",
		   st->shared_root, jobname, was, is);
	/* That job is over (its id is someone's again): its folder goes, so
	 * that this job never takes it for its own, even once requeued. Only
	 * on the controller's word, never on a guess. */
	if (rec.known && now.known && area_discard(st, st->shared_area, st->sharedfd, jobname) == 0)
		say("removed %s/%s (%s)", st->shared_root, jobname, was);
	return 0;
}

/* Add ckpt.N (the set the plan restores) to names, in order, unless there. */
static void add_planned(int s_taskfd, uint64_t seq, char names[][64], size_t *n)
{
	char name[64];
	struct stat sb;
	size_t at = 0;

	snprintf(name, sizeof(name), GK_CKPT_FMT, seq);
	if (*n >= STAGE_MAX_CKPTS || fstatat(s_taskfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
	    !S_ISDIR(sb.st_mode))
		return;
	for (size_t i = 0; i < *n; i++) {
		if (!strcmp(names[i], name))
			return;
		if (strtoull(names[i] + 5, NULL, 10) < seq)
			at = i + 1;
	}
	memmove(names[at + 1], names[at], (*n - at) * 64);
	memcpy(names[at], name, 64);
	(*n)++;
}

static int has_name(char names[][64], size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(names[i], name))
			return 1;
	return 0;
}

/* Copy names[0..n) (oldest first) from fromfd into the task folder, but for
 * those already there and those in skip[0..nskip). */
static void stage_list(struct stage *st, int taskfd, int fromfd, const char *label,
		       char names[][64], size_t n, char skip[][64], size_t nskip, const char *rel)
{
	for (size_t i = 0; i < n; i++) {
		char src[4400], dst[4400], what[200];
		struct stat sb;
		int ckptfd;

		if (has_name(skip, nskip, names[i]))
			continue;
		snprintf(src, sizeof(src), "%s/%s", label, names[i]);
		snprintf(dst, sizeof(dst), "%s/%u/%s/%s", st->bb_root, st->job, rel, names[i]);
		snprintf(what, sizeof(what), "%s/%s", rel, names[i]);
		if (fstatat(taskfd, names[i], &sb, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		/* In either root a checkpoint is its user's, as on the node it
		 * came from: another owner's is not this job's. */
		ckptfd = gk_open_dir_at(fromfd, names[i], st->uid, NULL);
		if (ckptfd < 0) {
			error_line(st, "%s: %s; not staged in", src, stage_why(ckptfd));
			continue;
		}
		stage_move(st, ckptfd, src, st->bb_area, taskfd, names[i], dst, what, 0);
		close(ckptfd);
	}
}

/*
 * One task: what staging takes (wanted(): the newest `keep` and their bases)
 * from the shared root (s_taskfd, root's folders), and the same from the
 * flush root (f_taskfd, the user's: what the runtime flushed while the job
 * ran), each checkpoint from the shared root where it is in both. Either
 * descriptor may be -1. Both are read the same way: the checkpoint folder
 * and every file in it must be the job's user's and plain (copy_ckpt); the
 * runtime judges the content and restores the newest that passes.
 */
static int task_in(struct stage *st, int s_taskfd, int f_taskfd, uint32_t step_id,
		   uint32_t task_id, const char *rel, uint64_t planned)
{
	struct gk_task_ids ids = {st->job, step_id, task_id, st->uid, st->gid, 0};
	static char s_names[STAGE_MAX_CKPTS][64], f_names[STAGE_MAX_CKPTS][64];
	gk_error_t err;
	char s_label[4300], f_label[4300];
	size_t ns = 0, nf = 0;
	int taskfd;

	snprintf(s_label, sizeof(s_label), "%s/%u/%s", st->shared_root, st->job, rel);
	snprintf(f_label, sizeof(f_label), "%s/%u/%s", st->flush_root ? st->flush_root : "", st->job,
		 rel);
	if (s_taskfd >= 0 && wanted(st, s_taskfd, s_label, 0, s_names, &ns) < 0)
		ns = 0;
	/* The set the plan restores, whatever the task's newest are. */
	if (s_taskfd >= 0 && planned)
		add_planned(s_taskfd, planned, s_names, &ns);
	if (f_taskfd >= 0 && wanted(st, f_taskfd, f_label, 0, f_names, &nf) < 0)
		nf = 0;
	if (ns + nf == 0)
		return 0;
	/* The job, step and task folders the plugin would make, the user's. */
	taskfd = gk_task_dir_open(st->bbfd, st->bb_root, &ids, &err);
	if (taskfd < 0) {
		error_line(st, "%s; not staged in", err.text);
		return taskfd;
	}
	if (ns)
		stage_list(st, taskfd, s_taskfd, s_label, s_names, ns, NULL, 0, rel);
	if (nf)
		stage_list(st, taskfd, f_taskfd, f_label, f_names, nf, s_names, ns, rel);
	close(taskfd);
	return 0;
}

/*
 * FLUSH/JOB, the user's, when it may be read: it is this job's only when
 * Slurm says this run is a restart (a first run's prolog finds there only an
 * earlier job's with the same id, and removes it), and only squeue can say
 * so. -1 when there is none to read.
 */
static int flush_job_in(struct stage *st, const char *jobname)
{
	struct job_ident now;
	gk_error_t err;
	int fd;

	if (st->flushfd < 0)
		return -1;
	fd = gk_open_dir_at(st->flushfd, jobname, st->uid, NULL);
	if (fd == -ENOENT)
		return -1;
	if (job_ident(st, &now, &err) < 0 || !now.known) {
		warn_line("%s; %s/%s not used", err.text, st->flush_root, jobname);
		goto out_close;
	}
	if (fd == -EPERM || now.restarts == 0 || now.uid != st->uid) {
		if (area_discard(st, st->flush_area, st->flushfd, jobname) == 0)
			say("removed %s/%s: it held an earlier job's checkpoints (this job's "
			    "first run)",
			    st->flush_root, jobname);
		goto out_close;
	}
	if (fd < 0)
		error_line(st, "%s/%s: %s; not staged in", st->flush_root, jobname, stage_why(fd));
	return fd;
out_close:
	if (fd >= 0)
		close(fd);
	return -1;
}

/* The step's set records from the shared step folder s_stepfd into the
 * node's step folder, if the tasks' staging made one. */
static void records_in(struct stage *st, int s_stepfd, const char *step)
{
	char jobname[16];
	int jobfd, stepfd;

	snprintf(jobname, sizeof(jobname), "%u", st->job);
	jobfd = gk_open_dir_at(st->bbfd, jobname, st->uid, NULL);
	stepfd = jobfd < 0 ? -1 : gk_open_dir_at(jobfd, step, st->uid, NULL);
	if (stepfd >= 0) {
		sets_records_in(st, s_stepfd, stepfd, step);
		close(stepfd);
	}
	if (jobfd >= 0)
		close(jobfd);
}

/* Every task folder below jobfd (owned by uid, 0 for root's) with its
 * counterpart below otherfd (other_uid), staged in by task_in. */
static void in_from(struct stage *st, int jobfd, uid_t uid, int otherfd, uid_t other_uid,
		    int jobfd_is_shared, const struct planned *plan, size_t nplan)
{
	char **steps = NULL;
	size_t nsteps = 0;

	read_names(jobfd, &steps, &nsteps);
	for (size_t i = 0; i < nsteps; i++) {
		char **tasks = NULL;
		size_t ntasks = 0;
		uint32_t step_id, task_id;
		uint64_t planned = 0;
		int stepfd, o_stepfd;

		if (gk_step_parse(steps[i], &step_id) < 0)
			continue; /* the record, and nothing else gpuckpt writes */
		for (size_t p = 0; p < nplan; p++)
			if (!strcmp(plan[p].step, steps[i]))
				planned = plan[p].sequence;
		stepfd = gk_open_dir_at(jobfd, steps[i], uid, NULL);
		if (stepfd < 0)
			continue;
		o_stepfd = otherfd < 0 ? -1 : gk_open_dir_at(otherfd, steps[i], other_uid, NULL);
		read_names(stepfd, &tasks, &ntasks);
		for (size_t k = 0; k < ntasks; k++) {
			char rel[160];
			int taskfd, o_taskfd;

			if (gk_task_parse(tasks[k], &task_id) < 0)
				continue;
			taskfd = gk_open_dir_at(stepfd, tasks[k], uid, NULL);
			if (taskfd < 0)
				continue;
			o_taskfd = o_stepfd < 0 ? -1
						: gk_open_dir_at(o_stepfd, tasks[k], other_uid, NULL);
			snprintf(rel, sizeof(rel), "%s/%s", steps[i], tasks[k]);
			if (jobfd_is_shared)
				task_in(st, taskfd, o_taskfd, step_id, task_id, rel, planned);
			else
				task_in(st, o_taskfd, taskfd, step_id, task_id, rel, planned);
			close(taskfd);
			if (o_taskfd >= 0)
				close(o_taskfd);
		}
		free_names(tasks, ntasks);
		/* The set records (the shared root's, root's), so that gpuckpt
		 * list shows the sets on this node too. */
		if (jobfd_is_shared)
			records_in(st, stepfd, steps[i]);
		close(stepfd);
		if (o_stepfd >= 0)
			close(o_stepfd);
	}
	free_names(steps, nsteps);
}

int stage_in(struct stage *st)
{
	gk_error_t err;
	char jobname[16];
	struct planned *plan = NULL;
	size_t nplan = 0;
	int lockfd, sjobfd, fjobfd;

	snprintf(jobname, sizeof(jobname), "%u", st->job);
	lockfd = area_lock(st->bb_area, st->job, &err);
	if (lockfd < 0) {
		error_line(st, "%s", err.text);
		return lockfd;
	}
	sjobfd = gk_open_dir_at(st->sharedfd, jobname, 0, NULL);
	if (sjobfd < 0 && sjobfd != -ENOENT)
		error_line(st, "%s/%s: %s", st->shared_root, jobname, stage_why(sjobfd));
	if (sjobfd >= 0 && !shared_job_in(st, sjobfd, jobname)) {
		close(sjobfd);
		sjobfd = -1;
	}
	/* After a node failure the epilog never ran: what the runtime flushed
	 * may be all there is. */
	fjobfd = flush_job_in(st, jobname);
	/* A step's sets complete in the flush root and newer than every set
	 * complete in the shared root are copied there first (checked
	 * descriptors, root's area, one rename each), so that the plan sees
	 * them: a node loss costs only the work since the last flushed set. */
	if (fjobfd >= 0)
		sets_from_flush(st, &sjobfd, fjobfd);
	/* Before any task starts, whatever is there: the plugin refuses to
	 * start a task of a step of several tasks without a plan. The plan is
	 * made from the shared root alone (root's folders, every node's view
	 * alike); stage-out copies every set member's part there, and
	 * sets_from_flush what only the flush root has. */
	sets_plan(st, sjobfd, &plan, &nplan);
	if (sjobfd >= 0)
		in_from(st, sjobfd, 0, fjobfd, st->uid, 1, plan, nplan);
	/* Tasks only the flush root has (a task done twice finds its
	 * checkpoints already there and copies nothing). */
	if (fjobfd >= 0)
		in_from(st, fjobfd, st->uid, sjobfd, 0, 0, plan, nplan);
	if (sjobfd >= 0)
		close(sjobfd);
	if (fjobfd >= 0)
		close(fjobfd);
	free(plan);
	close(lockfd);
	return st->failed ? -1 : 0;
}
