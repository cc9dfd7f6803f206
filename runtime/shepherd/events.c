/*
 * events.c - the shepherd's lines in the task folder's gpuckpt.events
 * (common/events.h): a transparent checkpoint committed, a transparent
 * restore. No runtime can record them: the checkpointed process is frozen
 * and dumped before the commit, the restored one does not know it was
 * restored, and a program without the runtime records nothing. Without
 * these lines a transparent job's AdminComment said "0 checkpoints, 0
 * restores" (PyTorch under Slurm on an H200, 2026-11-28), and `gpuckpt
 * report` counted no GPU time saved for it.
 *
 * Root writes into the job's user's folder: through the folder's checked
 * descriptor (sh->dirfd), never by a path; the file must be a regular file
 * of that user's with one link, opened without following a link and
 * without blocking (a FIFO put there cannot hold the shepherd); one that is
 * not there yet is made and given to the user, whose runtime appends to it
 * too. A line that cannot be written is said once at info level and
 * otherwise costs nothing: the checkpoint itself does not depend on it.
 */
#include "config.h"

#include "shepherd/shepherd.h"
#include "common/events.h"
#include "common/log.h"
#include "common/procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double clock_seconds(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The file, opened for appending as described above; -errno. */
static int open_events(const struct gk_shepherd *sh)
{
	const int flags = O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
	struct stat st;
	int fd = openat(sh->dirfd, GK_EVENTS_FILE, flags);

	if (fd < 0 && errno == ENOENT) {
		fd = openat(sh->dirfd, GK_EVENTS_FILE, flags | O_CREAT | O_EXCL, 0600);
		if (fd >= 0 && fchown(fd, sh->o->uid, sh->o->gid) < 0) {
			int e = errno;

			close(fd);
			return -e;
		}
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != sh->o->uid ||
	    st.st_nlink != 1) {
		close(fd);
		return -EPERM;
	}
	if (st.st_size >= (off_t)GK_EVENTS_FILE_MAX) {
		close(fd);
		return -EFBIG;
	}
	return fd;
}

void gk_shep_event(const struct gk_shepherd *sh, enum gk_event_kind kind, int ret, uint64_t seq,
		   uint64_t bytes, double seconds, unsigned gpus)
{
	static int said;
	const char *rc = getenv("SLURM_RESTART_COUNT");
	char line[GK_EVENT_LINE_MAX + 1];
	struct gk_event e;
	uint64_t pstart;
	long hz = sysconf(_SC_CLK_TCK);
	int fd, n;

	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.result = ret == 0 ? GK_EV_OK : GK_EV_FAILED;
	e.time = clock_seconds(CLOCK_REALTIME);
	if (sh->prog > 0) {
		e.pid = (uint64_t)sh->prog;
		e.have = GK_EVF_PID;
	}
	if (sh->prog > 0 && gk_proc_start(sh->prog, &pstart) == 0) {
		e.pstart = pstart;
		e.have |= GK_EVF_PSTART;
		/* What a restore from this checkpoint saves redoing: the
		 * program's time since it (or its restore) started. */
		if (kind == GK_EV_CHECKPOINT && ret == 0 && hz > 0 &&
		    clock_seconds(CLOCK_BOOTTIME) >= (double)pstart / (double)hz) {
			e.elapsed = clock_seconds(CLOCK_BOOTTIME) - (double)pstart / (double)hz;
			e.have |= GK_EVF_ELAPSED;
		}
	}
	if (rc && *rc >= '0' && *rc <= '9') {
		e.restart = (uint32_t)strtoul(rc, NULL, 10);
		e.have |= GK_EVF_RESTART;
	}
	if (ret == 0) {
		e.ckpt = seq;
		e.bytes = bytes;
		e.seconds = seconds;
		e.have |= GK_EVF_CKPT | GK_EVF_BYTES | GK_EVF_SECONDS;
		if (kind == GK_EV_CHECKPOINT) {
			e.gpus = gpus;
			e.have |= GK_EVF_GPUS;
		}
	} else {
		e.err = (uint32_t)(ret < 0 && ret > -4096 ? -ret : EIO);
		e.have |= GK_EVF_ERRNO;
	}
	n = gk_event_format(&e, line, sizeof(line));
	fd = n < 0 ? n : open_events(sh);
	if (fd >= 0) {
		n = write(fd, line, (size_t)n) == n ? 0 : -(errno ? errno : EIO);
		close(fd);
	} else {
		n = fd;
	}
	if (n < 0 && !said) {
		said = 1;
		gk_info("transparent: %s/%s: %s; this task's transparent checkpoints are not "
			"recorded there",
			sh->o->dir, GK_EVENTS_FILE, strerror(-n));
	}
}
