/*
 * stepset.c - a step's checkpoint sets (stepset.h): listing them from the
 * step folder, checking every member, choosing the one to restore, and the
 * set record that says a set is complete.
 */
#include "config.h"

#include "image/stepset.h"
#include "common/error.h"
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

#define MAX_TASKS (1u << 24)

/* "task.12" (canonical decimal, as the plugin names them): 0 and *t. */
static int task_index(const char *name, uint32_t *t)
{
	const char *p = name + GK_TASK_PREFIX_LEN;
	uint64_t v = 0;
	size_t n = 0;

	if (strncmp(name, GK_TASK_PREFIX, GK_TASK_PREFIX_LEN) != 0)
		return -1;
	for (; p[n] >= '0' && p[n] <= '9'; n++) {
		v = v * 10 + (uint64_t)(p[n] - '0');
		if (v >= MAX_TASKS)
			return -1;
	}
	if (n == 0 || p[n] || (n > 1 && p[0] == '0'))
		return -1;
	*t = (uint32_t)v;
	return 0;
}

int gk_set_record_read(int dirfd, uint64_t sequence, struct gk_set_record *r, gk_error_t *err)
{
	char name[64], *text = NULL;
	gk_error_t sub;
	struct stat st;
	int fd, ret;

	gk_set_name(sequence, name, sizeof(name));
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", name,
			     ret == -ELOOP ? "a symbolic link; refused" : strerror(-ret));
		return ret == -ELOOP ? -EPERM : ret;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > GK_SETFILE_MAX) {
		gk_errprintf(err, "%s: not a regular file of at most %d bytes", name,
			     GK_SETFILE_MAX);
		ret = -EINVAL;
		goto out_close;
	}
	ret = gk_read_small(fd, (size_t)st.st_size, &text);
	if (ret < 0) {
		gk_errprintf(err, "%s: %s", name, strerror(-ret));
		goto out_close;
	}
	ret = gk_set_record_parse(text, (size_t)st.st_size, r, &sub);
	if (ret < 0)
		gk_errprintf(err, "%s: %s", name, sub.text);
	else if (r->sequence != sequence) {
		gk_errprintf(err, "%s: names set %" PRIu64, name, r->sequence);
		ret = -EINVAL;
	}
	free(text);
out_close:
	close(fd);
	return ret;
}

/* What one task folder holds: its committed checkpoint numbers. */
struct task_ckpts {
	int exists;
	uint64_t *seqs;
	size_t n;
};

static int has_seq(const struct task_ckpts *t, uint64_t seq)
{
	for (size_t i = 0; t->exists && i < t->n; i++)
		if (t->seqs[i] == seq)
			return 1;
	return 0;
}

static int add_seq(uint64_t **v, size_t *n, size_t *cap, uint64_t seq)
{
	for (size_t i = 0; i < *n; i++)
		if ((*v)[i] == seq)
			return 0;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		uint64_t *g = realloc(*v, c * sizeof(*g));

		if (!g)
			return -ENOMEM;
		*v = g;
		*cap = c;
	}
	(*v)[(*n)++] = seq;
	return 0;
}

static int seq_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

/* Task t's committed checkpoints: its folder opened from the step's
 * descriptor, no link followed. */
static int list_task(int stepfd, const char *stepdir, uint32_t t, struct task_ckpts *tc,
		     gk_error_t *err)
{
	struct gk_store_entry *e = NULL;
	char path[4200], name[32];
	size_t n = 0, cap = 0;
	int ret, taskfd;

	snprintf(name, sizeof(name), GK_TASK_PREFIX "%" PRIu32, t);
	snprintf(path, sizeof(path), "%s/%s", stepdir, name);
	taskfd = openat(stepfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (taskfd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", path, strerror(-ret));
		return ret;
	}
	ret = gk_store_list_at(taskfd, path, &e, &n, err);
	close(taskfd);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n && ret == 0; i++)
		if (e[i].complete)
			ret = add_seq(&tc->seqs, &tc->n, &cap, e[i].sequence);
	free(e);
	if (ret < 0)
		gk_errprintf(err, "out of memory");
	return ret;
}

/* Why a set is not complete, naming up to three missing tasks. */
static void describe_missing(struct gk_stepset *s, const struct task_ckpts *tasks, uint32_t ntasks)
{
	size_t used = 0;
	unsigned shown = 0, missing = s->members - s->present;

	used = (size_t)snprintf(s->why, sizeof(s->why), "%u of %u tasks lack " GK_CKPT_FMT " (",
				missing, s->members, s->sequence);
	for (uint32_t t = 0; t < s->members && shown < 3; t++) {
		if (t < ntasks && has_seq(&tasks[t], s->sequence))
			continue;
		used += (size_t)snprintf(s->why + used, sizeof(s->why) - used, "%stask %" PRIu32,
					 shown ? ", " : "", t);
		shown++;
		if (used >= sizeof(s->why))
			return;
	}
	snprintf(s->why + used, sizeof(s->why) - used, "%s)", missing > shown ? ", ..." : "");
}

