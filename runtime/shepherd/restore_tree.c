/*
 * restore_tree.c - restoring the newest transparent checkpoint of the task's root:
 * verify (manifest for the job's user, seal), map the GPUs recorded in the
 * seal onto those visible now (in order, same chip), criu restore (the
 * restored program becomes the shepherd's child, and the tree is left
 * stopped), then for each CUDA process, with only its restore thread let run
 * (hold.c), cuCheckpointProcessRestore onto the new GPUs and
 * cuCheckpointProcessUnlock; then the tree is continued.
 */
#include "config.h"

#include "image/image.h"
#include "image/ckptname.h"
#include "common/error.h"
#include "common/fsafe.h"
#include "common/log.h"
#include "common/procstat.h"
#include "common/testhook.h"
#include "shepherd/shepherd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The name of the newest committed checkpoint of the root that holds criu/. */
static int newest(struct gk_shepherd *sh, char *name, size_t n, gk_error_t *err)
{
	struct gk_store_entry *list = NULL;
	size_t count = 0;
	int ret = gk_store_list_at(sh->dirfd, sh->o->dir, &list, &count, err);

	if (ret < 0)
		return ret;
	ret = -ENOENT;
	gk_errprintf(err, "%s: no committed transparent checkpoint", sh->o->dir);
	for (size_t i = 0; i < count; i++) {
		if (list[i].complete && list[i].transparent) {
			snprintf(name, n, "%s", strrchr(list[i].path, '/') + 1);
			ret = 0;
			break;
		}
	}
	free(list);
	return ret;
}

/* The job's GPUs pair old -> new by position, and a different chip is
 * refused: the driver's images of one architecture do not run on another.
 * The driver wants every GPU of the node paired (gk_gpu_pairs). */
static int map_gpus(struct gk_shepherd *sh, const struct gk_seal *seal, CUcheckpointGpuPair *pairs,
		    gk_error_t *err)
{
	struct gk_gpu now[GK_SEAL_MAX_GPUS];
	char node[GK_SEAL_MAX_GPUS][64];
	size_t n = 0, nnode = 0;
	int ret;

	ret = gk_cudackpt_gpus(&sh->cuda, now, GK_SEAL_MAX_GPUS, &n, err);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < seal->ngpus && i < n; i++) {
		if (strcmp(seal->gpus[i].name, now[i].name) != 0) {
			gk_errprintf(err,
				     "GPU %zu was a '%s' at checkpoint time and is a '%s' now; a "
				     "transparent checkpoint restores only onto the same chip",
				     i, seal->gpus[i].name, now[i].name);
			return -ENODEV;
		}
		/* A move to another GPU is said at the default level: the
		 * job's output then tells where it went (an operator asks). */
		if (strcmp(seal->gpus[i].uuid, now[i].uuid) != 0)
			gk_notice("transparent: restore: GPU %zu: %s -> %s", i,
				  seal->gpus[i].uuid, now[i].uuid);
		else
			gk_info("transparent: restore: GPU %zu: %s -> %s", i, seal->gpus[i].uuid,
				now[i].uuid);
	}
	if (gk_node_gpus("/proc", node, GK_SEAL_MAX_GPUS, &nnode) < 0)
		nnode = 0;
	if (sh->o->nccl) {
		ret = gk_gpu_shared_move(seal->gpus, seal->ngpus, now, n, node, nnode, err);
		if (ret < 0)
			return ret;
	}
	return gk_gpu_pairs(seal->gpus, seal->ngpus, (char(*)[64])seal->node_gpus, seal->nnode_gpus,
			    now, n, node, nnode, pairs, GK_SEAL_MAX_GPUS, err);
}

/* The pid CRIU wrote into `name` of dirfd. The folder is the job's user's
 * when CRIU runs as the user, so what is read is only believed when it is a
 * child of this shepherd (CRIU's --restore-sibling makes the restored
 * program one; nothing else of the user's can be, before it runs): a pid
 * the user wrote there first cannot make root supervise, dump or kill a
 * process of anyone else. Opened without following a link, not blocking on
 * a FIFO, and read only when a regular file. */
