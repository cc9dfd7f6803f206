/*
 * cmd_plan.c - `gpuckpt plan`: the restore plan of a job's steps, for the
 * prolog (runtime/image/setfile.h). Given the job's folder in the shared
 * checkpoint root, it says for each step the set every task restores, or why
 * none: the decision is taken once, from the copies every node sees, so that
 * the tasks of a step restore the same set wherever they land.
 */
#include "config.h"

#include "cli/cli.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "image/stepset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char plan_help[] =
    "NAME\n"
    "    gpuckpt plan - which checkpoint set each step of a job restores\n"
    "\n"
    "SYNOPSIS\n"
    "    gpuckpt plan [--owner USER|UID] [--root-copies] [--require-signature] JOBDIR\n"
    "\n"
    "DESCRIPTION\n"
    "    JOBDIR is a job's folder in a checkpoint root, holding step folders\n"
    "    step.S/task.T/ckpt.NNNNNN and the steps' set records step.S/set.NNNNNN.\n"
    "    For each step folder it chooses the newest set that is complete (its\n"
    "    record exists and every task has its ckpt.N) and whose every member\n"
    "    passes what a restore checks (owner, signature, format, every checksum,\n"
    "    and that the member was written for this set as this task), and prints\n"
    "    the restore plan:\n"
    "        gpuckpt-plan 1\n"
    "        step.0 set sequence=7 id=0123456789abcdef members=4\n"
    "        step.1 fresh REASON      (no set was ever complete)\n"
    "        step.2 bad REASON        (complete sets, none passes the checks)\n"
    "    Each set passed over is named on standard error with the reason. The\n"
    "    Slurm plugin's prolog (gpuckpt-stage in) makes this plan from the shared\n"
    "    root; the plugin then gives every task of a step the same set, or none.\n"
    "    Run as root on the shared root, it shows what the prolog will decide.\n"
    "\n"
    "OPTIONS\n"
    "    --owner USER|UID\n"
    "        Whose checkpoints they must be (default: you; only root may name\n"
    "        another user).\n"
    "    --root-copies\n"
    "        The files are root's copies: they must belong to root, and their\n"
    "        signatures to the owner. (gpuckpt-stage keeps the user's files in\n"
    "        the shared root: without this option, with --owner.)\n"
    "    --require-signature\n"
    "        Refuse members without a valid Munge signature.\n"
    "    -h, --help\n"
    "        Show this text.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   the plan was printed\n"
    "    1   JOBDIR or a step folder cannot be read\n"
    "    2   the command line is wrong\n"
    "\n"
    "EXAMPLES\n"
    "    gpuckpt plan --owner alice /shared/ckpt/1234\n";

enum { OPT_OWNER = 1, OPT_ROOT_COPIES, OPT_REQUIRE_SIGNATURE };

static const struct cli_opt plan_opts[] = {
    {"owner", 0, 1, OPT_OWNER},
    {"root-copies", 0, 0, OPT_ROOT_COPIES},
    {"require-signature", 0, 0, OPT_REQUIRE_SIGNATURE},
    {NULL, 0, 0, 0},
};

struct note_ctx {
	const char *stepdir;
};

static void note(void *arg, const char *line)
{
	const struct note_ctx *c = arg;

	fprintf(stderr, "gpuckpt: plan: %s: %s\n", c->stepdir, line);
}