int gk_stepset_list(const char *stepdir, struct gk_stepset **sets, size_t *nsets, uint32_t *ntasks,
		    gk_error_t *err)
{
	int dirfd, ret;

	*sets = NULL;
	*nsets = 0;
	*ntasks = 0;
	dirfd = open(stepdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", stepdir, strerror(-ret));
		return ret;
	}
	ret = gk_stepset_list_at(dirfd, stepdir, sets, nsets, ntasks, err);
	close(dirfd);
	return ret;
}

int gk_stepset_list_at(int dirfd, const char *stepdir, struct gk_stepset **sets, size_t *nsets,
		       uint32_t *ntasks, gk_error_t *err)
{
	struct task_ckpts *tasks = NULL;
	struct gk_stepset *out = NULL;
	uint64_t *seqs = NULL, *recseqs = NULL;
	size_t nseq = 0, capseq = 0, nrec = 0, caprec = 0;
	uint32_t maxtask = 0;
	int havetask = 0, ret = 0, fd;
	struct dirent *de;
	DIR *d;

	*sets = NULL;
	*nsets = 0;
	*ntasks = 0;
	fd = dup(dirfd);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		gk_errprintf(err, "%s: %s", stepdir, strerror(-ret));
		return ret;
	}
	rewinddir(d);
	/* First pass: how many task folders, and which set records. */
	while ((de = readdir(d))) {
		struct stat st;
		uint64_t seq;
		uint32_t t;

		if (task_index(de->d_name, &t) == 0) {
			if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISDIR(st.st_mode) && (!havetask || t > maxtask)) {
				maxtask = t;
				havetask = 1;
			}
		} else if (gk_set_name_parse(de->d_name, &seq) == 0) {
			if (add_seq(&recseqs, &nrec, &caprec, seq) < 0) {
				ret = -ENOMEM;
				break;
			}
		}
	}
	closedir(d);
	if (ret < 0)
		goto out_nomem;
	*ntasks = havetask ? maxtask + 1 : 0;
	tasks = calloc(*ntasks ? *ntasks : 1, sizeof(*tasks));
	if (!tasks)
		goto out_nomem;
	for (uint32_t t = 0; t < *ntasks; t++) {
		char name[32];
		struct stat st;

		snprintf(name, sizeof(name), GK_TASK_PREFIX "%" PRIu32, t);
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		tasks[t].exists = 1;
		ret = list_task(dirfd, stepdir, t, &tasks[t], err);
		if (ret < 0)
			goto out;
		for (size_t i = 0; i < tasks[t].n; i++)
			if (add_seq(&seqs, &nseq, &capseq, tasks[t].seqs[i]) < 0)
				goto out_nomem;
	}
	for (size_t i = 0; i < nrec; i++)
		if (add_seq(&seqs, &nseq, &capseq, recseqs[i]) < 0)
			goto out_nomem;
	if (nseq)
		qsort(seqs, nseq, sizeof(*seqs), seq_desc);
	out = calloc(nseq ? nseq : 1, sizeof(*out));
	if (!out)
		goto out_nomem;
	for (size_t i = 0; i < nseq; i++) {
		struct gk_stepset *s = &out[i];
		gk_error_t sub;
		int is_rec = 0;

		s->sequence = seqs[i];
		for (size_t k = 0; k < nrec; k++)
			is_rec |= recseqs[k] == seqs[i];
		if (is_rec) {
			if (gk_set_record_read(dirfd, s->sequence, &s->record, &sub) == 0)
				s->has_record = 1;
			else
				snprintf(s->why, sizeof(s->why), "unreadable set record: %.440s",
					 sub.text);
		}
		s->members = s->has_record ? s->record.members : *ntasks;
		for (uint32_t t = 0; t < s->members && t < *ntasks; t++)
			s->present += has_seq(&tasks[t], s->sequence);
		if (!s->has_record) {
			if (!s->why[0])
				snprintf(s->why, sizeof(s->why),
					 "no set record: the tasks did not all commit it (%u of %u "
					 "have " GK_CKPT_FMT ")",
					 s->present, s->members, s->sequence);
		} else if (s->present < s->members) {
			describe_missing(s, tasks, *ntasks);
		} else {
			s->complete = 1;
		}
	}
	*sets = out;
	*nsets = nseq;
	out = NULL;
	goto out;
out_nomem:
	ret = -ENOMEM;
	gk_errprintf(err, "out of memory");
