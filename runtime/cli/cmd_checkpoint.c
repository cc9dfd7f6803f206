/*
 * cmd_checkpoint.c - `gpuckpt checkpoint JOBID`: checkpoint a running job
 * now, through Slurm, with the user's own permissions, and wait until the
 * checkpoint is committed.
 *
 * How it knows: the checkpoints are on the burst buffers of the job's nodes,
 * which the login node does not see. So the tool looks there itself, as a
 * step of the job (`srun --overlap --jobid`, one task per node, running
 * `gpuckpt checkpoint --on-node`, node_probe.c): before signalling, which
 * tasks run the runtime now and what each has committed; then again every
 * two seconds until every one of those tasks has committed a newer ckpt.N,
 * reported a failure, or ended. Slurm decides who may do this: srun and
 * scancel refuse another user's job; the tool says so first, plainly.
 *
 * Run by root (issue 24, hole 5), the tool trusts only Slurm: the job's user
 * (and group) come from `scontrol show job`, its steps from `squeue -s`, and
 * bb_root from plugstack.conf (PlugStackConfig of `scontrol show config`, a
 * file only root can change) or --bb-root; the probe then runs as the job's
 * user with those (--uid, --bb-root, --steps), so nothing on the nodes runs
 * as root and nothing is taken from what other users' processes say. What
 * the probes passed over is named ("ignored").
 *
 * --exit and --requeue then end this run of the job with `scontrol
 * requeuehold` or `scontrol requeue`: every task gets SIGTERM, takes one
 * more checkpoint and ends, and the job goes back to the queue (held, or to
 * run again at once) keeping its checkpoints, which a job that ended would
 * lose (the epilog removes those of finished jobs).
 */
#include "config.h"
#include "common/settings_env.h"
#include "cli/cli.h"
#include "common/fsafe.h"
#include "common/log.h"
#include "cli/node_probe.h"
#include "cli/slurm_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char checkpoint_help[] =
    "NAME\n"
    "    gpuckpt checkpoint - checkpoint a running Slurm job now\n"
    "\n"
    "SYNOPSIS\n"
    "    gpuckpt checkpoint [--exit | --requeue] [--full] [--timeout SECONDS]\n"
    "                       [--signal NAME] [--bb-root DIR] [--json] JOBID\n"
    "\n"
    "DESCRIPTION\n"
    "    Asks every task of a running job that runs with gpuckpt\n"
    "    (sbatch --gpu-checkpoint=on) for a checkpoint, waits until each has\n"
    "    committed it, and says where each task's checkpoint is and how large.\n"
    "    The program goes on running (the runtime's default for SIGUSR1).\n"
    "\n"
    "    It goes through Slurm with your own permissions: the signal is sent\n"
    "    with scancel --signal, and the checkpoints, which are on each node's\n"
    "    burst buffer, are looked at by a short step of the job on each of its\n"
    "    nodes (srun --overlap --jobid=JOBID). Only your own jobs can be\n"
    "    checkpointed (root: any job).\n"
    "\n"
    "    Run by root, it trusts only Slurm: the job's user and steps come\n"
    "    from scontrol and squeue, the burst buffer from plugstack.conf's\n"
    "    bb_root= (or --bb-root), and the nodes are looked at as the job's\n"
    "    user. A folder not owned by the job's user, or a process that is not\n"
    "    the job's user's, is ignored and named (\"ignored\").\n"
    "\n"
    "    The signal goes to the job's steps (the programs started with srun)\n"
    "    that run gpuckpt, not to the batch script: most shells end on\n"
    "    SIGUSR1. A program started by the batch script itself is reached\n"
    "    only with --full, and then the script must ignore the signal\n"
    "    (trap '' USR1), or it ends and with it the job.\n"
    "\n"
    "    A checkpoint is taken at the program's next checkpoint point\n"
    "    (gpuckpt_point), so it may take as long as one of its iterations.\n"
    "\n"
    "OPTIONS\n"
    "    --exit\n"
    "        Once the checkpoint is committed, end this run of the job and\n"
    "        hold it (scontrol requeuehold): each task gets SIGTERM, takes one\n"
    "        more checkpoint, and ends; the job waits in the queue, held, with\n"
    "        its checkpoints. `scontrol release JOBID` runs it again from the\n"
    "        newest one; `scancel JOBID` ends it for good, and its checkpoints\n"
    "        are then removed. The job must be requeueable (Requeue=1).\n"
    "    --requeue\n"
    "        The same, but the job is queued to run again at once (scontrol\n"
    "        requeue), possibly on other nodes. With either, a refusal by\n"
    "        Slurm while the job still runs is asked again, up to four times.\n"
    "    --full\n"
    "        Signal the batch script and its children too (scancel --full),\n"
    "        for programs started by the batch script without srun.\n"
    "    --timeout SECONDS\n"
    "        How long to wait for the checkpoint (default 600). Past it, the\n"
    "        tasks that have not committed are named and the exit status is 1\n"
    "        (with --exit or --requeue the job is then left running).\n"
    "    --signal NAME\n"
    "        The signal to send (default USR1). It must be one the job's\n"
    "        runtime checkpoints on and continues after (" GK_ENV(SIGNALS) ",\n"
    "        default TERM:exit,USR1:continue).\n"
    "    --bb-root DIR\n"
    "        Where the burst buffer is on the nodes (plugstack.conf's\n"
    "        bb_root=). By default it is found from your job's processes;\n"
    "        for root, from plugstack.conf (scontrol show config).\n"
    "    --json\n"
    "        Print one JSON object: {\"job\", \"signal\", \"committed\",\n"
    "        \"seconds\", \"tasks\": [{\"node\", \"step\", \"task\", \"status\"\n"
    "        (committed, failed, refused, ended, timeout), \"checkpoint\",\n"
    "        \"bytes\", \"reason\"}], \"bytes\", \"ended\" (null, \"held\",\n"
    "        \"requeued\"), \"ignored\": [{\"node\", \"what\"}], \"error\"}.\n"
    "    -h, --help\n"
    "        Show this text.\n"
    "\n"
    "EXIT STATUS\n"
    "    0   every task committed its checkpoint (and, with --exit or\n"
    "        --requeue, the job's run was ended)\n"
    "    1   not committed, with the reason: the job is not running, is not\n"
    "        yours, does not run with gpuckpt, a task failed or refused to\n"
    "        checkpoint, ended first, or the timeout passed\n"
    "    2   the command line is wrong\n"
    "\n"
    "EXAMPLES\n"
    "    gpuckpt checkpoint 1234\n"
    "    gpuckpt checkpoint --exit 1234 && echo \"held; scontrol release 1234 resumes it\"\n"
    "    gpuckpt checkpoint --json 1234 | jq -r '.tasks[].checkpoint'\n";