static int read_pidfile(int dirfd, const char *name, pid_t *pid)
{
	char buf[32], path[64], stat[512], *p;
	struct stat st;
	ssize_t n;
	long v, ppid;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EINVAL;
	buf[n] = 0;
	v = strtol(buf, NULL, 10);
	if (v <= 1 || v > 1L << 22)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%ld/stat", v);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	n = read(fd, stat, sizeof(stat) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	stat[n] = 0;
	/* "pid (comm) state ppid ...": comm may hold anything but ends at the
	 * last ')'. */
	p = strrchr(stat, ')');
	if (!p || sscanf(p + 1, " %*c %ld", &ppid) != 1 || ppid != (long)getpid())
		return -EPERM;
	*pid = (pid_t)v;
	return 0;
}

/*
 * criu/ as CRIU, run as the job's user, must read it during the restore,
 * and as it must be again afterwards (gk_seal_verify and gpuckpt-stage take
 * only root:root 0700). `open`: the folder 0755 and every file but the seal
 * and the dump log 0644, all still root's. Nothing in it can change: the
 * user can neither write there nor make links there, and the files are the
 * ones just verified. While open, the user (and whoever the user lets into
 * its own ckpt.N) can read the images: the memory and open files of its own
 * processes, dumped by CRIU as the user (checkpoint.c), so nothing it could
 * not read before. A restore killed in between leaves it open; the next
 * restore closes it before it verifies.
 */
static void open_for_user(int criufd, int open)
{
	struct dirent *e;
	DIR *d;
	int fd = dup(criufd);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		struct stat st;
		int f;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    !strcmp(e->d_name, GK_SEAL_FILE) || !strcmp(e->d_name, GK_SEAL_SIG_FILE) ||
		    !strcmp(e->d_name, GK_SHEP_DUMP_LOG) || !strcmp(e->d_name, GK_SEAL_RESTORE_LOG))
			continue;
		f = openat(criufd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (f < 0)
			continue;
		if (fstat(f, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0)
			fchmod(f, open ? 0644 : 0600);
		close(f);
	}
	closedir(d);
	fchmod(criufd, open ? 0755 : 0700);
}

/* A criu/ left open by a restore that was killed (open_for_user): closed
 * again, on the descriptor, when it is root's folder; gk_seal_verify then
 * checks everything as usual. */
static void close_leftover(int ckptfd)
{
	struct stat st;
	int fd = openat(ckptfd, GK_CRIU_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && st.st_uid == 0 && st.st_gid == 0 &&
	    (st.st_mode & 07777) == 0755)
		open_for_user(fd, 0);
	close(fd);
}

/* Where CRIU writes the restored program's pid: the checkpoint root. */
#define GK_RESTORE_PIDFILE ".gpuckpt-restore.pid"

/* CRIU's own failure goes to criu_err (GK_SHEP_ERRLEN, gk_criu_run says
 * why); the rest to err. */
