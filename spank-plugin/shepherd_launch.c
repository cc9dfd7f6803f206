#define _GNU_SOURCE
#include "config.h"

#include "shepherd_launch.h"
#include "stage_run.h"
#include "common/fsafe.h"
#include "common/jobdir.h"
#include "common/settings_env.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------ probe */

struct reason_lines {
	char *buf;
	size_t len;
};

/* The probe prints one line per thing the node lacks: all of them, joined. */
static void keep_lines(void *arg, const char *line)
{
	struct reason_lines *f = arg;
	size_t used = strlen(f->buf);

	if (line[0] && used < f->len)
		snprintf(f->buf + used, f->len - used, "%s%s", used ? "; " : "", line);
}

int gk_shepherd_probe(const struct gk_site *s, uid_t uid, char *reason, size_t len)
{
	char path[PATH_MAX + 32], line[GK_ERRLEN], uidtext[16];
	char *argv[] = {path, "probe", "--uid", uidtext, NULL, NULL, NULL};
	struct reason_lines f = {line, sizeof(line)};
	int rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/gpuckpt-shepherd", s->shepherd) >=
	    sizeof(path)) {
		snprintf(reason, len, "%s: path too long", s->shepherd);
		return 0;
	}
	if (access(path, X_OK) < 0) {
		if (errno == ENOENT)
			snprintf(reason, len, "gpuckpt-shepherd not installed at %s", path);
		else
			snprintf(reason, len, "%s: %s", path, strerror(errno));
		return 0;
	}
	snprintf(uidtext, sizeof(uidtext), "%u", (unsigned)uid);
	if (s->criu[0]) {
		argv[4] = "--criu";
		argv[5] = (char *)s->criu;
	}
	line[0] = '\0';
	/* The probe asks CRIU its version and loads the driver: seconds. */
	rc = gk_run_logged(argv, 60, keep_lines, &f);
	if (rc == 0)
		return 1;
	if (rc == -ETIME)
		snprintf(reason, len, "%s probe did not answer within 60 s", path);
	else if (rc < 0)
		snprintf(reason, len, "cannot run %s: %s", path, strerror(-rc));
	else if (line[0])
		snprintf(reason, len, "%s", line);
	else
		snprintf(reason, len, "%s probe failed with status %d and said nothing", path, rc);
	return 0;
}

/* ------------------------------------------------------------------ plan */

/*
 * Does the newest checkpoint hold criu/? 1 yes, 0 no, -EPERM when it does but
 * root did not write it (the user can write into ckpt.N, never into a
 * root-owned criu/: one that is not root's was planted, and is refused).
 * Looked at in the task folder the plugin opened (dirfd); the shepherd checks
 * the seal itself, through its own descriptors, before anything is restored.
 */
static int newest_is_transparent(int dirfd, const char *dir, const char *newest, gk_error_t *err)
{
	struct stat st;
	int fd = gk_open_dir_at(dirfd, newest, (uid_t)-1, NULL), ret = 0;

	if (fd < 0)
		return 0;
	if (fstatat(fd, "criu", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		ret = 1;
		if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077)) {
			gk_errprintf(
			    err,
			    "%s/%s/criu: not a root-owned folder of mode 0700 (not written by "
			    "the shepherd); refused",
			    dir, newest);
			ret = -EPERM;
		}
	}
	close(fd);
	return ret;
}

static int put(const struct gk_env *env, const char *name, const char *value, gk_error_t *err)
{
	int rc = env->set(env->ctx, name, value, 1);

	if (rc < 0)
		gk_errprintf(err, "cannot set %s: %s", name, strerror(-rc));
	return rc;
}

static int drop(const struct gk_env *env, const char *name, gk_error_t *err)
{
	int rc = env->unset(env->ctx, name);

	if (rc < 0)
		gk_errprintf(err, "cannot unset %s: %s", name, strerror(-rc));
	return rc;
}