out:
	for (uint32_t t = 0; tasks && t < *ntasks; t++)
		free(tasks[t].seqs);
	free(tasks);
	free(out);
	free(seqs);
	free(recseqs);
	return ret;
}

int gk_stepset_check(const char *stepdir, struct gk_stepset *s, const struct gk_load_opts *opts)
{
	int dirfd = open(stepdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), ret;

	if (dirfd < 0) {
		s->verdict = -1;
		snprintf(s->why, sizeof(s->why), "%.400s: %s", stepdir, strerror(errno));
		return s->verdict;
	}
	ret = gk_stepset_check_at(dirfd, stepdir, s, opts);
	close(dirfd);
	return ret;
}

/* Member t of set s: task.t/ckpt.N opened from the step's descriptor, no
 * link followed; its base checkpoints looked up in task.t, by descriptor. */
static int open_member(int stepfd, const char *path, uint32_t t, uint64_t sequence,
		       const struct gk_load_opts *opts, struct gk_manifest **m, gk_error_t *err)
{
	char name[32];
	int taskfd, ckptfd, ret;

	snprintf(name, sizeof(name), GK_TASK_PREFIX "%" PRIu32, t);
	taskfd = openat(stepfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (taskfd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", name,
			     ret == -ELOOP || ret == -ENOTDIR ? "not a folder (a link?); refused"
							      : strerror(-ret));
		return ret;
	}
	snprintf(name, sizeof(name), GK_CKPT_FMT, sequence);
	ckptfd = openat(taskfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ckptfd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s",
			     ret == -ELOOP || ret == -ENOTDIR
				 ? "is a symbolic link or not a folder; refused"
				 : strerror(-ret));
		close(taskfd);
		return ret;
	}
	ret = gk_image_open_in(taskfd, ckptfd, path, opts, m, NULL, err);
	close(ckptfd);
	close(taskfd);
	return ret;
}

int gk_stepset_check_at(int stepfd, const char *stepdir, struct gk_stepset *s,
			const struct gk_load_opts *opts)
{
	s->verdict = -1;
	if (!s->complete)
		return s->verdict;
	for (uint32_t t = 0; t < s->members; t++) {
		char path[4200];
		gk_error_t err;
		struct gk_manifest *m = NULL;
		int ret;

		snprintf(path, sizeof(path), "%s/" GK_TASK_PREFIX "%" PRIu32 "/" GK_CKPT_FMT, stepdir,
			 t, s->sequence);
		ret = open_member(stepfd, path, t, s->sequence, opts, &m, &err);
		if (ret < 0) {
			snprintf(s->why, sizeof(s->why),
				 "task %" PRIu32 ": " GK_CKPT_FMT ": %.440s", t, s->sequence,
				 err.text);
			return s->verdict;
		}
		/* The same number is not enough: the member must say it was
		 * written for this very set, as this task. */
		if (!m->set_members || m->set_id != s->record.id ||
		    m->set_members != s->record.members || m->set_member != t ||
		    m->sequence != s->sequence) {
			if (!m->set_members)
				snprintf(s->why, sizeof(s->why),
					 "task %" PRIu32 ": " GK_CKPT_FMT
					 " was not written as a member of a set",
					 t, s->sequence);
			else
				snprintf(s->why, sizeof(s->why),
					 "task %" PRIu32 ": " GK_CKPT_FMT " belongs to another set "
					 "(id %016" PRIx64 ", task %" PRIu32 " of %" PRIu32
					 "; the record says id %016" PRIx64 ", %" PRIu32 " tasks)",
					 t, s->sequence, m->set_id, m->set_member, m->set_members,
					 s->record.id, s->record.members);
			gk_manifest_free(m);
			return s->verdict;
		}
		gk_manifest_free(m);
	}
	s->verdict = 1;
	s->why[0] = 0;
	return s->verdict;
}

int gk_stepset_plan(const char *stepdir, const struct gk_load_opts *opts, struct gk_plan_entry *e,
		    gk_stepset_note_fn note, void *arg, gk_error_t *err)
{
	int dirfd = open(stepdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), ret;

	if (dirfd < 0) {
		ret = -errno;
		memset(e, 0, sizeof(*e));
		gk_errprintf(err, "%s: %s", stepdir, strerror(-ret));
		return ret;
	}
	ret = gk_stepset_plan_at(dirfd, stepdir, opts, e, note, arg, err);
	close(dirfd);
	return ret;
}

