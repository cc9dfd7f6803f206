/*
 * node_probe.c - what this node knows of a job's checkpoints (node_probe.h).
 */
#include "config.h"
#include "common/settings_env.h"
#include "cli/node_probe.h"
#include "cli/cli.h"
#include "common/events.h"
#include "common/fsafe.h"
#include "image/image.h"
#include "common/jobdir.h"
#include "common/log.h"
#include "common/procstat.h"
#include "image/ckptname.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ENVIRON_MAX (256u << 10)
#define MAX_LIVE 64
/* Lines of "ignored" per node: enough to show what is wrong. */
#define MAX_IGNORED 32

struct probe {
	uid_t uid;
	const char *job;
	const char *job_dir;
	const char *steps; /* NULL: every step */
	json_object *tasks;
	json_object *ignored;
};

/* One line of "ignored". Every part of it is the probe's own (paths it was
 * given, numbers, names from the password database), never a string read
 * from a process or a file a user wrote. */
static void ignore(struct probe *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ignore(struct probe *p, const char *fmt, ...)
{
	char line[PATH_MAX + 256];
	va_list ap;

	if (json_object_array_length(p->ignored) >= MAX_IGNORED)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	json_object_array_add(p->ignored, json_object_new_string(line));
}

/* Is step (a step.S's S) one of p->steps ("0,1,batch")? */
static int step_listed(const struct probe *p, const char *step)
{
	size_t n = strlen(step);

	if (!p->steps)
		return 1;
	for (const char *s = p->steps; *s;) {
		size_t k = strcspn(s, ",");

		if (k == n && strncmp(s, step, n) == 0)
			return 1;
		s += k + (s[k] == ',');
	}
	return 0;
}

/* BB_ROOT/JOB from a GPUCKPT_DIR of BB_ROOT/JOB/step.S/task.T. */
static int job_dir_of(const char *gpuckpt_dir, const char *job, char *out, size_t len)
{
	char d[PATH_MAX], step[16], *slash;
	uint32_t task;

	if (gpuckpt_dir[0] != '/' || strlen(gpuckpt_dir) >= sizeof(d))
		return -EINVAL;
	strcpy(d, gpuckpt_dir);
	while (strlen(d) > 1 && d[strlen(d) - 1] == '/')
		d[strlen(d) - 1] = '\0';
	slash = strrchr(d, '/');
	if (!slash || gk_parse_task_dirname(slash + 1, &task) < 0)
		return -EINVAL;
	*slash = '\0';
	slash = strrchr(d, '/');
	if (!slash || gk_parse_step_dirname(slash + 1, step, sizeof(step)) < 0)
		return -EINVAL;
	*slash = '\0';
	slash = strrchr(d, '/');
	if (!slash || strcmp(slash + 1, job) != 0)
		return -EINVAL;
	if ((size_t)snprintf(out, len, "%s", d) >= len)
		return -ENAMETOOLONG;
	return 0;
}

/* The job's folder from the environment of one of its processes here. */
static int find_job_dir(const char *job, char *out, size_t len)
{
	char want[48], path[300];
	DIR *proc = opendir("/proc");
	struct dirent *e;
	char *buf = malloc(ENVIRON_MAX + 1);
	int found = -ENOENT;

	if (!proc || !buf) {
		free(buf);
		if (proc)
			closedir(proc);
		return -ENOMEM;
	}
	snprintf(want, sizeof(want), "SLURM_JOB_ID=%s", job);
	while (found < 0 && (e = readdir(proc))) {
		const char *dir = NULL;
		int is_job = 0, fd;
		size_t n = 0;
		ssize_t k;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/environ", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* someone else's, or gone */
		while (n < ENVIRON_MAX && (k = read(fd, buf + n, ENVIRON_MAX - n)) > 0)
			n += (size_t)k;
		close(fd);
		buf[n] = '\0';
		for (size_t i = 0; i < n; i += strlen(buf + i) + 1) {
			if (strcmp(buf + i, want) == 0)
				is_job = 1;
			else if (strncmp(buf + i, GK_ENV(DIR) "=", sizeof(GK_ENV(DIR))) == 0)
				dir = buf + i + sizeof(GK_ENV(DIR));
		}
		if (is_job && dir && job_dir_of(dir, job, out, len) == 0)
			found = 0;
	}
	closedir(proc);
	free(buf);
	return found;
}

/*
 * As root: processes of other users than the job's that say, in their
 * environment, that they belong to it. Their GPUCKPT_DIR is not looked at
 * (hole 5 of issue 24: it named a folder of the attacker's); they are named
 * so that an admin sees who tried. Root's own (this probe is one) are not.
 */
static void name_claims(struct probe *p)
{
	char want[48], path[300], user[64], owner[64];
	DIR *proc = opendir("/proc");
	struct dirent *e;
	char *buf = malloc(ENVIRON_MAX + 1);

	if (!proc || !buf)
		goto out;
	gk_user_name(p->uid, owner, sizeof(owner));
	snprintf(want, sizeof(want), "SLURM_JOB_ID=%s", p->job);
	while ((e = readdir(proc))) {
		uid_t ruid, euid;
		size_t n = 0;
		ssize_t k;
		int fd, claims = 0;
		pid_t pid;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		pid = (pid_t)atoi(e->d_name);
		if (gk_proc_uids(pid, &ruid, &euid) < 0 || (ruid == p->uid && euid == p->uid) ||
		    (ruid == 0 && euid == 0))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		while (n < ENVIRON_MAX && (k = read(fd, buf + n, ENVIRON_MAX - n)) > 0)
			n += (size_t)k;
		close(fd);
		buf[n] = '\0';
		for (size_t i = 0; i < n && !claims; i += strlen(buf + i) + 1)
			claims = strcmp(buf + i, want) == 0;
		if (!claims)
			continue;
		gk_user_name(ruid, user, sizeof(user));
		ignore(p,
		       "process %d of %s (uid %u) claims job %s in its environment (SLURM_JOB_ID), "
		       "but the job is %s's (uid %u): not looked at",
		       (int)pid, user, (unsigned)ruid, p->job, owner, (unsigned)p->uid);
	}
out:
	if (proc)
		closedir(proc);
	free(buf);
}

struct task_probe {
	unsigned ok, failed, refused;
	struct gk_event last_ok, last_failure;
	int have_ok, have_failure;
	struct {
		uint64_t pid, pstart;
	} live[MAX_LIVE];
	unsigned nlive;
	struct probe *p;
	const char *dir;
};

/* A live process named in an event file counts only when it is the
 * folder's user's: the pid (with its start time) is the user's own word. */
static int live_of_user(struct task_probe *t, pid_t pid, uint64_t pstart)
{
	uid_t ruid, euid;
	char user[64];

	if (gk_proc_uids(pid, &ruid, &euid) < 0 || !gk_proc_alive(pid, pstart))
		return 0;
	if (ruid == t->p->uid && euid == t->p->uid)
		return 1;
	gk_user_name(ruid, user, sizeof(user));
	ignore(t->p,
	       "process %d (in %s/" GK_EVENTS_FILE ") runs as %s (uid %u), not the job's user "
	       "(uid %u): not counted as the task's",
	       (int)pid, t->dir, user, (unsigned)ruid, (unsigned)t->p->uid);
	return 0;
}

static int task_event(void *arg, const struct gk_event *e)
{
	struct task_probe *t = arg;

	if (!e)
		return 0;
	if (e->kind == GK_EV_START && (e->have & GK_EVF_PID) && (e->have & GK_EVF_PSTART) &&
	    t->nlive < MAX_LIVE && gk_proc_alive((pid_t)e->pid, e->pstart)) {
		for (unsigned i = 0; i < t->nlive; i++)
			if (t->live[i].pid == e->pid && t->live[i].pstart == e->pstart)
				return 0;
		if (!live_of_user(t, (pid_t)e->pid, e->pstart))
			return 0;
		t->live[t->nlive].pid = e->pid;
		t->live[t->nlive].pstart = e->pstart;
		t->nlive++;
	} else if (e->kind == GK_EV_CHECKPOINT) {
		if (e->result == GK_EV_OK) {
			t->ok++;
			t->last_ok = *e;
			t->have_ok = 1;
		} else {
			if (e->result == GK_EV_FAILED)
				t->failed++;
			else
				t->refused++;
			t->last_failure = *e;
			t->have_failure = 1;
		}
	}
	return 0;
}

/* Sum of the regular files in a checkpoint folder (what `gpuckpt list` shows). */
static uint64_t ckpt_bytes(int ckfd)
{
	int dup = openat(ckfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	uint64_t total = 0;
	struct dirent *e;
	DIR *d;

	if (dup < 0)
		return 0;
	d = fdopendir(dup);
	if (!d) {
		close(dup);
		return 0;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (fstatat(ckfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
			total += (uint64_t)st.st_size;
	}
	closedir(d);
	return total;
}

/* The newest ckpt.N holding a regular manifest.json: N and its size. */
static int64_t newest_committed(int taskfd, uint64_t *bytes)
{
	int dup = openat(taskfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int64_t best = -1;
	struct dirent *e;
	DIR *d;

	*bytes = 0;
	if (dup < 0)
		return -1;
	d = fdopendir(dup);
	if (!d) {
		close(dup);
		return -1;
	}
	while ((e = readdir(d))) {
		uint64_t n;
		struct stat st;
		int ckfd;

		if (gk_ckpt_parse(e->d_name, &n) < 0 || n > INT64_MAX || (int64_t)n <= best)
			continue;
		ckfd = openat(taskfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (ckfd < 0)
			continue;
		if (fstatat(ckfd, GK_MANIFEST_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode)) {
			best = (int64_t)n;
			*bytes = ckpt_bytes(ckfd);
		}
		close(ckfd);
	}
	closedir(d);
	return best;
}

static int probe_task(void *arg, const char *step, uint32_t task, int taskfd)
{
	struct probe *p = arg;
	struct task_probe t;
	json_object *o = json_object_new_object();
	char path[PATH_MAX + 64], *buf;
	uint64_t bytes;
	int64_t newest;
	size_t len;

	memset(&t, 0, sizeof(t));
	snprintf(path, sizeof(path), "%s/" GK_STEP_PREFIX "%s/" GK_TASK_PREFIX "%u", p->job_dir,
		 step, task);
	t.p = p;
	t.dir = path;
	if (!step_listed(p, step)) {
		/* A step that ended, or one Slurm never ran: nothing to signal. */
		if (gk_events_read_at(taskfd, p->uid, &buf, &len) == 0) {
			gk_events_each(buf, len, task_event, &t);
			free(buf);
		}
		if (t.nlive)
			ignore(p, "%s: Slurm lists no step %s of job %s: not reported", path, step,
			       p->job);
		json_object_put(o);
		return 0;
	}
	if (gk_events_read_at(taskfd, p->uid, &buf, &len) == 0) {
		gk_events_each(buf, len, task_event, &t);
		free(buf);
	}
	newest = newest_committed(taskfd, &bytes);
	json_object_object_add(o, "step", json_object_new_string(step));
	json_object_object_add(o, "task", json_object_new_int64(task));
	json_object_object_add(o, "dir", json_object_new_string(path));
	json_object_object_add(o, "live", json_object_new_int((int)t.nlive));
	json_object_object_add(o, "ok", json_object_new_int((int)t.ok));
	json_object_object_add(o, "failed", json_object_new_int((int)t.failed));
	json_object_object_add(o, "refused", json_object_new_int((int)t.refused));
	json_object_object_add(o, "newest", json_object_new_int64(newest));
	json_object_object_add(o, "newest_bytes", json_object_new_int64((int64_t)bytes));
	if (t.have_ok) {
		json_object *l = json_object_new_object();

		json_object_object_add(l, "ckpt", json_object_new_int64((int64_t)t.last_ok.ckpt));
		json_object_object_add(l, "bytes", json_object_new_int64((int64_t)t.last_ok.bytes));
		json_object_object_add(l, "seconds", json_object_new_double(t.last_ok.seconds));
		json_object_object_add(o, "last_ok", l);
	} else {
		json_object_object_add(o, "last_ok", NULL);
	}
	if (t.have_failure) {
		json_object *l = json_object_new_object();

		json_object_object_add(
		    l, "result",
		    json_object_new_string(gk_event_result_name(t.last_failure.result)));
		json_object_object_add(l, "errno", json_object_new_int((int)t.last_failure.err));
		json_object_object_add(o, "last_failure", l);
	} else {
		json_object_object_add(o, "last_failure", NULL);
	}
	json_object_array_add(p->tasks, o);
	return 0;
}

/* As root: BB_ROOT/JOB through a bb_root only root can change, of the
 * job's user. A descriptor, or -1 with the reason in "ignored". */
static int open_job_dir_as_root(struct probe *p, const char *bb_root)
{
	char owner[64], user[64];
	gk_error_t err = {""};
	struct stat st;
	int rootfd, fd;

	rootfd = gk_open_trusted_dir(bb_root, "bb_root", &err);
	if (rootfd < 0) {
		ignore(p, "%s: not used", err.text);
		return -1;
	}
	fd = gk_open_dir_at(rootfd, p->job, (uid_t)-1, &st);
	close(rootfd);
	if (fd == -ENOENT)
		return -1;
	if (fd < 0) {
		ignore(p, "%s/%s: %s: not read", bb_root, p->job,
		       fd == -ELOOP ? "a symbolic link" : strerror(-fd));
		return -1;
	}
	if (fstat(fd, &st) < 0 || st.st_uid != p->uid) {
		gk_user_name(st.st_uid, user, sizeof(user));
		gk_user_name(p->uid, owner, sizeof(owner));
		ignore(p, "%s/%s: a folder of %s (uid %u), not of the job's user %s (uid %u): not read",
		       bb_root, p->job, user, (unsigned)st.st_uid, owner, (unsigned)p->uid);
		close(fd);
		return -1;
	}
	return fd;
}

int node_probe(const struct node_probe_args *a)
{
	char job_dir[PATH_MAX], host[256];
	json_object *top;
	struct probe p = {0};
	struct stat st;
	int fd = -1, rc = 0;

	if (getuid() == 0 && (!a->bb_root || a->uid == (uid_t)-1 || !a->steps)) {
		gk_error("checkpoint --on-node: as root, the job's user, folder and steps are "
			 "taken from Slurm only: give --uid, --bb-root and --steps (gpuckpt "
			 "checkpoint does); nothing is read from the processes on the node");
		return GK_EXIT_USAGE;
	}
	top = json_object_new_object();
	if (gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	json_object_object_add(top, "node", json_object_new_string(host));
	p.tasks = json_object_new_array();
	p.ignored = json_object_new_array();
	p.job = a->job;
	p.steps = a->steps;
	p.uid = getuid() == 0 ? a->uid : getuid();
	if (a->bb_root)
		rc = (size_t)snprintf(job_dir, sizeof(job_dir), "%s/%s", a->bb_root, a->job) <
			     sizeof(job_dir)
			 ? 0
			 : -ENAMETOOLONG;
	else
		rc = find_job_dir(a->job, job_dir, sizeof(job_dir));
	if (getuid() == 0) {
		name_claims(&p);
		if (rc == 0)
			fd = open_job_dir_as_root(&p, a->bb_root);
	} else if (a->uid != (uid_t)-1 && a->uid != getuid()) {
		/* The probe runs as the job's user: anyone else sees nothing. */
		ignore(&p, "this probe runs as uid %u, not as the job's user (uid %u): nothing read",
		       (unsigned)getuid(), (unsigned)a->uid);
	} else if (rc == 0) {
		/* A user's own folder, found from their own processes or given. */
		fd = open(job_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_uid != getuid())) {
			ignore(&p, "%s: not a folder of yours (uid %u): not read", job_dir,
			       (unsigned)getuid());
			close(fd);
			fd = -1;
		}
	}
	if (fd >= 0) {
		p.job_dir = job_dir;
		json_object_object_add(top, "job_dir", json_object_new_string(job_dir));
		gk_jobdir_walk(fd, p.uid, probe_task, &p);
		close(fd);
	} else {
		json_object_object_add(top, "job_dir", NULL);
	}
	json_object_object_add(top, "tasks", p.tasks);
	json_object_object_add(top, "ignored", p.ignored);
	printf("%s\n", json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN |
							       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(top);
	return fflush(stdout) == 0 ? GK_EXIT_OK : GK_EXIT_BAD;
}