/* GPUCKPT_TASKS=independent: the tasks of the step never talk to each other. */
static int independent(const struct gk_env *env)
{
	char v[16];

	return env->get(env->ctx, GK_ENV(TASKS), v, sizeof(v)) == 1 &&
	       strcmp(v, "independent") == 0;
}

/* GPUCKPT_TASKS=nccl: the tasks are ranks of an NCCL job (docs/nccl.md). */
static int nccl_ranks(const struct gk_env *env)
{
	char v[16];

	return env->get(env->ctx, GK_ENV(TASKS), v, sizeof(v)) == 1 && strcmp(v, "nccl") == 0;
}

/* The step's nodes, from Slurm (SLURM_STEP_NUM_NODES); 0 when unknown. */
static long step_nodes(const struct gk_env *env)
{
	char v[16], *end;
	long n;

	if (env->get(env->ctx, "SLURM_STEP_NUM_NODES", v, sizeof(v)) != 1)
		return 0;
	n = strtol(v, &end, 10);
	return *end || n < 1 ? 0 : n;
}

/*
 * The shepherd's socket: an abstract name, which anyone on the node may bind
 * first. With 128 random bits nobody can guess it before the shepherd binds
 * it (job, step and task are there for people reading /proc/net/unix).
 */
static int name_socket(const struct gk_task_ids *ids, const struct gk_env *env, struct gk_tplan *p,
		       gk_error_t *err)
{
	unsigned char rnd[16];
	char hex[33];

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		gk_errprintf(err, "getrandom: %s", strerror(errno));
		return -EIO;
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(hex + 2 * i, 3, "%02x", rnd[i]);
	snprintf(p->socket, sizeof(p->socket), "gpuckpt.%u.%u.%u.%s", ids->job_id, ids->step_id,
		 ids->task_id, hex);
	return put(env, GK_ENV(SHEPHERD), p->socket, err);
}

/*
 * No shepherd: tell the runtime why. It says so, with this reason, when a
 * program that does not use the API gets a checkpoint signal: the one moment
 * it matters, in the one program it matters for. A line at every job's start
 * would alarm the programs that use the API and say nothing to the others.
 */
static int plan_none(const struct gk_env *env, struct gk_tplan *p, gk_error_t *err)
{
	int rc;

	p->kind = GK_TPLAN_NONE;
	/* One inherited from an enclosing step names a shepherd that is not ours. */
	rc = drop(env, GK_ENV(SHEPHERD), err);
	if (!rc)
		rc = put(env, GK_ENV(NO_TRANSPARENT), p->reason, err);
	return rc;
}

/* A task that transparent mode does not take, for p->reason: an error when
 * the job asked for transparent mode, else no shepherd (auto). */
static int refuse_or_none(const struct gk_env *env, struct gk_tplan *p, gk_error_t *err)
{
	if (p->mode == GK_MODE_TRANSPARENT) {
		gk_errprintf(
		    err, "transparent mode was asked for (" GK_ENV(MODE) "=transparent), but %s",
		    p->reason);
		return -ENOTSUP;
	}
	return plan_none(env, p, err);
}

