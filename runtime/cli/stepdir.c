/*
 * stepdir.c - list and verify for a step folder (STEPDIR/task.N/ckpt.*,
 * STEPDIR/set.N): the step's checkpoint sets rather than one task's
 * checkpoints (runtime/image/stepset.h).
 */
#include "config.h"

#include "cli/cli.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "image/stepset.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int cli_is_step_dir_at(int dirfd)
{
	struct dirent *de;
	struct stat st;
	int found = 0, fd;
	DIR *d;

	if (fstat(dirfd, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	fd = dup(dirfd);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	rewinddir(d);
	while (!found && (de = readdir(d))) {
		uint64_t seq;

		found = gk_set_name_parse(de->d_name, &seq) == 0 ||
			(strncmp(de->d_name, GK_TASK_PREFIX, GK_TASK_PREFIX_LEN) == 0 &&
			 de->d_name[GK_TASK_PREFIX_LEN] >= '0' && de->d_name[GK_TASK_PREFIX_LEN] <= '9');
	}
	closedir(d);
	return found;
}

static void when(int64_t t, char *buf, size_t n)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!t || !gmtime_r(&tt, &tm))
		snprintf(buf, n, "-");
	else
		strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *set_status(const struct gk_stepset *s)
{
	if (!s->complete)
		return "incomplete";
	return s->verdict > 0 ? "good" : s->verdict < 0 ? "bad" : "complete";
}

static json_object *set_json(const struct gk_stepset *s)
{
	json_object *o = json_object_new_object();
	char id[24], created[32];

	json_object_object_add(o, "sequence", json_object_new_int64((int64_t)s->sequence));
	json_object_object_add(o, "status", json_object_new_string(set_status(s)));
	json_object_object_add(o, "complete", json_object_new_boolean(s->complete));
	json_object_object_add(o, "tasks", json_object_new_int64(s->members));
	json_object_object_add(o, "tasks_present", json_object_new_int64(s->present));
	json_object_object_add(o, "record", json_object_new_boolean(s->has_record));
	if (s->has_record) {
		snprintf(id, sizeof(id), "%016" PRIx64, s->record.id);
		when(s->record.created, created, sizeof(created));
		json_object_object_add(o, "id", json_object_new_string(id));
		json_object_object_add(o, "step", json_object_new_int64(s->record.step));
		json_object_object_add(o, "agreement",
				       json_object_new_string(s->record.agreement));
		json_object_object_add(o, "created", json_object_new_string(created));
	}
	json_object_object_add(o, "why", s->why[0] ? json_object_new_string(s->why) : NULL);
	return o;
}

int cli_list_step(const char *dir, int stepfd, int json)
{
	struct gk_stepset *sets = NULL;
	gk_error_t err;
	uint32_t ntasks;
	size_t n;

	if (gk_stepset_list_at(stepfd, dir, &sets, &n, &ntasks, &err) < 0) {
		gk_error("list: %s", err.text);
		return GK_EXIT_BAD;
	}
	if (json) {
		json_object *top = json_object_new_object(), *arr = json_object_new_array();

		json_object_object_add(top, "step_dir", json_object_new_string(dir));
		json_object_object_add(top, "task_folders", json_object_new_int64(ntasks));
		for (size_t i = 0; i < n; i++)
			json_object_array_add(arr, set_json(&sets[i]));
		json_object_object_add(top, "sets", arr);
		cli_print_json(top);
	} else {
		printf("%s: a step folder with %" PRIu32 " task folder%s; its checkpoint sets, newest "
		       "first (a set is usable once every task committed it):\n",
		       dir, ntasks, ntasks == 1 ? "" : "s");
		if (n == 0)
			printf("    none\n");
		else
			printf("%-8s %-21s %-10s %-7s %-10s %s\n", "SET", "RECORDED", "STEP", "TASKS",
			       "AGREED", "STATUS");
		for (size_t i = 0; i < n; i++) {
			const struct gk_stepset *s = &sets[i];
			char created[32], step[24], tasks[24];

			when(s->has_record ? s->record.created : 0, created, sizeof(created));
			snprintf(step, sizeof(step), "%" PRId64, s->record.step);
			snprintf(tasks, sizeof(tasks), "%" PRIu32 "/%" PRIu32, s->present, s->members);
			printf("%06" PRIu64 "   %-21s %-10s %-7s %-10s %s%s%s\n", s->sequence, created,
			       s->has_record ? step : "-", tasks,
			       s->has_record ? s->record.agreement : "-",
			       s->complete ? "complete" : "incomplete", s->why[0] ? ": " : "",
			       s->why);
		}
		printf("Each task's checkpoints: gpuckpt list %s/task.N; every member checked: gpuckpt "
		       "verify %s\n",
		       dir, dir);
	}
	free(sets);
	return GK_EXIT_OK;
}

int cli_verify_step(const char *dir, int stepfd, const struct gk_load_opts *lo,
		    json_object *results)
{
	struct gk_stepset *sets = NULL;
	gk_error_t err;
	uint32_t ntasks;
	size_t n;
	int status = GK_EXIT_BAD, seen_complete = 0;

	if (gk_stepset_list_at(stepfd, dir, &sets, &n, &ntasks, &err) < 0) {
		gk_error("verify: %s", err.text);
		if (results) {
			json_object *o = json_object_new_object();

			json_object_object_add(o, "path", json_object_new_string(dir));
			json_object_object_add(o, "ok", json_object_new_boolean(0));
			json_object_object_add(o, "error", json_object_new_string(err.text));
			json_object_array_add(results, o);
		}
		return GK_EXIT_BAD;
	}
	for (size_t i = 0; i < n; i++) {
		struct gk_stepset *s = &sets[i];

		if (s->complete) {
			gk_stepset_check_at(stepfd, dir, s, lo);
			/* The newest complete set is what a restart restores
			 * without falling back: it decides the exit status. */
			if (!seen_complete)
				status = s->verdict > 0 ? GK_EXIT_OK : GK_EXIT_BAD;
			seen_complete = 1;
		}
		if (results) {
			json_object *o = set_json(s);

			json_object_object_add(o, "path", json_object_new_string(dir));
			json_object_object_add(o, "ok", json_object_new_boolean(s->verdict > 0));
			json_object_array_add(results, o);
		} else if (!s->complete) {
			printf("%s: set %" PRIu64 ": not complete, never restored: %s\n", dir,
			       s->sequence, s->why);
		} else if (s->verdict > 0) {
			printf("%s: set %" PRIu64 ": OK (%" PRIu32 " tasks, every member checked, "
			       "step %" PRId64 ", agreed through %s)\n",
			       dir, s->sequence, s->members, s->record.step, s->record.agreement);
		} else {
			gk_error("verify: %s: set %" PRIu64 ": %s", dir, s->sequence, s->why);
		}
	}
	if (!seen_complete && !results)
		gk_error("verify: %s: no complete checkpoint set", dir);
	free(sets);
	return status;
}
