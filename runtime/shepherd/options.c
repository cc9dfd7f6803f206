/*
 * options.c - the command line of gpuckpt-shepherd. Root runs this on behalf
 * of a job, so every argument is checked before anything happens, and the
 * error names the option and the value.
 */
#include "config.h"

#include "shepherd/shepherd.h"
#include "common/error.h"
#include "common/settings_env.h"

#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

const char gk_shep_usage[] =
    "NAME\n"
    "    gpuckpt-shepherd - checkpoint and restore a task's whole process tree\n"
    "    (transparent mode: CRIU and the CUDA driver's checkpoint API)\n"
    "\n"
    "SYNOPSIS\n"
    "    gpuckpt-shepherd probe [--criu PATH] [--uid UID]\n"
    "    gpuckpt-shepherd run [OPTIONS] -- PROGRAM [ARG...]\n"
    "    gpuckpt-shepherd restore [OPTIONS]\n"
    "    gpuckpt-shepherd attach --child PID [OPTIONS]\n"
    "    gpuckpt-shepherd --help\n"
    "\n"
    "DESCRIPTION\n"
    "    One shepherd per task, started as root by the gpuckpt SPANK plugin (never\n"
    "    setuid). It supervises the task's process tree; on a trigger signal it\n"
    "    has the runtime drain the GPU, locks and checkpoints the CUDA processes\n"
    "    through the driver, dumps the tree with CRIU into a root-owned criu/\n"
    "    folder of the checkpoint, seals it and commits the checkpoint. On restart\n"
    "    it restores the newest transparent checkpoint onto the GPUs it now has.\n"
    "    It exits with the program's status (128+signal after a checkpoint that\n"
    "    ends the program).\n"
    "\n"
    "COMMANDS\n"
    "    probe     print 'ok', or why this node cannot do transparent mode, one\n"
    "              line per reason (exit 0 or 1): CRIU (version 4 or later, root's),\n"
    "              the driver's checkpoint API, and the capabilities CRIU needs\n"
    "              (a root job's: CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE, and\n"
    "              CAP_SYS_PTRACE; another user's, whose CRIU runs as that user:\n"
    "              CAP_CHECKPOINT_RESTORE, CAP_SETUID, CAP_SETGID, and CAP_SETPCAP\n"
    "              where the bounding set is not full), which a container's root\n"
    "              may lack; with --uid, those the job of that user needs. Needs\n"
    "              no root itself\n"
    "    run       run PROGRAM as --uid/--gid and supervise it (what the plugin\n"
    "              does, for use outside Slurm)\n"
    "    restore   restore the newest transparent checkpoint of --dir, supervise it\n"
    "    attach    supervise the tree whose root is --child, a child of this\n"
    "              process (the plugin's way in)\n"
    "\n"
    "OPTIONS\n"
    "    --dir DIR            the task's checkpoint root (absolute; " GK_ENV(DIR) ")\n"
    "    --uid UID            the job's user (number or name); the program runs as\n"
    "                         it and every process dumped must be it\n"
    "    --gid GID            the job's group (number or name)\n"
    "    --criu PATH          CRIU to use (absolute; version 4 or later; default\n"
    "                         /usr/sbin/criu, then /usr/local/sbin/criu)\n"
    "    --assist on|off      let the runtime dump device memory itself (default on)\n"
    "    --tcp refuse|close   a tree with a TCP connection: take no checkpoint\n"
    "                         (refuse, the default), or dump it and restore the\n"
    "                         connection closed (CRIU's --tcp-close), for\n"
    "                         connections the program does not need again, such as\n"
    "                         PyTorch's TCPStore once training runs (" GK_ENV(TCP) ")\n"
    "    --nccl               the tree is one rank of an NCCL job (the plugin\n"
    "                         passes it with " GK_ENV(TASKS) "=nccl): its\n"
    "                         communicators are made again after a restore and\n"
    "                         map the other ranks' GPU memory. A restore that\n"
    "                         the driver cannot carry for that is refused\n"
    "                         (REFUSALS)\n"
    "    --ready-timeout S    seconds to wait for READY from every CUDA process\n"
    "                         (default 10)\n"
    "    --lock-timeout S     seconds the driver may take to lock a process\n"
    "                         (default 10)\n"
    "    --keep N             committed checkpoints to keep (default 2; 0: all)\n"
    "    --job ID --step S --task T\n"
    "                         the Slurm job, step and task (recorded in the seal,\n"
    "                         checked on restore; default: SLURM_JOB_ID,\n"
    "                         SLURM_STEP_ID, SLURM_PROCID)\n"
    "    --signals LIST       trigger signals and what follows the checkpoint\n"
    "                         (default TERM:exit,USR1:continue, as the runtime's)\n"
    "    --child PID          attach: the task's program, a child of this process\n"
    "    --go-fd FD           attach: the program waits for a byte on FD before it\n"
    "                         runs; the shepherd writes it once it has taken the\n"
    "                         program as its child (the plugin passes 3)\n"
    "    --test-hook POINT:DIR\n"
    "                         for tests (tests/security/): wait at POINT until root\n"
    "                         makes DIR/POINT.go; DIR must be root's\n"
    "    -h, --help           this text\n"
    "\n"
    "REFUSALS\n"
    "    No checkpoint is taken, and the reason is logged, when a process of the\n"
    "    tree is not the job's user's (in any of its ids), holds a module's\n"
    "    __managed__ variables or memory shared with another process through\n"
    "    CUDA IPC (its runtime says\n"
    "    so), uses a MIG instance (it holds a MIG capability device open and the\n"
    "    driver says a GPU here is a MIG instance; NVML alone opens those devices\n"
    "    on any machine, which is no refusal), or when an MPS daemon runs on the\n"
    "    node. A restore is refused onto another chip, onto fewer GPUs, and onto a\n"
    "    node with another number of GPUs (the driver pairs every GPU of the node),\n"
    "    and, with --nccl, off a GPU of this node that the rank saw when it saw\n"
    "    only some of the node's GPUs (the ranks swapped onto each other's GPUs,\n"
    "    one GPU each): the driver cannot map the other ranks' memory on that GPU\n"
    "    into it afterwards.\n"
    "\n"
    "ENVIRONMENT\n"
    "    " GK_ENV(SHEPHERD) "     set by the shepherd in the program's environment: the\n"
    "                         abstract socket the runtime reports to\n"
    "    " GK_ENV(LOG_LEVEL) "    error, warn, notice (default), info, debug\n"
    "\n"
    "EXIT STATUS\n"
    "    The program's exit status, 128+N when it ended on signal N (or was\n"
    "    checkpointed on N); 1 for a failure of the shepherd; 2 for bad usage.\n"
    "\n"
    "EXAMPLES\n"
    "    gpuckpt-shepherd probe\n"
    "    gpuckpt-shepherd run --dir /bb/ckpt/job1 --uid alice --gid alice -- ./train\n"
    "    gpuckpt-shepherd restore --dir /bb/ckpt/job1 --uid alice --gid alice\n";