enum {
	OPT_EXIT = 1,
	OPT_REQUEUE,
	OPT_FULL,
	OPT_TIMEOUT,
	OPT_SIGNAL,
	OPT_BB_ROOT,
	OPT_JSON,
	OPT_ON_NODE,
	OPT_UID,
	OPT_STEPS
};

static const struct cli_opt checkpoint_opts[] = {
    {"exit", 0, 0, OPT_EXIT},
    {"requeue", 0, 0, OPT_REQUEUE},
    {"full", 0, 0, OPT_FULL},
    {"timeout", 't', 1, OPT_TIMEOUT},
    {"signal", 's', 1, OPT_SIGNAL},
    {"bb-root", 0, 1, OPT_BB_ROOT},
    {"json", 0, 0, OPT_JSON},
    {"on-node", 0, 0, OPT_ON_NODE},
    /* The probe's, from a root-run `gpuckpt checkpoint` (node_probe.h). */
    {"uid", 0, 1, OPT_UID},
    {"steps", 0, 1, OPT_STEPS},
    {NULL, 0, 0, 0},
};

#define POLL_SECONDS 2
/* A step of the probe must start quickly; Slurm may be busy, though. */
#define PROBE_TIMEOUT 60

struct opts {
	const char *job;
	int end; /* 0, OPT_EXIT, OPT_REQUEUE */
	int full;
	unsigned timeout;
	char signal[16];
	const char *bb_root;
	int json;
	/* The probe's (--on-node): */
	uid_t uid; /* (uid_t)-1: not given */
	const char *steps;
	/* Root's, from Slurm (root_context): */
	char site_bb_root[PATH_MAX];
	char slurm_steps[1024];
};

/* One task as a node's probe saw it. */
struct ptask {
	char node[64];
	char step[16];
	unsigned task;
	char dir[PATH_MAX];
	int live, ok, failed, refused;
	long long newest;
	long long newest_bytes;
	int have_fail;
	char fail_result[16];
	int fail_errno;
	/* After the wait: */
	const char *status;
	char reason[256];
};

/* What a probe passed over, with its node. */
struct ignored {
	char node[64];
	char what[PATH_MAX + 256];
};

struct snapshot {
	struct ptask *t;
	size_t n;
	unsigned nodes, nodes_with_dir;
	struct ignored *ign;
	size_t nign;
	/* The nodes whose answer was read. */
	char (*answered)[64];
};

static void snapshot_free(struct snapshot *s)
{
	free(s->t);
	free(s->ign);
	free(s->answered);
	memset(s, 0, sizeof(*s));
}

static int answered(const struct snapshot *s, const char *node)
{
	for (unsigned i = 0; i < s->nodes; i++)
		if (!strcmp(s->answered[i], node))
			return 1;
	return 0;
}

static int job_id_ok(const char *s)
{
	/* 1234, or an array element 1234_5 (Slurm names the job it means). */
	size_t n = strspn(s, "0123456789");

	if (n == 0 || n > 10)
		return 0;
	if (s[n] == '\0')
		return 1;
	return s[n] == '_' && strspn(s + n + 1, "0123456789") == strlen(s + n + 1) && s[n + 1];
}

static const char *jstr(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
		   ? json_object_get_string(v)
		   : NULL;
}

static long long jint(json_object *o, const char *key, long long def)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_int)
		   ? (long long)json_object_get_int64(v)
		   : def;
}

