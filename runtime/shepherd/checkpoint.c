/*
 * checkpoint.c - the transparent checkpoint (README.md, in this order):
 *
 *	1. wait for HELLO/READY from each CUDA process of the tree (--ready-timeout)
 *	2. cuCheckpointProcessLock each (--lock-timeout); LOCKED; wait for the
 *	   runtime to close its socket (CRIU cannot dump a socket whose peer is
 *	   outside the tree)
 *	3. cuCheckpointProcessCheckpoint each
 *	4. check that every process of the tree is the job's user's
 *	5. criu dump into criu/ (root:root 0700) inside the runtime's .tmp folder,
 *	   or one the shepherd begins itself when no runtime reported, or when
 *	   several did (their folders then go into it as proc.PID: proc_parts.c)
 *	6. seal, gk_store_publish, one timing line
 *
 * Before LOCKED a failure is told to the runtime with ABORT; after it the
 * runtime learns it from its .tmp folder still being there after the unlock,
 * so on that path the shepherd removes only its own criu/ and unlocks.
 *
 * A runtime in a process that no driver locks (OpenCL on a CPU device, whose
 * state is host memory that CRIU carries: README.md, "OpenCL") waits after
 * LOCKED for its folder instead: criu/ is made in it before LOCKED is sent,
 * and goes with the folder when it is published (ckpt.N appears) or alone
 * when the checkpoint fails.
 */
#include "config.h"

#include "image/image.h"
#include "common/error.h"
#include "common/fsafe.h"
#include "common/log.h"
#include "shepherd/shepherd.h"
#include "image/ckptname.h"
#include "common/shepherd_protocol.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_PEERS 64

struct peer {
	int fd;
	pid_t pid;
	int hello, ready, app;
	const char *refused;	 /* REFUSE: what it holds */
	const char *refused_why; /* REFUSE: a whole reason instead, or NULL */
	char broken[64];     /* REFUSE broken: the CUDA error */
	struct gk_msg ready_msg;
};

struct ckpt {
	struct gk_shepherd *sh;
	pid_t pids[GK_SHEP_MAX_PROCS];
	size_t npids;
	pid_t cuda[GK_SHEP_MAX_PROCS];
	size_t ncuda;
	/* Processes no driver locks whose runtime is expected to report
	 * (OpenCL: gk_pid_opencl_runtime). */
	pid_t ocl[GK_SHEP_MAX_PROCS];
	size_t nocl;
	size_t nlocked, ncheckpointed;
	int stopped; /* the tree is in the group stop (SIGSTOP) for CRIU */
	struct peer peers[MAX_PEERS];
	size_t npeers;
	char tmpname[256];
	uint64_t sequence;
	int own_txn;
	struct gk_store_txn txn;
	int ckptfd, criufd;
	gk_error_t err;
	/* CRIU's own failure, with the tail of its log (gk_criu_run): longer
	 * than a gk_error_t holds, and what says why a dump failed. */
	char criu_err[GK_SHEP_ERRLEN];
	/* For the timing line: when each phase ended. */
	double t0, t_runtime, t_lock, t_driver, t_criu, t_commit;
	uint64_t dev_bytes; /* device data the runtime wrote */
	/* Several runtimes wrote folders: they become parts of c->tmpname,
	 * which the shepherd began itself (proc_parts.c). */
	struct gk_proc_parts parts;
};

/* What failed: CRIU's message if it was CRIU, else the one in err. */
static const char *why(const struct ckpt *c)
{
	return c->criu_err[0] ? c->criu_err : c->err.text;
}

static void close_peers(struct ckpt *c, const char *abort_reason)
{
	for (size_t i = 0; i < c->npeers; i++) {
		if (c->peers[i].fd < 0)
			continue;
		if (abort_reason)
			gk_sock_send(c->peers[i].fd, GK_PROTO_ABORT, abort_reason);
		gk_sock_close(c->peers[i].fd);
		c->peers[i].fd = -1;
	}
}

static int reported(const struct ckpt *c, pid_t pid)
{
	for (size_t k = 0; k < c->npeers; k++)
		if (c->peers[k].pid == pid && (c->peers[k].ready || c->peers[k].app))
			return 1;
	return 0;
}

static int all_ready(const struct ckpt *c)
{
	for (size_t i = 0; i < c->ncuda; i++)
		if (!reported(c, c->cuda[i]))
			return 0;
	for (size_t i = 0; i < c->nocl; i++)
		if (!reported(c, c->ocl[i]))
			return 0;
	return 1;
}

/* 1 when pid is one the driver locks. */
static int is_locked_cuda(const struct ckpt *c, pid_t pid)
{
	for (size_t i = 0; i < c->ncuda; i++)
		if (c->cuda[i] == pid)
			return 1;
	return 0;
}

/* A message from a peer; a peer that breaks the protocol is dropped. */
static void read_peer(struct ckpt *c, struct peer *p)
{
	char buf[GK_PROTO_MSG_MAX + 1];
	struct gk_msg m;
	ssize_t n = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);
	int valid;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	/* HELLO first, then one READY or REFUSE, then nothing. */
	valid = n > 0 && gk_msg_parse(buf, (size_t)n, &m) == 0 && !p->ready && !p->refused &&
		(m.type == GK_MSG_READY || m.type == GK_MSG_REFUSE) == !!p->hello;
	if (!valid) {
		if (n > 0)
			gk_warn(
			    "transparent: socket: pid %d: not a message of the protocol; closed",
			    (int)p->pid);
		close(p->fd);
		p->fd = -1;
		return;
	}
	if (m.type == GK_MSG_HELLO_APP) {
		p->hello = p->app = 1;
	} else if (m.type == GK_MSG_HELLO_TRANSPARENT) {
		p->hello = 1;
	} else if (m.type == GK_MSG_REFUSE) {
		p->refused = m.refused;
		p->refused_why = m.refused_why;
		snprintf(p->broken, sizeof(p->broken), "%s", m.broken);
	} else {
		p->ready = 1;
		p->ready_msg = m;
	}
	(void)c;
}