int gk_shepherd_prepare(const struct gk_site *s, const struct gk_opts *o,
			const struct gk_task_ids *ids, const struct gk_env *env,
			const struct gk_inject_result *r, struct gk_tplan *p, gk_error_t *err)
{
	int shell = ids->step_id == GK_STEP_BATCH || ids->step_id == GK_STEP_INTERACTIVE;
	char value[32], why[GK_ERRLEN];
	int rc, have, can, ckpt_t = 0;

	memset(p, 0, sizeof(*p));
	p->ids = *ids;
	p->keep = s->keep;
	p->restart = r->restart_count;
	snprintf(p->dir, sizeof(p->dir), "%s", r->dir);
	snprintf(p->shepherd, sizeof(p->shepherd), "%s/gpuckpt-shepherd", s->shepherd);
	snprintf(p->criu, sizeof(p->criu), "%s", s->criu);

	have = env->get(env->ctx, GK_ENV(MODE), value, sizeof(value));
	if (have < 0) {
		gk_errprintf(err, "%s: value too long", GK_ENV(MODE));
		return -EINVAL;
	}
	rc = gk_opts_mode(o, have == 1 ? value : NULL, s, &p->mode, err);
	if (rc < 0)
		return rc;
	rc = put(env, GK_ENV(MODE), gk_mode_name(p->mode), err);
	if (rc < 0)
		return rc;
	have = env->get(env->ctx, GK_ENV(ASSIST), value, sizeof(value));
	if (have == 1 && (strcmp(value, "on") == 0 || strcmp(value, "off") == 0))
		strcpy(p->assist, strcmp(value, "on") == 0 ? "on" : "off");
	else if (have != 0) {
		gk_errprintf(err, GK_ENV(ASSIST) ": invalid value '%s' (expected on or off)",
			     have == 1 ? value : "(too long)");
		return -EINVAL;
	}
	/* The job's word on its TCP connections (gpuckpt-shepherd --tcp). */
	have = env->get(env->ctx, GK_ENV(TCP), value, sizeof(value));
	if (have == 1 && (strcmp(value, "refuse") == 0 || strcmp(value, "close") == 0))
		strcpy(p->tcp, value);
	else if (have != 0) {
		gk_errprintf(err, GK_ENV(TCP) ": invalid value '%s' (expected refuse or close)",
			     have == 1 ? value : "(too long)");
		return -EINVAL;
	}

	/* An NCCL rank's restore is refused where the driver cannot map the
	 * other ranks' memory into it again (gk_gpu_shared_move). */
	p->nccl = nccl_ranks(env);

	/* The task's GPUs, for the shepherd (gk_tplan). */
	have = env->get(env->ctx, "CUDA_VISIBLE_DEVICES", p->gpus, sizeof(p->gpus));
	if (have < 0) {
		gk_errprintf(err, "CUDA_VISIBLE_DEVICES: value too long (over %zu bytes)",
			     sizeof(p->gpus) - 1);
		return -EINVAL;
	}
	p->have_gpus = have == 1;
	have = env->get(env->ctx, "CUDA_DEVICE_ORDER", p->gpu_order, sizeof(p->gpu_order));
	if (have < 0) {
		gk_errprintf(err, "CUDA_DEVICE_ORDER: value too long");
		return -EINVAL;
	}
	p->have_gpu_order = have == 1;

	if (p->mode == GK_MODE_APP) {
		snprintf(p->reason, sizeof(p->reason),
			 "the job asked for application mode (" GK_ENV(MODE) "=app)");
		return plan_none(env, p, err);
	}
	if (!shell && r->container[0]) {
		/* CRIU has not been measured on a container's tree (its mounts and
		 * namespaces, a runtime's monitor): refused at the start rather than
		 * found out at preemption; auto means the API's way there. */
		if (p->mode == GK_MODE_TRANSPARENT) {
			gk_errprintf(
			    err,
			    "transparent mode was asked for (" GK_ENV(MODE) "=transparent) but the "
			    "program runs in a %s container, which it does not reach yet: use "
			    "--gpu-checkpoint-mode=app or auto (programs that use the gpuckpt "
			    "API are checkpointed in containers)",
			    r->container);
			return -ENOTSUP;
		}
		snprintf(p->reason, sizeof(p->reason),
			 "the program runs in a %s container, which transparent mode does not "
			 "reach yet: it is checkpointed only if it uses the gpuckpt API",
			 r->container);
		return plan_none(env, p, err);
	}
	/* A step of several tasks: one task's tree alone is not the step, and
	 * without the API its tasks cannot agree on one point to dump at. Only
	 * tasks declared independent are dumped, and restored, each alone; and
	 * the ranks of an NCCL job on one node, which the runtime brings to a
	 * common collective and writes as one set (interpose/nccl.h), restored
	 * only as a complete set (step_restore.c). */
	if (!shell && ids->ntasks > 1 && !independent(env) && nccl_ranks(env) &&
	    step_nodes(env) != 1) {
		snprintf(p->reason, sizeof(p->reason),
			 "the step's NCCL ranks (" GK_ENV(TASKS) "=nccl) run on %s; they meet "
			 "in the node's step folder, so only a step on one node is checkpointed "
			 "transparently",
			 step_nodes(env) ? "several nodes" : "an unknown number of nodes "
							      "(no SLURM_STEP_NUM_NODES)");
		return refuse_or_none(env, p, err);
	}
	if (!shell && ids->ntasks > 1 && !independent(env) && !nccl_ranks(env)) {
		snprintf(p->reason, sizeof(p->reason),
			 "a step of several tasks is not checkpointed transparently: without the "
			 "gpuckpt API its tasks cannot agree on one point, and one task's processes "
			 "alone are not the step (MPI programs: gpuckpt_mpi.h; NCCL jobs such as "
			 "PyTorch DDP on one node: " GK_ENV(TASKS) "=nccl; tasks that never talk "
			 "to each other: " GK_ENV(TASKS) "=independent)");
		return refuse_or_none(env, p, err);
	}
	if (!shell && r->dir_rc == 0 && r->restore) {
		ckpt_t = newest_is_transparent(r->dirfd, r->dir, r->newest, err);
		if (ckpt_t < 0)
			return ckpt_t;
	}
	can = gk_shepherd_probe(s, ids->uid, why, sizeof(why));
	if (shell) {
		if (can)
			snprintf(p->reason, sizeof(p->reason),
				 "a batch script is not checkpointed transparently; start the "
				 "program with srun");
		else
			snprintf(p->reason, sizeof(p->reason), "%s", why);
		return plan_none(env, p, err);
	}
	if (!can && ckpt_t) {
		gk_errprintf(
		    err,
		    "%s/%s was written in transparent mode and this node cannot restore it: %s",
		    r->dir, r->newest, why);
		return -ENOTSUP;
	}
	if (!can && p->mode == GK_MODE_TRANSPARENT) {
		gk_errprintf(
		    err,
		    "transparent mode was asked for (" GK_ENV(MODE) "=transparent) but this node "
		    "cannot do it: %s",
		    why);
		return -ENOTSUP;
	}
	if (!can) {
		snprintf(p->reason, sizeof(p->reason), "%s", why);
		return plan_none(env, p, err);
	}
	if (r->dir_rc < 0) {
		gk_errprintf(err, "transparent mode needs the checkpoint folder: %s",
			     r->dir_err.text);
		return r->dir_rc;
	}

	rc = drop(env, GK_ENV(NO_TRANSPARENT), err);
	if (rc < 0)
		return rc;
	if (ckpt_t) {
		/* The shepherd restores the whole tree; the runtime must not load anything. */
		p->kind = GK_TPLAN_RESTORE;
		snprintf(p->newest, sizeof(p->newest), "%s", r->newest);
		return drop(env, GK_ENV(RESTORE), err);
	}
	p->kind = GK_TPLAN_ATTACH;
	return name_socket(ids, env, p, err);
}

