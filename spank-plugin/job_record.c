/*
 * job_record.c - the job's record of checkpoints, kept by root (job_record.h).
 */
#include "config.h"

#include "job_record.h"
#include "common/io.h"
#include "common/jobdir.h"
#include "root_path.h"
#include "stage_run.h"
#include "image/ckptname.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct collect {
	const char *node;
	int consume;
	struct gk_job_events *out;
	int folders;
	uid_t uid;
	const struct gk_record_where *where;
};

struct tag {
	struct collect *c;
	const char *step;
	uint32_t task;
};

/* A line of the user's file: kept only as the fields root re-writes. */
static int tag_event(void *arg, const struct gk_event *e)
{
	struct tag *t = arg;
	struct gk_event copy;

	if (!e || e->kind > GK_EV_RESTORE) {
		/* Staging events are root's to write, never the runtime's. */
		t->c->out->bad_lines++;
		return 0;
	}
	copy = *e;
	copy.have &= ~(uint32_t)(GK_EVF_NODE | GK_EVF_STEP | GK_EVF_TASK);
	snprintf(copy.node, sizeof(copy.node), "%s", t->c->node);
	snprintf(copy.step, sizeof(copy.step), "%s", t->step);
	copy.task = t->task;
	copy.have |= GK_EVF_NODE | GK_EVF_STEP | GK_EVF_TASK;
	gk_job_events_add(t->c->out, &copy);
	return 0;
}

static int collect_task(void *arg, const char *step, uint32_t task, int taskfd)
{
	struct collect *c = arg;
	struct tag t = {c, step, task};
	char *buf;
	size_t len;

	if (c->where && (strcmp(step, c->where->step) != 0 || task != c->where->task))
		return 0;
	c->folders++;
	if (gk_events_read_at(taskfd, c->uid, &buf, &len) < 0)
		return 0;
	gk_events_each(buf, len, tag_event, &t);
	free(buf);
	/* Through the folder's descriptor: it removes this name, whatever the
	 * user put there since, and never follows anything. */
	if (c->consume)
		unlinkat(taskfd, GK_EVENTS_FILE, 0);
	return 0;
}

int gk_record_collect(const char *bb_root, uint32_t job, uid_t uid, const char *node,
		      const struct gk_record_where *where, int consume, struct gk_job_events *out,
		      gk_error_t *err)
{
	struct collect c = {node, consume, out, 0, uid, where};
	char name[16];
	int bbfd, jobfd, ret;

	if (!gk_event_name_ok(node)) {
		gk_errprintf(err, "node name '%s' cannot be recorded", node);
		return -EINVAL;
	}
	bbfd = gk_root_dir_open(bb_root, err);
	if (bbfd < 0)
		return bbfd;
	snprintf(name, sizeof(name), "%u", job);
	jobfd = gk_user_subdir(bbfd, name, uid);
	close(bbfd);
	if (jobfd == -ENOENT)
		return 0;
	if (jobfd < 0) {
		gk_errprintf(err, "%s/%s: not a folder of uid %u; not read", bb_root, name,
			     (unsigned)uid);
		return jobfd;
	}
	ret = gk_jobdir_walk(jobfd, uid, collect_task, &c);
	close(jobfd);
	if (ret < 0) {
		gk_errprintf(err, "%s/%s: %s", bb_root, name, strerror(-ret));
		return ret;
	}
	return c.folders;
}

/* "step.S/task.T/ckpt.N" */
static int parse_rel(const char *rel, size_t n, struct gk_event *e)
{
	char part[64];
	const char *slash1, *slash2;
	uint32_t task;

	if (n >= sizeof(part))
		return -EINVAL;
	memcpy(part, rel, n);
	part[n] = '\0';
	slash1 = strchr(part, '/');
	slash2 = slash1 ? strchr(slash1 + 1, '/') : NULL;
	if (!slash2)
		return -EINVAL;
	part[slash1 - part] = '\0';
	part[slash2 - part] = '\0';
	if (gk_parse_step_dirname(part, e->step, sizeof(e->step)) < 0 ||
	    gk_parse_task_dirname(slash1 + 1, &task) < 0 ||
	    strncmp(slash2 + 1, GK_CKPT_PREFIX, sizeof(GK_CKPT_PREFIX) - 1) != 0)
		return -EINVAL;
	e->task = task;
	e->ckpt = strtoull(slash2 + sizeof(GK_CKPT_PREFIX), NULL, 10);
	e->have |= GK_EVF_STEP | GK_EVF_TASK | GK_EVF_CKPT;
	return 0;
}

int gk_stage_line_event(const char *verb, const char *line, const char *node, double now,
			struct gk_event *e)
{
	char prefix[16];
	const char *p, *colon;
	unsigned long long bytes;
	double secs;
	int used = 0;