enum {
	OPT_DIR = 256,
	OPT_UID,
	OPT_GID,
	OPT_CRIU,
	OPT_ASSIST,
	OPT_READY,
	OPT_LOCK,
	OPT_KEEP,
	OPT_JOB,
	OPT_STEP,
	OPT_TASK,
	OPT_CHILD,
	OPT_GO_FD,
	OPT_SIGNALS,
	OPT_TEST_HOOK,
	OPT_TCP,
	OPT_NCCL,
};

static const struct option long_opts[] = {
    {"dir", required_argument, NULL, OPT_DIR},
    {"uid", required_argument, NULL, OPT_UID},
    {"gid", required_argument, NULL, OPT_GID},
    {"criu", required_argument, NULL, OPT_CRIU},
    {"assist", required_argument, NULL, OPT_ASSIST},
    {"tcp", required_argument, NULL, OPT_TCP},
    {"nccl", no_argument, NULL, OPT_NCCL},
    {"ready-timeout", required_argument, NULL, OPT_READY},
    {"lock-timeout", required_argument, NULL, OPT_LOCK},
    {"keep", required_argument, NULL, OPT_KEEP},
    {"job", required_argument, NULL, OPT_JOB},
    {"step", required_argument, NULL, OPT_STEP},
    {"task", required_argument, NULL, OPT_TASK},
    {"child", required_argument, NULL, OPT_CHILD},
    {"go-fd", required_argument, NULL, OPT_GO_FD},
    {"signals", required_argument, NULL, OPT_SIGNALS},
    {"test-hook", required_argument, NULL, OPT_TEST_HOOK},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_long(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!*s || !((*s >= '0' && *s <= '9') || *s == '-'))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (!(*s >= '0' && *s <= '9'))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !isfinite(v) || v <= 0 || v > 3600)
		return -EINVAL;
	*out = v;
	return 0;
}