int gk_shepherd_argv(const struct gk_tplan *p, pid_t child, char *argv[], char *buf,
		     size_t buflen)
{
	char num[6][24], step[32];
	const char *items[GK_SHEPHERD_MAXARGS];
	int n = 0;

	if (gk_step_dirname(p->ids.step_id, step, sizeof(step)) < 0)
		return -ENAMETOOLONG;
	snprintf(num[0], sizeof(num[0]), "%ld", (long)child);
	snprintf(num[1], sizeof(num[1]), "%u", (unsigned)p->ids.uid);
	snprintf(num[2], sizeof(num[2]), "%u", (unsigned)p->ids.gid);
	snprintf(num[3], sizeof(num[3]), "%u", p->ids.job_id);
	snprintf(num[4], sizeof(num[4]), "%u", p->ids.task_id);
	snprintf(num[5], sizeof(num[5]), "%u", p->keep);
	items[n++] = p->shepherd;
	if (p->kind == GK_TPLAN_ATTACH) {
		items[n++] = "attach";
		items[n++] = "--child";
		items[n++] = num[0];
		items[n++] = "--go-fd";
		items[n++] = GK_SHEPHERD_GO_FD_STR;
	} else {
		items[n++] = "restore";
	}
	items[n++] = "--dir";
	items[n++] = p->dir;
	items[n++] = "--uid";
	items[n++] = num[1];
	items[n++] = "--gid";
	items[n++] = num[2];
	items[n++] = "--job";
	items[n++] = num[3];
	/* The step as in the folder's name: 0, 1, ... or batch, interactive. */
	items[n++] = "--step";
	items[n++] = step + GK_STEP_PREFIX_LEN;
	items[n++] = "--task";
	items[n++] = num[4];
	items[n++] = "--keep";
	items[n++] = num[5];
	if (p->criu[0]) {
		items[n++] = "--criu";
		items[n++] = p->criu;
	}
	if (p->assist[0]) {
		items[n++] = "--assist";
		items[n++] = p->assist;
	}
	if (p->tcp[0]) {
		items[n++] = "--tcp";
		items[n++] = p->tcp;
	}
	if (p->nccl)
		items[n++] = "--nccl";
	return gk_pack_argv(items, n, argv, buf, buflen);
}