/* A peer that said the driver cannot checkpoint what it holds, or NULL. */
static const struct peer *refusing(const struct ckpt *c)
{
	for (size_t i = 0; i < c->npeers; i++)
		if (c->peers[i].refused)
			return &c->peers[i];
	return NULL;
}

/* Still to come: a CUDA process that has not reported, or a runtime that said
 * HELLO and neither READY nor REFUSE yet (its process may be one the driver
 * does not show, on a node without the checkpoint API: it must still hear
 * why no checkpoint is taken, its own reason first). */
static int pending(const struct ckpt *c)
{
	if (!all_ready(c))
		return 1;
	for (size_t i = 0; i < c->npeers; i++) {
		const struct peer *p = &c->peers[i];

		if (p->fd >= 0 && p->hello && !p->app && !p->ready && !p->refused)
			return 1;
	}
	return 0;
}

/* Step 1. Returns 1 when a process checkpoints itself (application mode). */
static int gather(struct ckpt *c)
{
	struct gk_shepherd *sh = c->sh;
	/* Without CUDA processes nobody is expected; a short look still
	 * answers a runtime that connected anyway. */
	double start = gk_now(), look = start + 0.1, deadline = start + sh->o->ready_timeout;

	for (;;) {
		struct pollfd pf[MAX_PEERS + 1];
		int waiting = pending(c);
		double left = (waiting ? deadline : look) - gk_now();
		size_t n = 0;

		if (refusing(c) || (!waiting && (c->ncuda || c->nocl)) || left <= 0)
			break;
		pf[n++] = (struct pollfd){.fd = sh->listener, .events = POLLIN};
		for (size_t i = 0; i < c->npeers; i++)
			pf[n++] = (struct pollfd){.fd = c->peers[i].fd, .events = POLLIN};
		if (poll(pf, n, (int)(left * 1000) + 1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN && c->npeers < MAX_PEERS) {
			struct peer *p = &c->peers[c->npeers];

			memset(p, 0, sizeof(*p));
			if (gk_sock_accept(sh->listener, sh->o->uid, sh->prog, &p->fd, &p->pid) ==
				0 &&
			    p->fd >= 0)
				c->npeers++;
		}
		for (size_t i = 1; i < n; i++)
			if (pf[i].revents && c->peers[i - 1].fd >= 0)
				read_peer(c, &c->peers[i - 1]);
	}
	for (size_t i = 0; i < c->npeers; i++)
		if (c->peers[i].app)
			return 1;
	if (refusing(c))
		return 0; /* limits() says why; every peer is told ABORT */
	/* A runtime that said HELLO but is not drained in time is told so;
	 * its process goes to the driver alone, as one without a runtime.
	 * Its socket must close anyway: CRIU cannot dump it. */
	for (size_t i = 0; i < c->npeers; i++) {
		struct peer *p = &c->peers[i];

		if (p->fd >= 0 && !p->ready) {
			gk_sock_send(p->fd, GK_PROTO_ABORT, "not ready within --ready-timeout");
			gk_sock_close(p->fd);
			p->fd = -1;
		}
	}
	for (size_t i = 0; i < c->ncuda; i++) {
		int found = 0;

		for (size_t k = 0; k < c->npeers; k++)
			found |= c->peers[k].pid == c->cuda[i] && c->peers[k].ready;
		if (!found)
			gk_notice(
			    "transparent: pid %d did not report; the driver checkpoints it alone",
			    (int)c->cuda[i]);
	}
	for (size_t i = 0; i < c->nocl; i++)
		if (!reported(c, c->ocl[i]))
			gk_notice("transparent: pid %d (OpenCL) did not report; CRIU dumps it as "
				  "it is",
				  (int)c->ocl[i]);
	return 0;
}

/*
 * What neither the runtime nor the driver can checkpoint is refused before
 * anything is locked, naming it: a checkpoint that cannot be restored is
 * the one outcome never acceptable (runtime/shepherd/README.md, "Limits").
 */
static int limits(struct ckpt *c)
{
	const struct peer *p = refusing(c);
	char path[256];
	pid_t pid;

	if (p && p->broken[0]) {
		gk_errprintf(
		    &c->err,
		    "pid %d: the program's CUDA context is broken (%s): no checkpoint possible",
		    (int)p->pid, p->broken);
		return -ENOTRECOVERABLE;
	}
	if (p && p->refused_why) {
		gk_errprintf(&c->err, "pid %d: %s", (int)p->pid, p->refused_why);
		return -ENOTSUP;
	}
	if (p) {
		gk_errprintf(&c->err, "pid %d holds %s, which %s cannot save", (int)p->pid,
			     p->refused,
			     strncmp(p->refused, "OpenCL", 6) ? "the CUDA driver's checkpoint"
							      : "a transparent checkpoint");
		return -ENOTSUP;
	}
	/*
	 * MIG is asked of the driver. A process that uses a MIG instance holds
	 * its capability devices open, but so does every process that loaded
	 * NVML (PyTorch, JAX, CuPy) on any machine, MIG or not: an open
	 * capability device alone says nothing, so the driver decides.
	 */
	if (gk_tree_find_open(c->pids, c->npids, GK_SHEP_MIG_CAPS, &pid, path, sizeof(path))) {
		char mig[64];
		/* Without a driver here no process of the tree uses a GPU at all. */
		int r = c->sh->have_cuda ? gk_cudackpt_mig(&c->sh->cuda, mig, &c->err) : 0;

		if (r < 0)
			return r; /* a checkpoint that may be of MIG is not taken blind */
		if (r > 0) {
			gk_errprintf(&c->err,
				     "pid %d uses a MIG instance (%s; %s open); gpuckpt does not "
				     "checkpoint MIG instances",
				     (int)pid, mig, path);
			return -ENOTSUP;
		}
		gk_debug("transparent: pid %d holds %s open, but no GPU here is a MIG instance",
			 (int)pid, path);
	}
	/* A tree that talks to processes outside it cannot be restored alone:
	 * it would wait for peers that are not there (links.c). */
	{
		char what[512];

		if (gk_tree_find_link(c->pids, c->npids, c->sh->o->tcp_close, &pid, what,
				      sizeof(what))) {
			gk_errprintf(&c->err,
				     "pid %d holds %s; a transparent checkpoint holds one task's "
				     "processes alone, so it is not taken",
				     (int)pid, what);
			return -ENOTSUP;
		}
	}
	/* MPS clients hold their GPU state in the MPS server, outside the tree. */
	pid = gk_find_process(GK_SHEP_MPS_COMM);
	if (pid > 0) {
		gk_errprintf(
		    &c->err,
		    "an MPS daemon runs on this node (pid %d): the tree's GPU work may live in "
		    "it, outside the tree, and the CUDA driver cannot checkpoint MPS clients",
		    (int)pid);
		return -ENOTSUP;
	}
	return 0;
}

static int begin_own(struct ckpt *c);

/*
 * The folder the task's checkpoint goes into: the one the runtime wrote, or,
 * when several processes of the task wrote one (torchrun's ranks), a folder
 * the shepherd begins itself, into which theirs move as parts once every
 * process is locked (proc_parts.c). Each of those must be a CUDA process the
 * driver locks: a runtime no driver locks waits on criu/ in its own folder
 * instead (the top of this file).
 */
static int pick_folder(struct ckpt *c)
{
	size_t named = 0;

	for (size_t i = 0; i < c->npeers; i++)
		if (c->peers[i].ready && strcmp(c->peers[i].ready_msg.name, "-"))
			named++;
	if (named > 1) {
		for (size_t i = 0; i < c->npeers; i++) {
			struct peer *p = &c->peers[i];
			int ret;

			if (!p->ready || !strcmp(p->ready_msg.name, "-"))
				continue;
			if (!is_locked_cuda(c, p->pid)) {
				gk_errprintf(
				    &c->err,
				    "several processes of the task wrote checkpoints, and pid "
				    "%d (%s) is not a CUDA process the driver locks; such a "
				    "process takes a checkpoint of the task alone",
				    (int)p->pid, p->ready_msg.name);
				return -ENOTSUP;
			}
			ret = gk_proc_parts_add(&c->parts, p->pid, p->ready_msg.name, &c->err);
			if (ret < 0)
				return ret;
		}
		gk_notice("transparent: %zu processes of the task wrote checkpoints; each becomes "
			  "a part of the task's",
			  c->parts.n);
		return begin_own(c);
	}
	for (size_t i = 0; i < c->npeers; i++) {
		struct peer *p = &c->peers[i];

		if (!p->ready)
			continue;
		if (c->tmpname[0] && strcmp(c->tmpname, p->ready_msg.name)) {
			gk_errprintf(&c->err, "several processes wrote checkpoints (%s, %s)",
				     c->tmpname, p->ready_msg.name);
			return -ENOTSUP;
		}
		snprintf(c->tmpname, sizeof(c->tmpname), "%s", p->ready_msg.name);
	}
	if (c->tmpname[0] &&
	    sscanf(c->tmpname, GK_CKPT_TMP_PREFIX "%" SCNu64 ".", &c->sequence) != 1) {
		gk_errprintf(&c->err, "%s: not a checkpoint folder", c->tmpname);
		return -EINVAL;
	}
	return 0;
}

/* Unlock what was locked, restoring first what the driver checkpointed.
 * A tree stopped for CRIU goes on first: the driver works through a thread
 * of each process. Unlike after a restore (restore_tree.c, hold.c), no
 * thread of it was woken early by CRIU, so this is the order the tree had
 * before it was stopped for the dump. */
static void release(struct ckpt *c)
{
	const struct gk_cudackpt *cu = &c->sh->cuda;

	if (c->stopped)
		gk_hold_release(c->sh->prog);
	c->stopped = 0;
	for (size_t i = 0; i < c->nlocked; i++) {
		CUcheckpointRestoreArgs ra;
		CUcheckpointUnlockArgs ua;

		memset(&ra, 0, sizeof(ra));
		memset(&ua, 0, sizeof(ua));
		if (i < c->ncheckpointed)
			gk_cuda_check(cu, cu->cuCheckpointProcessRestore(c->cuda[i], &ra),
				      "cuCheckpointProcessRestore", c->cuda[i]);
		gk_cuda_check(cu, cu->cuCheckpointProcessUnlock(c->cuda[i], &ua),
			      "cuCheckpointProcessUnlock", c->cuda[i]);
	}
	c->nlocked = c->ncheckpointed = 0;
}

/* Step 2: lock, LOCKED, wait for the runtimes to close their sockets. */
static int lock_all(struct ckpt *c)
{
	struct gk_shepherd *sh = c->sh;
	const struct gk_cudackpt *cu = &sh->cuda;
	double deadline;

	for (size_t i = 0; i < c->ncuda; i++) {
		CUcheckpointLockArgs la;

		memset(&la, 0, sizeof(la));
		la.timeoutMs = (unsigned)(sh->o->lock_timeout * 1000);
		if (gk_cuda_check(cu, cu->cuCheckpointProcessLock(c->cuda[i], &la),
				  "cuCheckpointProcessLock", c->cuda[i]) < 0) {
			gk_errprintf(&c->err, "pid %d: the driver could not lock it",
				     (int)c->cuda[i]);
			return -EIO;
		}
		c->nlocked++;
	}
	for (size_t i = 0; i < c->npeers; i++) {
		const struct gk_proc_part *part = gk_proc_parts_of(&c->parts, c->peers[i].pid);
		char where[GK_CKPT_NAME_LEN + 40];

		/* A part's runtime learns where its folder will be. */
		if (part)
			snprintf(where, sizeof(where), GK_CKPT_FMT "/%s", c->sequence, part->name);
		if (c->peers[i].fd >= 0 &&
		    gk_sock_send(c->peers[i].fd, GK_PROTO_LOCKED, part ? where : NULL) < 0)
			gk_warn("transparent: socket: pid %d: cannot send LOCKED",
				(int)c->peers[i].pid);
	}
	deadline = gk_now() + sh->o->ready_timeout;
	for (size_t i = 0; i < c->npeers; i++) {
		struct peer *p = &c->peers[i];
		char buf[64];

		while (p->fd >= 0) {
			double left = deadline - gk_now();
			struct pollfd pf = {.fd = p->fd, .events = POLLIN};

			if (left <= 0) {
				gk_errprintf(&c->err,
					     "pid %d did not close its socket after LOCKED",
					     (int)p->pid);
				return -ETIMEDOUT;
			}
			ssize_t r;

			if (poll(&pf, 1, (int)(left * 1000) + 1) <= 0)
				continue;
			/* Only the close is expected; anything said now is
			 * ignored, the close still awaited. */
			r = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
				close(p->fd);
				p->fd = -1;
			}
		}
	}
	return 0;
}