static int step_name_ok(const char *name)
{
	size_t n = strlen(name);

	return n > GK_STEP_PREFIX_LEN && n < 32 &&
	       strncmp(name, GK_STEP_PREFIX, GK_STEP_PREFIX_LEN) == 0 &&
	       strspn(name + GK_STEP_PREFIX_LEN, "abcdefghijklmnopqrstuvwxyz0123456789") ==
		   n - GK_STEP_PREFIX_LEN;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int plan_run(int argc, char **argv)
{
	struct gk_load_opts lo = {.uid = getuid(), .check_data = 1};
	const char *arg, *jobdir = NULL, *owner_text = NULL;
	gk_error_t err;
	char **steps = NULL;
	size_t nsteps = 0, cap = 0;
	struct cli_args a;
	struct dirent *de;
	int id, status = GK_EXIT_OK, jobfd, fd, stepfd;
	DIR *d;

	cli_args_init(&a, &gk_cmd_plan, argc, argv);
	while ((id = cli_next(&a, plan_opts, &arg)) != CLI_END) {
		switch (id) {
		case CLI_HELP:
			return cli_print_help(&gk_cmd_plan);
		case CLI_ERROR:
			return GK_EXIT_USAGE;
		case CLI_POSITIONAL:
			if (jobdir)
				return cli_usage_error(&gk_cmd_plan, "one job folder at a time");
			jobdir = arg;
			break;
		case OPT_OWNER:
			owner_text = arg;
			if (cli_parse_user(arg, &lo.uid) < 0)
				return cli_usage_error(&gk_cmd_plan, "--owner: no such user '%s'", arg);
			break;
		case OPT_ROOT_COPIES:
			lo.held_by_root = 1;
			break;
		case OPT_REQUIRE_SIGNATURE:
			lo.require_signature = 1;
			break;
		}
	}
	if (!jobdir)
		return cli_usage_error(&gk_cmd_plan, "missing the job folder JOBDIR");
	if (lo.uid != getuid() && geteuid() != 0)
		return cli_usage_error(&gk_cmd_plan,
				       "--owner %s: only root may check another user's checkpoints",
				       owner_text);
	/* The job folder opened once (as root: no link a user made on the
	 * way, one owner from the first folder that is not root's), and every
	 * step folder opened from it, never by a path. */
	jobfd = cli_open_dir(jobdir, 1, &err);
	if (jobfd < 0) {
		gk_error("plan: %s: %s", jobdir, err.text);
		return GK_EXIT_BAD;
	}
	fd = dup(jobfd);
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		gk_error("plan: %s: %s", jobdir, strerror(errno));
		if (fd >= 0)
			close(fd);
		close(jobfd);
		return GK_EXIT_BAD;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!step_name_ok(de->d_name) ||
		    fstatat(jobfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (nsteps == cap) {
			char **g = realloc(steps, (cap = cap ? cap * 2 : 8) * sizeof(*g));

			if (!g)
				goto out_nomem;
			steps = g;
		}
		if (!(steps[nsteps] = strdup(de->d_name)))
			goto out_nomem;
		nsteps++;
	}
	if (nsteps)
		qsort(steps, nsteps, sizeof(*steps), name_cmp);
	printf("%s\n", GK_PLAN_MAGIC);
	for (size_t i = 0; i < nsteps; i++) {
		struct gk_plan_entry e;
		char stepdir[4200], line[GK_SETFILE_MAX];
		struct note_ctx c = {stepdir};

		snprintf(stepdir, sizeof(stepdir), "%s/%s", jobdir, steps[i]);
		stepfd = openat(jobfd, steps[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (stepfd < 0)
			gk_errprintf(&err, "%s: %s", stepdir, strerror(errno));
		if (stepfd < 0 || gk_stepset_plan_at(stepfd, stepdir, &lo, &e, note, &c, &err) < 0) {
			/* Said, not left out: a step without a line would look
			 * like one that never checkpointed. */
			gk_error("plan: %s", err.text);
			status = GK_EXIT_BAD;
			memset(&e, 0, sizeof(e));
			e.kind = GK_PLAN_BAD;
			snprintf(e.reason, sizeof(e.reason), "cannot read the step folder: %.400s",
				 err.text);
		}
		if (stepfd >= 0)
			close(stepfd);
		snprintf(e.step, sizeof(e.step), "%s", steps[i]);
		if (gk_plan_format(&e, line, sizeof(line)) > 0)
			fputs(line, stdout);
	}
	goto out;
out_nomem:
	gk_error("plan: out of memory");
	status = GK_EXIT_BAD;
out:
	closedir(d);
	close(jobfd);
	for (size_t i = 0; i < nsteps; i++)
		free(steps[i]);
	free(steps);
	if (fflush(stdout) != 0)
		status = GK_EXIT_BAD;
	return status;
}

const struct gk_cmd gk_cmd_plan = {
    .name = "plan",
    .summary = "say which checkpoint set each step of a job restores (for the prolog)",
    .help = plan_help,
    .run = plan_run,
};