static int criu_restore(struct gk_shepherd *sh, int criufd, const struct gk_seal *seal,
			gk_error_t *err, char *criu_err, size_t criu_errlen)
{
	char dirarg[64], pidfile[128], inherit[3][4200];
	const char *args[24];
	const int self_stdio[3] = {0, 1, 2};
	struct gk_criu_as *as = calloc(1, sizeof(*as));
	size_t n = 0;
	int ret, terminal = -1, logfd = -1, piddir = -1, imgfd = -1, user, keep[2];

	if (!as)
		return -ENOMEM;
	ret = gk_criu_as_user(as, sh->o->uid, sh->o->gid, 1, err);
	if (ret < 0)
		goto out_free;
	user = as->uid != 0;
	/* The task's stdio was a terminal: CRIU takes it from its own stdin
	 * (--shell-job), so this shepherd must have one too (stdio.c). */
	for (int i = 0; i < 3 && terminal < 0; i++) {
		if (gk_stdio_plan(seal, i, inherit[i], sizeof(inherit[i])) != GK_STDIO_TERMINAL)
			continue;
		for (int k = 0; k < 3 && terminal < 0; k++)
			if (isatty(k))
				terminal = k;
		if (terminal < 0) {
			gk_errprintf(
			    err,
			    "the program's fd %d was the task's terminal (%s); restore it from a "
			    "terminal (srun --pty), none of this task's stdio is one",
			    i, seal->stdio[i]);
			ret = -ENOTTY;
			goto out_free;
		}
	}

	/* The pidfile: CRIU, as the user, must create it, so it goes into the
	 * checkpoint root, the user's own folder (sh->dirfd, opened checked at
	 * start), through a descriptor: no root write, and nothing of root's
	 * for the user to fill. What it holds is checked (read_pidfile). */
	unlinkat(sh->dirfd, GK_RESTORE_PIDFILE, 0);
	piddir = gk_criu_fd(sh->dirfd);
	if (piddir < 0) {
		ret = piddir;
		gk_errprintf(err, "%s: %s", sh->o->dir, strerror(-ret));
		goto out;
	}
	/* The log: root's file in root's criu/, CRIU's stdout (`-o -`). */
	unlinkat(criufd, GK_SEAL_RESTORE_LOG, 0);
	logfd = openat(criufd, GK_SEAL_RESTORE_LOG,
		       O_RDWR | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (logfd < 0) {
		gk_errprintf(err, "criu/" GK_SEAL_RESTORE_LOG ": %s", strerror(errno));
		ret = -errno;
		goto out;
	}
	/* Numbered where gk_criu_run's child sets nothing. */
	imgfd = gk_criu_fd(criufd);
	if (imgfd < 0) {
		ret = imgfd;
		gk_errprintf(err, "criu/: %s", strerror(-ret));
		goto out;
	}
	snprintf(pidfile, sizeof(pidfile), "/proc/self/fd/%d/" GK_RESTORE_PIDFILE, piddir);
	snprintf(dirarg, sizeof(dirarg), "/proc/self/fd/%d", imgfd);
	args[n++] = "restore";
	if (user)
		args[n++] = "--unprivileged";
	args[n++] = "-D";
	args[n++] = dirarg;
	args[n++] = "-o";
	args[n++] = "-";
	args[n++] = "-v4";
	args[n++] = "-d";
	args[n++] = "--restore-sibling";
	/* Held stopped until the driver has restored it (hold.c). */
	args[n++] = "--leave-stopped";
	args[n++] = "--shell-job";
	/* A dump made with --tcp close holds its connections closed, and CRIU
	 * restores them only when told so again; it changes nothing for an
	 * image without any. */
	args[n++] = "--tcp-close";
	args[n++] = "--pidfile";
	args[n++] = pidfile;
	for (int i = 0; i < 3; i++) {
		if (gk_stdio_plan(seal, i, inherit[i], sizeof(inherit[i])) != GK_STDIO_INHERIT)
			continue;
		args[n++] = "--inherit-fd";
		args[n++] = inherit[i];
	}
	args[n] = NULL;
	if (user)
		open_for_user(criufd, 1);
	keep[0] = imgfd;
	keep[1] = piddir;
	ret = gk_criu_run(sh->criu, args, keep, self_stdio, terminal, logfd, as, criu_err,
			  criu_errlen);
	if (user)
		open_for_user(criufd, 0);
	if (ret == 0) {
		ret = read_pidfile(sh->dirfd, GK_RESTORE_PIDFILE, &sh->prog);
		if (ret < 0)
			gk_errprintf(err, "%s/" GK_RESTORE_PIDFILE ": no pid of a process CRIU restored (%s)",
				     sh->o->dir, strerror(-ret));
	}
out:
	if (imgfd >= 0)
		close(imgfd);
	if (logfd >= 0)
		close(logfd);
	if (piddir >= 0) {
		unlinkat(sh->dirfd, GK_RESTORE_PIDFILE, 0);
		close(piddir);
	}
out_free:
	free(as);
	return ret;
}

/* The processes of the restored tree that the driver holds checkpointed,
 * into cuda[]; their number. Of the tree's processes, those the seal names
 * (gk_seal_cuda_pid). */
static int find_checkpointed(struct gk_shepherd *sh, const struct gk_seal *seal,
			     struct gk_watchdog *w, pid_t *cuda, size_t *ncuda, gk_error_t *err)
{
	static pid_t pids[GK_SHEP_MAX_PROCS];
	size_t n = 0;
	int ret;

	*ncuda = 0;
	ret = gk_tree_list(sh->prog, pids, GK_SHEP_MAX_PROCS, &n, err);
	if (ret == 0)
		ret = gk_tree_check_owner(pids, n, sh->o->uid, sh->o->gid, err);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < n && sh->have_cuda; i++) {
		CUprocessState st;

		if (!gk_seal_cuda_pid(seal, pids[i]))
			continue;
		gk_watchdog_note(w, "cuCheckpointProcessGetState of pid %d", (int)pids[i]);
		if (gk_cudackpt_is_cuda(&sh->cuda, pids[i], &st) &&
		    st == CU_PROCESS_STATE_CHECKPOINTED)
			cuda[(*ncuda)++] = pids[i];
	}
	return 0;
}