	memset(e, 0, sizeof(*e));
	e->kind = strcmp(verb, "in") == 0 ? GK_EV_STAGE_IN : GK_EV_STAGE_OUT;
	e->time = now;
	if (gk_event_name_ok(node)) {
		snprintf(e->node, sizeof(e->node), "%s", node);
		e->have |= GK_EVF_NODE;
	}
	if (strncmp(line, "error: ", 7) == 0) {
		e->result = GK_EV_FAILED;
		return 1;
	}
	snprintf(prefix, sizeof(prefix), "staged %s ", verb);
	if (strncmp(line, prefix, strlen(prefix)) != 0)
		return 0;
	p = line + strlen(prefix);
	colon = strstr(p, ": ");
	if (!colon || parse_rel(p, (size_t)(colon - p), e) < 0)
		return 0;
	if (sscanf(colon + 2, "%llu bytes in %lf s%n", &bytes, &secs, &used) != 2 || !used ||
	    !(secs >= 0 && secs < 1e9))
		return 0;
	e->result = GK_EV_OK;
	e->bytes = bytes;
	e->seconds = secs;
	e->have |= GK_EVF_BYTES | GK_EVF_SECONDS;
	return 1;
}

int gk_record_parse(const char *buf, size_t len, struct gk_job_events *out)
{
	gk_job_events_parse_record(buf, len, out);
	return 0;
}

/* The record back, for the AdminComment: never more than a record the
 * plugin writes (GK_RECORD_LIMIT), whatever its size. */
static int read_back(int fd, struct gk_job_events *all)
{
	struct stat st;
	size_t len = 0, want;
	char *buf;

	if (fstat(fd, &st) < 0)
		return -errno;
	want = st.st_size > (off_t)GK_RECORD_LIMIT ? GK_RECORD_LIMIT : (size_t)st.st_size;
	buf = malloc(want + 1);
	if (!buf)
		return -ENOMEM;
	while (len < want) {
		ssize_t n = pread(fd, buf + len, want - len, (off_t)len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	gk_record_parse(buf, len, all);
	free(buf);
	return 0;
}

static int pwrite_all(int fd, const char *buf, size_t len, off_t at)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, at);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf += n;
		len -= (size_t)n;
		at += n;
	}
	return 0;
}

/*
 * Under the record's lock: add's events written from the record's end, as
 * many as fit in GK_RECORD_LIMIT, and the rest counted in its last line
 * ("gpuckpt-dropped N", rewritten in place: the new events go where it was,
 * and it after them). Only the record's last bytes are read. *dropped: this
 * append's events not kept.
 */
static int append_locked(int fd, const struct gk_job_events *add, uint64_t *dropped)
{
	char tail[GK_RECORD_DROPPED_LEN], line[GK_EVENT_LINE_MAX + 1], *buf;
	size_t used = 0, cap = 64 * 1024;
	uint64_t count = 0, more = add->dropped;
	struct stat st;
	off_t end;
	int ret = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	end = st.st_size;
	if (end >= (off_t)GK_RECORD_DROPPED_LEN &&
	    pread(fd, tail, sizeof(tail), end - (off_t)sizeof(tail)) == (ssize_t)sizeof(tail) &&
	    tail[sizeof(tail) - 1] == '\n' &&
	    gk_record_dropped_line(tail, sizeof(tail) - 1, &count)) {
		end -= (off_t)sizeof(tail);
	} else if (end > 0 && pread(fd, tail, 1, end - 1) == 1 && tail[0] != '\n') {
		/* A line cut off (a writer killed half-way): ended, so that the
		 * next line stays whole. */
		ret = pwrite_all(fd, "\n", 1, end);
		if (ret < 0)
			return ret;
		end++;
	}
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < add->n; i++) {
		int n = gk_event_format(&add->ev[i], line, sizeof(line));

		if (n <= 0)
			continue;
		if (end + (off_t)(used + (size_t)n + GK_RECORD_DROPPED_LEN) >
		    (off_t)GK_RECORD_LIMIT) {
			more += add->n - i;
			break;
		}
		if (used + (size_t)n + GK_RECORD_DROPPED_LEN > cap) {
			ret = pwrite_all(fd, buf, used, end);
			if (ret < 0)
				goto out;
			end += (off_t)used;
			used = 0;
		}
		memcpy(buf + used, line, (size_t)n);
		used += (size_t)n;
	}
	if (count || more) {
		int n = snprintf(line, sizeof(line), GK_RECORD_DROPPED "%020llu\n",
				 (unsigned long long)(count + more));

		/* The loop left room for it. */
		memcpy(buf + used, line, (size_t)n);
		used += (size_t)n;
	}
	ret = pwrite_all(fd, buf, used, end);
	if (ret == 0 && end + (off_t)used < st.st_size && ftruncate(fd, end + (off_t)used) < 0)
		ret = -errno;
	*dropped = more;