/* One node's line ("N: {...}" with srun --label). */
static int parse_node_line(const char *line, struct snapshot *s)
{
	const char *brace = strchr(line, '{');
	json_object *top, *tasks, *v;
	const char *node;

	if (!brace)
		return -EINVAL;
	top = json_tokener_parse(brace);
	if (!top)
		return -EINVAL;
	node = jstr(top, "node");
	if (!node || !json_object_object_get_ex(top, "tasks", &tasks) ||
	    !json_object_is_type(tasks, json_type_array)) {
		json_object_put(top);
		return -EINVAL;
	}
	{
		char(*grown)[64] = realloc(s->answered, (s->nodes + 1) * sizeof(*s->answered));

		if (!grown) {
			json_object_put(top);
			return -ENOMEM;
		}
		s->answered = grown;
		snprintf(grown[s->nodes], sizeof(grown[s->nodes]), "%s", node);
	}
	s->nodes++;
	if (json_object_object_get_ex(top, "job_dir", &v) && v)
		s->nodes_with_dir++;
	if (json_object_object_get_ex(top, "ignored", &v) && json_object_is_type(v, json_type_array))
		for (size_t i = 0; i < json_object_array_length(v) && s->nign < 256; i++) {
			json_object *x = json_object_array_get_idx(v, i);
			struct ignored *grown;

			if (!json_object_is_type(x, json_type_string))
				continue;
			grown = realloc(s->ign, (s->nign + 1) * sizeof(*s->ign));
			if (!grown)
				break;
			s->ign = grown;
			snprintf(s->ign[s->nign].node, sizeof(s->ign[s->nign].node), "%s", node);
			snprintf(s->ign[s->nign].what, sizeof(s->ign[s->nign].what), "%s",
				 json_object_get_string(x));
			s->nign++;
		}
	for (size_t i = 0; i < json_object_array_length(tasks); i++) {
		json_object *o = json_object_array_get_idx(tasks, i), *f;
		struct ptask *t, *grown;
		const char *step = jstr(o, "step"), *dir = jstr(o, "dir");

		if (!step || !dir)
			continue;
		grown = realloc(s->t, (s->n + 1) * sizeof(*s->t));
		if (!grown)
			break;
		s->t = grown;
		t = &s->t[s->n++];
		memset(t, 0, sizeof(*t));
		snprintf(t->node, sizeof(t->node), "%s", node);
		snprintf(t->step, sizeof(t->step), "%s", step);
		snprintf(t->dir, sizeof(t->dir), "%s", dir);
		t->task = (unsigned)jint(o, "task", 0);
		t->live = (int)jint(o, "live", 0);
		t->ok = (int)jint(o, "ok", 0);
		t->failed = (int)jint(o, "failed", 0);
		t->refused = (int)jint(o, "refused", 0);
		t->newest = jint(o, "newest", -1);
		t->newest_bytes = jint(o, "newest_bytes", 0);
		if (json_object_object_get_ex(o, "last_failure", &f) && f) {
			t->have_fail = 1;
			snprintf(t->fail_result, sizeof(t->fail_result), "%s",
				 jstr(f, "result") ? jstr(f, "result") : "failed");
			t->fail_errno = (int)jint(f, "errno", 0);
		}
	}
	json_object_put(top);
	return 0;
}

/*
 * A node's answer, put back together. srun passes a task's output on in
 * pieces of at most 1024 bytes and, with --label, prints each piece as a
 * line of its own behind the task's label ("0: "): a probe's one line of
 * JSON longer than that (a node holding many task folders: a restarted
 * MPI job has every rank's there) comes out as several labelled lines,
 * which Slurm 24.11 interleaves with other tasks' lines as they arrive
 * (issue 29: the tool read none of the pieces and took that node's tasks
 * for ended). Each probe prints one line, with no newline inside (JSON):
 * everything a label carries, joined in order, is that line.
 */
struct answer {
	unsigned label;
	char *text;
	size_t len, cap;
};

/* "  12: rest" -> 12 and rest; -1 for a line without a label. */
static int split_label(const char *line, unsigned *label, const char **rest)
{
	const char *p = line;
	unsigned long v = 0;
	int digits = 0;

	while (*p == ' ')
		p++;
	for (; *p >= '0' && *p <= '9' && digits < 9; p++, digits++)
		v = v * 10 + (unsigned long)(*p - '0');
	if (!digits || *p != ':')
		return -1;
	p++;
	if (*p == ' ')
		p++;
	*label = (unsigned)v;
	*rest = p;
	return 0;
}

static int answers_add(struct answer **list, size_t *n, unsigned label, const char *piece)
{
	struct answer *a = NULL, *grown;
	size_t k = strlen(piece);
	char *text;

	for (size_t i = 0; i < *n && !a; i++)
		if ((*list)[i].label == label)
			a = &(*list)[i];
	if (!a) {
		grown = realloc(*list, (*n + 1) * sizeof(**list));
		if (!grown)
			return -ENOMEM;
		*list = grown;
		a = &grown[(*n)++];
		a->label = label;
		a->text = NULL;
		a->len = a->cap = 0;
	}
	/* Doubling: srun's output is at most OUT_MAX, in 1 KiB pieces. */
	if (a->len + k + 1 > a->cap) {
		size_t cap = a->cap ? a->cap : 4096;

		while (cap < a->len + k + 1)
			cap *= 2;
		text = realloc(a->text, cap);
		if (!text)
			return -ENOMEM;
		a->text = text;
		a->cap = cap;
	}
	memcpy(a->text + a->len, piece, k + 1);
	a->len += k;
	return 0;
}

/* Every node's line in out (srun --label's output), parsed into s. */
static int parse_answers(char *out, struct snapshot *s)
{
	struct answer *list = NULL;
	size_t n = 0;
	int ret = 0;

	for (char *line = out, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		const char *rest;
		unsigned label;

		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (split_label(line, &label, &rest) == 0 && ret == 0)
			ret = answers_add(&list, &n, label, rest);
	}
	for (size_t i = 0; i < n; i++) {
		if (ret == 0)
			parse_node_line(list[i].text, s);
		free(list[i].text);
	}
	free(list);
	return ret;
}