static int checkpoint_all(struct ckpt *c)
{
	const struct gk_cudackpt *cu = &c->sh->cuda;

	for (size_t i = 0; i < c->ncuda; i++) {
		CUcheckpointCheckpointArgs ca;

		memset(&ca, 0, sizeof(ca));
		if (gk_cuda_check(cu, cu->cuCheckpointProcessCheckpoint(c->cuda[i], &ca),
				  "cuCheckpointProcessCheckpoint", c->cuda[i]) < 0) {
			gk_errprintf(&c->err, "pid %d: the driver could not checkpoint it",
				     (int)c->cuda[i]);
			return -EIO;
		}
		c->ncheckpointed++;
	}
	return 0;
}

/* The folder root just made, and its manifest, to the job's user: the
 * manifest first, through its own descriptor, while the folder is still
 * root's 0700 and nobody else can put anything in its place. */
static int give_folder(int dirfd, uid_t uid, gid_t gid)
{
	struct stat st;
	int fd = openat(dirfd, GK_MANIFEST_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		ret = -errno;
	else if (!S_ISREG(st.st_mode) || st.st_nlink != 1 || st.st_uid != 0)
		ret = -EPERM;
	else if (fchown(fd, uid, gid) < 0)
		ret = -errno;
	close(fd);
	if (ret == 0 && fchown(dirfd, uid, gid) < 0)
		ret = -errno;
	return ret;
}

/* An empty manifest for a tree without a runtime, in a folder that is the
 * job's user's like any checkpoint (only criu/ is root's). Unsigned: a Munge
 * credential made here would be root's, and the seal covers it anyway. */
static int begin_own(struct ckpt *c)
{
	struct gk_shep_opts *o = c->sh->o;
	struct gk_manifest *m = gk_manifest_new();
	char hostname[256] = "";
	time_t now = time(NULL);
	struct tm tm;
	int ret;

	if (!m)
		return -ENOMEM;
	ret = gk_store_begin_at(c->sh->dirfd, o->dir, &c->txn, &c->err);
	if (ret < 0)
		goto out;
	c->own_txn = 1;
	gmtime_r(&now, &tm);
	strftime(m->created, sizeof(m->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	m->created_unix = now;
	gethostname(hostname, sizeof(hostname) - 1);
	snprintf(m->hostname, sizeof(m->hostname), "%s", hostname);
	m->uid = o->uid;
	m->pid = c->sh->prog;
	m->slurm = o->job[0] != 0;
	snprintf(m->job_id, sizeof(m->job_id), "%s", o->job);
	snprintf(m->step_id, sizeof(m->step_id), "%s", o->step);
	m->task = o->task;
	snprintf(m->label, sizeof(m->label), "transparent");
	m->chunk_size = GK_DEFAULT_CHUNK_SIZE;
	m->va_base = GK_DEFAULT_VA_BASE;
	m->va_size = GK_DEFAULT_VA_SIZE;
	ret = gk_store_seal(&c->txn, m, NULL, &c->err);
	if (ret < 0) {
		c->own_txn = 0;
		goto out;
	}
	unlinkat(c->txn.dirfd, GK_SIGNATURE_FILE, 0);
	ret = give_folder(c->txn.dirfd, o->uid, o->gid);
	if (ret < 0) {
		gk_errprintf(&c->err, "%s: chown: %s", c->txn.tmpdir, strerror(-ret));
		goto out;
	}
	snprintf(c->tmpname, sizeof(c->tmpname), "%s", strrchr(c->txn.tmpdir, '/') + 1);
	c->sequence = c->txn.sequence;
	c->ckptfd = dup(c->txn.dirfd);
	if (c->ckptfd < 0)
		ret = -errno;
out:
	gk_manifest_free(m);
	return ret;
}

/* criu/ inside the folder, made here as root: a name the user made first,
 * or anything but a directory of root's alone, is refused. */
static int make_criu_dir(struct ckpt *c)
{
	struct gk_shep_opts *o = c->sh->o;
	struct stat st;

	if (c->ckptfd < 0) {
		/* The runtime's folder, by its name in the root opened at start,
		 * not followed if a link, and the job's user's. */
		c->ckptfd = gk_open_dir_at(c->sh->dirfd, c->tmpname, o->uid, NULL);
		if (c->ckptfd < 0) {
			gk_errprintf(&c->err, "%s/%s: not a folder of uid %u", o->dir, c->tmpname,
				     (unsigned)o->uid);
			c->ckptfd = -1;
			return -EPERM;
		}
	}
	if (mkdirat(c->ckptfd, GK_CRIU_DIR, 0700) < 0) {
		gk_errprintf(&c->err, "%s/%s/" GK_CRIU_DIR ": %s", o->dir, c->tmpname,
			     strerror(errno));
		return -errno;
	}
	c->criufd = openat(c->ckptfd, GK_CRIU_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	if (c->criufd < 0 || fstat(c->criufd, &st) < 0 || st.st_uid != 0 ||
	    (st.st_mode & 07777) != 0700 || fchown(c->criufd, 0, 0) < 0) {
		gk_errprintf(&c->err, "%s/%s/" GK_CRIU_DIR ": not root's own folder", o->dir,
			     c->tmpname);
		return -EPERM;
	}
	return 0;
}

static void remove_criu_dir(struct ckpt *c)
{
	struct dirent *e;
	DIR *d;
	int fd;

	if (c->criufd < 0)
		return;
	fd = dup(c->criufd);
	if (fd >= 0 && (d = fdopendir(fd))) {
		rewinddir(d);
		while ((e = readdir(d)))
			if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
				unlinkat(c->criufd, e->d_name, 0);
		closedir(d);
	}
	unlinkat(c->ckptfd, GK_CRIU_DIR, AT_REMOVEDIR);
	close(c->criufd);
	c->criufd = -1;
}

/* Device data the runtime wrote: the folder's files other than the manifest
 * and its signature. */
static uint64_t runtime_bytes(int ckptfd)
{
	uint64_t total = 0;
	struct dirent *e;
	DIR *d;
	int fd = dup(ckptfd);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		struct stat st;

		if (strcmp(e->d_name, GK_MANIFEST_FILE) && strcmp(e->d_name, GK_SIGNATURE_FILE) &&
		    fstatat(ckptfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			total += (uint64_t)st.st_size;
	}
	closedir(d);
	return total;
}

/*
 * CRIU's images, written by CRIU as the job's user (criu.c), made root's.
 * CRIU writes into criu/.dump, a folder of the user's made inside root's
 * criu/ (root:root 0700): no process of the user's can reach it by a path
 * (it cannot search criu/), CRIU reaches it through the descriptor it
 * inherits (/proc/self/fd/N asks no search right of the folders above),
 * and the user's processes cannot open this CRIU's descriptors (it holds
 * capabilities they lack: the kernel refuses them /proc/PID/fd and
 * ptrace). So once CRIU has exited, what is in .dump is what CRIU wrote.
 * Each entry must be a regular file of the user's with one link (a link to
 * a file of someone else's would otherwise be made root's); it becomes
 * root's 0600 and moves up into criu/ (renameat2 RENAME_NOREPLACE: never
 * over the dump log), and .dump goes. The seal then covers exactly these
 * files. On any failure .dump is emptied and the checkpoint refused.
 */
static int adopt_images(struct ckpt *c, int dumpfd, int keep)
{
	struct gk_shep_opts *o = c->sh->o;
	struct dirent *e;
	DIR *d;
	int fd = dup(dumpfd), ret = 0;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		gk_errprintf(&c->err, "criu/.dump: %s", strerror(errno));
		return -EIO;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		struct stat st;
		int f;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (!keep || ret < 0) {
			if (unlinkat(dumpfd, e->d_name, 0) < 0 && errno == EISDIR)
				unlinkat(dumpfd, e->d_name, AT_REMOVEDIR);
			continue;
		}
		f = openat(dumpfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (f < 0 || fstat(f, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != o->uid ||
		    st.st_nlink != 1 || fchown(f, 0, 0) < 0 || fchmod(f, 0600) < 0 ||
		    renameat2(dumpfd, e->d_name, c->criufd, e->d_name, RENAME_NOREPLACE) < 0) {
			gk_errprintf(&c->err,
				     "criu/.dump/%s: not a regular file of uid %u with one link, or "
				     "cannot be made root's: %s",
				     e->d_name, (unsigned)o->uid, strerror(errno));
			ret = -EPERM;
			unlinkat(dumpfd, e->d_name, 0);
		}
		if (f >= 0)
			close(f);
	}
	closedir(d);
	if (unlinkat(c->criufd, ".dump", AT_REMOVEDIR) < 0 && ret == 0) {
		gk_errprintf(&c->err, "criu/.dump: %s", strerror(errno));
		ret = -EIO;
	}
	return ret;
}

static int dump(struct ckpt *c, int exit_after, struct gk_seal *seal)
{
	struct gk_shepherd *sh = c->sh;
	struct gk_criu_as *as = calloc(1, sizeof(*as));
	char tpid[16], dirarg[64];
	const char *args[16];
	size_t n = 0;
	int logfd = -1, dumpfd = -1, imgfd, ret, keep[2] = {-1, -1};

	if (!as)
		return -ENOMEM;
	ret = gk_criu_as_user(as, sh->o->uid, sh->o->gid, 0, &c->err);
	if (ret < 0)
		goto out;
	/* The log: root's, in root's criu/, CRIU's stdout (`-o -`). */
	logfd = openat(c->criufd, GK_SHEP_DUMP_LOG,
		       O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (logfd < 0) {
		ret = -errno;
		gk_errprintf(&c->err, "criu/" GK_SHEP_DUMP_LOG ": %s", strerror(errno));
		goto out;
	}
	imgfd = c->criufd;
	if (as->uid != 0) {
		/* adopt_images says why this is the user's and safe. */
		if (mkdirat(c->criufd, ".dump", 0700) < 0 ||
		    (dumpfd = openat(c->criufd, ".dump",
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
		    fchown(dumpfd, as->uid, as->gid) < 0) {
			ret = -errno;
			gk_errprintf(&c->err, "criu/.dump: %s", strerror(errno));
			goto out;
		}
		imgfd = dumpfd;
	}
	/* Numbered where gk_criu_run's child sets nothing. */
	imgfd = gk_criu_fd(imgfd);
	if (imgfd < 0) {
		ret = imgfd;
		gk_errprintf(&c->err, "criu/: %s", strerror(-ret));
		goto out;
	}
	snprintf(tpid, sizeof(tpid), "%d", (int)sh->prog);
	/* CRIU opens the folder through the descriptor the shepherd made:
	 * a path could be swapped by the folder's owner in between. */
	snprintf(dirarg, sizeof(dirarg), "/proc/self/fd/%d", imgfd);
	args[n++] = "dump";
	if (as->uid != 0)
		args[n++] = "--unprivileged";
	args[n++] = "-t";
	args[n++] = tpid;
	args[n++] = "-D";
	args[n++] = dirarg;
	args[n++] = "-o";
	args[n++] = "-";
	args[n++] = "-v4";
	args[n++] = "--shell-job";
	/* Connections are dumped without TCP repair and come back closed
	 * (links.c let them through only with --tcp close). */
	if (sh->o->tcp_close)
		args[n++] = "--tcp-close";
	if (!exit_after)
		args[n++] = "--leave-running";
	args[n] = NULL;
	gk_stdio_record("/proc", sh->prog, seal);
	keep[0] = imgfd;
	ret = gk_criu_run(sh->criu, args, keep, NULL, -1, logfd, as, c->criu_err,
			  sizeof(c->criu_err));
	close(imgfd);
	if (dumpfd >= 0) {
		int r = adopt_images(c, dumpfd, ret == 0);

		if (ret == 0)
			ret = r;
	}
out:
	if (dumpfd >= 0) {
		close(dumpfd);
		unlinkat(c->criufd, ".dump", AT_REMOVEDIR);
	}
	if (logfd >= 0)
		close(logfd);
	free(as);
	return ret;
}

/* The tree and which of its processes use CUDA. */
static int survey(struct ckpt *c)
{
	struct gk_shepherd *sh = c->sh;
	struct gk_shep_opts *o = sh->o;
	int ret;

	ret = gk_tree_list(sh->prog, c->pids, GK_SHEP_MAX_PROCS, &c->npids, &c->err);
	if (ret < 0)
		return ret;
	/* Refuse before anything is locked; checked again before the dump. */
	ret = gk_tree_check_owner(c->pids, c->npids, o->uid, o->gid, &c->err);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < c->npids; i++) {
		CUprocessState st;

		if (sh->have_cuda && gk_cudackpt_is_cuda(&sh->cuda, c->pids[i], &st))
			c->cuda[c->ncuda++] = c->pids[i];
		else if (gk_pid_opencl_runtime(c->pids[i], sh->signo))
			c->ocl[c->nocl++] = c->pids[i];
	}
	return 0;
}

/*
 * Step 1: the runtimes' HELLO and READY, then what makes the checkpoint
 * impossible, and the folder it goes into. 1 when a process of the task
 * checkpoints itself (application mode): no transparent checkpoint, and the
 * runtimes were told so. <0, with c->err set, when it is refused.
 */
static int wait_runtimes(struct ckpt *c)
{
	struct gk_shepherd *sh = c->sh;
	int ret;

	if (gather(c) == 1) {
		gk_notice("transparent: a process of the task checkpoints itself; no "
			  "transparent checkpoint");
		close_peers(c, "a process of the task uses application mode");
		return 1;
	}
	/* Checked once the runtimes have spoken, so that they hear ABORT. */
	ret = limits(c);
	if (ret < 0)
		return ret;
	if (!sh->criu[0]) {
		gk_errprintf(&c->err, "no usable CRIU on this node (gpuckpt-shepherd probe)");
		return -ENOTSUP;
	}
	/* A runtime that said HELLO but not READY in time heard ABORT, and its
	 * process is unwinding the checkpoint (the signal takes its usual
	 * course): where no driver holds that process, CRIU would dump it in
	 * the middle of that. */
	for (size_t i = 0; i < c->npeers; i++)
		if (c->peers[i].hello && !c->peers[i].app && !c->peers[i].ready &&
		    !is_locked_cuda(c, c->peers[i].pid)) {
			gk_errprintf(
			    &c->err,
			    "pid %d: its runtime was not ready within --ready-timeout, and "
			    "no driver holds the process",
			    (int)c->peers[i].pid);
			return -ETIMEDOUT;
		}
	/* A runtime whose process no driver locks (OpenCL on a CPU device)
	 * needs none; one that released CUDA device memory does. */
	for (size_t i = 0; i < c->npeers && !sh->have_cuda; i++)
		if (c->peers[i].ready && c->peers[i].ready_msg.assisted) {
			gk_errprintf(&c->err,
				     "the CUDA driver's checkpoint API is not available (pid %d "
				     "released CUDA device memory)",
				     (int)c->peers[i].pid);
			return -ENOTSUP;
		}
	return pick_folder(c);
}

/* Steps 2 to 4: lock each CUDA process (LOCKED to its runtime), the
 * driver's checkpoint of each, and the tree as it is now checked again. */
/*
 * A descriptor on a /proc file of a thread (/proc/P/task/T/comm) is dumped
 * by CRIU but cannot be restored: CRIU opens files before it makes threads
 * (criu issue #1553), so the restore would fail and the checkpoint would be
 * committed useless. glibc's pthread_setname_np (and _getname_np) hold one
 * for a moment when a thread names another; JAX and CuPy jobs under Slurm
 * were dumped in that moment. Threads that do no CUDA run on under the
 * driver's lock, so a look at the tree while it runs proves nothing about
 * the moment CRIU seizes it: the tree is stopped (SIGSTOP, every thread in
 * the group stop) and looked at then; if one is open, it runs a little
 * (SIGCONT) and is stopped again. One held longer than the wait refuses the
 * checkpoint, naming it. CRIU dumps the stopped tree; a tree it leaves
 * running after the dump goes on in release(), one it restores is held
 * stopped until the driver has given back its GPU state (restore_tree.c).
 */
#define GK_THREAD_FILE_WAIT_MS 2000
#define GK_THREAD_FILE_POLL_MS 10

static int stop_without_thread_files(struct ckpt *c)
{
	char path[256];
	pid_t pid;
	int fd, ret, waited = 0;

	for (;;) {
		ret = gk_hold_stop_tree(c->sh->prog, c->pids, GK_SHEP_MAX_PROCS, &c->npids,
					&c->err);
		if (ret < 0)
			return ret;
		c->stopped = 1;
		/* Listed again: checked again. */
		ret = gk_tree_check_owner(c->pids, c->npids, c->sh->o->uid, c->sh->o->gid, &c->err);
		if (ret < 0)
			return ret;
		if (!gk_tree_find_thread_file(c->pids, c->npids, &pid, &fd, path, sizeof(path)))
			break;
		if (waited >= GK_THREAD_FILE_WAIT_MS) {
			gk_errprintf(&c->err,
				     "pid %d holds descriptor %d open on %s, a file of one of its "
				     "threads, and kept it %d ms: CRIU cannot restore such a "
				     "descriptor (it makes threads after files), so no checkpoint "
				     "is taken",
				     (int)pid, fd, path, waited);
			return -ENOTSUP;
		}
		gk_hold_release(c->sh->prog);
		c->stopped = 0;
		usleep(GK_THREAD_FILE_POLL_MS * 1000);
		waited += GK_THREAD_FILE_POLL_MS;
	}
	if (waited)
		gk_notice("transparent: waited %d ms for the tree to close a descriptor on a "
			  "thread's /proc file, which CRIU cannot restore",
			  waited);
	return 0;
}

static int freeze(struct ckpt *c)
{
	struct gk_shepherd *sh = c->sh;
	struct gk_shep_opts *o = sh->o;
	int ret;

	/* A runtime no driver locks waits on criu/ after LOCKED (top). */
	for (size_t i = 0; i < c->npeers && c->criufd < 0; i++)
		if (c->peers[i].ready && c->peers[i].fd >= 0 &&
		    !is_locked_cuda(c, c->peers[i].pid)) {
			ret = make_criu_dir(c);
			if (ret < 0)
				return ret;
		}
	ret = lock_all(c);
	if (ret < 0)
		return ret;
	c->t_lock = gk_now();
	ret = checkpoint_all(c);
	if (ret < 0)
		return ret;
	c->t_driver = gk_now();
	ret = gk_tree_list(sh->prog, c->pids, GK_SHEP_MAX_PROCS, &c->npids, &c->err);
	if (ret == 0)
		ret = gk_tree_check_owner(c->pids, c->npids, o->uid, o->gid, &c->err);
	if (ret == 0)
		ret = stop_without_thread_files(c);
	return ret;
}

/* Step 5: criu/ in the runtime's .tmp folder, or in one the shepherd
 * begins itself when no runtime reported, and CRIU's dump into it. */
static int dump_tree(struct ckpt *c, int exit_after, struct gk_seal *seal)
{
	int ret = c->tmpname[0] ? 0 : begin_own(c);

	/* Every process is locked: no runtime writes its folder now. */
	if (ret == 0)
		ret = gk_proc_parts_move_in(&c->parts, c->sh->dirfd, c->sh->o->dir, c->ckptfd,
					    c->sh->o->uid, &c->err);
	if (ret == 0 && c->criufd < 0)
		ret = make_criu_dir(c);
	if (ret < 0)
		return ret;
	c->dev_bytes =
	    runtime_bytes(c->ckptfd) + gk_proc_parts_bytes(&c->parts, c->ckptfd, runtime_bytes);
	ret = dump(c, exit_after, seal);
	if (ret < 0)
		return ret;
	c->t_criu = gk_now();
	return 0;
}

/* Step 6: the seal over what CRIU wrote, then ckpt.N published. */
static int seal_commit(struct ckpt *c, struct gk_seal *seal)
{
	struct gk_shepherd *sh = c->sh;
	struct gk_shep_opts *o = sh->o;
	int ret;

	seal->uid = o->uid;
	seal->gid = o->gid;
	snprintf(seal->job, sizeof(seal->job), "%s", o->job);
	snprintf(seal->step, sizeof(seal->step), "%s", o->step);
	seal->task = o->task;
	snprintf(seal->socket, sizeof(seal->socket), "%s", sh->sockname);
	seal->cuda_processes = (int)c->ncheckpointed;
	/* checkpoint_all went through c->cuda in order: its first ones. */
	seal->have_cuda_pids = 1;
	seal->ncuda_pids = c->ncheckpointed;
	memcpy(seal->cuda_pids, c->cuda, c->ncheckpointed * sizeof(*c->cuda));
	seal->nparts = c->parts.n;
	for (size_t i = 0; i < c->parts.n; i++)
		snprintf(seal->parts[i].name, sizeof(seal->parts[i].name), "%s",
			 c->parts.p[i].name);
	seal->criu_seconds = c->t_criu - c->t_driver;
	seal->driver_seconds = c->t_driver - c->t_lock;
	if (sh->have_cuda) {
		gk_cudackpt_gpus(&sh->cuda, seal->gpus, GK_SEAL_MAX_GPUS, &seal->ngpus, &c->err);
		if (gk_node_gpus("/proc", seal->node_gpus, GK_SEAL_MAX_GPUS, &seal->nnode_gpus) < 0)
			seal->nnode_gpus = 0;
	}
	/* CRIU does not sync its images; the seal must not outlive them. */
	syncfs(c->criufd);
	ret = gk_seal_write(c->ckptfd, c->criufd, seal, &c->err);
	if (ret < 0)
		return ret;
	return gk_store_publish_at(sh->dirfd, o->dir, c->tmpname, c->sequence, o->keep, &c->err);
}

/* Committed: the timing line, then the tree goes on or is gone. */
static void resume(struct ckpt *c, int exit_after, const struct gk_seal *seal)
{
	gk_notice("transparent: checkpoint " GK_CKPT_FMT " committed: runtime %.2f s, lock "
		  "%.2f s, driver %.2f s, criu %.2f s, commit %.2f s, total %.2f s (runtime "
		  "device data %" PRIu64 " bytes, criu images %" PRIu64 " bytes)",
		  c->sequence, c->t_runtime - c->t0, c->t_lock - c->t_runtime,
		  c->t_driver - c->t_lock, c->t_criu - c->t_driver, c->t_commit - c->t_criu,
		  c->t_commit - c->t0, c->dev_bytes, seal->image_bytes);
	gk_shep_event(c->sh, GK_EV_CHECKPOINT, 0, c->sequence, c->dev_bytes + seal->image_bytes,
		      c->t_commit - c->t0, (unsigned)seal->ngpus);
	if (c->own_txn) {
		gk_store_end(&c->txn);
		c->own_txn = 0;
	}
	/* Going on: the processes get their GPUs back and run; the runtime
	 * finds ckpt.N and loads from it. Exiting: CRIU ended the tree. */
	if (!exit_after)
		release(c);
	else if (c->stopped)
		gk_hold_kill(c->sh->prog); /* CRIU's own dump ended it already */
	c->nlocked = 0;
}

int gk_checkpoint(struct gk_shepherd *sh, int exit_after)
{
	struct ckpt *c = calloc(1, sizeof(*c));
	struct gk_seal *seal = calloc(1, sizeof(*seal));
	int ret;

	if (!c || !seal) {
		free(c);
		free(seal);
		return -ENOMEM;
	}
	c->t0 = gk_now();
	c->sh = sh;
	c->ckptfd = c->criufd = -1;
	ret = survey(c);
	if (ret < 0)
		goto out_abort;
	ret = wait_runtimes(c);
	if (ret == 1) {
		ret = -ECANCELED;
		goto out;
	}
	if (ret < 0)
		goto out_abort;
	c->t_runtime = gk_now();
	ret = freeze(c);
	if (ret < 0)
		goto out_release;
	ret = dump_tree(c, exit_after, seal);
	if (ret < 0)
		goto out_folder;
	ret = seal_commit(c, seal);
	if (ret < 0)
		goto out_folder;
	c->t_commit = gk_now();
	resume(c, exit_after, seal);
	ret = 0;
	goto out;
out_folder:
	remove_criu_dir(c);
out_release:
	/* Each runtime finds its own folder again when it is unlocked. */
	gk_proc_parts_move_back(&c->parts, sh->dirfd, c->ckptfd);
	if (c->own_txn) {
		gk_store_abort(&c->txn);
		c->own_txn = 0;
	}
	gk_error("transparent: checkpoint of pid %d failed: %s", (int)sh->prog, why(c));
	/* Made early for a runtime no driver locks: its going says "failed". */
	remove_criu_dir(c);
	release(c);
	/* LOCKED was sent: no ABORT now (the top of this file says why). */
	close_peers(c, NULL);
	goto out;
out_abort:
	if (c->own_txn) {
		gk_store_abort(&c->txn); /* begun for several runtimes' parts */
		c->own_txn = 0;
	}
	gk_error("transparent: no checkpoint of pid %d: %s", (int)sh->prog, why(c));
	close_peers(c, why(c));
out:
	close_peers(c, NULL);
	if (c->criufd >= 0)
		close(c->criufd);
	if (c->ckptfd >= 0)
		close(c->ckptfd);
	free(seal);
	free(c);
	return ret;
}
