/*
 * shepherd.h - gpuckpt-shepherd: the root helper of transparent mode, one per
 * task (README.md beside this file). One header for its modules:
 *
 *	cudackpt.c      the CUDA driver's checkpoint API, dlopen'ed into a table
 *	criu.c          finding CRIU, running dump and restore
 *	tree.c          the processes of the task's tree and their owners
 *	stdio.c         the program's stdio: what it was, how CRIU gets it back
 *	sock.c          the socket to the runtime: peers and messages
 *	checkpoint.c    the checkpoint sequence
 *	restore_tree.c  the restore sequence
 *	supervise.c     waiting for the tree, reacting to trigger signals
 *	options.c       the command line
 *
 * Every function returns 0 or a negative errno and, where it takes err,
 * says there what failed on what.
 */
#ifndef GK_SHEPHERD_H
#define GK_SHEPHERD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cuda.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/events.h"
#include "image/seal.h" /* criu/SEAL: its format, writing and checking it (runtime/image) */
#include "common/settings.h"
#include "common/shepherd_protocol.h" /* the socket's words, GK_PROTO_MSG_MAX */

/* CRIU's failure with the tail of its log (gk_criu_run); every other message
 * of the shepherd's is a gk_error_t. */
#define GK_SHEP_ERRLEN 10240
#define GK_SHEP_MAX_PROCS 4096
#define GK_SHEP_DUMP_LOG "dump.log"
#define GK_CRIU_MIN_MAJOR 4

/* ---- the command line (options.c) ---- */

enum gk_shep_cmd { GK_SHEP_PROBE, GK_SHEP_RUN, GK_SHEP_RESTORE, GK_SHEP_ATTACH };

struct gk_shep_opts {
	enum gk_shep_cmd cmd;
	char dir[4096];
	uid_t uid;
	gid_t gid;
	int have_uid, have_gid;
	char criu[4096]; /* empty: the default places */
	int assist;
	int tcp_close; /* --tcp close: TCP connections are dumped, restored closed */
	int nccl;      /* --nccl: the tree is one rank of an NCCL job (gk_gpu_shared_move) */
	double ready_timeout; /* seconds */
	double lock_timeout;
	unsigned keep;
	char job[32], step[32];
	int task;
	pid_t child;
	int go_fd; /* attach: where the program waits for its go; 0: none */
	struct gk_trigger triggers[GK_MAX_TRIGGERS];
	unsigned ntriggers;
	char **argv; /* run: PROGRAM [ARG...] */
	char test_hook[4200]; /* --test-hook POINT:DIR, armed once root is sure */
};

/* Parse argv (argv[0] is the program). 0, or -EINVAL with the reason in err;
 * 1 when --help was printed. */
int gk_shep_parse(int argc, char **argv, struct gk_shep_opts *o, gk_error_t *err);
extern const char gk_shep_usage[];

/* ---- the driver's checkpoint API (cudackpt.c) ---- */

struct gk_cudackpt {
	void *lib;
	CUresult (*cuInit)(unsigned int);
	CUresult (*cuGetErrorName)(CUresult, const char **);
	CUresult (*cuGetErrorString)(CUresult, const char **);
	CUresult (*cuDriverGetVersion)(int *);
	CUresult (*cuDeviceGetCount)(int *);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDeviceGetName)(char *, int, CUdevice);
	/* cuda.h spells cuDeviceGetUuid as its _v2; the table holds both by
	 * their symbols: "cuDeviceGetUuid" (the GPU's UUID, also for a MIG
	 * instance) here, and "cuDeviceGetUuid_v2" (a MIG instance's own). */
	CUresult (*cuDeviceGetUuid)(CUuuid *, CUdevice);
	CUresult (*uuid_v2)(CUuuid *, CUdevice);
	CUresult (*cuCheckpointProcessGetState)(int, CUprocessState *);
	CUresult (*cuCheckpointProcessGetRestoreThreadId)(int, int *);
	CUresult (*cuCheckpointProcessLock)(int, CUcheckpointLockArgs *);
	CUresult (*cuCheckpointProcessCheckpoint)(int, CUcheckpointCheckpointArgs *);
	CUresult (*cuCheckpointProcessRestore)(int, CUcheckpointRestoreArgs *);
	CUresult (*cuCheckpointProcessUnlock)(int, CUcheckpointUnlockArgs *);
};

/* dlopen libcuda.so.1 and look up every entry. -ENOENT: no driver;
 * -ENOTSUP: a driver without the checkpoint API (err names the entry). */
int gk_cudackpt_load(struct gk_cudackpt *c, gk_error_t *err);