/* Each node of the job, as a step of it: what its probe says. */
static int probe(const struct opts *o, const struct job_info *j, struct snapshot *s,
		 gk_error_t *err)
{
	char self[PATH_MAX], jobarg[48], nodes[32], tasks[32], uid[32];
	char *env[] = {GK_ENV(CHECKPOINT) "=off", NULL};
	char *argv[24];
	int root = getuid() == 0;
	struct cmd_result r;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int k = 0;

	memset(s, 0, sizeof(*s));
	if (n <= 0) {
		gk_errprintf(err, "cannot find this program (/proc/self/exe)");
		return -ENOENT;
	}
	self[n] = '\0';
	snprintf(jobarg, sizeof(jobarg), "--jobid=%s", j->id);
	snprintf(nodes, sizeof(nodes), "--nodes=%u", j->nnodes ? j->nnodes : 1);
	snprintf(tasks, sizeof(tasks), "--ntasks=%u", j->nnodes ? j->nnodes : 1);
	argv[k++] = "srun";
	argv[k++] = jobarg;
	/* Beside the job's own steps, on all its resources, one task per node. */
	argv[k++] = "--overlap";
	argv[k++] = nodes;
	argv[k++] = tasks;
	argv[k++] = "--ntasks-per-node=1";
	argv[k++] = "--label";
	argv[k++] = "--quiet";
	argv[k++] = "--job-name=gpuckpt-checkpoint";
	argv[k++] = self;
	argv[k++] = "checkpoint";
	argv[k++] = "--on-node";
	if (root) {
		/* Slurm's word (root_context), for a probe run as the job's user. */
		snprintf(uid, sizeof(uid), "%u", (unsigned)j->uid);
		argv[k++] = "--uid";
		argv[k++] = uid;
		argv[k++] = "--bb-root";
		argv[k++] = (char *)o->site_bb_root;
		argv[k++] = "--steps";
		argv[k++] = (char *)o->slurm_steps;
	} else if (o->bb_root) {
		argv[k++] = "--bb-root";
		argv[k++] = (char *)o->bb_root;
	}
	argv[k++] = (char *)j->id;
	argv[k] = NULL;
	/* Root looks as the job's user: Slurm lets the job's user's step in,
	 * and nothing on the nodes runs as root. */
	if (cmd_run_as(argv, env, PROBE_TIMEOUT, root ? j->uid : getuid(),
		       root ? j->gid : getgid(), root ? j->user : NULL, &r) < 0) {
		gk_errprintf(err, "cannot run srun: %s", strerror(-r.status));
		cmd_result_free(&r);
		return -ENOENT;
	}
	if (r.out && parse_answers(r.out, s) < 0) {
		gk_errprintf(err, "looking at the job's nodes: %s", strerror(ENOMEM));
		cmd_result_free(&r);
		snapshot_free(s);
		return -ENOMEM;
	}
	if (r.status != 0 || s->nodes == 0) {
		char last[256];

		cmd_last_line(r.err, last, sizeof(last));
		gk_errprintf(err, "looking at the job's nodes (srun --overlap) failed: %s",
			     last[0] ? last : "no answer from its nodes");
		cmd_result_free(&r);
		snapshot_free(s);
		return -EIO;
	}
	cmd_result_free(&r);
	return 0;
}

static int get_job(const char *id, struct job_info *j, gk_error_t *err)
{
	char *argv[] = {"scontrol", "show", "job", "-o", (char *)id, NULL};
	struct cmd_result r;
	char last[256];

	if (cmd_run(argv, NULL, 60, &r) < 0) {
		gk_errprintf(err, "cannot run scontrol: %s", strerror(-r.status));
		cmd_result_free(&r);
		return -ENOENT;
	}
	if (r.status != 0 || job_info_parse(r.out, j) < 0) {
		cmd_last_line(r.status ? r.err : r.out, last, sizeof(last));
		if (strstr(last, "Invalid job id"))
			gk_errprintf(err, "job %s: no such job (Slurm does not know it)", id);
		else
			gk_errprintf(err, "job %s: scontrol show job failed: %s", id,
				     last[0] ? last : "no output");
		cmd_result_free(&r);
		return -ENOENT;
	}
	cmd_result_free(&r);
	return 0;
}

/* bb_root from plugstack.conf, as root: the file Slurm names, read only when
 * no one but root can change it (nor the folders on its way). */
