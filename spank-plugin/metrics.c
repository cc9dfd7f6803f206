/*
 * metrics.c - the node's counters as a Prometheus text file (metrics.h).
 */
#include "config.h"

#include "metrics.h"
#include "root_path.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* One series: its name with labels, and where its value lives. */
struct series {
	const char *family; /* NULL: same family as the line before */
	const char *help;
	const char *type;
	const char *key; /* name{labels} */
	size_t offset;
	int is_float;
};

#define U(field) offsetof(struct gk_metrics, field), 0
#define F(field) offsetof(struct gk_metrics, field), 1

static const struct series table[] = {
    {"gpuckpt_checkpoints_total", "Checkpoints of tasks on this node, by result.", "counter",
     "gpuckpt_checkpoints_total{result=\"ok\"}", U(checkpoints[GK_EV_OK])},
    {NULL, NULL, NULL, "gpuckpt_checkpoints_total{result=\"failed\"}",
     U(checkpoints[GK_EV_FAILED])},
    {NULL, NULL, NULL, "gpuckpt_checkpoints_total{result=\"refused\"}",
     U(checkpoints[GK_EV_REFUSED])},
    {"gpuckpt_checkpoint_bytes_total", "Bytes of the committed checkpoints.", "counter",
     "gpuckpt_checkpoint_bytes_total", U(checkpoint_bytes)},
    {"gpuckpt_checkpoint_seconds_total", "Seconds the committed checkpoints took.", "counter",
     "gpuckpt_checkpoint_seconds_total", F(checkpoint_seconds)},
    {"gpuckpt_restores_total", "Restores of tasks on this node, by result.", "counter",
     "gpuckpt_restores_total{result=\"ok\"}", U(restores[GK_EV_OK])},
    {NULL, NULL, NULL, "gpuckpt_restores_total{result=\"failed\"}", U(restores[GK_EV_FAILED])},
    {NULL, NULL, NULL, "gpuckpt_restores_total{result=\"refused\"}", U(restores[GK_EV_REFUSED])},
    {"gpuckpt_restore_bytes_total", "Bytes loaded by restores.", "counter",
     "gpuckpt_restore_bytes_total", U(restore_bytes)},
    {"gpuckpt_restore_seconds_total", "Seconds the restores took to load.", "counter",
     "gpuckpt_restore_seconds_total", F(restore_seconds)},
    {"gpuckpt_stage_checkpoints_total",
     "Checkpoints copied between the burst buffer and the shared root, and failed copies.",
     "counter", "gpuckpt_stage_checkpoints_total{direction=\"in\",result=\"ok\"}", U(stage[0][0])},
    {NULL, NULL, NULL, "gpuckpt_stage_checkpoints_total{direction=\"in\",result=\"failed\"}",
     U(stage[0][1])},
    {NULL, NULL, NULL, "gpuckpt_stage_checkpoints_total{direction=\"out\",result=\"ok\"}",
     U(stage[1][0])},
    {NULL, NULL, NULL, "gpuckpt_stage_checkpoints_total{direction=\"out\",result=\"failed\"}",
     U(stage[1][1])},
    {"gpuckpt_stage_bytes_total", "Bytes staged.", "counter",
     "gpuckpt_stage_bytes_total{direction=\"in\"}", U(stage_bytes[0])},
    {NULL, NULL, NULL, "gpuckpt_stage_bytes_total{direction=\"out\"}", U(stage_bytes[1])},
    {"gpuckpt_stage_seconds_total", "Seconds staging took.", "counter",
     "gpuckpt_stage_seconds_total{direction=\"in\"}", F(stage_seconds[0])},
    {NULL, NULL, NULL, "gpuckpt_stage_seconds_total{direction=\"out\"}", F(stage_seconds[1])},
    {"gpuckpt_jobs_total", "Runs of jobs with gpuckpt that ended on this node (epilogs).",
     "counter", "gpuckpt_jobs_total", U(jobs)},
    {"gpuckpt_event_lines_rejected_total",
     "Lines of the runtime's event files that were not valid events.", "counter",
     "gpuckpt_event_lines_rejected_total", U(rejected)},
};

