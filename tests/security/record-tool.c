/*
 * record-tool.c - the plugin's record and metrics code (spank-plugin/
 * job_record.c, metrics.c) driven as root the way its Slurm callbacks drive
 * it, without slurmd (record-attacks.sh, metrics-attacks.sh):
 *
 *	record-tool keep|append BB_ROOT SHARED_ROOT JOB UID NODE STEP TASK
 *		what task_exit does for a step's task 0 (gpuckpt_spank.c,
 *		keep()): the task's events collected from BB_ROOT/JOB/step.STEP/
 *		task.TASK (the user's), appended to SHARED_ROOT/records/JOB,
 *		and the whole record read back for the AdminComment ("append":
 *		as for the other tasks, without the read-back). Prints
 *		"collected=N record=N dropped=N read=BYTES", where BYTES is
 *		what the append and read-back read (rchar of /proc/self/io).
 *	record-tool metrics PATH
 *		what the epilog does to the node's metrics file: adds one job.
 *		Prints "metrics ok" or "metrics failed: WHY".
 *	record-tool sweep SHARED_ROOT DAYS
 *		the epilog's sweep of old records. Prints "removed=N".
 */
#include "config.h"

#include "spank-plugin/job_record.h"
#include "spank-plugin/metrics.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Newer than the code of issue 24's audit: absent there. */
extern int gk_record_sweep(const char *shared_root, unsigned days, unsigned max_entries, time_t now,
			   gk_error_t *err) __attribute__((weak));

static unsigned long long rchar(void)
{
	char line[128];
	unsigned long long v = 0;
	FILE *f = fopen("/proc/self/io", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "rchar: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	gk_error_t err;

	if (argc == 9 && (strcmp(argv[1], "keep") == 0 || strcmp(argv[1], "append") == 0)) {
		int back = strcmp(argv[1], "keep") == 0;
		struct gk_job_events ev = {0}, all = {0};
		struct gk_record_where where = {argv[7], (uint32_t)strtoul(argv[8], NULL, 10)};
		uint32_t job = (uint32_t)strtoul(argv[4], NULL, 10);
		unsigned long long before;
		int rc;

		rc = gk_record_collect(argv[2], job, (uid_t)strtoul(argv[5], NULL, 10), argv[6],
				       &where, 1, &ev, &err);
		if (rc < 0) {
			printf("collect failed: %s\n", err.text);
			return 1;
		}
		before = rchar();
		rc = gk_record_append(argv[3], job, &ev, back ? &all : NULL, &err);
		if (rc < 0) {
			printf("append failed: %s\n", err.text);
			return 1;
		}
		printf("collected=%zu record=%zu dropped=%llu read=%llu\n", ev.n, all.n,
		       (unsigned long long)all.dropped, rchar() - before);
		gk_job_events_free(&ev);
		gk_job_events_free(&all);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "metrics") == 0) {
		struct gk_metrics d = {0};

		d.jobs = 1;
		if (gk_metrics_update(argv[2], &d, &err) < 0) {
			printf("metrics failed: %s\n", err.text);
			return 1;
		}
		printf("metrics ok\n");
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "sweep") == 0) {
		int n;

		if (!gk_record_sweep) {
			printf("no sweep in this code\n");
			return 2;
		}
		n = gk_record_sweep(argv[2], (unsigned)strtoul(argv[3], NULL, 10), 100000,
				    time(NULL), &err);
		if (n < 0) {
			printf("sweep failed: %s\n", err.text);
			return 1;
		}
		printf("removed=%d\n", n);
		return 0;
	}
	fprintf(stderr, "usage: record-tool keep BB SHARED JOB UID NODE STEP TASK | metrics PATH | "
			"sweep SHARED DAYS\n");
	return 2;
}
