/*
 * events.h - what happened to a job's checkpoints, one line per event: the
 * one definition of the format that the runtime writes and that the plugin's
 * prolog and epilog, `gpuckpt checkpoint` and `gpuckpt report` read.
 *
 * Where the lines live:
 *   BB_ROOT/JOB/step.S/task.T/gpuckpt.events   appended by the runtime in the
 *       task (the job's user owns it: to root it is untrusted input, read
 *       through descriptors, bounded, every line checked);
 *   SHARED_ROOT/records/JOB                     the job's record, written by
 *       the plugin as root: the events it accepted from the nodes, rewritten
 *       from their parsed form with node, step and task added, and its own
 *       staging events. Read by `gpuckpt report`.
 *
 * A line is "gpuckpt-event 1" and then " key=value" fields, at most
 * GK_EVENT_LINE_MAX bytes with its newline:
 *
 *	kind     start | checkpoint | restore | stage-in | stage-out     (required)
 *	result   ok | failed | refused                                    (required)
 *	time     seconds since 1970, "1732400000.125"                     (required)
 *	pid      the process (start, checkpoint, restore)
 *	pstart   its start time in clock ticks after boot (/proc/PID/stat field
 *	         22): with pid, a process no other one can be taken for
 *	ckpt     N of ckpt.N written (checkpoint) or loaded (restore)
 *	bytes    written, loaded or copied
 *	seconds  how long it took
 *	elapsed  seconds from the process's start to the checkpoint (what a
 *	         restore from it saves redoing)
 *	gpus     GPUs in the checkpoint
 *	restart  the job's restart count (SLURM_RESTART_COUNT)
 *	errno    why it failed, a positive errno value
 *	node     the node (record only), [A-Za-z0-9._-]
 *	step     step.S's S (record only): a number, "batch" or "interactive"
 *	task     task.T's T (record only)
 *
 * A field that is not there is absent from `have`. Unknown keys are skipped
 * (a newer writer); a known key twice or with a bad value, a missing
 * required key, anything that is not printable ASCII, or a line too long
 * rejects the whole line.
 */
#ifndef GK_EVENTS_H
#define GK_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#define GK_EVENTS_FILE "gpuckpt.events"
#define GK_EVENT_MAGIC "gpuckpt-event 1"
#define GK_EVENT_LINE_MAX 512
/* The runtime stops appending past this size, and readers read no more. */
#define GK_EVENTS_FILE_MAX (1u << 20)
#define GK_EVENT_NAME_MAX 64
/* The job records: SHARED_ROOT/records/JOB, read up to GK_RECORD_MAX bytes
 * (GK_JOB_EVENTS_MAX lines fit; records of older versions could be that
 * big). The plugin writes at most GK_RECORD_LIMIT bytes to one: past that,
 * events are counted, not kept, in the record's last line,
 * "gpuckpt-dropped N" with N in 20 digits (GK_RECORD_DROPPED_LEN bytes with
 * its newline), which it rewrites in place; records are read with
 * gk_job_events_parse_record (jobstats.h), which counts it. */
#define GK_RECORDS_DIR "records"
#define GK_RECORD_MAX (64u << 20)
#define GK_RECORD_LIMIT (4u << 20)
#define GK_RECORD_DROPPED "gpuckpt-dropped "
#define GK_RECORD_DROPPED_LEN (sizeof(GK_RECORD_DROPPED) - 1 + 20 + 1)

enum gk_event_kind {
	GK_EV_START = 0,
	GK_EV_CHECKPOINT,
	GK_EV_RESTORE,
	GK_EV_STAGE_IN,
	GK_EV_STAGE_OUT,
	GK_EV_KINDS
};

enum gk_event_result { GK_EV_OK = 0, GK_EV_FAILED, GK_EV_REFUSED, GK_EV_RESULTS };

enum gk_event_field {
	GK_EVF_PID = 1u << 0,
	GK_EVF_PSTART = 1u << 1,
	GK_EVF_CKPT = 1u << 2,
	GK_EVF_BYTES = 1u << 3,
	GK_EVF_SECONDS = 1u << 4,
	GK_EVF_ELAPSED = 1u << 5,
	GK_EVF_GPUS = 1u << 6,
	GK_EVF_RESTART = 1u << 7,
	GK_EVF_ERRNO = 1u << 8,
	GK_EVF_NODE = 1u << 9,
	GK_EVF_STEP = 1u << 10,
	GK_EVF_TASK = 1u << 11,
};

struct gk_event {
	enum gk_event_kind kind;
	enum gk_event_result result;
	double time;
	uint32_t have; /* GK_EVF_* of the fields below that are set */
	uint64_t pid;
	uint64_t pstart;
	uint64_t ckpt;
	uint64_t bytes;
	double seconds;
	double elapsed;
	uint32_t gpus;
	uint32_t restart;
	uint32_t err;
	char node[GK_EVENT_NAME_MAX];
	char step[16];
	uint32_t task;
};

const char *gk_event_kind_name(enum gk_event_kind k);
const char *gk_event_result_name(enum gk_event_result r);

/* The line for an event, with its newline, into buf. Returns its length, or
 * -ENOSPC (buf too small, or over GK_EVENT_LINE_MAX), -EINVAL (a name that
 * is not [A-Za-z0-9._-], a number that is not finite). */
int gk_event_format(const struct gk_event *e, char *buf, size_t len);

/* Parse one line (without its newline; len bytes, no NUL needed).
 * 0, or -EINVAL when the line is not a valid event. */
int gk_event_parse(const char *line, size_t len, struct gk_event *e);

/*
 * Every line of buf[0..len) to fn, in order: a valid event as `e`, an
 * invalid line as NULL (so that callers may count them). A last line without
 * its newline is taken as cut off (a writer killed half-way, or the read
 * bound) and passed as NULL. Stops when fn returns non-zero and returns that.
 */
int gk_events_each(const char *buf, size_t len, int (*fn)(void *arg, const struct gk_event *e),
		   void *arg);

/* 1 when `s` may be a node or step name: 1-63 of [A-Za-z0-9._-]. */
int gk_event_name_ok(const char *s);

#endif