/* The one checked helper: 0 for CUDA_SUCCESS, else logs
 * "<op>: pid <pid>: <error name>: <error string>" and returns -EIO. */
int gk_cuda_check(const struct gk_cudackpt *c, CUresult r, const char *op, pid_t pid);

/* The GPUs this process sees, in order (CUDA_VISIBLE_DEVICES applies). */
int gk_cudackpt_gpus(const struct gk_cudackpt *c, struct gk_gpu *gpus, size_t max, size_t *n,
		     gk_error_t *err);

/* Every GPU of the node, whatever CUDA_VISIBLE_DEVICES or the job's device
 * cgroup say, from <proc>/driver/nvidia/gpus/ (PCI order): the driver's
 * restore wants a GPU pair for each of them. */
int gk_node_gpus(const char *proc, char (*uuids)[64], size_t max, size_t *n);

/*
 * The driver's restore pairs: the job's GPUs at checkpoint time (old_used,
 * in CUDA order) onto its GPUs now (new_used), and, because the driver takes
 * only a one-to-one map of every GPU of the node, the node's other GPUs onto
 * the new node's others, in order. Without the node lists (nold_node or
 * nnew_node 0: an older seal) only the job's GPUs are paired. Returns the
 * number of pairs, or <0 with err set.
 */
int gk_gpu_pairs(const struct gk_gpu *old_used, size_t nold_used, char (*old_node)[64],
		 size_t nold_node, const struct gk_gpu *new_used, size_t nnew_used,
		 char (*new_node)[64], size_t nnew_node, CUcheckpointGpuPair *pairs, size_t max,
		 gk_error_t *err);

/*
 * For a tree that shares GPU memory with other processes after its restore
 * (an NCCL rank: its communicators are made again and map the other ranks'
 * buffers): 0 when the driver can carry the move from old_used to new_used,
 * -EXDEV with the reason in err when it cannot. Seen on driver 580 (two
 * H200s, docs/nccl.md): a process that saw only some of the node's GPUs and
 * is restored off one of them, which stays on the node, cannot map memory
 * that lives on that old GPU afterwards (cuMemSetAccess: "invalid device
 * ordinal"; cuIpcOpenMemHandle: "invalid argument"); the driver still takes
 * the memory there for its own. So such a move is refused before anything
 * is restored. A process that saw every GPU of the node, or a move onto
 * another node's GPUs, is not concerned. Without the node's list (an older
 * seal) nothing can be said, and nothing is refused.
 */
int gk_gpu_shared_move(const struct gk_gpu *old_used, size_t nold_used,
		       const struct gk_gpu *new_used, size_t nnew_used, char (*new_node)[64],
		       size_t nnew_node, gk_error_t *err);

/*
 * Whether a GPU this process sees is a MIG instance, asked of the driver:
 * cuDeviceGetUuid_v2 gives a MIG instance a UUID of its own, where
 * cuDeviceGetUuid gives the GPU's. 1 with the first such instance in `mig`
 * ("MIG-..."), 0 when there is none, -EIO when the driver cannot say.
 */
int gk_cudackpt_mig(const struct gk_cudackpt *c, char mig[64], gk_error_t *err);

/* 1 when the driver answers for pid (a CUDA process), with its state. */
int gk_cudackpt_is_cuda(const struct gk_cudackpt *c, pid_t pid, CUprocessState *state);

/* ---- CRIU (criu.c) ---- */

/* The CRIU to use: `want` when given, else the first of the default places;
 * checks that it runs and is version GK_CRIU_MIN_MAJOR or later. */
int gk_criu_find(const char *want, char *path, size_t pathlen, gk_error_t *err);

/*
 * Whether this process has the capabilities CRIU (run by it, as root) needs
 * to dump and restore the processes of `uid` (-1: of any user), from the
 * CapEff line of `status` (/proc/self/status). 0, or -EPERM with
 * "CAP_X missing (CapEff ...): what CRIU cannot do then" in err.
 */
int gk_criu_caps(const char *status, long uid, gk_error_t *err);

/* Who CRIU runs as (criu.c says why and with what): uid 0, root as it is;
 * any other, the job's user with its groups and `caps` as ambient
 * capabilities (bits by number). */
#define GK_CRIU_MAX_GROUPS 256
struct gk_criu_as {
	uid_t uid;
	gid_t gid;
	gid_t groups[GK_CRIU_MAX_GROUPS];
	int ngroups;
	unsigned long long caps;
};
/* CRIU as uid:gid for a dump (restore 0) or a restore (1). */
int gk_criu_as_user(struct gk_criu_as *as, uid_t uid, gid_t gid, int restore, gk_error_t *err);
/* 1 when `status` (/proc/self/status) has every capability in CapBnd. */
int gk_criu_bounding_full(const char *status);

