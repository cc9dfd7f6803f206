/*
 * gpuckpt-container-start - the first program of a podman container of a
 * task with --gpu-checkpoint=on (put there by gpuckpt-oci-hook). It asks the
 * container's userland whether the runtime can work there (container_check.h)
 * and says so in the job's output when it cannot, then becomes the
 * container's command. Linked statically: it runs in whatever the image holds.
 *
 *	gpuckpt-container-start --runtime PATH [--refuse MESSAGE] -- COMMAND [ARG...]
 *
 * --refuse: print MESSAGE and exit 1 without running COMMAND (a container the
 * hook knows cannot be checkpointed as asked, such as transparent mode).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "container_check.h"
#include "common/settings_env.h"

/* cur's LD_PRELOAD entries (':' or ' ' separated) but lib, ':'-separated, into out (as long as cur). */
static int gk_preload_strip(const char *cur, const char *lib, char *out)
{
	size_t n = strlen(lib), used = 0;
	const char *p = cur ? cur : "";

	out[0] = '\0';
	while (*p) {
		size_t m;

		p += strspn(p, ": ");
		m = strcspn(p, ": ");
		if (m && !(m == n && strncmp(p, lib, n) == 0)) {
			if (used)
				out[used++] = ':';
			memcpy(out + used, p, m);
			used += m;
			out[used] = '\0';
		}
		p += m;
	}
	return 0;
}

static void usage(void)
{
	fputs("usage: gpuckpt-container-start --runtime PATH [--refuse MESSAGE] -- COMMAND [ARG...]\n",
	      stderr);
	exit(2);
}

/* "job 12 step 0 task 1" as the plugin names a task, from what Slurm put in the environment. */
static void task_name(char *buf, size_t len)
{
	const char *j = getenv("SLURM_JOB_ID"), *s = getenv("SLURM_STEP_ID"),
		   *t = getenv("SLURM_PROCID");

	snprintf(buf, len, "job %s step.%s task %s", j ? j : "?", s ? s : "?", t ? t : "?");
}

int main(int argc, char **argv)
{
	const char *runtime = NULL, *refuse = NULL;
	char reason[1024], who[128];
	int i, rc, loads;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--runtime") == 0 && i + 1 < argc)
			runtime = argv[++i];
		else if (strcmp(argv[i], "--refuse") == 0 && i + 1 < argc)
			refuse = argv[++i];
		else if (strcmp(argv[i], "--") == 0)
			break;
		else
			usage();
	}
	if (i >= argc - 1 || !runtime)
		usage();
	task_name(who, sizeof(who));
	if (refuse) {
		fprintf(stderr, "gpuckpt: %s: %s\n", who, refuse);
		return 1;
	}
	rc = gk_container_check(runtime, gk_getenv(DIR), &loads, reason, sizeof(reason));
	if (rc <= 0 && !loads) {
		/* The loader would stop the command at its start otherwise. */
		char *cur = getenv("LD_PRELOAD"), *rest = malloc(cur ? strlen(cur) + 1 : 1);

		if (rest && gk_preload_strip(cur, runtime, rest) == 0 && rest[0])
			setenv("LD_PRELOAD", rest, 1);
		else
			unsetenv("LD_PRELOAD");
		free(rest);
	}
	if (rc <= 0)
		fprintf(stderr,
			"gpuckpt: %s: this container cannot be checkpointed: %s; it runs without "
			"checkpoints\n",
			who, reason);
	execvp(argv[i + 1], argv + i + 1);
	fprintf(stderr, "gpuckpt-container-start: %s: %s\n", argv[i + 1], strerror(errno));
	return 127;
}
