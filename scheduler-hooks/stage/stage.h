/*
 * stage.h - gpuckpt-stage: a job's checkpoints between the node's burst buffer
 * and the shared root, as root, run by the SPANK plugin's prolog ("in") and
 * epilog ("out", then "sweep"). scheduler-hooks/README.md says what it does,
 * SECURITY.md why each of its file operations is safe.
 *
 * Root never acts on a path a user could change: both roots are checked to
 * be root's alone (fsafe.h), everything below them is reached by descriptors
 * whose owner and type were checked, copies are made in a root-only area
 * (ROOT/.gpuckpt-stage) and published with one rename, ownership is handed
 * over with fchown on descriptors, and nothing the user wrote is run or
 * believed: a checkpoint's content is judged by the runtime (and criu/ by
 * root's seal), never by a program the user can stop.
 *
 *	area.c    the root-only area: the per-job lock, temporary names, leftovers
 *	copy.c    copying one checkpoint folder, refusing what is not plain
 *	slurm.c   asking squeue (the job's identity, the states of all jobs)
 *	record.c  who a shared job folder belongs to (id reuse)
 *	publish.c one checkpoint copied, checked, published; the shared job folder
 *	flow.c    stage in, stage out
 *	sets.c    steps of several tasks: set records, the restore plan, pruning by set
 *	sweep.c   removing the folders of jobs that are over
 *	stage_log.c the lines for slurmd's log, and names shown escaped
 *	main.c    the command line
 */
#ifndef GK_STAGE_H
#define GK_STAGE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/error.h"

/* The root-only folder gpuckpt-stage keeps in each root. Not a job id, so
 * no job's folder can be named like it. */
#define STAGE_AREA ".gpuckpt-stage"
/* Who a shared job folder belongs to (record.c). */
#define STAGE_RECORD ".gpuckpt-job"
/* The deepest a checkpoint tree goes: ckpt.N/criu/file. */
#define STAGE_MAX_DEPTH 8
/* How deep a removed tree may go (a job folder is the user's, who can
 * nest folders as deep as they like; deeper ones stay in the area). */
#define STAGE_REMOVE_DEPTH 256
/* More entries than any checkpoint has: one that has more is refused
 * rather than copied for hours. */
#define STAGE_MAX_ENTRIES 65536
/* Checkpoints staged per task at most: --keep's 1000 and the bases they
 * are increments of. */
#define STAGE_MAX_CKPTS 2000

struct stage {
	const char *verb;
	uint32_t job;
	uid_t uid;
	gid_t gid;
	unsigned keep;
	const char *bb_root, *shared_root; /* as given, for messages */
	int bbfd, sharedfd;		   /* opened checked (gk_open_trusted_dir) */
	int bb_area, shared_area;	   /* ROOT/STAGE_AREA, root's 0700 */
	/* Where the runtime flushes while the job runs (--flush-root; -1 and
	 * NULL without): job folders of the user's, read as untrusted user
	 * data, as a user's own burst-buffer folder is. */
	const char *flush_root;
	int flushfd, flush_area;
	char squeue[PATH_MAX];
	char host[65];
	int failed; /* an "error:" line was printed: exit status 1 */
};

/* ---- area.c ---- */

/* ROOT/STAGE_AREA, made if needed: root's, 0700. */
int area_open(int rootfd, const char *root, gk_error_t *err);
/* Hold the node's lock of one job (blocks). Returns a descriptor to close. */
int area_lock(int areafd, uint32_t job, gk_error_t *err);
/* A fresh name in the area: "<kind>.<host>.<pid>.<n>". */
void area_name(const struct stage *st, const char *kind, char *buf, size_t len);
/* Remove what a killed gpuckpt-stage of this host left in the area, and
 * anything there older than a day. */
void area_clean(int areafd, const char *host);
/* Move parentfd/name into the area under a fresh name and remove it there. */
int area_discard(const struct stage *st, int areafd, int parentfd, const char *name);

/* ---- copy.c ---- */

/*
 * Copy the checkpoint folder srcfd (the caller checked it is a folder of
 * uid's) into a new folder `name` of dstfd. Taken: regular files of uid's
 * with one link, and criu/, a folder root:root 0700 of root's regular files.
 * Anything else (a symbolic link, a device, a fifo, a socket, a file with
 * another owner or another link elsewhere, another folder) refuses the
 * whole checkpoint, naming it (-EPERM). The copy's files are 0600, folders
 * 0700, never setuid, setgid or sticky; they belong to uid:gid (criu/ to
 * root), set with fchown on their descriptors; all synced. On failure the
 * new folder is removed. *bytes: what was copied.
 */