/* Run CRIU with argv[1..] = args (NULL-terminated), no shell, as `as` (NULL:
 * as this process is), keep[0] and keep[1] kept open in the child (for -D
 * /proc/self/fd/N, --pidfile /proc/self/fd/M/NAME; -1 for none; never 0..2
 * nor GK_CRIU_INHERIT_FD..+2, which the child sets: gk_criu_fd gives one
 * that is not), the fds of inherit[0..2] as the child's
 * GK_CRIU_INHERIT_FD + 0..2 (for --inherit-fd; NULL: none), stdin_fd as its
 * stdin (-1: /dev/null, as its stderr always is), log_fd as its stdout (for
 * `-o -`; -1: /dev/null). On failure err holds the last error lines of
 * log_fd: a buffer of GK_SHEP_ERRLEN, not a gk_error_t, for those lines do
 * not fit in one (criu.c, log_tail). */
int gk_criu_run(const char *criu, const char *const *args, const int keep[2], const int *inherit,
		int stdin_fd, int log_fd, const struct gk_criu_as *as, char *err, size_t errlen);
/* A copy of fd (close-on-exec) numbered above what gk_criu_run sets in its
 * child, for keep; -errno on failure. */
int gk_criu_fd(int fd);

/* ---- the process tree (tree.c) ---- */

/* Every process of the tree under `prog` (prog included), parents first. */
int gk_tree_list(pid_t prog, pid_t *pids, size_t max, size_t *n, gk_error_t *err);

/* Refuse (-EPERM, naming pid and uid) unless every process has real,
 * effective and saved uid == uid and gid == gid. */
int gk_tree_check_owner(const pid_t *pids, size_t n, uid_t uid, gid_t gid, gk_error_t *err);

/* 1 when the ancestry of `pid` reaches `prog`, the root of the task's tree. */
int gk_pid_in_tree(pid_t pid, pid_t prog);

/* 1 when pid has the gpuckpt runtime loaded and catches signo (its
 * /proc status SigCgt): the runtime acts on the signal itself. */
int gk_pid_runtime_catches(pid_t pid, int signo);

/* 1 when a thread of pid is the runtime's agent (named GK_AGENT_THREAD):
 * the process will report at a checkpoint. A child forked without exec has
 * the runtime's handlers but no agent. */
int gk_pid_has_agent(pid_t pid);

/* 1 when pid has the runtime and its agent, catches signo and has the OpenCL ICD loader
 * (libOpenCL.so) mapped: a runtime that reports at a checkpoint although no
 * driver locks its process (README.md, "OpenCL"). */
int gk_pid_opencl_runtime(pid_t pid, int signo);

/* Send signo to the processes of the tree under prog that have the runtime
 * and its agent and catch it (runtime 1), or to all the others (runtime 0),
 * the latter through sigqueue() with GK_SIGVAL_AS_USUAL, which a forked
 * child's handler lets through. Returns how many were sent it. */
int gk_tree_signal(pid_t prog, int signo, int runtime);

/* Every process of the tree under prog gets signo, whatever it is (prog
 * alone when the tree cannot be listed); how many did. */
int gk_tree_kill(pid_t prog, int signo);

/* The rest of the line after key (e.g. "\nTgid:") in /proc/PID/status,
 * into out. 0, -ESRCH (gone) or -ENOENT (no such line). */
int gk_pid_status_field(pid_t pid, const char *key, char *out, size_t outlen);

/* What the shepherd refuses to checkpoint (checkpoint.c, limits()). */
#define GK_SHEP_MIG_CAPS "/dev/nvidia-caps/"
#define GK_SHEP_MPS_COMM "nvidia-cuda-mps"

/* The first process of pids with a descriptor open on a path that begins
 * with prefix: 1 with *pid and path (the link's target) filled, 0 none. */
int gk_tree_find_open(const pid_t *pids, size_t n, const char *prefix, pid_t *pid, char *path,
		      size_t pathlen);

/* The first descriptor of pids open on a /proc file of a thread other than
 * its process's first (/proc/P/task/T/..., T != P), as pthread_setname_np
 * holds one for a moment: CRIU dumps it but cannot restore it, since it
 * opens files before it makes threads. 1 with *pid, *fdnum and path (the
 * link's target) filled, 0 none. */
int gk_tree_find_thread_file(const pid_t *pids, size_t n, pid_t *pid, int *fdnum, char *path,
			     size_t pathlen);

