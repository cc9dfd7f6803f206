/*
 * gpuckpt.c - the gpuckpt command: finds the subcommand and hands it the
 * rest of the command line. Each subcommand lives in cmd_<name>.c.
 */
#include "config.h"
#include "cli/cli.h"
#include "image/image.h"
#include "common/log.h"
#include "common/settings_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct gk_cmd *const commands[] = {
    &gk_cmd_inspect,
    &gk_cmd_verify,
    &gk_cmd_list,
    &gk_cmd_prune,
    &gk_cmd_plan,
    &gk_cmd_checkpoint,
    &gk_cmd_report,
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char overview[] =
    "NAME\n"
    "    gpuckpt - GPU checkpoints: inspect, verify, list, prune; checkpoint a\n"
    "    running Slurm job; report what gpuckpt did\n"
    "\n"
    "SYNOPSIS\n"
    "    gpuckpt inspect [--json] DIR\n"
    "    gpuckpt verify [--owner USER|UID] [--require-signature] [--json] DIR...\n"
    "    gpuckpt list [--json] ROOT|STEPDIR\n"
    "    gpuckpt prune --keep N [--dry-run] [--json] ROOT\n"
    "    gpuckpt plan [--owner USER|UID] [--root-copies] JOBDIR\n"
    "    gpuckpt checkpoint [--exit | --requeue] [--full] [--timeout SECONDS] [--json] JOBID\n"
    "    gpuckpt report [--job ID]... [--json] SHARED_ROOT\n"
    "    gpuckpt help [COMMAND]\n"
    "    gpuckpt --help | --version\n"
    "\n"
    "DESCRIPTION\n"
    "    A job run with --gpu-checkpoint=on writes checkpoints of its GPU memory\n"
    "    and registered host state into a checkpoint root ROOT, one directory\n"
    "    per checkpoint: ROOT/ckpt.NNNNNN, with a manifest (manifest.json), a\n"
    "    Munge signature of it (manifest.sig) and data files. A checkpoint is\n"
    "    written under a temporary name and renamed when complete, so a\n"
    "    directory named ckpt.NNNNNN is always whole. gpuckpt looks at them.\n"
    "\n"
    "    The tasks of a step of several tasks checkpoint together: the step\n"
    "    folder STEPDIR (BB/JOB/step.S) holds a root per task, task.T, and a\n"
    "    record set.NNNNNN for each checkpoint set that every task committed;\n"
    "    only such a set is ever restored, in every task.\n"
    "\n"
    "COMMANDS\n"
    "    inspect DIR\n"
    "        Summary of one checkpoint (job, step, task, restart count, label,\n"
    "        who signed it, GPUs, totals), then its allocations and host\n"
    "        regions. The data is not read.\n"
    "    verify DIR...\n"
    "        Everything a restore checks, and every data checksum. Prints\n"
    "        \"DIR: OK (...)\" or names the first problem. --owner USER|UID:\n"
    "        whose checkpoint it must be (default: you; only root may name\n"
    "        another user). --require-signature: refuse unsigned ones.\n"
    "    list ROOT\n"
    "        Committed checkpoints, newest first (sequence, time, label, size,\n"
    "        status), then incomplete ones left by a killed writer.\n"
    "    list STEPDIR, verify STEPDIR\n"
    "        The step's sets, newest first, complete or not (and what is\n"
    "        missing); verify checks every member of every complete set.\n"
    "    prune ROOT --keep N\n"
    "        Keep the newest N committed checkpoints, remove the older ones and\n"
    "        incomplete ones whose writer is gone. --dry-run: only say what\n"
    "        would be removed.\n"
    "    plan JOBDIR\n"
    "        For each step of a job, the set every task restores, or why none\n"
    "        (run by the Slurm plugin's prolog on the shared checkpoint root).\n"
    "    checkpoint JOBID\n"
    "        Checkpoint a running Slurm job of yours now (SIGUSR1 to its steps\n"
    "        through scancel), wait until every task has committed it, and say\n"
    "        where and how large. --exit: then end this run and hold the job\n"
    "        (scontrol release resumes it); --requeue: queue it again at once.\n"
    "    report SHARED_ROOT\n"
    "        For admins (root): per job and in total, checkpoints, restores,\n"
    "        bytes, failures and the GPU time saved by resuming, from the job\n"
    "        records the Slurm plugin keeps in the shared checkpoint root.\n"
    "    help COMMAND, COMMAND --help\n"
    "        The full description of a command.\n"
    "\n"
    "    Every command takes --json to print one JSON object for scripts.\n"
    "\n"
    "ENVIRONMENT\n"
    "    " GK_ENV(LOG_LEVEL) "     error, warn, notice (default), info or debug;\n"
    "                          any other value is refused\n"
    "    " GK_ENV(MUNGE_SOCKET) "  munged's socket, when not the default one\n"
    "\n"
    "EXIT STATUS\n"
    "    0   success; every checkpoint looked at is good\n"
    "    1   a checkpoint is bad, or the operation failed\n"
    "    2   the command line is wrong\n"
    "\n"
    "EXAMPLES\n"
    "    gpuckpt list /bb/1234/task0\n"
    "    gpuckpt inspect /bb/1234/task0/ckpt.000007\n"
    "    gpuckpt verify --owner alice /bb/1234/task0/ckpt.000007\n"
    "    gpuckpt prune --keep 2 /bb/1234/task0\n"
    "    gpuckpt checkpoint 1234\n"
    "    sudo gpuckpt report /shared/gpuckpt\n"
    "\n"
    "SEE ALSO\n"
    "    gpuckpt(1), munge(7)\n";

static const struct gk_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

static int help(int argc, char **argv)
{
	const struct gk_cmd *cmd;

	if (argc < 2) {
		fputs(overview, stdout);
		return GK_EXIT_OK;
	}
	if (argc > 2)
		return cli_usage_error(NULL, "help: one command at a time");
	cmd = find_command(argv[1]);
	if (!cmd)
		return cli_usage_error(NULL, "help: unknown command '%s'", argv[1]);
	return cli_print_help(cmd);
}

int main(int argc, char **argv)
{
	const struct gk_cmd *cmd;
	const char *name, *level;

	/* Read here, not at the first message: a bad value is refused, not ignored. */
	level = gk_getenv(LOG_LEVEL);
	if (level && *level) {
		enum gk_log_level lv;

		if (gk_log_parse_level(level, &lv) < 0)
			return cli_usage_error(NULL,
					       GK_ENV(LOG_LEVEL) ": invalid value '%s' "
								 "(expected error, warn, notice, "
								 "info or debug)",
					       level);
		gk_log_set_level(lv);
	}
	if (argc < 2)
		return cli_usage_error(
		    NULL, "missing a command (inspect, verify, list, prune, plan, checkpoint, report)");
	name = argv[1];
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		fputs(overview, stdout);
		return GK_EXIT_OK;
	}
	if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
		printf("gpuckpt %s (checkpoint format %s version %d)\n", PACKAGE_VERSION,
		       GK_FORMAT_NAME, GK_FORMAT_VERSION);
		return GK_EXIT_OK;
	}
	if (strcmp(name, "help") == 0)
		return help(argc - 1, argv + 1);
	if (name[0] == '-')
		return cli_usage_error(NULL, "unknown option '%s' (a command comes first)", name);
	cmd = find_command(name);
	if (!cmd)
		return cli_usage_error(NULL, "unknown command '%s'", name);
	return cmd->run(argc - 1, argv + 1);
}