#define NSERIES (sizeof(table) / sizeof(table[0]))

static uint64_t *u64_at(struct gk_metrics *m, const struct series *s)
{
	return (uint64_t *)((char *)m + s->offset);
}

static double *dbl_at(struct gk_metrics *m, const struct series *s)
{
	return (double *)((char *)m + s->offset);
}

void gk_metrics_add_events(struct gk_metrics *m, const struct gk_job_events *ev)
{
	m->rejected += ev->bad_lines;
	for (size_t i = 0; i < ev->n; i++) {
		const struct gk_event *e = &ev->ev[i];
		int ok = e->result == GK_EV_OK;
		uint64_t bytes = ok && (e->have & GK_EVF_BYTES) ? e->bytes : 0;
		double secs = ok && (e->have & GK_EVF_SECONDS) ? e->seconds : 0;

		switch (e->kind) {
		case GK_EV_CHECKPOINT:
			m->checkpoints[e->result]++;
			m->checkpoint_bytes += bytes;
			m->checkpoint_seconds += secs;
			break;
		case GK_EV_RESTORE:
			m->restores[e->result]++;
			m->restore_bytes += bytes;
			m->restore_seconds += secs;
			break;
		case GK_EV_STAGE_IN:
		case GK_EV_STAGE_OUT: {
			int d = e->kind == GK_EV_STAGE_OUT;

			m->stage[d][ok ? 0 : 1]++;
			m->stage_bytes[d] += bytes;
			m->stage_seconds[d] += secs;
			break;
		}
		default:
			break;
		}
	}
}

void gk_metrics_add(struct gk_metrics *m, const struct gk_metrics *d)
{
	for (size_t i = 0; i < NSERIES; i++) {
		if (table[i].is_float)
			*dbl_at(m, &table[i]) += *dbl_at((struct gk_metrics *)d, &table[i]);
		else
			*u64_at(m, &table[i]) += *u64_at((struct gk_metrics *)d, &table[i]);
	}
}

int gk_metrics_format(const struct gk_metrics *m, double now, char *buf, size_t len)
{
	size_t n = 0;
	int k;

#define PUT(...)                                                                                   \
	do {                                                                                       \
		k = snprintf(buf + n, len - n, __VA_ARGS__);                                       \
		if (k < 0 || (size_t)k >= len - n)                                                 \
			return -ENOSPC;                                                            \
		n += (size_t)k;                                                                    \
	} while (0)
	if (len == 0)
		return -ENOSPC;
	for (size_t i = 0; i < NSERIES; i++) {
		const struct series *s = &table[i];

		if (s->family)
			PUT("# HELP %s %s\n# TYPE %s %s\n", s->family, s->help, s->family, s->type);
		if (s->is_float)
			PUT("%s %.3f\n", s->key, *dbl_at((struct gk_metrics *)m, s));
		else
			PUT("%s %llu\n", s->key,
			    (unsigned long long)*u64_at((struct gk_metrics *)m, s));
	}
	PUT("# HELP gpuckpt_metrics_updated_timestamp_seconds When this file was last written.\n"
	    "# TYPE gpuckpt_metrics_updated_timestamp_seconds gauge\n"
	    "gpuckpt_metrics_updated_timestamp_seconds %.3f\n",
	    now);
#undef PUT
	return (int)n;
}

void gk_metrics_parse(const char *text, size_t len, struct gk_metrics *m)
{
	size_t i = 0;

	while (i < len) {
		const char *line = text + i, *nl = memchr(line, '\n', len - i);
		size_t n = nl ? (size_t)(nl - line) : len - i;
		char value[64], *end;

		i += n + 1;
		if (n == 0 || line[0] == '#')
			continue;
		for (size_t s = 0; s < NSERIES; s++) {
			size_t kl = strlen(table[s].key);

			if (n <= kl + 1 || memcmp(line, table[s].key, kl) != 0 || line[kl] != ' ' ||
			    n - kl - 1 >= sizeof(value))
				continue;
			memcpy(value, line + kl + 1, n - kl - 1);
			value[n - kl - 1] = '\0';
			if (value[0] < '0' || value[0] > '9')
				break;
			if (table[s].is_float) {
				double v = strtod(value, &end);

				if (*end == '\0' && v >= 0 && v < 1e15)
					*dbl_at(m, &table[s]) = v;
			} else {
				unsigned long long v = strtoull(value, &end, 10);

				if (*end == '\0')
					*u64_at(m, &table[s]) = v;
			}
			break;
		}
	}
}

