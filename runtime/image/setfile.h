/*
 * setfile.h - the two small text files of a step's checkpoint sets.
 *
 * A step of T tasks (srun -n T) checkpoints as a set: at one agreed point every
 * task writes its own ckpt.N (the same N everywhere), each manifest naming the
 * set (image.h: set_id, set_members, set_member). The set is usable only once
 * every task has committed its ckpt.N; task 0 then records that fact in the
 * step's folder, beside the task folders:
 *
 *	<bb>/<job>/step.S/set.000007     the set record: every task committed 7
 *	<bb>/<job>/step.S/task.T/ckpt.000007/
 *
 * It is written to a temporary name, synced and renamed (complete or absent),
 * one line of text so that the Slurm plugin and the staging script read it
 * without a JSON parser:
 *
 *	gpuckpt-set 1 sequence=7 id=0123456789abcdef members=4 step=120 agreement=mpi created=1763942400
 *
 * The restore plan is what the prolog decided for a job from the shared
 * checkpoint root (every task's copy checked): per step, the set to restore,
 * or why none. It is root's, outside every user-writable folder
 * (<bb_root>/.plan.<job>), and read by the plugin as each task starts:
 *
 *	gpuckpt-plan 1
 *	step.0 set sequence=7 id=0123456789abcdef members=4
 *	step.1 fresh no set of this step was ever complete
 *	step.2 bad set 5: task 3: device0.data: checksum mismatch ...
 *
 * "fresh": no complete set exists (a first run, or every set fell short): the
 * step starts from the beginning. "bad": complete sets exist and none passed
 * every task's checks: the job's --gpu-checkpoint-on-bad decides.
 *
 * Nothing here needs more than libc: the plugin compiles this file too.
 */
#ifndef GK_SETFILE_H
#define GK_SETFILE_H

#include "common/error.h"

#include <stddef.h>
#include <stdint.h>

#define GK_SET_PREFIX "set."
#define GK_SET_MAGIC "gpuckpt-set 1"
#define GK_PLAN_MAGIC "gpuckpt-plan 1"
#define GK_AGREEMENT_MAX 16
/* The agreement of the sets a transparent checkpoint cuts through NCCL
 * (interpose/nccl.h), which have no record (stepset.h). */
#define GK_SET_AGREEMENT_NCCL "nccl"
/* The files through which the NCCL ranks of a step agree on their cut
 * (interpose/nccl.c), in the step's folder beside the set records:
 * gpuckpt-nccl.<16 hex digits>.g<generation>.<count|id><round>.r<rank>. A
 * rank removes its own once the communicators are made again, so a rank
 * dumped and ended by the checkpoint leaves them until its restore, on this
 * node, or until the job's burst-buffer folder goes. */
#define GK_NCCL_RENDEZVOUS_PREFIX "gpuckpt-nccl."
#define GK_SETFILE_MAX 4096 /* larger set records and plan lines are refused */
#define GK_PLAN_MAX (1u << 20)

struct gk_set_record {
	uint64_t sequence;              /* N of every member's ckpt.N */
	uint64_t id;                    /* random, the same in every member's manifest */
	uint32_t members;               /* tasks of the step */
	int64_t step;                   /* the application's step label at the checkpoint */
	char agreement[GK_AGREEMENT_MAX]; /* how the tasks agreed: "mpi", "pmix" */
	int64_t created;                /* Unix time */
};

/* "set.000007"; 0, or -ENAMETOOLONG. */
int gk_set_name(uint64_t sequence, char *buf, size_t len);

/* The sequence of a set record's name, in the one spelling written (%06);
 * 0, or -EINVAL for any other name. */
int gk_set_name_parse(const char *name, uint64_t *sequence);

/* 1 when name is one of the NCCL rendezvous files, in the one spelling
 * written; 0 for any other name. */
int gk_nccl_rendezvous_name_is(const char *name);

/* The record's line, with its newline: the length, or -ENAMETOOLONG. */
int gk_set_record_format(const struct gk_set_record *r, char *buf, size_t len);

/* Parse a record (text need not be NUL-terminated). -EINVAL with err set on
 * anything unexpected: magic, a missing or repeated key, a bad number, an
 * agreement that is not [a-z0-9_-]. Unknown keys are refused too. */
int gk_set_record_parse(const char *text, size_t len, struct gk_set_record *r, gk_error_t *err);

enum gk_plan_kind {
	GK_PLAN_SET = 1, /* restore set `sequence` */
	GK_PLAN_FRESH,   /* no complete set: start from the beginning */
	GK_PLAN_BAD,     /* complete sets, none good: --gpu-checkpoint-on-bad */
};

struct gk_plan_entry {
	char step[32]; /* "step.0", as in the folder's name */
	enum gk_plan_kind kind;
	uint64_t sequence, id; /* GK_PLAN_SET */
	uint32_t members;
	char reason[512]; /* GK_PLAN_FRESH, GK_PLAN_BAD: one line for the job's output */
};

/* One plan line, with its newline: the length, or -ENAMETOOLONG. Newlines
 * and control characters in the reason are written as spaces. */
int gk_plan_format(const struct gk_plan_entry *e, char *buf, size_t len);

/* The entry of `step` in a plan (text need not be NUL-terminated): 1 and *e,
 * 0 when the plan has no line for the step, -EINVAL (err set) when the plan is
 * malformed anywhere. */
int gk_plan_find(const char *text, size_t len, const char *step, struct gk_plan_entry *e,
		 gk_error_t *err);

#endif
