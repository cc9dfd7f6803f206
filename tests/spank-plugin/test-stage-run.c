/* Unit tests: running the staging program (spank-plugin/stage_run.c). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "spank-plugin/stage_run.h"
#include "tap.h"

struct lines {
	char text[8][128];
	int n;
};

static void collect(void *arg, const char *line)
{
	struct lines *l = arg;

	if (l->n < 8)
		snprintf(l->text[l->n++], sizeof(l->text[0]), "%s", line);
}

int main(void)
{
	struct gk_site site;
	struct lines l = {.n = 0};
	char *argv[GK_STAGE_MAXARGS + 1], buf[4 * PATH_MAX], small[16];
	char *sh[] = {"/bin/sh", "-c", "echo one; echo two >&2; printf three; exit 3", NULL};
	char *missing[] = {"/nonexistent/gpuckpt-stage", NULL};
	char *killed[] = {"/bin/sh", "-c", "kill -TERM $$", NULL};

	plan(20);
	gk_site_defaults(&site);
	strcpy(site.stage, "/usr/libexec/gpuckpt/gpuckpt-stage");
	strcpy(site.bb_root, "/bb");
	strcpy(site.shared_root, "/shared");
	site.keep = 3;

	is_int(gk_stage_argv(&site, "out", 77, 1000, 100, argv, buf, sizeof(buf)), 0, "argv built");
	is_str(argv[0], site.stage, "the script");
	is_str(argv[1], "out", "the verb");
	is_str(argv[3], "77", "--job value");
	is_str(argv[5], "1000", "--uid value");
	is_str(argv[9], "/bb", "--bb-root value");
	is_str(argv[11], "/shared", "--shared-root value");
	is_str(argv[13], "3", "--keep value");
	is_int(gk_stage_argv(&site, "out", 77, 1000, 100, argv, small, sizeof(small)),
	       -ENAMETOOLONG, "too small a buffer reported");

	is_int(gk_run_logged(sh, 0, collect, &l), 3, "exit status returned");
	is_int(l.n, 3, "three lines");
	ok(l.n == 3 && !strcmp(l.text[0], "one") && !strcmp(l.text[1], "two") &&
	       !strcmp(l.text[2], "three"),
	   "stdout, stderr and an unterminated last line, in order");

	l.n = 0;
	is_int(gk_run_logged(missing, 0, collect, &l), 127, "missing script: 127");
	ok(l.n == 1 && strstr(l.text[0], "cannot run /nonexistent/gpuckpt-stage"),
	   "and a line saying so: %s", l.n ? l.text[0] : "(none)");
	l.n = 0;
	is_int(gk_run_logged(killed, 0, collect, &l), 128 + 15, "killed by SIGTERM: 143");
	is_int(l.n, 0, "no output");
	{
		/* It and what it started (the sleep keeps the pipe open) go. */
		char *slow[] = {"/bin/sh", "-c", "echo started; sleep 60 & sleep 60", NULL};

		l.n = 0;
		is_int(gk_run_logged(slow, 1, collect, &l), -ETIME,
		       "still running after its time limit: -ETIME, and it is stopped");
		ok(l.n == 1 && !strcmp(l.text[0], "started"), "what it said before is kept");
	}
	{
		/* A process that left the group (setsid) keeps the pipe open
		 * after the kill: the wait for the end of the output is bounded
		 * too, so a Slurm callback never waits for it (issue 24's review). */
		char *escaped[] = {"/bin/sh", "-c", "setsid sleep 20 & sleep 60", NULL};
		struct timespec t0, t1;
		double took;
		int rc;

		l.n = 0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = gk_run_logged(escaped, 1, collect, &l);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		is_int(rc, -ETIME, "a child of its own session holds the pipe: still -ETIME");
		ok(took < 10, "and it returns within 10 s, not when that child ends (%.1f s)", took);
	}

	return done_testing();
}
