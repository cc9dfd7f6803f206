/*
 * job_record.h - what the plugin keeps about a job's checkpoints, as root,
 * from its prolog and epilog (runtime/common/events.h has the line format):
 *
 *	collect   the runtime's event files of the job on this node
 *	          (BB_ROOT/JOB/step.S/task.T/gpuckpt.events), each line checked
 *	          and tagged with the node, step and task; a file is removed once
 *	          read, so that a folder kept on the node is not counted twice
 *	stage     the staging script's "staged in|out ..." and "error: ..."
 *	          lines as events
 *	append    the events to the job's record, SHARED_ROOT/records/JOB
 *	          (root's, 0600, in root's 0700 folder; whole lines under a
 *	          lock, since the epilogs of a job's nodes run at once, waited
 *	          for at most GK_RECORD_LOCK_WAIT_MS). A record holds at most
 *	          GK_RECORD_LIMIT bytes (events.h): the user decides how many
 *	          events their tasks report, so past that they are counted in
 *	          the record's last line, not kept. An append reads only the
 *	          record's last line; reading it back (for the AdminComment)
 *	          reads at most the limit
 *	sweep     records not written for the site's record_days removed, at
 *	          most GK_SWEEP_PER_EPILOG names looked at per epilog of a job
 *	          that used gpuckpt on the node
 *	comment   the scontrol command that puts the summary into the job's
 *	          AdminComment, where `scontrol show job` and `sacct` show it
 *
 * When: each task's file as the task ends (slurmstepd's task_exit, as root,
 * while the job still runs: Slurm refuses to change a job that has ended, so
 * the AdminComment is set when the batch script ends, and the record is
 * complete by then, the script's srun steps having ended first); what is
 * left, and the staging, in the prolog and epilog. Nothing here needs Slurm;
 * the plugin's callbacks call it (gpuckpt_spank.c).
 */
#ifndef GK_JOB_RECORD_H
#define GK_JOB_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "common/error.h" /* gk_error_t (runtime/common) */
#include "common/events.h"
#include "common/jobstats.h"

/* Which task folders gk_record_collect reads: step NULL for every one. */
struct gk_record_where {
	const char *step; /* "0", "batch", ...; NULL: all */
	uint32_t task;    /* with step */
};

/*
 * The runtime's events of `job` on this node under bb_root, added to out
 * with node, step and task (only those of `where`, or all if where is
 * NULL). bb_root must be root's (root_path.h); the job's folders must be
 * uid's; other folders are skipped. consume: remove each event file after
 * reading it. Returns the number of task folders looked at (0 when the job
 * has none here), or a negative errno (err says why).
 */
int gk_record_collect(const char *bb_root, uint32_t job, uid_t uid, const char *node,
		      const struct gk_record_where *where, int consume, struct gk_job_events *out,
		      gk_error_t *err);

/*
 * A line of the staging script as an event: "staged out|in step.S/task.T/
 * ckpt.N: B bytes in S s ..." (ok) or "error: ..." (failed). verb is "in" or
 * "out". 1 and *e filled when it is one, 0 when the line is something else.
 */
int gk_stage_line_event(const char *verb, const char *line, const char *node, double now,
			struct gk_event *e);

#define GK_RECORD_LOCK_WAIT_MS 10000u

/*
 * Append `add` to SHARED_ROOT/records/JOB (what does not fit in
 * GK_RECORD_LIMIT counted, not kept) and read the record back into `all`
 * (which may be NULL). shared_root must be root's. 0 or a negative errno
 * (err says why; -ETIMEDOUT: another node held the record's lock too long,
 * add is left out).
 */
int gk_record_append(const char *shared_root, uint32_t job, const struct gk_job_events *add,
		     struct gk_job_events *all, gk_error_t *err);

/* Read SHARED_ROOT/records/JOB into all without making it (none: 0, no
 * events). 0 or a negative errno. */
int gk_record_read(const char *shared_root, uint32_t job, struct gk_job_events *all,
		   gk_error_t *err);

/*
 * Remove the records in SHARED_ROOT/records not written for `days` days (the
 * jobs' own, named by their number; regular files of root's; nothing else
 * there), looking at no more than max_entries names per call: each call
 * goes on where the last one stopped (a cookie in records/.sweep). Returns
 * how many it removed, or a negative errno (err says why); no records
 * folder is 0.
 */
#define GK_SWEEP_PER_EPILOG 256u
int gk_record_sweep(const char *shared_root, unsigned days, unsigned max_entries, time_t now,
		    gk_error_t *err);

/* The record's text, for tests: parse buf into out (gk_job_events_parse_record). */
int gk_record_parse(const char *buf, size_t len, struct gk_job_events *out);

#define GK_COMMENT_ARGS 5
/* {scontrol, "update", "JobId=JOB", "AdminComment=TEXT", NULL} in argv, strings in buf. */
int gk_admin_comment_argv(const char *scontrol, uint32_t job, const char *text, char *argv[],
			  char *buf, size_t buflen);

/*
 * Preemption with PreemptMode=REQUEUE signals a job's steps but not its batch
 * shell; a script that goes on to its end would end the job before Slurm
 * requeues it when GraceTime ends. So the batch step's end (slurmstepd, as
 * root, while the job still runs) requeues the job itself when it was
 * preempted and a step of it was checkpointed in this run:
 *
 *	checkpointed   1 when `all` (the job's record) has a checkpoint written
 *	               (result ok) in run `restart` (SLURM_RESTART_COUNT), else 0
 *	show           {scontrol, "show", "job", "JOB", NULL}
 *	show_line      one line of its answer into *s: JobState and PreemptTime
 *	               are taken only as the first field of a line, as Slurm
 *	               prints them, never from the line of JobName, which the
 *	               user chooses
 *	requeue        {scontrol, "requeue", "JOB", NULL}
 */
int gk_job_events_checkpointed(const struct gk_job_events *all, uint32_t restart);

struct gk_job_show {
	int state_seen; /* a JobState= line was there */
	int running;	/* JobState=RUNNING */
	int preempted;	/* PreemptTime= a time, not None */
};
void gk_job_show_line(const char *line, struct gk_job_show *s);

#define GK_SCONTROL_ARGS 5
int gk_show_job_argv(const char *scontrol, uint32_t job, char *argv[], char *buf, size_t buflen);
int gk_requeue_argv(const char *scontrol, uint32_t job, char *argv[], char *buf, size_t buflen);

#endif