/* ------------------------------------------------------------------ launch */

/*
 * The process that goes back to Slurm keeps one end of a socket pair until
 * task_init: it sends its stdio over it and waits for the word to go on.
 */
static int handoff_fd = -1;
static int handoff_exit; /* RESTORE helper: exit once the stdio is handed over */

/*
 * What the task side sends in task_init: fds 0, 1, 2 and the task's
 * CUDA_VISIBLE_DEVICES as Slurm left it. Slurm binds GPUs to a task
 * (--gpus-per-task, --gpu-bind) only after task_init_privileged, where the
 * plan was made, so the plan holds the job's GPUs ("0,1") where the task sees
 * its own ("1"); the shepherd must see the task's. The bytes: 'S', then 'U'
 * (unset) or 'V' and the value, without its NUL.
 */
static int send_stdio(int sock, const char *gpus)
{
	int fds[3] = {0, 1, 2};
	/* The value and its two marks; without the NUL, which p->gpus needs. */
	char data[2 + sizeof(((struct gk_tplan *)0)->gpus) - 1];
	size_t len = 2;
	union {
		char buf[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {data, 0};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	data[0] = 'S';
	data[1] = gpus ? 'V' : 'U';
	if (gpus) {
		if (strlen(gpus) > sizeof(data) - 2)
			return -ENAMETOOLONG;
		memcpy(data + 2, gpus, strlen(gpus));
		len += strlen(gpus);
	}
	iov.iov_len = len;
	memset(&u, 0, sizeof(u));
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

/* A CUDA_VISIBLE_DEVICES value as Slurm and the driver write one: indices,
 * UUIDs (GPU-..., MIG-...) and their separators. It goes into the
 * environment of a process that runs as root. */
static int gpu_list_ok(const char *v)
{
	for (; *v; v++)
		if (!((*v >= '0' && *v <= '9') || (*v >= 'a' && *v <= 'z') ||
		      (*v >= 'A' && *v <= 'Z') || *v == ',' || *v == '-' || *v == '/'))
			return 0;
	return 1;
}

/* Receive three fds, and the task's GPUs into p (send_stdio). -EPIPE when
 * the other side went away without sending; -EBADMSG when the fds came but
 * the GPU list is not one. */
static int recv_stdio(int sock, int fds[3], struct gk_tplan *p)
{
	/* One byte short of 2 + sizeof(p->gpus): the value and its NUL fit
	 * there whatever the other side sent (a longer message is MSG_TRUNC). */
	char data[2 + sizeof(p->gpus) - 1];
	union {
		char buf[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {data, sizeof(data)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;
	int got = 0;
	ssize_t n;

	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (n == 0)
		return -EPIPE;
	for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(3 * sizeof(int))) {
			memcpy(fds, CMSG_DATA(c), 3 * sizeof(int));
			got = 1;
		}
	}
	if (!got)
		return -EPROTO;
	if (n < 2 || data[0] != 'S' || (data[1] != 'U' && data[1] != 'V') ||
	    (msg.msg_flags & MSG_TRUNC) || (data[1] == 'U' && n != 2))
		return -EPROTO;
	if (data[1] == 'V') {
		memcpy(p->gpus, data + 2, (size_t)n - 2);
		p->gpus[n - 2] = '\0';
		if (strlen(p->gpus) != (size_t)n - 2 || !gpu_list_ok(p->gpus))
			return -EBADMSG; /* the fds came: the caller can say so */
	} else {
		p->gpus[0] = '\0';
	}
	p->have_gpus = data[1] == 'V';
	return 0;
}

/* The task's stdio on 0, 1, 2, nothing else open but `go` (attach: moved to
 * GK_SHEPHERD_GO_FD, kept across the exec; -1: none) - no descriptor of
 * slurmstepd's reaches the shepherd or CRIU's images -, signals as a fresh
 * process has them: slurmstepd's task child still blocks its signals here
 * (they are unblocked after task_init_privileged) and a mask survives exec. */
static int become_clean(const int fds[3], int go)
{
	sigset_t none;
	int keep = -1;

	/* Out of the way of the stdio's numbers first. */
	if (go >= 0 && (keep = fcntl(go, F_DUPFD_CLOEXEC, GK_SHEPHERD_GO_FD + 1)) < 0)
		return -errno;
	for (int i = 0; i < 3; i++) {
		if (fds[i] != i)
			dup2(fds[i], i);
	}
	if (keep >= 0 && dup2(keep, GK_SHEPHERD_GO_FD) < 0)
		return -errno;
	close_range(keep >= 0 ? GK_SHEPHERD_GO_FD + 1 : 3, ~0U, 0);
	for (int sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	return 0;
}

/* Move pid into every cgroup this process is in (cgroup v2; v1 hierarchies
 * mounted at /sys/fs/cgroup/<controllers>). slurmstepd put only the task's
 * own process into the step's cgroups, after the fork: its children were
 * left in slurmstepd's. */
/* 1 when `line` (a line of /proc/self/cgroup) is also in /proc/PID/cgroup. */
static int shares_cgroup(pid_t pid, const char *line)
{
	char path[64], other[PATH_MAX];
	FILE *f;
	int same = 0;

	snprintf(path, sizeof(path), "/proc/%ld/cgroup", (long)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!same && fgets(other, sizeof(other), f))
		same = strcmp(other, line) == 0;
	fclose(f);
	return same;
}

static int join_my_cgroups(pid_t pid, gk_error_t *err)
{
	char line[PATH_MAX], path[2 * PATH_MAX];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int rc = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':'), *rel;
		int fd, v2;

		/* Where the child already is (no cgroup plugin moved this
		 * process after the fork, or it moved both): nothing to do. */
		if (!ctrl || shares_cgroup(pid, line) || !(rel = strchr(ctrl + 1, ':')))
			continue;
		*rel++ = '\0';
		rel[strcspn(rel, "\n")] = '\0';
		ctrl++;
		v2 = ctrl[0] == '\0';
		if (strncmp(ctrl, "name=", 5) == 0)
			ctrl += 5;
		snprintf(path, sizeof(path), "/sys/fs/cgroup%s%s%s/cgroup.procs", v2 ? "" : "/",
			 ctrl, rel);
		fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 && !v2)
			continue;
		if (fd < 0 || dprintf(fd, "%ld\n", (long)pid) < 0) {
			rc = -errno;
			gk_errprintf(err, "cannot move process %ld into %.300s: %s", (long)pid,
				     path, strerror(-rc));
			if (fd >= 0)
				close(fd);
			break;
		}
		close(fd);
	}
	fclose(f);
	return rc;
}

/* Give pid what slurmstepd gave this process after the fork: cgroups and CPUs. */
static int place_like_me(pid_t pid, gk_error_t *err)
{
	cpu_set_t cpus;
	int rc;

	rc = join_my_cgroups(pid, err);
	if (rc < 0)
		return rc;
	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0 &&
	    sched_setaffinity(pid, sizeof(cpus), &cpus) < 0) {
		rc = -errno;
		gk_errprintf(err, "cannot set the CPUs of process %ld: %s", (long)pid,
			     strerror(-rc));
	}
	return rc;
}

static void die_after_fork(const char *what, int e) __attribute__((noreturn));
static void die_after_fork(const char *what, int e)
{
	dprintf(2, "gpuckpt: transparent: %s: %s; the task does not start\n", what, strerror(e));
	_exit(127);
}

/* The task's own process: wait for the stdio, place the program, become the shepherd. */
static void run_shepherd(const struct gk_tplan *plan, pid_t child, int up)
    __attribute__((noreturn));
static void run_shepherd(const struct gk_tplan *plan, pid_t child, int up)
{
	static struct gk_tplan q; /* the plan, with the GPUs the task was given */
	const struct gk_tplan *p = &q;
	gk_error_t err;
	char *argv[GK_SHEPHERD_MAXARGS + 1], buf[3 * PATH_MAX + 512];
	int fds[3], rc, status;
	char go = 'G';

	q = *plan;
	rc = recv_stdio(up, fds, &q);
	if (rc == -EBADMSG || rc == -EPROTO) {
		/* Not what the task side sends: nothing of it is used. */
		if (child > 0)
			kill(child, SIGKILL);
		if (rc == -EBADMSG)
			dprintf(
			    fds[2],
			    "gpuckpt: transparent: the task's CUDA_VISIBLE_DEVICES is not a list "
			    "of GPUs; the task does not start\n");
		_exit(127);
	}
	if (rc < 0) {
		/* The program's side is gone (Slurm ended it before task_init). */
		if (child > 0)
			kill(child, SIGKILL);
		while (child > 0 && waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		_exit(1);
	}
	err.text[0] = '\0';
	rc = p->kind == GK_TPLAN_ATTACH ? place_like_me(child, &err) : 0;
	if (rc < 0) {
		if (child > 0)
			kill(child, SIGKILL);
		dprintf(fds[2], "gpuckpt: transparent: %s; the task does not start\n", err.text);
		_exit(127);
	}
	/*
	 * attach: the shepherd lets the program go (--go-fd), once it has
	 * checked that the program is its child. Let go from here, a program that
	 * ended at once could be reaped before that check by whatever runs in
	 * this process until the shepherd's own code does (a site's wrapper
	 * script: dash reaps every child it has), and the task then ended with
	 * the shepherd's 2, not the program's status (issue 29).
	 */
	if (p->kind == GK_TPLAN_RESTORE) {
		if (write(up, &go, 1) != 1) {
			dprintf(fds[2], "gpuckpt: transparent: cannot let the program start: %s\n",
				strerror(errno));
			_exit(127);
		}
		/* The helper exits at once; the shepherd must not find it among its children. */
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		child = 0;
	}
	/* Last: it closes every descriptor but the task's stdio, and `up`
	 * for attach, as GK_SHEPHERD_GO_FD. */
	rc = become_clean(fds, p->kind == GK_TPLAN_ATTACH ? up : -1);
	if (rc < 0)
		die_after_fork("the shepherd's descriptors", -rc);
	/* slurmstepd's own environment is what an exec here passes on; the
	 * shepherd needs the socket the program was told about, and to know
	 * that Slurm signals the program itself. */
	snprintf(buf, sizeof(buf), "%u", (unsigned)p->ids.job_id);
	if ((p->kind == GK_TPLAN_ATTACH && setenv(GK_ENV(SHEPHERD), p->socket, 1) < 0) ||
	    setenv("SLURM_JOB_ID", buf, 1) < 0)
		die_after_fork("setenv", errno);
	/* The run of the job its events belong to: the plugin requeues a
	 * preempted job on Slurm before 24.05 only when a checkpoint of this
	 * run is in the record (requeue_preempted), and a restored program's
	 * own environment still says the run it was first started in. */
	snprintf(buf, sizeof(buf), "%u", p->restart);
	rc = p->restart ? setenv("SLURM_RESTART_COUNT", buf, 1) : unsetenv("SLURM_RESTART_COUNT");
	if (rc < 0)
		die_after_fork("setenv", errno);
	/* The GPUs the task sees, as the task sees them (gk_tplan). */
	if ((p->have_gpus ? setenv("CUDA_VISIBLE_DEVICES", p->gpus, 1)
			  : unsetenv("CUDA_VISIBLE_DEVICES")) < 0 ||
	    (p->have_gpu_order ? setenv("CUDA_DEVICE_ORDER", p->gpu_order, 1)
			       : unsetenv("CUDA_DEVICE_ORDER")) < 0)
		die_after_fork("setenv", errno);
	if (gk_shepherd_argv(p, child, argv, buf, sizeof(buf)) < 0)
		die_after_fork("shepherd arguments", ENAMETOOLONG);
	execv(argv[0], argv);
	die_after_fork(argv[0], errno);
}

int gk_shepherd_launch(const struct gk_tplan *p, gk_error_t *err)
{
	int up[2] = {-1, -1}, rc;
	pid_t child;

	if (p->kind != GK_TPLAN_ATTACH && p->kind != GK_TPLAN_RESTORE)
		return 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, up) < 0) {
		rc = -errno;
		gk_errprintf(err, "transparent: socket pair: %s", strerror(-rc));
		goto out_close;
	}
	/* No PID namespace: the CUDA driver fails in one without a /proc of its
	 * own (runtime/shepherd/README.md). The child becomes the program. */
	child = fork();
	if (child < 0) {
		rc = -errno;
		gk_errprintf(err, "transparent: fork: %s", strerror(-rc));
		goto out_close;
	}
	if (child > 0) {
		close(up[1]);
		run_shepherd(p, child, up[0]);
	}
	close(up[0]);
	handoff_fd = up[1];
	handoff_exit = p->kind == GK_TPLAN_RESTORE;
	return 0;

out_close:
	for (int i = 0; i < 2; i++)
		if (up[i] >= 0)
			close(up[i]);
	return rc;
}

int gk_shepherd_task_pending(void)
{
	return handoff_fd >= 0;
}

int gk_shepherd_task_start(const char *gpus, gk_error_t *err)
{
	char go;
	ssize_t n;
	int rc;

	if (handoff_fd < 0)
		return 0;
	rc = send_stdio(handoff_fd, gpus);
	if (rc == 0) {
		while ((n = read(handoff_fd, &go, 1)) < 0 && errno == EINTR)
			;
		if (n != 1)
			rc = -EPIPE;
	}
	close(handoff_fd);
	handoff_fd = -1;
	if (handoff_exit)
		_exit(rc < 0 ? 1 : 0);
	if (rc < 0)
		gk_errprintf(err, "transparent: the shepherd's side did not take the task: %s",
			     strerror(-rc));
	return rc;
}
