/*
 * main.c - gpuckpt-stage's command line. Root only: it is run by the SPANK
 * plugin from slurmd's prolog and epilog with arguments from plugstack.conf,
 * or by the site's cron for a sweep. Nothing is taken from the environment
 * (the plugin passes slurmd's, part of which comes from the job): squeue is
 * the one configure found, or --squeue on root's own command line.
 */
#include "config.h"

#include "stage.h"
#include "stage_log.h"
#include "common/fsafe.h"
#include "common/testhook.h"
#include "common/settings_env.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

#ifndef GK_SQUEUE
#define GK_SQUEUE "/usr/bin/squeue"
#endif

static const char usage[] =
    "NAME\n"
    "    gpuckpt-stage - move a job's GPU checkpoints between the node's burst buffer\n"
    "    and the shared checkpoint root\n"
    "\n"
    "SYNOPSIS\n"
    "    gpuckpt-stage in|out --job ID --uid UID --gid GID --bb-root DIR\n"
    "                  --shared-root DIR [--flush-root DIR] [--keep N] [--squeue PATH]\n"
    "    gpuckpt-stage sweep --bb-root DIR --shared-root DIR [--flush-root DIR]\n"
    "                  [--squeue PATH]\n"
    "\n"
    "DESCRIPTION\n"
    "    Run as root by the gpuckpt SPANK plugin: 'in' from the job's prolog\n"
    "    copies the newest N committed checkpoints of each of the job's tasks\n"
    "    from the shared root to this node's burst buffer; 'out' from its\n"
    "    epilog copies them back, removes the node's copy once everything is\n"
    "    safe, then sweeps; 'sweep' removes the folders of jobs that are over.\n"
    "    Each line printed goes to slurmd's log. See scheduler-hooks/README.md.\n"
    "\n"
    "    Both roots must be root's and writable by nobody else, on a path of\n"
    "    such folders; a checkpoint holding anything but plain files (a link,\n"
    "    a device, a file with another link elsewhere, another owner's file)\n"
    "    is refused, naming it.\n"
    "\n"
    "OPTIONS\n"
    "    --flush-root DIR  where the runtime copies checkpoints while the job runs\n"
    "                      (the plugin's flush_root): 'in' takes the newest of\n"
    "                      either root, 'out' copies only what is in neither,\n"
    "                      'sweep' removes the folders of jobs that are over\n"
    "    --keep N          checkpoints kept per task (default 2)\n"
    "    --squeue PATH     squeue to ask (default " GK_SQUEUE ")\n"
    "    --test-hook POINT:DIR\n"
    "                      for tests (tests/security/): wait at POINT until\n"
    "                      root makes DIR/POINT.go; DIR must be root's\n"
    "\n"
    "EXIT STATUS\n"
    "    0 done; 1 something was refused or failed (the lines say what);\n"
    "    2 bad usage.\n";

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (!*s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

#define BAD(...)                                                                                   \
	do {                                                                                       \
		printf("error: " __VA_ARGS__);                                                     \
		printf("\n");                                                                      \
		return 2;                                                                          \
	} while (0)

int main(int argc, char **argv)
{
	static struct stage st;
	const char *hook = NULL;
	gk_error_t err;
	int have_job = 0, have_uid = 0, have_gid = 0, ret;
	uint32_t v;

	st.keep = 2;
	st.bbfd = st.sharedfd = st.bb_area = st.shared_area = st.flushfd = st.flush_area = -1;
	snprintf(st.squeue, sizeof(st.squeue), "%s", GK_SQUEUE);
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	st.verb = argv[1];
	if (strcmp(st.verb, "in") && strcmp(st.verb, "out") && strcmp(st.verb, "sweep"))
		BAD("unknown command '%s' (in, out, sweep; --help)", show(st.verb));
	for (int i = 2; i < argc; i += 2) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
			fputs(usage, stdout);
			return 0;
		}
		if (strncmp(opt, "--", 2) || !val)
			BAD("%s: %s", show(opt),
			    strncmp(opt, "--", 2) ? "unexpected argument" : "needs a value");
		if (!strcmp(opt, "--job")) {
			if (parse_u32(val, &st.job) < 0 || st.job == 0)
				BAD("--job '%s' is not a job id", show(val));
			have_job = 1;
		} else if (!strcmp(opt, "--uid")) {
			if (parse_u32(val, &v) < 0 || v == UINT32_MAX)
				BAD("--uid '%s' is not a uid", show(val));
			st.uid = (uid_t)v;
			have_uid = 1;
		} else if (!strcmp(opt, "--gid")) {
			if (parse_u32(val, &v) < 0 || v == UINT32_MAX)
				BAD("--gid '%s' is not a gid", show(val));
			st.gid = (gid_t)v;
			have_gid = 1;
		} else if (!strcmp(opt, "--keep")) {
			if (parse_u32(val, &v) < 0 || v < 1 || v > 1000)
				BAD("--keep '%s' is not a number from 1 to 1000", show(val));
			st.keep = v;
		} else if (!strcmp(opt, "--bb-root")) {
			st.bb_root = val;
		} else if (!strcmp(opt, "--shared-root")) {
			st.shared_root = val;
		} else if (!strcmp(opt, "--flush-root")) {
			st.flush_root = val;
		} else if (!strcmp(opt, "--squeue")) {
			if (val[0] != '/' || strlen(val) >= sizeof(st.squeue))
				BAD("--squeue '%s' is not an absolute path", show(val));
			snprintf(st.squeue, sizeof(st.squeue), "%s", val);
		} else if (!strcmp(opt, "--test-hook")) {
			hook = val;
		} else {
			BAD("unknown argument '%s'", show(opt));
		}
	}
	if (!st.bb_root || !st.shared_root)
		BAD("%s: --bb-root and --shared-root are required", st.verb);
	if (strcmp(st.verb, "sweep") && (!have_job || !have_uid || !have_gid))
		BAD("%s: --job, --uid and --gid are required", st.verb);
	if (geteuid() != 0)
		BAD("must run as root (the gpuckpt SPANK plugin runs it from the prolog and "
		    "epilog)");
	/* Nothing of gpuckpt's is taken from the environment (the prolog's holds
	 * SLURM_* and SPANK_* values the job chose): no munged socket, no log
	 * level, no site file. */
	for (char **e = environ; *e;) {
		char name[256];
		size_t n = strcspn(*e, "=");

		if (!strncmp(*e, GK_ENV_PREFIX, strlen(GK_ENV_PREFIX)) && n < sizeof(name)) {
			memcpy(name, *e, n);
			name[n] = 0;
			unsetenv(name);
			continue; /* the entries after it moved down */
		}
		e++;
	}
	/* slurmd may have left SIGPIPE ignored or SIGCHLD odd; reset what matters. */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	umask(077);
	if (hook && gk_test_hook_arm(hook, &err) < 0)
		BAD("%s", err.text);
	if (gethostname(st.host, sizeof(st.host) - 1) < 0 || !st.host[0])
		snprintf(st.host, sizeof(st.host), "unknown");
	for (char *p = st.host; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
			*p = '_';

	/* Both roots must be root's alone, or nothing is touched. */
	st.bbfd = gk_open_trusted_dir(st.bb_root, "--bb-root", &err);
	if (st.bbfd < 0) {
		error_line(&st, "%s; nothing staged", err.text);
		return 1;
	}
	st.sharedfd = gk_open_trusted_dir(st.shared_root, "--shared-root", &err);
	if (st.sharedfd < 0) {
		error_line(&st, "%s; nothing staged", err.text);
		return 1;
	}
	st.bb_area = area_open(st.bbfd, st.bb_root, &err);
	if (st.bb_area >= 0)
		st.shared_area = area_open(st.sharedfd, st.shared_root, &err);
	if (st.bb_area < 0 || st.shared_area < 0) {
		error_line(&st, "%s; nothing staged", err.text);
		return 1;
	}
	area_clean(st.bb_area, st.host);
	area_clean(st.shared_area, st.host);
	/* The flush root is optional: without it (or when it is not root's
	 * alone) staging goes on with the shared root only. */
	if (st.flush_root) {
		st.flushfd = gk_open_trusted_dir(st.flush_root, "--flush-root", &err);
		if (st.flushfd >= 0)
			st.flush_area = area_open(st.flushfd, st.flush_root, &err);
		if (st.flushfd < 0 || st.flush_area < 0) {
			warn_line("%s; checkpoints flushed while the job ran are not used",
				  err.text);
			if (st.flushfd >= 0)
				close(st.flushfd);
			st.flushfd = -1;
		} else {
			area_clean(st.flush_area, st.host);
		}
	}

	if (!strcmp(st.verb, "in")) {
		ret = stage_in(&st);
	} else if (!strcmp(st.verb, "out")) {
		ret = stage_out(&st);
		/* A sweep runs even when staging failed: it removes only what
		 * belongs to jobs that are over. */
		if (sweep(&st) < 0)
			ret = -1;
	} else {
		ret = sweep(&st);
	}
	return ret < 0 || st.failed ? 1 : 0;
}