/* The old file's counters; a missing file is all zeros. */
static void read_old(int dirfd, const char *name, struct gk_metrics *m)
{
	char buf[16384];
	struct stat st;
	ssize_t n;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	memset(m, 0, sizeof(*m));
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0) {
		n = read(fd, buf, sizeof(buf));
		if (n > 0)
			gk_metrics_parse(buf, (size_t)n, m);
	}
	close(fd);
}

int gk_metrics_update(const char *path, const struct gk_metrics *d, gk_error_t *err)
{
	char dir[4096], tmp[300], lock[300], text[16384];
	const char *name = strrchr(path, '/');
	struct gk_metrics m;
	struct timespec ts;
	int dirfd, lockfd, fd, len, ret = 0;

	if (!name || !name[1] || strlen(name + 1) > 240 || (size_t)(name - path) >= sizeof(dir)) {
		gk_errprintf(err, "metrics: '%s' is not a file path", path);
		return -EINVAL;
	}
	memcpy(dir, path, (size_t)(name - path));
	dir[name - path] = '\0';
	name++;
	dirfd = gk_root_dir_open(dir[0] ? dir : "/", err);
	if (dirfd < 0)
		return dirfd;
	/* The lock is a file no one but root can open (the folder is root's
	 * and writable by no one else; the file 0600, remade if it was ever
	 * anything else): the folder and the metrics file, which node_exporter
	 * reads, can be opened and flocked by any user, so neither is locked. */
	snprintf(lock, sizeof(lock), ".%s.lock", name);
	lockfd = gk_root_private_file(dirfd, lock, O_RDWR, 1);
	if (lockfd < 0) {
		gk_errprintf(err,
			     "metrics: %s/%s: cannot open the lock: %s; this update is left out",
			     dir, lock, strerror(-lockfd));
		close(dirfd);
		return lockfd;
	}
	ret = gk_lock_bounded(lockfd, GK_METRICS_LOCK_WAIT_MS);
	if (ret < 0) {
		if (ret == -ETIMEDOUT)
			gk_errprintf(err,
				     "metrics: %s: another update held its lock %s for %u s; this "
				     "update's counts are left out",
				     path, lock, GK_METRICS_LOCK_WAIT_MS / 1000);
		else
			gk_errprintf(err,
				     "metrics: %s/%s: cannot lock: %s; this update is left out",
				     dir, lock, strerror(-ret));
		close(lockfd);
		close(dirfd);
		return ret;
	}
	read_old(dirfd, name, &m);
	gk_metrics_add(&m, d);
	clock_gettime(CLOCK_REALTIME, &ts);
	len = gk_metrics_format(&m, (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9, text,
				sizeof(text));
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	/* Left by an update that was killed: only root writes here, under the lock. */
	unlinkat(dirfd, tmp, 0);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	/* node_exporter reads it as another user. */
	if (fchmod(fd, 0644) < 0 || len < 0 || write(fd, text, (size_t)len) != len || fsync(fd) < 0)
		ret = len < 0 ? -ENOSPC : -EIO;
	if (close(fd) < 0 && !ret)
		ret = -EIO;
	if (!ret && renameat(dirfd, tmp, dirfd, name) < 0)
		ret = -errno;
	if (ret)
		unlinkat(dirfd, tmp, 0);
out:
	if (ret)
		gk_errprintf(err, "metrics: %s: %s", path, strerror(-ret));
	close(lockfd); /* unlocks */
	close(dirfd);
	return ret;
}