/* Job and step ids go into the seal and log lines: keep them plain. */
static int plain_id(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n >= max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return 0;
	return 1;
}

/*
 * 1 when pid is a child of this process, running or ended. waitid() with
 * WNOWAIT asks the kernel, which knows only its own children (ECHILD for any
 * other process, so --child cannot point the shepherd at someone else's
 * process), and it answers for a child that has ended and is not reaped yet
 * without taking its status: supervise.c collects it. /proc/PID/status (its
 * PPid) was no answer for a program that ended at once: once reaped it has
 * no entry at all (issue 29).
 */
static int is_own_child(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0;
}

#define BAD(...)                                                                                   \
	do {                                                                                       \
		gk_errprintf(err, __VA_ARGS__);                                                    \
		return -EINVAL;                                                                    \
	} while (0)

static int parse_one(int c, const char *arg, struct gk_shep_opts *o, gk_error_t *err)
{
	struct gk_settings st;
	gk_error_t sub;
	long long v;

	switch (c) {
	case OPT_DIR:
		if (arg[0] != '/' || strlen(arg) >= sizeof(o->dir) - 64)
			BAD("--dir '%s': must be an absolute path", arg);
		snprintf(o->dir, sizeof(o->dir), "%s", arg);
		break;
	case OPT_CRIU:
		if (arg[0] != '/' || strlen(arg) >= sizeof(o->criu))
			BAD("--criu '%s': must be an absolute path", arg);
		snprintf(o->criu, sizeof(o->criu), "%s", arg);
		break;
	case OPT_UID: {
		struct passwd *pw = parse_long(arg, 0, UINT32_MAX - 1, &v) == 0 ? getpwuid((uid_t)v)
										: getpwnam(arg);

		if (!pw)
			BAD("--uid '%s': no such user", arg);
		o->uid = pw->pw_uid;
		o->have_uid = 1;
		break;
	}
	case OPT_GID: {
		struct group *gr = parse_long(arg, 0, UINT32_MAX - 1, &v) == 0 ? getgrgid((gid_t)v)
									       : getgrnam(arg);

		if (!gr)
			BAD("--gid '%s': no such group", arg);
		o->gid = gr->gr_gid;
		o->have_gid = 1;
		break;
	}
	case OPT_ASSIST:
		if (strcmp(arg, "on") && strcmp(arg, "off"))
			BAD("--assist '%s': must be on or off", arg);
		o->assist = !strcmp(arg, "on");
		break;
	case OPT_TCP:
		if (strcmp(arg, "refuse") && strcmp(arg, "close"))
			BAD("--tcp '%s': must be refuse or close", arg);
		o->tcp_close = !strcmp(arg, "close");
		break;
	case OPT_NCCL:
		o->nccl = 1;
		break;
	case OPT_READY:
		if (parse_seconds(arg, &o->ready_timeout) < 0)
			BAD("--ready-timeout '%s': must be seconds, more than 0, at most 3600",
			    arg);
		break;
	case OPT_LOCK:
		if (parse_seconds(arg, &o->lock_timeout) < 0)
			BAD("--lock-timeout '%s': must be seconds, more than 0, at most 3600", arg);
		break;
	case OPT_KEEP:
		if (parse_long(arg, 0, 1000, &v) < 0)
			BAD("--keep '%s': must be a whole number from 0 to 1000", arg);
		o->keep = (unsigned)v;
		break;
	case OPT_JOB:
		if (!plain_id(arg, sizeof(o->job)))
			BAD("--job '%s': must be 1 to 31 of [A-Za-z0-9_.-]", arg);
		snprintf(o->job, sizeof(o->job), "%s", arg);
		break;
	case OPT_STEP:
		if (!plain_id(arg, sizeof(o->step)))
			BAD("--step '%s': must be 1 to 31 of [A-Za-z0-9_.-]", arg);
		snprintf(o->step, sizeof(o->step), "%s", arg);
		break;
	case OPT_TASK:
		if (parse_long(arg, 0, INT_MAX, &v) < 0)
			BAD("--task '%s': must be a whole number, 0 or more", arg);
		o->task = (int)v;
		break;
	case OPT_CHILD:
		if (parse_long(arg, 2, INT_MAX, &v) < 0)
			BAD("--child '%s': must be a process id", arg);
		if (!is_own_child((pid_t)v))
			BAD("--child %s: not a child process of this shepherd", arg);
		o->child = (pid_t)v;
		break;
	case OPT_GO_FD:
		/* 0 to 2 are the task's stdio, never the hand-over socket. */
		if (parse_long(arg, 3, INT_MAX, &v) < 0)
			BAD("--go-fd '%s': must be a descriptor number, 3 or more", arg);
		if (fcntl((int)v, F_GETFD) < 0)
			BAD("--go-fd %s: not an open descriptor", arg);
		o->go_fd = (int)v;
		break;
	case OPT_SIGNALS:
		gk_settings_defaults(&st);
		if (gk_settings_parse_signals(&st, arg, &sub) < 0)
			BAD("--signals '%s': %s", arg, sub.text);
		memcpy(o->triggers, st.triggers, sizeof(o->triggers));
		o->ntriggers = st.ntriggers;
		break;
	case OPT_TEST_HOOK:
		if (strlen(arg) >= sizeof(o->test_hook))
			BAD("--test-hook '%s': too long", arg);
		snprintf(o->test_hook, sizeof(o->test_hook), "%s", arg);
		break;
	default:
		BAD("unknown option");
	}
	return 0;
}