int gk_stepset_plan_at(int stepfd, const char *stepdir, const struct gk_load_opts *opts,
		       struct gk_plan_entry *e, gk_stepset_note_fn note, void *arg,
		       gk_error_t *err)
{
	struct gk_stepset *sets = NULL, *bad = NULL, *short_set = NULL;
	char line[GK_ERRLEN + 128];
	uint32_t ntasks;
	size_t n;
	int ret;

	memset(e, 0, sizeof(*e));
	ret = gk_stepset_list_at(stepfd, stepdir, &sets, &n, &ntasks, err);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n; i++) {
		struct gk_stepset *s = &sets[i];

		if (!s->complete) {
			if (!short_set)
				short_set = s;
			snprintf(line, sizeof(line), "set %" PRIu64 " not used: %s", s->sequence,
				 s->why);
		} else if (gk_stepset_check_at(stepfd, stepdir, s, opts) > 0) {
			e->kind = GK_PLAN_SET;
			e->sequence = s->sequence;
			e->id = s->record.id;
			e->members = s->record.members;
			goto out;
		} else {
			if (!bad)
				bad = s;
			snprintf(line, sizeof(line), "set %" PRIu64 " refused: %s", s->sequence,
				 s->why);
		}
		if (note)
			note(arg, line);
	}
	if (bad) {
		e->kind = GK_PLAN_BAD;
		snprintf(e->reason, sizeof(e->reason), "no set passes every task's checks; set %" PRIu64
			 ": %.420s", bad->sequence, bad->why);
	} else {
		e->kind = GK_PLAN_FRESH;
		if (short_set)
			snprintf(e->reason, sizeof(e->reason),
				 "no set was ever complete; the newest, set %" PRIu64 ": %.420s",
				 short_set->sequence, short_set->why);
		else
			snprintf(e->reason, sizeof(e->reason), "no checkpoint set in %.460s", stepdir);
	}
out:
	free(sets);
	return 0;
}

/* A rename that never replaces an existing name. */
static int rename_noreplace(int dirfd, const char *from, const char *to)
{
	struct stat st;

	if (renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (fstatat(dirfd, to, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return -EEXIST;
	return renameat(dirfd, from, dirfd, to) < 0 ? -errno : 0;
}

int gk_set_record_write(const char *stepdir, const struct gk_set_record *r, gk_error_t *err)
{
	char text[GK_SETFILE_MAX], name[64], tmp[96];
	int dirfd, fd, len, ret = 0;
	ssize_t w;

	len = gk_set_record_format(r, text, sizeof(text));
	if (len < 0) {
		gk_errprintf(err, "set record too long");
		return len;
	}
	gk_set_name(r->sequence, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), ".tmp.%s.%d", name, (int)getpid());
	dirfd = open(stepdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", stepdir, strerror(-ret));
		return ret;
	}
	unlinkat(dirfd, tmp, 0);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		gk_errprintf(err, "%s/%s: %s", stepdir, tmp, strerror(-ret));
		goto out_dir;
	}
	do
		w = write(fd, text, (size_t)len);
	while (w < 0 && errno == EINTR);
	if (w != len || fsync(fd) < 0) {
		ret = w < 0 || w == len ? -errno : -ENOSPC;
		gk_errprintf(err, "%s/%s: %s", stepdir, tmp, strerror(-ret));
	}
	if (close(fd) < 0 && ret == 0) {
		ret = -errno;
		gk_errprintf(err, "%s/%s: %s", stepdir, tmp, strerror(-ret));
	}
	if (ret == 0) {
		ret = rename_noreplace(dirfd, tmp, name);
		if (ret < 0)
			gk_errprintf(err, "%s/%s: %s", stepdir, name, strerror(-ret));
	}
	if (ret == 0 && fsync(dirfd) < 0) {
		/* Not known to be on disk: withdraw it rather than claim a set. */
		ret = -errno;
		gk_errprintf(err, "%s: fsync: %s", stepdir, strerror(-ret));
		unlinkat(dirfd, name, 0);
	}
	if (ret < 0)
		unlinkat(dirfd, tmp, 0);
out_dir:
	close(dirfd);
	return ret;
}

int gk_set_records_prune(const char *stepdir, uint64_t below, gk_error_t *err)
{
	struct dirent *de;
	int dirfd, ret = 0;
	DIR *d;

	dirfd = open(stepdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0 || !(d = fdopendir(dup(dirfd)))) {
		ret = -errno;
		gk_errprintf(err, "%s: %s", stepdir, strerror(-ret));
		if (dirfd >= 0)
			close(dirfd);
		return ret;
	}
	while ((de = readdir(d))) {
		uint64_t seq;

		if (gk_set_name_parse(de->d_name, &seq) == 0 && seq < below &&
		    unlinkat(dirfd, de->d_name, 0) < 0 && errno != ENOENT && ret == 0) {
			ret = -errno;
			gk_errprintf(err, "%s/%s: %s", stepdir, de->d_name, strerror(-ret));
		}
	}
	closedir(d);
	close(dirfd);
	return ret;
}