/* The first process of pids tied to processes outside the tree (links.c):
 * a TCP connection, a connected UDP socket, an RDMA device, an MPI library.
 * 1 with *pid and what (a phrase naming it) filled, 0 none. */
int gk_tree_find_link(const pid_t *pids, size_t n, int tcp_close, pid_t *pid, char *what,
		      size_t len);

/* The first process of the node whose name (comm) begins with prefix:
 * its pid, or 0. */
pid_t gk_find_process(const char *prefix);

/* CRIU gets the task's stdio as these three descriptors, for --inherit-fd. */
#define GK_CRIU_INHERIT_FD 10

/* ---- a restored tree held stopped for the driver (hold.c) ---- */

/* One thread let run under ptrace while the rest of its process stays in
 * the group stop CRIU's --leave-stopped left it in. */
struct gk_held_thread {
	pid_t tid;
	int traced, running;
	int sig;       /* a signal it was taking when seized, handed on */
	uint64_t mask; /* its signal mask, put back before it is detached */
	int restarts;  /* times gk_hold_tend let it go on after a stop */
};

/* Seize thread tid of the stopped process pid, check that it is pid's,
 * block its signals and let it run: 0, or -errno with err naming both. */
int gk_hold_run_thread(pid_t pid, pid_t tid, struct gk_held_thread *h, gk_error_t *err);

/* Until *done is set, let each held thread that is trapped again (a signal
 * it takes, a new stop) go on; in the thread that seized them, while the
 * driver's calls that wait on them run in another. */
void gk_hold_tend(struct gk_held_thread *h, size_t n, atomic_int *done);

/* Stop it again, give back its mask and detach it into the group stop. */
void gk_hold_stop_thread(struct gk_held_thread *h);

/* SIGSTOP to every process of the tree under prog, listed again until no
 * new one appears (pids, *n: the list), and wait until each of their
 * threads is stopped (a vfork child caught before its exec is let go on to
 * it first, or its parent never stops): 0, or -errno with err naming one
 * that did not, and then nothing of the tree is left stopped. */
int gk_hold_stop_tree(pid_t prog, pid_t *pids, size_t max, size_t *n, gk_error_t *err);

/* SIGCONT to every process of the tree under prog: it runs. */
void gk_hold_release(pid_t prog);

/* SIGKILL to every process of the tree under prog: a tree held stopped is
 * never left behind half restored. */
void gk_hold_kill(pid_t prog);

/* ---- a deadline for calls that may never return (watchdog.c) ---- */

struct gk_watchdog {
	char name[64];        /* what the messages begin with */
	char what[160];       /* the call under way (gk_watchdog_note) */
	char on_expire[160];  /* what expire does, for the message */
	double secs, grace;
	void (*expire)(void *);
	void *arg;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_condattr_t ca;
	int running, done, fired;
};

/* Start watching: unless gk_watchdog_stop comes within secs, an error names
 * the call under way, expire(arg) runs, and if stop has not come grace
 * seconds after that, the process ends with status 1. 0 or -errno. */
int gk_watchdog_start(struct gk_watchdog *w, const char *name, double secs, double grace,
		      void (*expire)(void *), void *arg, const char *on_expire);

