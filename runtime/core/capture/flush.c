/*
 * flush.c - each committed checkpoint copied off the node while the program
 * runs, so that losing the node loses only the work since the last flushed
 * one (the epilog, which would otherwise copy it, never runs on a dead node).
 *
 * The copy goes from GPUCKPT_DIR (the node's burst buffer) to
 * GPUCKPT_FLUSH_DIR (the task's folder below the site's flush_root, on
 * shared storage, the job's user's; the plugin makes it). It is made by one
 * thread of the runtime, as the job's user:
 *   - off the program's threads: a commit only wakes it (gk_flush_kick);
 *   - at idle I/O priority and nice 19, and at most GPUCKPT_FLUSH_RATE bytes
 *     a second when that is set, so that the program's own I/O goes first;
 *   - into .tmp.ckpt.N.HOST.PID, synced, then renamed to ckpt.N
 *     (gk_store_publish_at), which also applies keep-N there: on the shared
 *     side a checkpoint is complete or absent, and a crash during a flush
 *     leaves the previous one as it was.
 * Only what the user's own process can read is flushed: a transparent
 * checkpoint's criu/ is root's (the epilog stages those). In a step of several
 * tasks, task 0 also copies the step's set records (flush_records): with
 * them the prolog after a node loss restores the newest set flushed whole.
 *
 * Shared storage in trouble (full, read-only, gone): the job goes on with
 * its node-local checkpoints; the output says so once per kind of trouble,
 * and once more when a flush succeeds again. Every commit tries again.
 */
#include "config.h"

#include "core/capture/flush.h"
#include "common/error.h"
#include "common/fsafe.h"
#include "image/image.h"
#include "common/log.h"
#include "core/state/phase.h"
#include "core/state/runtime.h"
#include "image/ckptname.h"
#include "image/setfile.h"
#include "image/stepset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define COPY_BUF (4u << 20)
/* linux/ioprio.h, which not every libc ships. */
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO_WHO_PROCESS 1

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static unsigned pending;  /* commits not yet looked at */
static double kicked_at;  /* when the newest of them was committed */
static int trouble;       /* errno of the shared side's last failure, 0 when fine */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Where a copy failed: the source vanishing (pruned by a newer commit) is
 * no trouble of the shared side. */
struct failure {
	int ret;
	int on_shared;
	char what[512];
};

/* "name: op: error" (op may be "") */
static void fail(struct failure *f, int ret, int on_shared, const char *name, const char *op)
{
	f->ret = ret;
	f->on_shared = on_shared;
	snprintf(f->what, sizeof(f->what), "%s: %s%s%s", name, op, op[0] ? ": " : "",
		 strerror(-ret));
}