static void defaults(struct gk_shep_opts *o)
{
	struct gk_settings st;
	const char *e;

	memset(o, 0, sizeof(*o));
	o->assist = 1;
	o->ready_timeout = 10;
	o->lock_timeout = 10;
	o->keep = 2;
	/* The runtime's own triggers: a signal the runtime does not treat as
	 * one would leave the shepherd waiting for a READY that never comes. */
	gk_settings_defaults(&st);
	memcpy(o->triggers, st.triggers, sizeof(o->triggers));
	o->ntriggers = st.ntriggers;
	/* The task's own ids, when Slurm started us; options override. */
	if ((e = getenv("SLURM_JOB_ID")) && plain_id(e, sizeof(o->job)))
		snprintf(o->job, sizeof(o->job), "%s", e);
	if ((e = getenv("SLURM_STEP_ID")) && plain_id(e, sizeof(o->step)))
		snprintf(o->step, sizeof(o->step), "%s", e);
	if ((e = getenv("SLURM_PROCID"))) {
		long long v;

		if (parse_long(e, 0, INT_MAX, &v) == 0)
			o->task = (int)v;
	}
}

int gk_shep_parse(int argc, char **argv, struct gk_shep_opts *o, gk_error_t *err)
{
	static const char *const names[] = {"probe", "run", "restore", "attach"};
	const char *cmd;
	int c, ret;

	defaults(o);
	if (argc < 2)
		BAD("no command given (probe, run, restore, attach; --help)");
	cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h"))
		return 1;
	for (c = 0; c < 4; c++)
		if (!strcmp(cmd, names[c]))
			break;
	if (c == 4)
		BAD("'%s': unknown command (probe, run, restore, attach; --help)", cmd);
	o->cmd = (enum gk_shep_cmd)c;
	optind = 2;
	opterr = 0;
	/* '+': stop at the first non-option, so that PROGRAM's own options
	 * after "--" are never taken for ours. */
	while ((c = getopt_long(argc, argv, "+:h", long_opts, NULL)) != -1) {
		if (c == 'h')
			return 1;
		if (c == '?')
			BAD("%s: unknown option '%s'", cmd, argv[optind - 1]);
		if (c == ':')
			BAD("%s: option '%s' needs a value", cmd, argv[optind - 1]);
		if (o->cmd == GK_SHEP_PROBE && c != OPT_CRIU && c != OPT_UID)
			BAD("probe: takes only --criu and --uid");
		if (c == OPT_CHILD && o->cmd != GK_SHEP_ATTACH)
			BAD("%s: --child is for attach only", cmd);
		if (c == OPT_GO_FD && o->cmd != GK_SHEP_ATTACH)
			BAD("%s: --go-fd is for attach only", cmd);
		ret = parse_one(c, optarg, o, err);
		if (ret < 0)
			return ret;
	}
	if (o->cmd == GK_SHEP_RUN) {
		if (optind >= argc || strcmp(argv[optind - 1], "--") != 0)
			BAD("run: give the program after '--'");
		o->argv = argv + optind;
	} else if (optind < argc) {
		BAD("%s: unexpected argument '%s'", cmd, argv[optind]);
	}
	if (o->cmd == GK_SHEP_PROBE)
		return 0;
	if (!o->dir[0])
		BAD("%s: --dir is required", cmd);
	if (!o->have_uid || !o->have_gid)
		BAD("%s: --uid and --gid are required", cmd);
	if (o->cmd == GK_SHEP_ATTACH && !o->child)
		BAD("attach: --child is required");
	return 0;
}