int copy_ckpt(int srcfd, const char *src_label, int dstfd, const char *name, uid_t uid, gid_t gid,
	      uint64_t *bytes, gk_error_t *err);

/* ---- slurm.c ---- */

struct job_ident {
	int known; /* squeue answered for the job */
	uid_t uid;
	char submit[32]; /* SubmitTime as squeue prints it (reset on requeue) */
	unsigned restarts;
};

/* squeue -j JOB: the job's owner, submit time and restart count. */
int job_ident(const struct stage *st, struct job_ident *id, gk_error_t *err);

/* Every job the controller knows with its state, as "ID STATE\n" lines
 * (malloc'ed). -EIO when squeue failed: then nothing may be removed. */
int job_states(const struct stage *st, char **text, gk_error_t *err);
/* That text parsed once, sorted by job id, so that a sweep of N folders
 * against M jobs costs (N + M) log M, not N x M (a large site's epilog
 * compares tens of thousands of each). It points into text, which must
 * outlive it. -ENOMEM, or 0 with *out to free with job_table_free(). */
struct job_table;
int job_table_parse(const char *text, struct job_table **out);
/* The state of job id (its first line where squeue printed it twice), or
 * NULL; copied into buf (truncated to len - 1). */
const char *job_table_state(const struct job_table *t, uint32_t id, char *buf, size_t len);
void job_table_free(struct job_table *t);

/* ---- record.c ---- */

/* Read sjobfd's record into *rec; -ENOENT when there is none. */
int record_read(int sjobfd, struct job_ident *rec);
/* Write it (root's 0600, replaced whole). */
int record_write(int sjobfd, const struct job_ident *rec);
/* 1 when rec was written by this job (this run or an earlier run of it), 0
 * when by an earlier job that had the same id. */
int record_ours(const struct job_ident *rec, const struct job_ident *now);
/* "uid 1001, submitted 2026-11-23T21:51:03, 2 restarts" */
void record_show(const struct job_ident *rec, char *buf, size_t len);

/* ---- flow.c ---- */

int stage_in(struct stage *st);
int stage_out(struct stage *st);

/* ---- publish.c ---- */

/* A refused checked open, for a line ("a symbolic link; refused", ...). */
const char *stage_why(int ret);
/* A folder of root's below a folder of root's (made if needed), opened checked. */
int stage_root_dir(int parentfd, const char *name);
/* SHARED/JOB, root's, with this job's record (an earlier job's folder of the
 * id removed first): its descriptor, or <0 (the line said why). */
int stage_shared_job(struct stage *st, const char *jobname);
/* Copy the checked checkpoint folder srcfd through areafd's root-only area
 * into dstdir as name, checked, published with one rename (0 when it is
 * there, also when another node's copy won). both: the line names both ends. */
int stage_move(struct stage *st, int srcfd, const char *label, int areafd, int dstdir,
	       const char *name, const char *dst_label, const char *what, int both);

/* ---- sets.c ---- */

/* The set a step's plan restores. */
struct planned {
	char step[32];
	uint64_t sequence;
};

/* 1 when the task folder's checkpoints are members of a step's sets (its
 * committed checkpoints' manifests say so): staged all, pruned by set. */
int sets_task_is_member(const struct stage *st, int taskfd);
/* A step's set records: node (the user's) to shared (root's), and back. */
int sets_records_out(struct stage *st, int stepfd, int s_stepfd, const char *step);
int sets_records_in(struct stage *st, int s_stepfd, int stepfd, const char *step);
/* Prolog: decide the restore plan of every step of the job from the shared
 * folder sjobfd (-1: none, every step fresh), prune each step folder there by
 * set, and publish BB_ROOT/.plan.JOB; *out: the sets restored (malloc'ed). */
int sets_plan(struct stage *st, int sjobfd, struct planned **out, size_t *nout);
/* Prolog, before sets_plan, on a restart with a flush root (fjobfd:
 * FLUSH/JOB, the user's): per step, the newest `keep` sets the runtime
 * flushed whole (task 0's flushed record and every task's flushed part,
 * each manifest naming that set as that task) that are newer than every set
 * complete in the shared root are copied into it (*sjobfd: made, with the
 * job's record, when there was none). Never an incomplete set, never a part
 * of another set. */
void sets_from_flush(struct stage *st, int *sjobfd, int fjobfd);
/* Remove BB_ROOT/.plan.JOB (the run it was for is over). */
void sets_plan_drop(const struct stage *st, uint32_t job);

/* ---- sweep.c ---- */

int sweep(struct stage *st);

#endif