static int site_bb_root(char *out, size_t len, gk_error_t *err)
{
	char *argv[] = {"scontrol", "show", "config", NULL};
	char conf[PATH_MAX], dir[PATH_MAX], *slash, *text = NULL;
	struct cmd_result r;
	gk_error_t sub = {""};
	struct stat st;
	int dfd, fd, rc;
	ssize_t n;
	size_t got = 0;

	if (cmd_run(argv, NULL, 60, &r) < 0 || r.status != 0 ||
	    config_field(r.out, "PlugStackConfig", conf, sizeof(conf)) < 0 || conf[0] != '/') {
		gk_errprintf(err, "cannot learn PlugStackConfig from scontrol show config; give "
				  "--bb-root (plugstack.conf's bb_root=)");
		cmd_result_free(&r);
		return -ENOENT;
	}
	cmd_result_free(&r);
	snprintf(dir, sizeof(dir), "%s", conf);
	slash = strrchr(dir, '/');
	*slash = '\0';
	dfd = gk_open_trusted_dir(dir[0] ? dir : "/", "PlugStackConfig", &sub);
	if (dfd < 0) {
		gk_errprintf(err, "%s; give --bb-root", sub.text);
		return dfd;
	}
	fd = openat(dfd, slash + 1, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0 ||
	    (st.st_mode & 022)) {
		gk_errprintf(err, "%s: %s; give --bb-root", conf,
			     fd < 0 ? strerror(errno)
				    : "not a regular file of root's that only root can write");
		if (fd >= 0)
			close(fd);
		return -EPERM;
	}
	text = malloc(1u << 20);
	while (text && got < (1u << 20) - 1 && (n = read(fd, text + got, (1u << 20) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (!text)
		return -ENOMEM;
	text[got] = '\0';
	rc = plugstack_bb_root(text, out, len);
	free(text);
	if (rc == 1) /* the plugin's default (spank-plugin/site_args.h) */
		rc = snprintf(out, len, "%s/lib/gpuckpt/bb", GK_LOCALSTATEDIR) < (int)len ? 0
											: -ENAMETOOLONG;
	if (rc < 0)
		gk_errprintf(err, "%s: no line loads spank_gpuckpt.so with a usable bb_root=; give "
				  "--bb-root",
			     conf);
	return rc < 0 ? rc : 0;
}

/* As root: what Slurm says, where a user's run would look at its own. */
static int root_context(struct opts *o, const struct job_info *j, gk_error_t *err)
{
	char *argv[] = {"squeue", "-h", "-s", "-j", (char *)j->id, "-o", "%i", NULL};
	struct cmd_result r;
	char last[256];

	if (j->gid == (gid_t)-1) {
		gk_errprintf(err, "job %s: scontrol show job names no GroupId", j->id);
		return -EINVAL;
	}
	if (o->bb_root)
		snprintf(o->site_bb_root, sizeof(o->site_bb_root), "%s", o->bb_root);
	else if (site_bb_root(o->site_bb_root, sizeof(o->site_bb_root), err) < 0)
		return -ENOENT;
	if (cmd_run(argv, NULL, 60, &r) < 0 || r.status != 0) {
		cmd_last_line(r.err, last, sizeof(last));
		gk_errprintf(err, "job %s: squeue -s failed: %s", j->id,
			     last[0] ? last : "no reason given");
		cmd_result_free(&r);
		return -EIO;
	}
	if (job_steps_parse(r.out, o->slurm_steps, sizeof(o->slurm_steps)) < 0) {
		gk_errprintf(err, "job %s: too many steps", j->id);
		cmd_result_free(&r);
		return -ENOSPC;
	}
	cmd_result_free(&r);
	return 0;
}

static const struct ptask *find(const struct snapshot *s, const struct ptask *t)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->t[i].node, t->node) && !strcmp(s->t[i].step, t->step) &&
		    s->t[i].task == t->task)
			return &s->t[i];
	return NULL;
}

/* Steps as numbers (batch and the like after them), then tasks. */
static int by_step_task(const void *a, const void *b)
{
	const struct ptask *x = a, *y = b;
	int xn = x->step[0] >= '0' && x->step[0] <= '9',
	    yn = y->step[0] >= '0' && y->step[0] <= '9';
	long long d;

	if (xn != yn)
		return yn - xn;
	d = xn ? atoll(x->step) - atoll(y->step) : strcmp(x->step, y->step);
	if (d)
		return d < 0 ? -1 : 1;
	return (x->task > y->task) - (x->task < y->task);
}

/* The steps to signal: those with a task running the runtime. */
static int pick(struct snapshot *base, const struct opts *o, const char *job, gk_error_t *err)
{
	size_t waited = 0, in_batch = 0;

	if (base->n)
		qsort(base->t, base->n, sizeof(*base->t), by_step_task);
	for (size_t i = 0; i < base->n; i++) {
		struct ptask *t = &base->t[i];

		if (!t->live)
			continue;
		if (!strcmp(t->step, "batch") && !o->full) {
			in_batch++;
			continue;
		}
		t->status = "waiting";
		waited++;
	}
	if (waited)
		return 0;
	if (in_batch)
		gk_errprintf(
		    err,
		    "job %s: its program runs in the batch script itself (step batch), and "
		    "SIGUSR1 to "
		    "the batch step also reaches the script's shell, which it would end with "
		    "the job; start the program with srun, or have the script ignore the "
		    "signal (trap '' USR1) and give --full",
		    job);
	else
		gk_errprintf(err,
			     "job %s runs with --gpu-checkpoint, but no program in it uses the GPU "
			     "under gpuckpt yet: there is nothing to checkpoint",
			     job);
	return -ENOENT;
}

static int signal_steps(const struct job_info *j, const struct snapshot *base, const struct opts *o,
			gk_error_t *err)
{
	char sigarg[32], ids[64][48], *argv[72], last[256];
	struct cmd_result r;
	int k = 0, n = 0;

	snprintf(sigarg, sizeof(sigarg), "--signal=%s", o->signal);
	argv[k++] = "scancel";
	argv[k++] = sigarg;
	if (o->full) {
		argv[k++] = "--full";
		argv[k++] = (char *)j->id;
	} else {
		for (size_t i = 0; i < base->n && n < 64; i++) {
			const struct ptask *t = &base->t[i];
			char id[48];
			int dup = 0;

			if (!t->status)
				continue;
			snprintf(id, sizeof(id), "%s.%s", j->id, t->step);
			for (int x = 0; x < n; x++)
				dup |= !strcmp(ids[x], id);
			if (dup)
				continue;
			snprintf(ids[n], sizeof(ids[n]), "%s", id);
			argv[k++] = ids[n++];
		}
	}
	argv[k] = NULL;
	if (cmd_run(argv, NULL, 60, &r) < 0 || r.status != 0) {
		cmd_last_line(r.err, last, sizeof(last));
		gk_errprintf(err, "scancel --signal=%s failed: %s", o->signal,
			     last[0] ? last : strerror(r.status < 0 ? -r.status : EIO));
		cmd_result_free(&r);
		return -EIO;
	}
	cmd_result_free(&r);
	return 0;
}

