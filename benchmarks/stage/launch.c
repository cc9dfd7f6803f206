/*
 * launch.c - stage-launch: run gpuckpt-stage the way the SPANK plugin's
 * prolog and epilog do (spank-plugin/gpuckpt_spank.c, run_stage()), for the
 * staging benchmark (benchmarks/stage/run).
 *
 *	stage-launch in|out JOB UID GID SQUEUE [key=value ...]
 *
 * The key=value arguments are plugstack.conf's (bb_root=, shared_root=,
 * flush_root=, keep=, stage=, stage_timeout=), parsed by the plugin's own
 * gk_site_parse(); the command line is the plugin's own gk_stage_argv() and
 * it runs under the plugin's own gk_run_logged(), with stage_timeout, in a
 * process group of its own that is killed whole on the timeout. One
 * argument is added: --squeue SQUEUE, since without Slurm the compiled-in
 * squeue has no controller to ask (the benchmark gives a stand-in).
 *
 * Prints gpuckpt-stage's lines as slurmd's log would get them when
 * STAGE_LAUNCH_VERBOSE is set, and always one summary line:
 *
 *	stage-launch: VERB job JOB rc RC seconds S start T0 end T1 ckpts N bytes B
 *	              errors E warnings W cpu C
 *
 * (rc: the exit status, or "timeout" when stage_timeout stopped it; T0, T1:
 * CLOCK_MONOTONIC seconds, comparable between launches on one machine; N, B:
 * the checkpoints staged and their bytes, from the program's "staged" lines;
 * C: the processor seconds, user and system, of the program and what it ran.)
 */
#include "config.h"

#include "site_args.h"
#include "stage_run.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

struct tally {
	unsigned ckpts, errors, warnings;
	unsigned long long bytes;
	int verbose;
};

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void line(void *arg, const char *text)
{
	struct tally *t = arg;
	const char *p = strstr(text, "staged ");
	unsigned long long b;

	if (t->verbose)
		printf("  %s\n", text);
	if (!strncmp(text, "error:", 6))
		t->errors++;
	else if (!strncmp(text, "warning:", 8))
		t->warnings++;
	/* "staged out step.0/task.1/ckpt.000002: 2104223 bytes in 0.02 s to ..." */
	if (p == text && (p = strstr(text, ": ")) && sscanf(p + 2, "%llu bytes", &b) == 1) {
		t->ckpts++;
		t->bytes += b;
	}
}

static int parse_id(const char *s, unsigned long max, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || end == s || *end || *out > max ? -EINVAL : 0;
}

int main(int argc, char **argv)
{
	struct gk_site site;
	struct tally t = {0};
	gk_error_t err;
	char *args[GK_STAGE_MAXARGS + 3];
	char buf[4 * 4096 + 512];
	unsigned long job, uid, gid;
	struct rusage ru;
	double t0, t1, cpu = 0;
	int rc, n;

	if (argc < 6 || (strcmp(argv[1], "in") && strcmp(argv[1], "out")) ||
	    parse_id(argv[2], UINT32_MAX, &job) < 0 ||
	    parse_id(argv[3], UINT32_MAX - 1, &uid) < 0 ||
	    parse_id(argv[4], UINT32_MAX - 1, &gid) < 0 || argv[5][0] != '/') {
		fprintf(stderr, "usage: stage-launch in|out JOB UID GID SQUEUE [key=value ...]\n");
		return 2;
	}
	if (gk_site_parse(&site, argc - 6, argv + 6, &err) < 0) {
		fprintf(stderr, "stage-launch: %s\n", err.text);
		return 2;
	}
	if (!site.stage[0] || !site.shared_root[0]) {
		fprintf(stderr, "stage-launch: stage= and shared_root= are needed\n");
		return 2;
	}
	if (gk_stage_argv(&site, argv[1], (uint32_t)job, (uid_t)uid, (gid_t)gid, args, buf,
			  sizeof(buf)) < 0) {
		fprintf(stderr, "stage-launch: arguments too long\n");
		return 2;
	}
	for (n = 0; args[n]; n++)
		;
	args[n++] = "--squeue";
	args[n++] = argv[5];
	args[n] = NULL;
	t.verbose = getenv("STAGE_LAUNCH_VERBOSE") != NULL;
	t0 = mono();
	rc = gk_run_logged(args, site.stage_timeout, line, &t);
	t1 = mono();
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0)
		cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
		      (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	if (rc == -ETIME)
		printf("stage-launch: %s job %lu rc timeout", argv[1], job);
	else
		printf("stage-launch: %s job %lu rc %d", argv[1], job, rc);
	printf(" seconds %.4f start %.4f end %.4f ckpts %u bytes %llu errors %u warnings %u cpu "
	       "%.3f\n",
	       t1 - t0, t0, t1, t.ckpts, t.bytes, t.errors, t.warnings, cpu);
	return rc == 0 ? 0 : 1;
}