out:
	free(buf);
	return ret;
}

int gk_record_append(const char *shared_root, uint32_t job, const struct gk_job_events *add,
		     struct gk_job_events *all, gk_error_t *err)
{
	char name[16];
	uint64_t dropped = 0;
	int rootfd, recfd, fd, ret = 0;

	rootfd = gk_root_dir_open(shared_root, err);
	if (rootfd < 0)
		return rootfd;
	recfd = gk_root_subdir(rootfd, GK_RECORDS_DIR, 0700, err);
	close(rootfd);
	if (recfd < 0)
		return recfd;
	snprintf(name, sizeof(name), "%u", job);
	/* Root's alone (in a folder of root's, 0700): refused, never replaced,
	 * if it is anything else. No O_APPEND: lines go at the offset found
	 * under the lock, and the count line is rewritten in place. */
	fd = gk_root_private_file(recfd, name, O_RDWR, 0);
	if (fd < 0) {
		ret = fd;
		gk_errprintf(err, "%s/%s/%s: %s", shared_root, GK_RECORDS_DIR, name,
			     ret == -EPERM ? "not a regular file of root's that only root can open"
					   : strerror(-ret));
		goto out_rec;
	}
	/* The epilogs of a job's nodes append at once: one at a time (flock on
	 * a shared file system needs its lock support, as NFSv4 has), each
	 * waiting for the others a bounded time. */
	ret = gk_lock_bounded(fd, GK_RECORD_LOCK_WAIT_MS);
	if (ret == -ENOLCK || ret == -EOPNOTSUPP || ret == -ENOSYS) {
		/* No locks on this file system: written all the same; two nodes
		 * appending at the same moment may then overwrite each other's
		 * lines (never beyond the limit). */
		ret = 0;
	} else if (ret < 0) {
		gk_errprintf(err, "%s/%s/%s: %s; %zu events of this node left out", shared_root,
			     GK_RECORDS_DIR, name,
			     ret == -ETIMEDOUT ? "another node held its lock too long"
					       : strerror(-ret),
			     add->n);
		goto out_fd;
	}
	ret = append_locked(fd, add, &dropped);
	if (ret == 0 && (add->n || dropped))
		ret = fsync(fd) < 0 ? -errno : 0;
	if (ret < 0)
		gk_errprintf(err, "%s/%s/%s: %s", shared_root, GK_RECORDS_DIR, name,
			     strerror(-ret));
	else if (all)
		ret = read_back(fd, all);
	flock(fd, LOCK_UN);
out_fd:
	close(fd);
out_rec:
	close(recfd);
	return ret;
}

int gk_record_read(const char *shared_root, uint32_t job, struct gk_job_events *all,
		   gk_error_t *err)
{
	char name[16];
	struct stat st;
	int rootfd, recfd, fd, ret;

	rootfd = gk_root_dir_open(shared_root, err);
	if (rootfd < 0)
		return rootfd;
	recfd = openat(rootfd, GK_RECORDS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(rootfd);
	if (recfd < 0)
		return errno == ENOENT ? 0 : -errno;
	snprintf(name, sizeof(name), "%u", job);
	fd = openat(recfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(recfd);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
		gk_errprintf(err, "%s/%s/%s: not a regular file of root's", shared_root,
			     GK_RECORDS_DIR, name);
		close(fd);
		return -EPERM;
	}
	ret = read_back(fd, all);
	close(fd);
	return ret;
}

/* Where the last sweep stopped: a telldir cookie, root's, in records/. */
#define SWEEP_CURSOR ".sweep"

/* A job's record: its number, as gk_record_append names it. */
static int record_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 10)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