/* Compare a task now with before the signal. 1: settled (status set). */
static int settle(struct ptask *t, const struct snapshot *now)
{
	const struct ptask *n = find(now, t);

	/* A node whose answer did not come this time says nothing of its
	 * tasks: ask again. */
	if (!n && !answered(now, t->node))
		return 0;
	if (!n) {
		t->status = "ended";
		snprintf(t->reason, sizeof(t->reason), "the task ended without a checkpoint");
		return 1;
	}
	/* A newer committed ckpt.N is the answer, whatever asked for it. */
	if (n->newest > t->newest) {
		t->status = "committed";
		t->newest = n->newest;
		t->newest_bytes = n->newest_bytes;
		return 1;
	}
	if (n->failed + n->refused > t->failed + t->refused) {
		int refused = n->refused > t->refused;

		t->status = refused ? "refused" : "failed";
		if (refused)
			snprintf(t->reason, sizeof(t->reason),
				 "the checkpoint was refused: the process holds something gpuckpt "
				 "cannot checkpoint (the job's output names it)");
		else
			snprintf(t->reason, sizeof(t->reason), "the checkpoint failed: %s",
				 n->fail_errno ? strerror(n->fail_errno) : "see the job's output");
		return 1;
	}
	if (!n->live) {
		t->status = "ended";
		snprintf(t->reason, sizeof(t->reason),
			 "the program ended without committing a checkpoint");
		return 1;
	}
	return 0;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* How many times `scontrol requeue` (requeuehold) is asked while the job
 * still runs after a refusal. Slurm 24.11 answered "Unexpected message
 * received for job N" 10 times in 71 calls of an hour-long soak on a loaded
 * machine and left the job running, its step ended (docs/soak.md): the
 * committed checkpoint then reached no other node before the job moved. */
#define END_RUN_TRIES 4

/* Ends this run of the job (--exit, --requeue) and waits until it has. */
static int end_run(const struct job_info *j, const struct opts *o, gk_error_t *err)
{
	char *argv[] = {"scontrol", o->end == OPT_EXIT ? "requeuehold" : "requeue", (char *)j->id,
			NULL};
	struct cmd_result r;
	struct job_info now;
	char last[256];
	double until = mono() + o->timeout;

	for (int tries = 1;; tries++) {
		int failed = cmd_run(argv, NULL, 60, &r) < 0 || r.status != 0;

		if (!failed) {
			cmd_result_free(&r);
			break;
		}
		cmd_last_line(r.err, last, sizeof(last));
		cmd_result_free(&r);
		/* Asked again only while the job still runs: a job that left
		 * RUNNING was ended (or requeued) all the same, which the wait
		 * below tells. */
		if (get_job(j->id, &now, err) == 0 && strcmp(now.state, "RUNNING") != 0)
			break;
		if (tries == END_RUN_TRIES) {
			gk_errprintf(err, "scontrol %s %s failed %d times, the job still running: %s",
				     argv[1], j->id, tries, last[0] ? last : "no reason given");
			return -EIO;
		}
		gk_warn("checkpoint: scontrol %s %s failed (%s); the job still runs: asking again",
			argv[1], j->id, last[0] ? last : "no reason given");
		sleep(2);
	}
	/* Each task now checkpoints again on SIGTERM and ends; wait for that. */
	while (mono() < until) {
		if (get_job(j->id, &now, err) == 0 && strcmp(now.state, "RUNNING") != 0 &&
		    strcmp(now.state, "COMPLETING") != 0)
			return 0;
		sleep(1);
	}
	gk_errprintf(err, "job %s was asked to end its run, but is still running after %u s", j->id,
		     o->timeout);
	return -ETIMEDOUT;
}

static json_object *ignored_json(const struct snapshot *s)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; s && i < s->nign; i++) {
		json_object *x = json_object_new_object();

		json_object_object_add(x, "node", json_object_new_string(s->ign[i].node));
		json_object_object_add(x, "what", json_object_new_string(s->ign[i].what));
		json_object_array_add(arr, x);
	}
	return arr;
}

static void print_ignored(FILE *f, const struct snapshot *s)
{
	for (size_t i = 0; s && i < s->nign; i++)
		fprintf(f, "  ignored on %s: %s\n", s->ign[i].node, s->ign[i].what);
}