/* Sleep as long as needed for `done` bytes since t0 to stay within the rate. */
static void throttle(uint64_t done, double t0)
{
	uint64_t rate = gk_rt.settings.flush_rate;
	double due, left;
	struct timespec ts;

	if (!rate)
		return;
	due = (double)done / (double)rate;
	left = due - (now_s() - t0);
	if (left <= 0)
		return;
	ts.tv_sec = (time_t)left;
	ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int copy_file(int srcdir, int dstdir, const char *name, char *buf, uint64_t *bytes,
		     double t0, struct failure *f)
{
	int in, out, ret = 0;
	ssize_t n;

	in = openat(srcdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (in < 0) {
		fail(f, -errno, 0, name, "");
		return f->ret;
	}
	posix_fadvise(in, 0, 0, POSIX_FADV_SEQUENTIAL);
	out = openat(dstdir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0) {
		fail(f, -errno, 1, name, "");
		close(in);
		return f->ret;
	}
	while ((n = read(in, buf, COPY_BUF)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			fail(f, ret = -errno, 0, name, "read");
			goto out;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				fail(f, ret = w < 0 ? -errno : -EIO, 1, name, "write");
				goto out;
			}
			off += w;
		}
		*bytes += (uint64_t)n;
		throttle(*bytes, t0);
	}
	if (fsync(out) < 0) {
		fail(f, ret = -errno, 1, name, "fsync");
		goto out;
	}
	/* Written and safe: its pages need not crowd the program's out of
	 * the page cache. */
	posix_fadvise(out, 0, 0, POSIX_FADV_DONTNEED);
out:
	close(in);
	if (close(out) < 0 && !ret)
		fail(f, ret = -errno, 1, name, "close");
	return ret;
}

/* Copy localfd/ckpt.N to flushfd as ckpt.N (through a .tmp name). */
static int flush_one(int localfd, int flushfd, const struct gk_store_entry *e, char *buf,
		     uint64_t *bytes, struct failure *f)
{
	char name[64], tmp[384];
	gk_error_t err;
	int srcdir, dstdir = -1, ret = 0;
	double t0 = now_s();
	struct dirent *de;
	DIR *d;

	snprintf(name, sizeof(name), GK_CKPT_FMT, e->sequence);
	gk_store_writer_name(e->sequence, tmp, sizeof(tmp));
	srcdir = openat(localfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (srcdir < 0) {
		fail(f, -errno, 0, name, "");
		return f->ret;
	}
	if (mkdirat(flushfd, tmp, 0700) < 0 ||
	    (dstdir = openat(flushfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		fail(f, -errno, 1, tmp, "cannot create");
		close(srcdir);
		return f->ret;
	}
	d = fdopendir(srcdir);
	if (!d) {
		fail(f, ret = -errno, 0, name, "");
		close(srcdir);
		goto out;
	}
	while (!ret && (de = readdir(d))) {
		struct stat sb;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
			fail(f, ret = -errno, 0, de->d_name, "");
			break;
		}
		/* The runtime writes plain files only; anything else is not
		 * its checkpoint and is not carried to shared storage. */
		if (!S_ISREG(sb.st_mode)) {
			fail(f, ret = -EPERM, 0, de->d_name, "not a plain file");
			break;
		}
		ret = copy_file(dirfd(d), dstdir, de->d_name, buf, bytes, t0, f);
	}
	closedir(d);
	if (!ret && fsync(dstdir) < 0)
		fail(f, ret = -errno, 1, tmp, "fsync");
	if (!ret) {
		ret = gk_store_publish_at(flushfd, gk_rt.settings.flush_dir, tmp, e->sequence,
					  gk_rt.settings.keep, &err);
		if (ret < 0) {
			f->ret = ret;
			f->on_shared = 1;
			snprintf(f->what, sizeof(f->what), "%s", err.text);
		}
	}
out:
	close(dstdir);
	if (ret < 0)
		gk_remove_tree(flushfd, tmp, 4);
	return ret;
}

static void report(const struct failure *f)
{
	if (!f->on_shared) {
		gk_debug("flush: %s/%s; left for the next round", gk_rt.settings.dir, f->what);
		return;
	}
	if (trouble == f->ret)
		return;
	trouble = f->ret;
	gk_warn("flush: %s: %s: the shared copy is not updated; the job goes on with its "
		"checkpoints in %s, which a failure of this node would lose; trying again after "
		"each checkpoint",
		gk_rt.settings.flush_dir, f->what, gk_rt.settings.dir);
}

/* PATH without its last name (a task folder's step folder). */
static void parent_of(const char *path, char *buf, size_t len)
{
	char *slash;
	size_t n;

	snprintf(buf, len, "%s", path);
	for (n = strlen(buf); n > 1 && buf[n - 1] == '/'; n--)
		buf[n - 1] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		snprintf(buf, len, ".");
	else if (slash == buf)
		buf[1] = '\0';
	else
		*slash = '\0';
}

/*
 * Task 0 of a step of several tasks: the step's set records (which task 0
 * writes beside the task folders once every task committed, setfile.h) to
 * the flush root's step folder, and those older than the node's oldest
 * record removed there. With them the prolog after a node loss knows which
 * flushed sets are whole (the record, and every task's part flushed) and
 * restores the newest (scheduler-hooks/stage/sets.c). A record that cannot
 * be written is reported as the checkpoints' copies are, and tried again
 * next round.
 */
static void flush_records(int localfd, struct failure *f)
{
	char lstep[4096], fstep[4096];
	uint64_t oldest = 0;
	struct dirent *de;
	int lfd, ffd;
	DIR *d;

	if (gk_rt.settings.step_tasks < 2 || gk_rt.settings.task != 0 ||
	    gk_rt.settings.tasks_independent)
		return;
	parent_of(gk_rt.settings.dir, lstep, sizeof(lstep));
	parent_of(gk_rt.settings.flush_dir, fstep, sizeof(fstep));
	lfd = openat(localfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ffd = open(fstep, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d = lfd < 0 ? NULL : fdopendir(lfd);
	if (!d || ffd < 0) {
		if (!d && lfd >= 0)
			close(lfd);
		goto out;
	}
	while ((de = readdir(d))) {
		struct gk_set_record r;
		gk_error_t err;
		struct stat sb;
		uint64_t seq;

		if (gk_set_name_parse(de->d_name, &seq) < 0)
			continue;
		if (!oldest || seq < oldest)
			oldest = seq;
		if (fstatat(ffd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		if (gk_set_record_read(dirfd(d), seq, &r, &err) < 0) {
			gk_debug("flush: %s/%s: %s", lstep, de->d_name, err.text);
			continue;
		}
		f->ret = gk_set_record_write(fstep, &r, &err);
		if (f->ret < 0) {
			f->on_shared = 1;
			snprintf(f->what, sizeof(f->what), "%s", err.text);
			report(f);
			continue;
		}
		gk_notice("flush: %s/%s: the record of set %" PRIu64 " (every task committed it)",
			  fstep, de->d_name, seq);
	}
	if (oldest) {
		gk_error_t err;

		if (gk_set_records_prune(fstep, oldest, &err) < 0)
			gk_debug("flush: prune: %s", err.text);
	}
out:
	if (d)
		closedir(d);
	if (ffd >= 0)
		close(ffd);
}

/* One round: every committed checkpoint of the node that the shared side
 * lacks, oldest first (an incremental checkpoint needs its elders there). */
static void flush_round(char *buf, double since)
{
	struct gk_store_entry *list = NULL;
	gk_error_t err;
	struct failure f = {0};
	size_t n = 0;
	int localfd, flushfd;

	localfd = open(gk_rt.settings.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	flushfd = open(gk_rt.settings.flush_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (localfd < 0)
		goto out;
	if (flushfd < 0) {
		f.ret = -errno;
		f.on_shared = 1;
		snprintf(f.what, sizeof(f.what), "%s", strerror(-f.ret));
		report(&f);
		goto out;
	}
	if (gk_store_list_at(localfd, gk_rt.settings.dir, &list, &n, &err) < 0) {
		gk_debug("flush: %s", err.text);
		goto out;
	}
	for (size_t i = n; i-- > 0;) {
		char name[64];
		uint64_t bytes = 0;
		double t0;
		struct stat sb;

		if (!list[i].complete || list[i].transparent)
			continue;
		snprintf(name, sizeof(name), GK_CKPT_FMT, list[i].sequence);
		if (fstatat(flushfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
			continue;
		t0 = now_s();
		if (flush_one(localfd, flushfd, &list[i], buf, &bytes, &f) < 0) {
			report(&f);
			if (f.on_shared)
				break;
			continue;
		}
		if (trouble)
			gk_notice("flush: %s: writable again", gk_rt.settings.flush_dir);
		trouble = 0;
		gk_notice("flush: %s/%s: %" PRIu64 " bytes in %.3f s (%.0f MB/s), safe %.3f s after "
			  "its commit",
			  gk_rt.settings.flush_dir, name, bytes, now_s() - t0,
			  bytes / 1e6 / (now_s() - t0 + 1e-9), now_s() - since);
	}
	if (!f.on_shared)
		flush_records(localfd, &f);
out:
	free(list);
	if (localfd >= 0)
		close(localfd);
	if (flushfd >= 0)
		close(flushfd);
}

static void *flush_thread(void *arg)
{
	char *buf = malloc(COPY_BUF);

	(void)arg;
	/* Behind the program: idle I/O class (this thread only: who = its
	 * tid), lowest CPU priority. Both are best effort. */
	syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, (int)syscall(SYS_gettid),
		IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT);
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
	if (!buf) {
		gk_warn("flush: out of memory; checkpoints stay on the node until the epilog");
		return NULL;
	}
	for (;;) {
		double since;

		pthread_mutex_lock(&lock);
		while (!pending)
			pthread_cond_wait(&wake, &lock);
		pending = 0;
		since = kicked_at;
		pthread_mutex_unlock(&lock);
		flush_round(buf, since);
	}
	return NULL;
}

static void start(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;

	/* The thread must never take the program's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, flush_thread, NULL) != 0)
		gk_warn("flush: cannot start the flush thread: %s; checkpoints stay on the node "
			"until the epilog",
			strerror(errno));
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void gk_flush_kick(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	if (!gk_rt.settings.flush_dir[0] || !gk_rt.settings.dir[0])
		return;
	pthread_once(&once, start);
	pthread_mutex_lock(&lock);
	pending++;
	kicked_at = now_s();
	pthread_cond_signal(&wake);
	pthread_mutex_unlock(&lock);
}

/* A commit wakes the flush thread (phase.h). */
static const struct gk_phase_hooks flush_hooks = {
	.name = "flush",
	.order = 40,
	.committed = gk_flush_kick,
};
GK_PHASE_HOOKS(flush_hooks)
