/*
 * sweep.c - removing the folders of jobs that are over, from the shared root
 * and this node's burst buffer.
 *
 * A folder goes only when Slurm says its job is over (COMPLETED, FAILED,
 * NODE_FAIL, ...), or when Slurm no longer knows the job and the folder is
 * older than the question by SWEEP_MARGIN: a job that started after squeue answered is
 * unknown to that answer, but its folder is younger. Candidates are checked
 * again just before removal: a second answer from squeue, and under the
 * job's lock (the prolog of a job holds it while it stages in) the folder's
 * age once more. A controller that cannot be asked removes nothing.
 */
#include "config.h"

#include "stage.h"
#include "stage_log.h"
#include "spank-plugin/ckpt_dir.h"
#include "common/fsafe.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Older than the snapshot by this much: no job still starting (its prolog,
 * its first task) can own such a folder without Slurm knowing the job. */
#define SWEEP_MARGIN 3600

/* Slurm's final states (squeue %T names a job being requeued PENDING,
 * REQUEUED or COMPLETING, never these): NODE_FAIL is a job that was not
 * requeued when its node died, PREEMPTED one preempted with
 * PreemptMode=CANCEL. */
static const char *const over[] = {"COMPLETED",	    "CANCELLED", "FAILED",
				   "TIMEOUT",	    "NODE_FAIL", "PREEMPTED",
				   "OUT_OF_MEMORY", "DEADLINE",	 "BOOT_FAIL"};

static int is_over(const char *state)
{
	for (size_t i = 0; i < sizeof(over) / sizeof(over[0]); i++)
		if (!strcmp(state, over[i]))
			return 1;
	return 0;
}

/* 1 when the job's folder may go by this answer of squeue. */
static int removable(const struct job_table *states, uint32_t id, time_t asked, time_t mtime,
		     char *why, size_t len)
{
	char buf[64];
	const char *state = job_table_state(states, id, buf, sizeof(buf));

	if (state) {
		snprintf(why, len, "%s", state);
		return is_over(state);
	}
	snprintf(why, len, "no longer known");
	return mtime < asked - SWEEP_MARGIN;
}

static void sweep_root(struct stage *st, int rootfd, const char *root,
		       const struct job_table *states, time_t asked)
{
	struct dirent *e;
	DIR *d;
	int dfd = fcntl(rootfd, F_DUPFD_CLOEXEC, 0);
	uint32_t *ids = NULL;
	size_t n = 0, cap = 0;
	gk_error_t err;
	char *again = NULL;
	struct job_table *again_t = NULL;
	time_t asked_again;

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		char why[64];
		struct stat sb;
		uint32_t id;

		if (gk_job_parse(e->d_name, &id) < 0 ||
		    fstatat(rootfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(sb.st_mode))
			continue;
		if (!removable(states, id, asked, sb.st_mtime, why, sizeof(why)))
			continue;
		if (n == cap) {
			uint32_t *grown = realloc(ids, (cap = cap ? cap * 2 : 64) * sizeof(*ids));

			if (!grown)
				break;
			ids = grown;
		}
		ids[n++] = id;
	}
	closedir(d);
	if (n == 0)
		goto out;
	/* Checked again just before removal. */
	asked_again = time(NULL);
	if (job_states(st, &again, &err) < 0) {
		say("sweep: %s; nothing removed", err.text);
		goto out;
	}
	if (job_table_parse(again, &again_t) < 0) {
		say("sweep: %s; nothing removed", strerror(ENOMEM));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char name[16], why[64];
		struct stat sb;
		int lockfd, ret;

		snprintf(name, sizeof(name), "%u", ids[i]);
		lockfd = area_lock(st->bb_area, ids[i], &err);
		if (lockfd < 0)
			continue;
		if (fstatat(rootfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode) &&
		    removable(again_t, ids[i], asked < asked_again ? asked : asked_again,
			      sb.st_mtime, why, sizeof(why))) {
			ret = area_discard(st,
					   rootfd == st->bbfd	   ? st->bb_area
					   : rootfd == st->flushfd ? st->flush_area
								   : st->shared_area,
					   rootfd, name);
			if (ret == 0 && rootfd == st->bbfd)
				sets_plan_drop(st, ids[i]);
			if (ret == 0)
				say("sweep: job %u is over (%s): removed %s/%s", ids[i], why, root,
				    name);
			else
				warn_line("sweep: %s/%s: %s", root, name, strerror(-ret));
		}
		close(lockfd);
	}
out:
	job_table_free(again_t);
	free(again);
	free(ids);
}

int sweep(struct stage *st)
{
	gk_error_t err;
	char *states = NULL;
	struct job_table *table = NULL;
	time_t asked = time(NULL);

	if (job_states(st, &states, &err) < 0) {
		say("sweep: %s; nothing removed", err.text);
		return 0;
	}
	/* Parsed once: each folder's job is then found in log M steps. */
	if (job_table_parse(states, &table) < 0) {
		say("sweep: %s; nothing removed", strerror(ENOMEM));
		free(states);
		return 0;
	}
	sweep_root(st, st->sharedfd, st->shared_root, table, asked);
	sweep_root(st, st->bbfd, st->bb_root, table, asked);
	if (st->flushfd >= 0)
		sweep_root(st, st->flushfd, st->flush_root, table, asked);
	job_table_free(table);
	free(states);
	return 0;
}
