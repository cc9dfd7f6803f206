/*
 * stepset.h - a step's checkpoint sets, read from the step's folder:
 *
 *	STEPDIR/task.0/ckpt.000007/ ... STEPDIR/task.3/ckpt.000007/
 *	STEPDIR/set.000007            every task committed 7 (setfile.h)
 *
 * Set N is complete when its record exists and every task 0..members-1 has a
 * committed ckpt.N; it is good when, besides, every member passes the checks a
 * restore makes (owner, signature, format, checksums) and names the set (its
 * manifest's set id, task count and index agree with the record). A restart
 * uses the newest good set, in every task, or none.
 *
 * Used by the runtime (task 0 writes the record), the gpuckpt tool (list,
 * verify, plan) and the prolog's staging (through `gpuckpt plan`): given the
 * task folders of a step, which N is complete and good everywhere.
 */
#ifndef GK_STEPSET_H
#define GK_STEPSET_H

#include "common/error.h"

#include "image/image.h"
#include "image/setfile.h"

#include <stddef.h>
#include <stdint.h>

struct gk_stepset {
	uint64_t sequence;
	int has_record;
	struct gk_set_record record;
	uint32_t members; /* the record's task count; without a record, the step's task folders */
	uint32_t present; /* tasks 0..members-1 holding a committed ckpt.N */
	int complete;     /* a record, and every member's ckpt.N */
	int verdict;      /* gk_stepset_check: 1 every member good, -1 not; 0 not checked */
	char why[GK_ERRLEN]; /* not complete: what is missing; bad: which task, and what */
};

/*
 * Every set number of the step folder (from a record, or a ckpt.N in any task
 * folder), newest first, in *sets (malloc'ed; free() it). *ntasks: the task
 * folders found (task.0 .. task.K: K + 1, counting gaps). -ENOENT when stepdir
 * does not exist; links are never followed.
 */
int gk_stepset_list(const char *stepdir, struct gk_stepset **sets, size_t *n, uint32_t *ntasks,
		    gk_error_t *err);
/* The same on the open step folder stepfd (stepdir names it in messages):
 * every task folder is opened from it, never by a path (root's gpuckpt). */
int gk_stepset_list_at(int stepfd, const char *stepdir, struct gk_stepset **sets, size_t *n,
		       uint32_t *ntasks, gk_error_t *err);

/* Check every member of a complete set with opts (check_data: every
 * checksum) and set s->verdict and s->why. Returns s->verdict. */
int gk_stepset_check(const char *stepdir, struct gk_stepset *s, const struct gk_load_opts *opts);
/* The same from stepfd: each member task.T/ckpt.N opened without following
 * a link, an increment's bases looked up in task.T's descriptor. */
int gk_stepset_check_at(int stepfd, const char *stepdir, struct gk_stepset *s,
			const struct gk_load_opts *opts);

/* A line about each set passed over (newer than the one chosen, or none
 * chosen), for the caller's log. */
typedef void (*gk_stepset_note_fn)(void *arg, const char *line);

/*
 * The restore plan of a step folder (setfile.h): the newest good set, or
 * why none (GK_PLAN_FRESH: none complete; GK_PLAN_BAD: complete ones, none
 * good). e->step is left to the caller. 0, or a negative errno with err set
 * when the folder cannot be read.
 */
int gk_stepset_plan(const char *stepdir, const struct gk_load_opts *opts, struct gk_plan_entry *e,
		    gk_stepset_note_fn note, void *arg, gk_error_t *err);
int gk_stepset_plan_at(int stepfd, const char *stepdir, const struct gk_load_opts *opts,
		       struct gk_plan_entry *e, gk_stepset_note_fn note, void *arg,
		       gk_error_t *err);

/* Write STEPDIR/set.N: a temporary file, fsync, rename (never over an
 * existing record), fsync of the folder. */
int gk_set_record_write(const char *stepdir, const struct gk_set_record *r, gk_error_t *err);

/* Delete the set records numbered below `below` (their members are pruned). */
int gk_set_records_prune(const char *stepdir, uint64_t below, gk_error_t *err);

/* Read and parse STEPDIR's set.N through dirfd (no link followed, a regular
 * file of at most GK_SETFILE_MAX bytes). -ENOENT when there is none. */
int gk_set_record_read(int dirfd, uint64_t sequence, struct gk_set_record *r, gk_error_t *err);

#endif