int gk_record_sweep(const char *shared_root, unsigned days, unsigned max_entries, time_t now,
		    gk_error_t *err)
{
	char cookie[32];
	struct stat st;
	struct dirent *e;
	DIR *d;
	long pos = 0;
	unsigned seen = 0;
	int rootfd, recfd, curfd, dfd, removed = 0, at_end = 0;

	if (!days)
		return 0;
	rootfd = gk_root_dir_open(shared_root, err);
	if (rootfd < 0)
		return rootfd;
	recfd = openat(rootfd, GK_RECORDS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(rootfd);
	if (recfd < 0) {
		int e2 = errno;

		if (e2 == ENOENT)
			return 0;
		gk_errprintf(err, "%s/%s: %s", shared_root, GK_RECORDS_DIR, strerror(e2));
		return -e2;
	}
	if (fstat(recfd, &st) < 0 || st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		gk_errprintf(err, "%s/%s: not root's, or writable by others: not swept",
			     shared_root, GK_RECORDS_DIR);
		close(recfd);
		return -EPERM;
	}
	curfd = gk_root_private_file(recfd, SWEEP_CURSOR, O_RDWR, 1);
	if (curfd >= 0) {
		ssize_t n = pread(curfd, cookie, sizeof(cookie) - 1, 0);

		if (n > 0) {
			cookie[n] = '\0';
			pos = strtol(cookie, NULL, 10);
		}
	}
	dfd = fcntl(recfd, F_DUPFD_CLOEXEC, 0);
	d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		int e2 = errno;

		gk_errprintf(err, "%s/%s: %s", shared_root, GK_RECORDS_DIR, strerror(e2));
		if (dfd >= 0)
			close(dfd);
		if (curfd >= 0)
			close(curfd);
		close(recfd);
		return -e2;
	}
	if (pos > 0)
		seekdir(d, pos);
	while (seen < max_entries) {
		e = readdir(d);
		if (!e) {
			at_end = 1;
			break;
		}
		seen++;
		if (!record_name(e->d_name) ||
		    fstatat(recfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != 0 ||
		    st.st_mtime > now - (time_t)days * 86400)
			continue;
		if (unlinkat(recfd, e->d_name, 0) == 0)
			removed++;
	}
	if (curfd >= 0) {
		int n = snprintf(cookie, sizeof(cookie), "%ld\n", at_end ? 0L : telldir(d));

		/* Not saved: the next sweep starts from the first name. */
		if (pwrite(curfd, cookie, (size_t)n, 0) == n)
			(void)!ftruncate(curfd, n);
		close(curfd);
	}
	closedir(d);
	close(recfd);
	return removed;
}

int gk_admin_comment_argv(const char *scontrol, uint32_t job, const char *text, char *argv[],
			  char *buf, size_t buflen)
{
	char jobarg[32], comment[512];
	const char *items[4];

	snprintf(jobarg, sizeof(jobarg), "JobId=%u", job);
	if ((size_t)snprintf(comment, sizeof(comment), "AdminComment=%s", text) >= sizeof(comment))
		return -ENAMETOOLONG;
	items[0] = scontrol;
	items[1] = "update";
	items[2] = jobarg;
	items[3] = comment;
	return gk_pack_argv(items, 4, argv, buf, buflen);
}

int gk_job_events_checkpointed(const struct gk_job_events *all, uint32_t restart)
{
	for (size_t i = 0; i < all->n; i++) {
		const struct gk_event *e = &all->ev[i];
		uint32_t r = (e->have & GK_EVF_RESTART) ? e->restart : 0;

		if (e->kind == GK_EV_CHECKPOINT && e->result == GK_EV_OK && r == restart)
			return 1;
	}
	return 0;
}

/* The value of KEY= when it is the first field of the line (after its
 * indentation), up to the next blank; NULL when it is not. */
static const char *first_field(const char *line, const char *key, size_t *len)
{
	size_t k = strlen(key);

	line += strspn(line, " \t");
	if (strncmp(line, key, k) != 0)
		return NULL;
	line += k;
	*len = strcspn(line, " \t\n");
	return line;
}

void gk_job_show_line(const char *line, struct gk_job_show *s)
{
	const char *v;
	size_t len;

	if ((v = first_field(line, "JobState=", &len))) {
		s->state_seen = 1;
		s->running = len == 7 && strncmp(v, "RUNNING", 7) == 0;
	} else if ((v = first_field(line, "PreemptEligibleTime=", &len))) {
		const char *p = strstr(v + len, " PreemptTime=");

		if (p) {
			p += strlen(" PreemptTime=");
			len = strcspn(p, " \t\n");
			s->preempted = len > 0 && !(len == 4 && strncmp(p, "None", 4) == 0) &&
				       !(len == 7 && strncmp(p, "Unknown", 7) == 0);
		}
	}
}

static int job_argv(const char *scontrol, const char *w1, const char *w2, uint32_t job,
		    char *argv[], char *buf, size_t buflen)
{
	char jobarg[16];
	const char *items[4];
	int n = 0;

	snprintf(jobarg, sizeof(jobarg), "%u", job);
	items[n++] = scontrol;
	items[n++] = w1;
	if (w2)
		items[n++] = w2;
	items[n++] = jobarg;
	return gk_pack_argv(items, n, argv, buf, buflen);
}

int gk_show_job_argv(const char *scontrol, uint32_t job, char *argv[], char *buf, size_t buflen)
{
	return job_argv(scontrol, "show", "job", job, argv, buf, buflen);
}

int gk_requeue_argv(const char *scontrol, uint32_t job, char *argv[], char *buf, size_t buflen)
{
	return job_argv(scontrol, "requeue", NULL, job, argv, buf, buflen);
}
