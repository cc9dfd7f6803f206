/*
 * eventlog.c - appending the runtime's events to its task folder (eventlog.h).
 */
#include "config.h"

#include "core/state/eventlog.h"
#include "common/log.h"
#include "common/procstat.h"
#include "core/state/runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t pstart;	  /* clock ticks after boot */
static double start_boot; /* the same, in seconds */
static int have_pstart;

static double boot_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double wall_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void gk_eventlog_init(void)
{
	long hz = sysconf(_SC_CLK_TCK);

	if (gk_proc_start(getpid(), &pstart) == 0 && hz > 0) {
		have_pstart = 1;
		start_boot = (double)pstart / (double)hz;
	}
}

static void fill(struct gk_event *e, enum gk_event_kind kind, enum gk_event_result result)
{
	const char *rc = getenv("SLURM_RESTART_COUNT");

	memset(e, 0, sizeof(*e));
	e->kind = kind;
	e->result = result;
	e->time = wall_seconds();
	e->pid = (uint64_t)getpid();
	e->have = GK_EVF_PID;
	if (have_pstart) {
		e->pstart = pstart;
		e->have |= GK_EVF_PSTART;
	}
	if (rc && *rc >= '0' && *rc <= '9') {
		e->restart = (uint32_t)strtoul(rc, NULL, 10);
		e->have |= GK_EVF_RESTART;
	}
}

static void append(const struct gk_event *e)
{
	static int said;
	char path[sizeof(gk_rt.settings.dir) + sizeof(GK_EVENTS_FILE) + 1],
	    line[GK_EVENT_LINE_MAX + 1];
	struct stat st;
	int fd, n, err = 0;

	if (!gk_rt.settings.dir[0])
		return;
	n = gk_event_format(e, line, sizeof(line));
	if (n < 0) {
		err = -n;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s", gk_rt.settings.dir, GK_EVENTS_FILE);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	/* Outside Slurm the folder may not be there yet: the first checkpoint
	 * would make it anyway. */
	if (fd < 0 && errno == ENOENT && mkdir(gk_rt.settings.dir, 0700) == 0)
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = errno;
		goto out;
	}
	/* One write of a whole line: O_APPEND keeps lines of several processes
	 * of the task apart. */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		err = EINVAL;
	else if (st.st_size >= (off_t)GK_EVENTS_FILE_MAX)
		err = EFBIG;
	else if (write(fd, line, (size_t)n) != n)
		err = errno ? errno : EIO;
	close(fd);
out:
	if (err && !said) {
		said = 1;
		gk_info("events: %s/%s: %s; this process's checkpoints are not recorded there",
			gk_rt.settings.dir, GK_EVENTS_FILE, strerror(err));
	}
}

void gk_eventlog_start(void)
{
	struct gk_event e;

	fill(&e, GK_EV_START, GK_EV_OK);
	append(&e);
}

void gk_eventlog_checkpoint(int ret, uint64_t seq, uint64_t bytes, double seconds, unsigned gpus)
{
	struct gk_event e;

	fill(&e, GK_EV_CHECKPOINT,
	     ret == 0	       ? GK_EV_OK
	     : ret == -ENOTSUP ? GK_EV_REFUSED
			       : GK_EV_FAILED);
	e.seconds = seconds;
	e.have |= GK_EVF_SECONDS;
	if (ret == 0) {
		e.ckpt = seq;
		e.bytes = bytes;
		e.gpus = gpus;
		e.have |= GK_EVF_CKPT | GK_EVF_BYTES | GK_EVF_GPUS;
		if (have_pstart && boot_seconds() >= start_boot) {
			e.elapsed = boot_seconds() - start_boot;
			e.have |= GK_EVF_ELAPSED;
		}
	} else {
		e.err = (uint32_t)(ret < 0 && ret > -4096 ? -ret : EIO);
		e.have |= GK_EVF_ERRNO;
	}
	append(&e);
}

void gk_eventlog_restore(enum gk_event_result result, int has_ckpt, uint64_t seq, uint64_t bytes,
			 double seconds, int err)
{
	struct gk_event e;

	fill(&e, GK_EV_RESTORE, result);
	if (has_ckpt) {
		e.ckpt = seq;
		e.have |= GK_EVF_CKPT;
	}
	if (result == GK_EV_OK) {
		e.bytes = bytes;
		e.seconds = seconds;
		e.have |= GK_EVF_BYTES | GK_EVF_SECONDS;
	} else if (err) {
		e.err = (uint32_t)(err < 0 ? -err : err) & 4095;
		e.have |= GK_EVF_ERRNO;
	}
	append(&e);
}