static void print_result(const struct job_info *j, const struct snapshot *base,
			 const struct opts *o, int committed, double secs, const char *ended,
			 const char *error)
{
	long long total = 0;

	for (size_t i = 0; i < base->n; i++)
		if (base->t[i].status && !strcmp(base->t[i].status, "committed"))
			total += base->t[i].newest_bytes;
	if (o->json) {
		json_object *top = json_object_new_object(), *arr = json_object_new_array();

		json_object_object_add(top, "job", json_object_new_string(j ? j->id : o->job));
		json_object_object_add(top, "signal", json_object_new_string(o->signal));
		json_object_object_add(top, "committed", json_object_new_boolean(committed));
		json_object_object_add(top, "seconds", json_object_new_double(secs));
		for (size_t i = 0; base && i < base->n; i++) {
			const struct ptask *t = &base->t[i];
			json_object *x;
			char path[PATH_MAX + 32];
			int ok;

			if (!t->status)
				continue;
			ok = !strcmp(t->status, "committed");
			x = json_object_new_object();
			snprintf(path, sizeof(path), "%s/ckpt.%06lld", t->dir, t->newest);
			json_object_object_add(x, "node", json_object_new_string(t->node));
			json_object_object_add(x, "step", json_object_new_string(t->step));
			json_object_object_add(x, "task", json_object_new_int64(t->task));
			json_object_object_add(x, "status", json_object_new_string(t->status));
			json_object_object_add(x, "checkpoint",
					       ok ? json_object_new_string(path) : NULL);
			json_object_object_add(x, "bytes",
					       ok ? json_object_new_int64(t->newest_bytes) : NULL);
			json_object_object_add(
			    x, "reason", t->reason[0] ? json_object_new_string(t->reason) : NULL);
			json_object_array_add(arr, x);
		}
		json_object_object_add(top, "tasks", arr);
		json_object_object_add(top, "bytes", json_object_new_int64(total));
		json_object_object_add(top, "ended", ended ? json_object_new_string(ended) : NULL);
		json_object_object_add(top, "ignored", ignored_json(base));
		json_object_object_add(top, "error", error ? json_object_new_string(error) : NULL);
		cli_print_json(top);
		return;
	}
	printf("job %s: %s (%.1f s)\n", j->id,
	       committed ? "checkpoint committed" : "checkpoint NOT committed", secs);
	for (size_t i = 0; i < base->n; i++) {
		const struct ptask *t = &base->t[i];
		char size[32];

		if (!t->status)
			continue;
		if (!strcmp(t->status, "committed")) {
			gk_size_format(size, sizeof(size), (uint64_t)t->newest_bytes, GK_SIZE_UNIT);
			printf("  step %s task %u  %s:%s/ckpt.%06lld  %s\n", t->step, t->task,
			       t->node, t->dir, t->newest, size);
		} else {
			printf("  step %s task %u  %s: %s: %s\n", t->step, t->task, t->node,
			       t->status, t->reason);
		}
	}
	if (committed) {
		char size[32];

		gk_size_format(size, sizeof(size), (uint64_t)total, GK_SIZE_UNIT);
		printf("  total %s, on the nodes' burst buffers (copied to the shared root when "
		       "the job's run ends)\n",
		       size);
	}
	if (ended && !strcmp(ended, "held"))
		printf("job %s: this run ended and the job is held; `scontrol release %s` runs it "
		       "again from its newest checkpoint\n",
		       j->id, j->id);
	else if (ended)
		printf("job %s: this run ended; the job is queued to run again from its newest "
		       "checkpoint\n",
		       j->id);
	print_ignored(stdout, base);
	if (error)
		gk_error("checkpoint: %s", error);
}