/* Name the call about to be made (printf-like), for the message. */
void gk_watchdog_note(struct gk_watchdog *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Done: 1 when the deadline had passed (expire ran), else 0. */
int gk_watchdog_stop(struct gk_watchdog *w);

/* ---- the program's stdio (stdio.c) ---- */

/* Fill s->stdio and s->stdio_task from <proc>/<prog>/fd/0..2 and this
 * process's own 0..2. */
void gk_stdio_record(const char *proc, pid_t prog, struct gk_seal *s);

enum gk_stdio_how {
	GK_STDIO_CRIU,	   /* CRIU reopens it from its image */
	GK_STDIO_INHERIT,  /* --inherit-fd arg: this shepherd's fd i, given to CRIU
			    * as GK_CRIU_INHERIT_FD + i */
	GK_STDIO_TERMINAL, /* the task's terminal: CRIU's own stdin (--shell-job) */
};

/* How restore gives the program its fd i back. */
enum gk_stdio_how gk_stdio_plan(const struct gk_seal *s, int i, char *arg, size_t len);

/* ---- several runtimes' folders in one task checkpoint (proc_parts.c) ---- */

struct gk_proc_part {
	pid_t pid;	   /* the process, as the shepherd sees it */
	char tmpname[256]; /* its runtime's folder in the root */
	char name[32];	   /* proc.PID in the task's folder */
	int moved;	   /* it is there now */
};

struct gk_proc_parts {
	size_t n;
	struct gk_proc_part p[GK_SEAL_MAX_PARTS];
};

/* Add the folder a runtime named in READY. -EINVAL (not a .tmp.ckpt name, or
 * one already added, or a pid already added) or -E2BIG, with err set. */
int gk_proc_parts_add(struct gk_proc_parts *ps, pid_t pid, const char *tmpname, gk_error_t *err);

/* pid's part, or NULL when it has none. */
const struct gk_proc_part *gk_proc_parts_of(const struct gk_proc_parts *ps, pid_t pid);

/* Move each folder from the root (rootfd, named root in messages) into the
 * task's folder ckptfd as proc.PID: each a folder of uid's, not a link, and
 * nothing replaced. <0 with err set; what moved stays marked moved. */
int gk_proc_parts_move_in(struct gk_proc_parts *ps, int rootfd, const char *root, int ckptfd,
			  uid_t uid, gk_error_t *err);

/* Every moved folder back under its own name in the root, before any
 * process is unlocked; a failure is logged (its runtime then stops its
 * process: it cannot load its device memory). */
void gk_proc_parts_move_back(struct gk_proc_parts *ps, int rootfd, int ckptfd);

/* What bytes(fd) counts in each part's folder, summed. */
uint64_t gk_proc_parts_bytes(const struct gk_proc_parts *ps, int ckptfd,
			     uint64_t (*bytes)(int dirfd));

/* ---- the socket (sock.c) ---- */

enum gk_msg_type { GK_MSG_HELLO_APP, GK_MSG_HELLO_TRANSPARENT, GK_MSG_READY, GK_MSG_REFUSE };

struct gk_msg {
	enum gk_msg_type type;
	char name[256]; /* READY: the .tmp folder */
	int assisted;
	const char *refused; /* REFUSE: what the process holds, in words */
	const char *refused_why; /* REFUSE: a whole reason instead, or NULL */
	char broken[64];     /* REFUSE broken: the CUDA error's name ("" otherwise) */
};

/* Parse one packet from the runtime; -EPROTO for anything but the
 * vocabulary, spelled exactly. */
int gk_msg_parse(const char *buf, size_t len, struct gk_msg *m);

/* Listen on a fresh abstract name; *name is what GPUCKPT_SHEPHERD holds. */
int gk_sock_listen(char *name, size_t namelen, gk_error_t *err);

/* Accept one peer that is the job's user inside the tree of prog; others
 * are closed without a word (and 0 is returned with *conn = -1). */
int gk_sock_accept(int listener, uid_t uid, pid_t prog, int *conn, pid_t *peer);

/* Listen on a given name (the one the restored tree has in its
 * environment, or the one the plugin chose). */
int gk_sock_listen_on(const char *name, gk_error_t *err);

/* 1 when name may be a socket name: 1 to 100 of [A-Za-z0-9._-]. */
int gk_sock_name_ok(const char *name);

/* Close a peer's connection without losing what was sent to it. */
void gk_sock_close(int conn);

/* Send LOCKED or ABORT <reason> (reason made printable, one line). */
int gk_sock_send(int conn, const char *what, const char *reason);

/* ---- the sequences ---- */

struct gk_shepherd {
	struct gk_shep_opts *o;
	/* o->dir, opened once and checked (fsafe.h: a trusted path, then the
	 * job's user's folders): the checkpoint root is never reached by its
	 * path again, which its owner could point elsewhere. */
	int dirfd;
	pid_t prog;   /* the task's program: the root of its tree, the shepherd's child */
	int listener; /* -1: none */
	char sockname[108];
	char criu[4096];
	struct gk_cudackpt cuda;
	int have_cuda;
	int signo; /* the trigger signal being acted on (supervise.c) */
};

/* A line in the task folder's gpuckpt.events (common/events.h; events.c):
 * a transparent checkpoint (kind GK_EV_CHECKPOINT) or restore
 * (GK_EV_RESTORE) of sh->prog, ret 0 or -errno; seq, bytes, seconds and (for
 * a checkpoint) gpus of a successful one. Never fails the caller. */
void gk_shep_event(const struct gk_shepherd *sh, enum gk_event_kind kind, int ret, uint64_t seq,
		   uint64_t bytes, double seconds, unsigned gpus);

/* Returns 0 when the tree was checkpointed (and, for an exit trigger, is
 * gone); <0 when it goes on running. */
int gk_checkpoint(struct gk_shepherd *sh, int exit_after);

/* Restore the newest transparent checkpoint of o->dir; sets sh->prog. */
int gk_restore(struct gk_shepherd *sh);

/* Wait for the tree; returns the exit status for the shepherd. */
int gk_supervise(struct gk_shepherd *sh);

#endif