/* A process of the restored tree that is already a zombie: how it ended,
 * read without reaping it (the supervisor reaps it), as the state letter
 * 'E' (exited: *code the status) or 'K' (killed: *code the signal). */
static void how_it_ended(pid_t pid, char *state, long *code)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid != pid)
		return;
	*state = si.si_code == CLD_EXITED ? 'E' : 'K';
	*code = si.si_status;
}

static const char *said_process(char state, long n, char *out, size_t len)
{
	if (state == 'E')
		snprintf(out, len, "the process exited with status %ld", n);
	else if (state == 'K')
		snprintf(out, len, "the process was killed by signal %ld (%s)", n,
			 strsignal((int)n));
	else
		snprintf(out, len, "process state %c, %ld threads", state, n);
	return out;
}

static int in_list(const pid_t *pids, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

/* snprintf at out + *used, *used moved on; nothing once out is full. */
__attribute__((format(printf, 4, 5))) static void appendf(char *out, size_t len, size_t *used,
							    const char *fmt, ...)
{
	va_list ap;
	int w;

	if (*used >= len)
		return;
	va_start(ap, fmt);
	w = vsnprintf(out + *used, len - *used, fmt, ap);
	va_end(ap);
	if (w > 0)
		*used = (size_t)w < len - *used ? *used + (size_t)w : len;
}

/* What the driver answers for each process it checkpointed (the seal's
 * pids; every process of the restored tree for an older seal), for the
 * message of a restore that found too few checkpointed: "pid P: state S
 * (...)", "pid P: ERROR_NAME (...)" or "pid P: not in the restored tree". */
static void driver_says(struct gk_shepherd *sh, const struct gk_seal *seal, char *out,
			size_t len)
{
	static pid_t pids[GK_SHEP_MAX_PROCS];
	const pid_t *ask;
	size_t n = 0, nask, used = 0;
	gk_error_t err;

	out[0] = 0;
	if (gk_tree_list(sh->prog, pids, GK_SHEP_MAX_PROCS, &n, &err) < 0 || !sh->have_cuda) {
		snprintf(out, len, "the tree could not be listed");
		return;
	}
	ask = seal->have_cuda_pids ? seal->cuda_pids : pids;
	nask = seal->have_cuda_pids ? seal->ncuda_pids : n;
	for (size_t i = 0; i < nask && i < 8; i++) {
		const char *sep = i ? ", " : "", *name = NULL;
		char pst = '?', proc[64];
		CUprocessState st;
		long threads = 0;
		CUresult r;

		/* Root asks the driver about the job's processes only. */
		if (!in_list(pids, n, ask[i])) {
			appendf(out, len, &used, "%spid %d: not in the restored tree", sep,
				(int)ask[i]);
			continue;
		}
		r = sh->cuda.cuCheckpointProcessGetState(ask[i], &st);
		if (r != CUDA_SUCCESS && sh->cuda.cuGetErrorName)
			sh->cuda.cuGetErrorName(r, &name);
		/* What the kernel says of it too: a process that died after
		 * CRIU restored it is not the driver's fault. */
		gk_proc_state(ask[i], &pst, &threads);
		if (pst == 'Z')
			how_it_ended(ask[i], &pst, &threads);
		said_process(pst, threads, proc, sizeof(proc));
		if (r == CUDA_SUCCESS)
			appendf(out, len, &used, "%spid %d: state %d (%s)", sep, (int)ask[i],
				(int)st, proc);
		else
			appendf(out, len, &used, "%spid %d: %s (%s)", sep, (int)ask[i],
				name ? name : "error", proc);
	}
	if (nask > 8)
		appendf(out, len, &used, ", and %zu more", nask - 8);
}

/*
 * How long a restore waits for the driver to report every process it
 * checkpointed (the seal's count) as checkpointed again once CRIU has
 * restored the tree. A JAX job under Slurm on the H200s was found with
 * none right after CRIU: its process had already died, before the tree was
 * held stopped (hold.c). Restoring "none" would let it run on without its
 * GPU state. Fewer than the seal says after this long fails the restore,
 * naming both counts and what became of each process.
 */
#define GK_RESTORE_FIND_CUDA_S 10.0
/* How long the driver's calls of one restore may take in all, and how long
 * one may still take after the tree is killed (watchdog.c). A restore took
 * 0.3 s of the driver for the frameworks on an H200; copying back a full
 * GPU's memory takes seconds. */
#define GK_RESTORE_DRIVER_WAIT_S 300.0
#define GK_RESTORE_DRIVER_GRACE_S 30.0

/* The watchdog's answer to a driver call that does not return: the tree,
 * which is what the driver waits on, is killed. */
static void kill_tree(void *arg)
{
	gk_hold_kill(*(pid_t *)arg);
}

/* Each CUDA process of the stopped tree gets its restore thread running
 * (hold.c): the driver answers for a process, and restores it, through that
 * thread. A process for which the driver names none is not one of its. Only
 * the processes the seal says the driver checkpointed are asked (all, for an
 * older seal): the others have nothing of the driver's to answer with. */
static int run_restore_threads(struct gk_shepherd *sh, const struct gk_seal *seal,
			       struct gk_watchdog *w, struct gk_held_thread *held, size_t *nheld,
			       gk_error_t *err)
{
	const struct gk_cudackpt *cu = &sh->cuda;
	static pid_t pids[GK_SHEP_MAX_PROCS];
	size_t n = 0;
	int ret;

	if (!sh->have_cuda)
		return 0;
	ret = gk_tree_list(sh->prog, pids, GK_SHEP_MAX_PROCS, &n, err);
	if (ret == 0)
		ret = gk_tree_check_owner(pids, n, sh->o->uid, sh->o->gid, err);
	for (size_t i = 0; i < n && ret == 0; i++) {
		int tid = 0;

		if (!gk_seal_cuda_pid(seal, pids[i]))
			continue;
		gk_debug("transparent: restore: pid %d: cuCheckpointProcessGetRestoreThreadId",
			 (int)pids[i]);
		gk_watchdog_note(w, "cuCheckpointProcessGetRestoreThreadId of pid %d", (int)pids[i]);
		if (cu->cuCheckpointProcessGetRestoreThreadId(pids[i], &tid) != CUDA_SUCCESS ||
		    tid <= 0)
			continue;
		ret = gk_hold_run_thread(pids[i], tid, &held[*nheld], err);
		if (ret == 0) {
			gk_debug("transparent: restore: pid %d: its restore thread %d runs",
				 (int)pids[i], tid);
			(*nheld)++;
		}
	}
	return ret;
}

/* The driver's part of a restore, made in a thread of its own (driver_part)
 * while the shepherd's main thread, the tracer of the restore threads, keeps
 * them running (gk_hold_tend): the calls wait on those threads. */
struct driver_job {
	struct gk_shepherd *sh;
	const struct gk_seal *seal;
	CUcheckpointGpuPair *pairs;
	size_t npairs;
	struct gk_watchdog *w;
	double t_unlock;
	gk_error_t *err; /* the caller's: it waits in gk_hold_tend meanwhile */
	int ret;
	atomic_int done;
};

/* Every process the seal says the driver checkpointed found checkpointed
 * again, then restored onto the new GPUs and unlocked. */
static int driver_calls(struct driver_job *j)
{
	struct gk_shepherd *sh = j->sh;
	const struct gk_seal *seal = j->seal;
	const struct gk_cudackpt *cu = &sh->cuda;
	static pid_t cuda[GK_SHEP_MAX_PROCS];
	size_t ncuda = 0;
	double deadline = gk_now() + GK_RESTORE_FIND_CUDA_S;
	int ret, tries = 0;

	for (;;) {
		ret = find_checkpointed(sh, seal, j->w, cuda, &ncuda, j->err);
		if (ret < 0)
			return ret;
		tries++;
		if (seal->cuda_processes < 0 || ncuda >= (size_t)seal->cuda_processes)
			break;
		if (gk_now() >= deadline) {
			char said[512];

			driver_says(sh, seal, said, sizeof(said));
			gk_errprintf(j->err,
				     "the checkpoint holds %d process(es) the driver checkpointed, "
				     "but after CRIU's restore the driver reports %zu of the tree "
				     "as checkpointed (%.0f s; %s)",
				     seal->cuda_processes, ncuda, GK_RESTORE_FIND_CUDA_S, said);
			return -EIO;
		}
		usleep(20 * 1000);
	}
	if (tries > 1)
		gk_notice("transparent: restore: the driver reported the tree's %zu checkpointed "
			  "process(es) after %d queries",
			  ncuda, tries);
	for (size_t i = 0; i < ncuda; i++) {
		CUcheckpointRestoreArgs ra;

		memset(&ra, 0, sizeof(ra));
		ra.gpuPairs = j->npairs ? j->pairs : NULL;
		ra.gpuPairsCount = (unsigned)j->npairs;
		gk_debug("transparent: restore: pid %d: cuCheckpointProcessRestore", (int)cuda[i]);
		gk_watchdog_note(j->w, "cuCheckpointProcessRestore of pid %d", (int)cuda[i]);
		if (gk_cuda_check(cu, cu->cuCheckpointProcessRestore(cuda[i], &ra),
				  "cuCheckpointProcessRestore", cuda[i]) < 0) {
			gk_errprintf(j->err, "pid %d: the driver could not restore it",
				     (int)cuda[i]);
			return -EIO;
		}
	}
	j->t_unlock = gk_now();
	for (size_t i = 0; i < ncuda; i++) {
		CUcheckpointUnlockArgs ua;

		memset(&ua, 0, sizeof(ua));
		gk_watchdog_note(j->w, "cuCheckpointProcessUnlock of pid %d", (int)cuda[i]);
		if (gk_cuda_check(cu, cu->cuCheckpointProcessUnlock(cuda[i], &ua),
				  "cuCheckpointProcessUnlock", cuda[i]) < 0) {
			gk_errprintf(j->err, "pid %d: the driver could not unlock it",
				     (int)cuda[i]);
			return -EIO;
		}
	}
	gk_debug("transparent: restore: %zu process(es) restored and unlocked", ncuda);
	return 0;
}

static void *driver_part(void *arg)
{
	struct driver_job *j = arg;

	j->ret = driver_calls(j);
	atomic_store(&j->done, 1);
	return NULL;
}

static int driver_restore(struct gk_shepherd *sh, const struct gk_seal *seal,
			  CUcheckpointGpuPair *pairs, size_t npairs, double *t_unlock,
			  gk_error_t *err)
{
	static struct gk_held_thread held[GK_SHEP_MAX_PROCS];
	struct driver_job j = {
	    .sh = sh, .seal = seal, .pairs = pairs, .npairs = npairs, .err = err};
	size_t nheld = 0, restarts = 0;
	struct gk_watchdog w;
	pthread_t t;
	int ret;

	ret = gk_watchdog_start(&w, "transparent: restore", GK_RESTORE_DRIVER_WAIT_S,
				GK_RESTORE_DRIVER_GRACE_S, kill_tree, &sh->prog,
				"the restored tree is killed; the checkpoint stays");
	if (ret < 0) {
		gk_errprintf(err, "the restore's watchdog thread: %s", strerror(-ret));
		return ret;
	}
	j.w = &w;
	ret = run_restore_threads(sh, seal, &w, held, &nheld, err);
	if (ret < 0)
		goto out;
	gk_debug("transparent: restore: %zu restore thread(s) run; cuCheckpointProcessGetState",
		 nheld);
	ret = -pthread_create(&t, NULL, driver_part, &j);
	if (ret < 0) {
		gk_errprintf(err, "the restore's driver thread: %s", strerror(-ret));
		goto out;
	}
	gk_hold_tend(held, nheld, &j.done);
	pthread_join(t, NULL);
	ret = j.ret;
	*t_unlock = j.t_unlock;
	for (size_t i = 0; i < nheld; i++)
		restarts += (size_t)held[i].restarts;
	if (restarts)
		gk_notice("transparent: restore: a restore thread stopped %zu time(s) while the "
			  "driver worked through it, and was let go on each time",
			  restarts);
out:
	if (gk_watchdog_stop(&w)) {
		gk_errprintf(err,
			     "the driver did not finish restoring within %.0f s, and the restored "
			     "tree was killed (the message before this one names the call)",
			     GK_RESTORE_DRIVER_WAIT_S);
		ret = -ETIMEDOUT;
	}
	for (size_t i = 0; i < nheld; i++)
		gk_hold_stop_thread(&held[i]);
	return ret;
}

int gk_restore(struct gk_shepherd *sh)
{
	struct gk_shep_opts *o = sh->o;
	struct gk_load_opts lo = {.uid = o->uid};
	struct gk_manifest *m = NULL;
	struct gk_seal *seal = calloc(1, sizeof(*seal));
	CUcheckpointGpuPair pairs[GK_SEAL_MAX_GPUS];
	size_t npairs = 0;
	char path[4096 + 256], name[256], criu_err[GK_SHEP_ERRLEN] = "";
	gk_error_t err;
	double t0 = gk_now(), t_criu, t_driver, t_unlock = 0, t_end;
	uint64_t seq;
	int ckptfd = -1, criufd = -1, ret;

	if (!seal)
		return -ENOMEM;
	memset(pairs, 0, sizeof(pairs));
	ret = newest(sh, name, sizeof(name), &err);
	if (ret < 0)
		goto out;
	snprintf(path, sizeof(path), "%s/%s", o->dir, name);
	/* One descriptor from here on: the folder whose manifest and seal are
	 * checked is the folder whose images CRIU reads. */
	ckptfd = gk_open_dir_at(sh->dirfd, name, o->uid, NULL);
	if (ckptfd < 0) {
		ret = ckptfd;
		gk_errprintf(&err, "%s: %s", path,
			     ret == -EPERM   ? "not the job's user's folder"
			     : ret == -ELOOP ? "a symbolic link; refused"
					     : strerror(-ret));
		goto out;
	}
	close_leftover(ckptfd);
	ret = gk_image_open_in(sh->dirfd, ckptfd, path, &lo, &m, NULL, &err);
	gk_manifest_free(m);
	if (ret < 0)
		goto out;
	ret = gk_seal_verify(ckptfd, o->uid, seal, &criufd, &err);
	if (ret < 0)
		goto out;
	if (seal->gid != o->gid || (o->job[0] && seal->job[0] && strcmp(o->job, seal->job)) ||
	    seal->task != o->task) {
		gk_errprintf(
		    &err, "sealed for gid %u, job %s, task %d; this is gid %u, job %s, task %d",
		    (unsigned)seal->gid, seal->job, seal->task, (unsigned)o->gid, o->job, o->task);
		ret = -EPERM;
		goto out;
	}
	if (seal->ngpus && !sh->have_cuda) {
		gk_errprintf(&err, "the CUDA driver's checkpoint API is not available");
		ret = -ENOTSUP;
		goto out;
	}
	if (seal->ngpus) {
		ret = map_gpus(sh, seal, pairs, &err);
		if (ret < 0)
			goto out;
		npairs = (size_t)ret;
	}
	/* The restored tree has this name in its environment. */
	snprintf(sh->sockname, sizeof(sh->sockname), "%s", seal->socket);
	if (seal->socket[0]) {
		sh->listener = gk_sock_listen_on(seal->socket, &err);
		if (sh->listener < 0) {
			gk_warn("transparent: restore: socket @%s: %s; the next checkpoint goes "
				"without the runtime's help",
				seal->socket, err.text);
			sh->listener = -1;
		}
	}
	/* Tests pause here to swap the folder's names (tests/security/). */
	gk_test_hook("restore-verified");
	ret = criu_restore(sh, criufd, seal, &err, criu_err, sizeof(criu_err));
	if (ret < 0)
		goto out;
	t_criu = gk_now();
	ret = driver_restore(sh, seal, pairs, npairs, &t_unlock, &err);
	if (ret < 0) {
		/* Half restored is never left running, nor left stopped. */
		gk_hold_kill(sh->prog);
		goto out;
	}
	gk_hold_release(sh->prog);
	t_driver = t_unlock;
	t_end = gk_now();
	gk_notice("transparent: restored %s: criu %.2f s, driver %.2f s, unlock %.2f s, total "
		  "%.2f s",
		  name, t_criu - t0, t_driver - t_criu, t_end - t_unlock, t_end - t0);
	if (!gk_ckpt_parse_seq(name + strlen(GK_CKPT_PREFIX), &seq))
		seq = 0;
	gk_shep_event(sh, GK_EV_RESTORE, 0, seq, seal->image_bytes, t_end - t0, 0);
out:
	if (ret < 0) {
		gk_error("transparent: restore: %s: %s", o->dir, criu_err[0] ? criu_err : err.text);
		gk_shep_event(sh, GK_EV_RESTORE, ret, 0, 0, 0, 0);
	}
	if (criufd >= 0)
		close(criufd);
	if (ckptfd >= 0)
		close(ckptfd);
	free(seal);
	return ret;
}