static int parse_opts(int argc, char **argv, struct opts *o, int *on_node)
{
	struct cli_args a;
	const char *arg;
	char *end;
	int id;

	memset(o, 0, sizeof(*o));
	o->timeout = 600;
	o->uid = (uid_t)-1;
	snprintf(o->signal, sizeof(o->signal), "USR1");
	cli_args_init(&a, &gk_cmd_checkpoint, argc, argv);
	while ((id = cli_next(&a, checkpoint_opts, &arg)) != CLI_END) {
		switch (id) {
		case CLI_HELP:
			return cli_print_help(&gk_cmd_checkpoint) + 100;
		case CLI_ERROR:
			return GK_EXIT_USAGE;
		case CLI_POSITIONAL:
			if (o->job)
				return cli_usage_error(&gk_cmd_checkpoint,
						       "one job at a time ('%s' and '%s')", o->job,
						       arg);
			if (!job_id_ok(arg))
				return cli_usage_error(
				    &gk_cmd_checkpoint,
				    "'%s' is not a job id (such as 1234 or 1234_5)", arg);
			o->job = arg;
			break;
		case OPT_EXIT:
		case OPT_REQUEUE:
			if (o->end && o->end != id)
				return cli_usage_error(&gk_cmd_checkpoint,
						       "--exit and --requeue cannot be combined");
			o->end = id;
			break;
		case OPT_FULL:
			o->full = 1;
			break;
		case OPT_TIMEOUT:
			errno = 0;
			o->timeout = (unsigned)strtoul(arg, &end, 10);
			if (errno || *end || !*arg || *arg < '0' || *arg > '9' || o->timeout == 0 ||
			    o->timeout > 604800)
				return cli_usage_error(&gk_cmd_checkpoint,
						       "--timeout: '%s' is not a number of seconds "
						       "from 1 to 604800",
						       arg);
			break;
		case OPT_SIGNAL: {
			const char *name = strncmp(arg, "SIG", 3) == 0 ? arg + 3 : arg;

			if (strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") != strlen(name) ||
			    !*name || strlen(name) >= sizeof(o->signal))
				return cli_usage_error(&gk_cmd_checkpoint,
						       "--signal: '%s' is not a signal name", arg);
			snprintf(o->signal, sizeof(o->signal), "%s", name);
			break;
		}
		case OPT_BB_ROOT:
			if (arg[0] != '/')
				return cli_usage_error(&gk_cmd_checkpoint,
						       "--bb-root: '%s' is not an absolute path",
						       arg);
			o->bb_root = arg;
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_ON_NODE:
			*on_node = 1;
			break;
		case OPT_UID:
			errno = 0;
			o->uid = (uid_t)strtoul(arg, &end, 10);
			if (errno || *end || *arg < '0' || *arg > '9' || o->uid == (uid_t)-1)
				return cli_usage_error(&gk_cmd_checkpoint,
						       "--uid: '%s' is not a user id", arg);
			break;
		case OPT_STEPS:
			if (strspn(arg, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ,") !=
			    strlen(arg))
				return cli_usage_error(&gk_cmd_checkpoint,
						       "--steps: '%s' is not a list of steps", arg);
			o->steps = arg;
			break;
		}
	}
	if (!o->job)
		return cli_usage_error(&gk_cmd_checkpoint, "missing the job id JOBID");
	if (*on_node && strspn(o->job, "0123456789") != strlen(o->job))
		return cli_usage_error(&gk_cmd_checkpoint, "--on-node: '%s' is not a job id",
				       o->job);
	if (!*on_node && (o->uid != (uid_t)-1 || o->steps))
		return cli_usage_error(&gk_cmd_checkpoint,
				       "--uid and --steps are the probe's (--on-node): Slurm "
				       "names the job's user and steps");
	return -1;
}

static int checkpoint_run(int argc, char **argv)
{
	struct snapshot base = {0}, now;
	struct job_info j;
	struct opts o;
	gk_error_t err = {""}, ended_err;
	const char *ended = NULL;
	double t0, until;
	int on_node = 0, rc, pending = 0, committed = 1;

	rc = parse_opts(argc, argv, &o, &on_node);
	if (rc >= 100)
		return rc - 100;
	if (rc >= 0)
		return rc;
	if (on_node) {
		struct node_probe_args pa = {o.job, o.bb_root, o.uid, o.steps};

		return node_probe(&pa);
	}

	if (get_job(o.job, &j, &err) < 0)
		goto fail;
	if (getuid() != 0 && j.uid != getuid()) {
		char me[64];

		gk_user_name(getuid(), me, sizeof(me));
		gk_errprintf(
		    &err,
		    "job %s belongs to %s, not to you (%s): only a job's owner (or root) can "
		    "checkpoint it",
		    j.id, j.user, me);
		goto fail;
	}
	if (strcmp(j.state, "RUNNING") != 0) {
		gk_errprintf(&err, "job %s is %s: only a running job can be checkpointed", j.id,
			     j.state);
		goto fail;
	}
	if (getuid() == 0 && root_context(&o, &j, &err) < 0)
		goto fail;
	if (o.end && !j.requeue) {
		gk_errprintf(
		    &err,
		    "job %s cannot be requeued (Requeue=0): ending it would end it for good, "
		    "and its checkpoints would be removed with it; submit it with --requeue "
		    "(nothing was done)",
		    j.id);
		goto fail;
	}
	if (probe(&o, &j, &base, &err) < 0)
		goto fail;
	if (!base.nodes_with_dir) {
		gk_errprintf(&err,
			     "job %s does not run with gpuckpt: none of its tasks on %.200s has a "
			     "checkpoint folder (submit it with --gpu-checkpoint=on)",
			     j.id, j.nodes);
		goto fail;
	}
	if (pick(&base, &o, j.id, &err) < 0)
		goto fail;
	t0 = mono();
	until = t0 + o.timeout;
	if (signal_steps(&j, &base, &o, &err) < 0)
		goto fail;
	if (!o.json) {
		size_t n = 0;

		for (size_t i = 0; i < base.n; i++)
			n += base.t[i].status != NULL;
		fprintf(stderr,
			"gpuckpt: job %s: SIG%s sent to %zu task%s; waiting for the checkpoint (at "
			"most %u s)\n",
			j.id, o.signal, n, n == 1 ? "" : "s", o.timeout);
	}
	do {
		sleep(POLL_SECONDS);
		pending = 0;
		if (probe(&o, &j, &now, &err) < 0) {
			struct job_info again;

			/* The job may have ended under us. */
			if (get_job(j.id, &again, &ended_err) == 0 &&
			    strcmp(again.state, "RUNNING") != 0) {
				gk_errprintf(&err,
					     "job %s ended (%s) before its checkpoint "
					     "was committed",
					     j.id, again.state);
				committed = 0;
				break;
			}
			err.text[0] = '\0';
			pending = 1;
			continue;
		}
		for (size_t i = 0; i < base.n; i++) {
			struct ptask *t = &base.t[i];

			if (t->status && !strcmp(t->status, "waiting") && !settle(t, &now))
				pending++;
		}
		snapshot_free(&now);
	} while (pending && mono() < until);
	for (size_t i = 0; i < base.n; i++) {
		struct ptask *t = &base.t[i];

		if (t->status && !strcmp(t->status, "waiting")) {
			t->status = "timeout";
			snprintf(t->reason, sizeof(t->reason),
				 "no checkpoint within %u s (it is taken at the program's next "
				 "checkpoint point)",
				 o.timeout);
		}
		if (t->status && strcmp(t->status, "committed") != 0)
			committed = 0;
	}
	if (committed && o.end) {
		if (end_run(&j, &o, &err) == 0)
			ended = o.end == OPT_EXIT ? "held" : "requeued";
	} else if (!committed && o.end && !err.text[0]) {
		gk_errprintf(&err,
			     "job %s was left running: its checkpoint was not "
			     "committed",
			     j.id);
	}
	print_result(&j, &base, &o, committed, mono() - t0, ended, err.text[0] ? err.text : NULL);
	snapshot_free(&base);
	return committed && (!o.end || ended) ? GK_EXIT_OK : GK_EXIT_BAD;

fail:
	/* Nothing was signalled. */
	if (o.json) {
		json_object *top = json_object_new_object();

		json_object_object_add(top, "job", json_object_new_string(o.job));
		json_object_object_add(top, "signal", json_object_new_string(o.signal));
		json_object_object_add(top, "committed", json_object_new_boolean(0));
		json_object_object_add(top, "tasks", json_object_new_array());
		json_object_object_add(top, "ignored", ignored_json(&base));
		json_object_object_add(top, "error", json_object_new_string(err.text));
		cli_print_json(top);
	} else {
		gk_error("checkpoint: %s", err.text);
		print_ignored(stderr, &base);
	}
	snapshot_free(&base);
	return GK_EXIT_BAD;
}

const struct gk_cmd gk_cmd_checkpoint = {
    .name = "checkpoint",
    .summary = "checkpoint a running Slurm job now and wait until it is committed",
    .help = checkpoint_help,
    .run = checkpoint_run,
};
