/*
 * agent.c - the runtime's part of transparent mode (see
 * runtime/shepherd/README.md for the whole design and the protocol).
 *
 * In a process started under gpuckpt-shepherd (GPUCKPT_SHEPHERD set), a
 * thread of the runtime waits for the trigger signals. When one arrives and
 * the process checkpoints transparently, the thread holds the program's
 * threads back at the driver, drains the devices, writes device memory with
 * the runtime's own pipeline (much faster than the driver's checkpoint), gives
 * the physical memory back, and hands the process to the shepherd, which locks
 * it through the driver, checkpoints it and dumps it with CRIU. The thread then
 * makes a driver call, which blocks while the process is locked: it returns
 * after a restore (on whatever node and GPU) or after the shepherd gave up,
 * and the thread maps device memory again and loads it back.
 *
 * A process that no driver locks (OpenCL only, on a CPU device: its state is
 * host memory, which CRIU carries) has its queues drained by the pipeline
 * and nothing written; after LOCKED the thread waits for the shepherd's
 * criu/ in its folder to go instead (runtime/shepherd/README.md, "OpenCL").
 */
#include "config.h"

#include "core/control/agent.h"
#include "core/control/coord.h"
#include "common/settings_env.h"
#include "core/interpose/uring.h"
#include "image/setfile.h"
#include "common/error.h"
#include "common/clock.h"
#include "core/placement/arena.h"
#include "core/interpose/managed.h"
#include "core/interpose/nccl.h"
#include "core/interpose/vmm.h"
#include "core/driver/driver.h"
#include "core/control/fork_maps.h"
#include "image/image.h"
#include "common/log.h"
#include "core/placement/numa.h"
#include "core/restore/restore.h"
#include "core/state/runtime.h"
#include "core/control/pipeline.h"
#include "core/capture/transfer.h"
#include "core/control/trigger.h"
#include "image/ckptname.h"
#include "common/shepherd_protocol.h"
#include "core/state/phase.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static sem_t wake;
static volatile sig_atomic_t wake_signo;
static int running; /* the thread is there */

static int agent_takes(void)
{
	if (!__atomic_load_n(&running, __ATOMIC_ACQUIRE))
		return 0;
	if (gk_rt.settings.mode == GK_MODE_TRANSPARENT)
		return 1;
	return gk_rt.settings.mode == GK_MODE_AUTO &&
	       !__atomic_load_n(&gk_rt.aware, __ATOMIC_ACQUIRE);
}

static void agent_signal(int signo)
{
	wake_signo = signo;
	sem_post(&wake);
}

/* ---- the socket ---- */

static int shepherd_connect(gk_error_t *err)
{
	struct sockaddr_un sa;
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	size_t n = strlen(gk_rt.settings.shepherd);
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	/* Abstract name: a NUL, then the name, no terminator counted. */
	memcpy(sa.sun_path + 1, gk_rt.settings.shepherd, n);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    connect(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)) < 0) {
		gk_errprintf(err, "cannot reach the shepherd at @%s: %s", gk_rt.settings.shepherd,
			     strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Anyone can bind an abstract name the shepherd has not bound (yet, or
	 * again after a restore): only root's socket is the shepherd. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != 0) {
		gk_errprintf(err, "@%s is not the shepherd's socket (its owner is not root)",
			     gk_rt.settings.shepherd);
		close(fd);
		return -1;
	}
	return fd;
}

static int say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(int fd, const char *fmt, ...)
{
	char msg[4096];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(msg))
		return -EMSGSIZE;
	while (send(fd, msg, (size_t)n, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* One message; "" when the shepherd closed the connection. */
static int hear(int fd, char *msg, size_t len)
{
	ssize_t n;

	do
		n = recv(fd, msg, len - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	msg[n] = 0;
	return 0;
}

/* An error's name as one word of the protocol ([A-Z0-9_]), "unknown" if it
 * is not one (a driver without cuGetErrorName for it, say). */
static const char *error_word(CUresult r)
{
	const char *name = gk_cu_name(r);
	size_t n = strlen(name);

	if (n == 0 || n > 63)
		return "unknown";
	for (size_t i = 0; i < n; i++)
		if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') ||
		      name[i] == '_'))
			return "unknown";
	return name;
}

/* 1 when msg is LOCKED; where it says this process's part of the task's
 * checkpoint will be (ckpt.S/proc.PID, under the root) goes into part, ""
 * when it says nothing (the process's folder becomes ckpt.N itself). The
 * shepherd is root (shepherd_connect), but the name is checked all the same:
 * the runtime opens it. */
static int locked(const char *msg, char *part, size_t len)
{
	size_t n = sizeof(GK_PROTO_LOCKED) - 1;
	uint64_t seq;
	const char *p;
	int pid;

	part[0] = 0;
	if (strncmp(msg, GK_PROTO_LOCKED, n) || (msg[n] && msg[n] != ' '))
		return 0;
	if (!msg[n])
		return 1;
	p = msg + n + 1;
	if (strncmp(p, GK_CKPT_PREFIX, sizeof(GK_CKPT_PREFIX) - 1) ||
	    !(p = gk_ckpt_parse_seq(p + sizeof(GK_CKPT_PREFIX) - 1, &seq)) || *p != '/' ||
	    gk_ckpt_parse_part(p + 1, &pid) < 0 || strlen(msg + n + 1) >= len) {
		gk_warn("transparent: the shepherd said '%s'; not a part's place", msg);
		return 1; /* locked all the same: the unlock is what follows */
	}
	snprintf(part, len, "%s", msg + n + 1);
	return 1;
}

/* ---- device memory ---- */

static uint64_t release_all(void)
{
	uint64_t bytes = 0;

	for (int i = 0; i < GK_MAX_DEVICES; i++)
		if (gk_arenas[i])
			bytes += gk_arena_release_memory(gk_arenas[i]);
	return bytes + gk_vmm_release_memory();
}

/* Map the arenas again and load the image in dir: after a restore, or when the
 * shepherd gave up. A failure here leaves the program without its memory. */
static void reload_all(const char *dir, const struct gk_manifest *m)
{
	gk_error_t err;
	struct gk_xfer_item *items = NULL;
	size_t nitems = 0;
	int *fds = NULL;
	uint64_t bytes = 0;
	double t0 = gk_now();
	int ret = 0;

	for (int i = 0; i < GK_MAX_DEVICES && !ret; i++) {
		CUresult r;

		if (!gk_arenas[i] || !gk_arenas[i]->ctx)
			continue;
		gk_real.cuCtxPushCurrent_v2(gk_arenas[i]->ctx);
		r = gk_arena_remap_memory(gk_arenas[i]);
		gk_real.cuCtxPopCurrent_v2(NULL);
		if (r != CUDA_SUCCESS) {
			gk_errprintf(&err, "device %d: cannot map its memory again: %s", i,
				     gk_cu_name(r));
			ret = -ENOMEM;
		}
	}
	if (!ret && gk_vmm_remap_memory() < 0) {
		gk_errprintf(&err, "cannot map the memory the program mapped itself again");
		ret = -ENOMEM;
	}
	if (!ret)
		ret = gk_restore_items(dir, m, &items, &nitems, &fds, &bytes, &err);
	if (!ret)
		ret = gk_xfer_load(items, nitems, m->chunk_size, gk_rt.settings.writers, &err);
	gk_restore_items_free(m, items, fds);
	if (ret < 0) {
		gk_error(
		    "transparent: %s: cannot load device memory back: %s; stopping the program "
		    "rather than letting it run without its device memory",
		    dir, err.text);
		fflush(NULL);
		_exit(EXIT_FAILURE);
	}
	gk_notice("transparent: device memory loaded: %llu bytes in %.2f s",
		  (unsigned long long)bytes, gk_now() - t0);
}

/*
 * Until the driver lets the process run again: after a restore, or after the
 * shepherd gave up. Not every driver call waits for the lock (on the H100,
 * driver 580, cuCtxSynchronize of an idle context returned at once), so the
 * process's own checkpoint state is watched; a driver without that query
 * gets a call that does wait.
 */
static void wait_for_unlock(void)
{
	pid_t self = getpid();
	size_t free_b, total_b;

	for (;;) {
		CUprocessState st;
		CUresult r = gk_real.cuCheckpointProcessGetState
				 ? gk_real.cuCheckpointProcessGetState(self, &st)
				 : CUDA_ERROR_NOT_SUPPORTED;
		struct timespec ts = {0, 2000000};

		if (r == CUDA_SUCCESS && st == CU_PROCESS_STATE_RUNNING)
			return;
		if (r != CUDA_SUCCESS) {
			gk_real.cuMemGetInfo_v2(&free_b, &total_b);
			return;
		}
		nanosleep(&ts, NULL);
	}
}

/* 1 when this process uses CUDA: cuInit succeeded in it, it has device
 * memory of the runtime's, or the driver answers for it (what the shepherd
 * asks before it locks it). Any one of them keeps the CUDA path, which was
 * the only one before OpenCL: a CUDA process taken for one the driver does
 * not lock would not wait for the driver's unlock, and would abort its
 * folder while CRIU dumps it. Only a process that never initialised CUDA
 * (an OpenCL program) waits on the folder instead. */
static int uses_cuda(void)
{
	CUprocessState st;

	if (__atomic_load_n(&gk_rt.cuda_inited, __ATOMIC_ACQUIRE))
		return 1;
	for (int i = 0; i < GK_MAX_DEVICES; i++)
		if (__atomic_load_n(&gk_arenas[i], __ATOMIC_ACQUIRE))
			return 1;
	return gk_real.cuCheckpointProcessGetState &&
	       gk_real.cuCheckpointProcessGetState(getpid(), &st) == CUDA_SUCCESS;
}

/*
 * Until the shepherd is done with a process no driver locks: it made criu/ in
 * the folder before LOCKED, and that goes when the folder is published as
 * ckpt.N (then also in a restored process: its folder was published before it
 * was dumped) or when the checkpoint failed. The thread is frozen here while
 * CRIU dumps the process.
 */
static void wait_for_folder(const char *tmpdir)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/" GK_CRIU_DIR, tmpdir);
	for (;;) {
		struct timespec ts = {0, 2000000};

		if (lstat(path, &st) < 0 && errno == ENOENT)
			return;
		nanosleep(&ts, NULL);
	}
}

/*
 * One transparent checkpoint. Returns 1 when this process is a restored one
 * (it goes on as if the signal had never come), 0 when no checkpoint was taken
 * (the signal then takes its usual course, gk_trigger_as_usual: a continue
 * trigger at its default ends nothing). A successful checkpoint never
 * returns here: CRIU ends the process after dumping it.
 */
static int checkpoint(int signo)
{
	char msg[GK_PROTO_MSG_MAX], path[4200], label[128], part[GK_PROTO_MSG_MAX] = "";
	struct gk_pipeline P;
	struct gk_pipeline_opts o = {.kind = GK_CKPT_TRANSPARENT, .label = label};
	struct gk_nccl_cut cut;
	struct gk_member member;
	gk_error_t err;
	const char *name = "-";
	uint64_t released = 0;
	int fd, restored = 0, cuda = uses_cuda(), assisted = 0;
	/* Phase times, for the info line that says where a slow one went. */
	double t0 = gk_now(), t_hello = 0;
	struct stat st;

	fd = shepherd_connect(&err);
	if (fd < 0) {
		gk_error("transparent: %s: no checkpoint taken", err.text);
		return 0;
	}
	if (say(fd, GK_PROTO_HELLO_TRANSPARENT) < 0)
		goto out_close;
	t_hello = gk_now();
	/* NCCL's communicators hold memory and sockets of other processes:
	 * every rank is brought to the same collective and they are taken
	 * down before anything is locked (interpose/nccl.h), and made again
	 * below whatever happens next. */
	if (gk_nccl_quiesce(&cut, &err) < 0) {
		gk_warn("transparent: no checkpoint taken: cannot bring the NCCL ranks to a "
			"common point: %s",
			err.text);
		if (say(fd, GK_PROTO_REFUSE " " GK_PROTO_REFUSE_NCCL) == 0)
			hear(fd, msg, sizeof(msg));
		goto out_close;
	}
	/* GPUCKPT_TASKS=nccl: a part that is not a member of the step's set
	 * would never be restored (the plugin restores complete sets only). */
	if (gk_rt.settings.tasks_nccl && gk_coord_multi() && !cut.agreed) {
		gk_warn("transparent: no checkpoint taken: " GK_ENV(TASKS) "=nccl, but this "
			"process holds no NCCL communicator of all %u tasks of the step, so its "
			"part could not be one of the step's set",
			gk_rt.settings.step_tasks);
		if (say(fd, GK_PROTO_REFUSE " " GK_PROTO_REFUSE_NCCL_SET) == 0)
			hear(fd, msg, sizeof(msg));
		goto out_close;
	}
	/* What the driver cannot save either is refused before anything is
	 * locked: a checkpoint that cannot be restored is worse than none
	 * (tracking's hook, in the refuse phase). The runtime's own dump of
	 * device memory, unless it cannot hold everything (the hold phase). */
	snprintf(label, sizeof(label), "transparent (%s)", gk_signal_name(signo));
	o.assist = gk_rt.settings.assist;
	if (cut.agreed) {
		/* The step's ranks write their parts under one number, as one set. */
		member = (struct gk_member){.sequence = cut.sequence,
					    .id = cut.id,
					    .members = gk_rt.settings.step_tasks,
					    .member = gk_rt.settings.task,
					    .agreement = GK_SET_AGREEMENT_NCCL};
		o.member = &member;
	}
	gk_pipeline_init(&P, &o);
	P.t0 = t0;
	gk_pipeline_run(&P);
	if (P.ret == -ENOTRECOVERABLE) {
		/* The pipeline said it and opened the gate; the shepherd names
		 * it too and takes no checkpoint. */
		if (say(fd, GK_PROTO_REFUSE " " GK_PROTO_REFUSE_BROKEN " %s",
			error_word(P.broken)) == 0)
			hear(fd, msg, sizeof(msg));
		goto out_close;
	}
	if (P.ret < 0) {
		if (P.v.word && say(fd, GK_PROTO_REFUSE " %s", P.v.word) == 0)
			hear(fd, msg, sizeof(msg));
		goto out_close;
	}
	/* The step's set is recorded by task 0 now: after the dump no process
	 * of the step is left to do it (coord.h). */
	if (P.sealed && cut.agreed && (uint64_t)P.txn.sequence == cut.sequence)
		(void)gk_coord_record_cut(cut.sequence, cut.id);
	if (P.sealed) {
		/* CRIU would record the open folder under a name the commit
		 * changes, and the restore could not reopen it. */
		gk_store_detach(&P.txn);
		name = strrchr(P.txn.tmpdir, '/') + 1;
		if (P.assisted && cuda)
			released = release_all();
		gk_info(
		    "transparent: %s: wrote %llu bytes (%llu bytes of all-zero chunks recorded, "
		    "not written) in %.2f s, released %llu bytes of device memory",
		    name, (unsigned long long)P.bytes, (unsigned long long)P.zero_bytes,
		    gk_now() - t0, (unsigned long long)released);
		gk_info("transparent: %s: phases: hello %.3f s, gate %.3f s, drain %.3f s, image "
			"%.3f s, seal %.3f s, release %.3f s",
			name, t_hello - t0, P.t_gate - t_hello, P.t_drained - P.t_gate,
			P.t_image - P.t_drained, P.t_seal - P.t_image, gk_now() - P.t_seal);
	}
	assisted = P.assisted && cuda;
	/* The driver's checkpoint cannot hold managed memory (managed.h). */
	gk_managed_release();
	if (say(fd, GK_PROTO_READY " %s %d", name, assisted) < 0 || hear(fd, msg, sizeof(msg)) < 0)
		msg[0] = 0;
	if (locked(msg, part, sizeof(part))) {
		close(fd);
		fd = -1;
		if (cuda)
			wait_for_unlock();
		else if (P.sealed)
			wait_for_folder(P.txn.tmpdir);
	} else {
		gk_warn("transparent: the shepherd took no checkpoint: %s",
			!strncmp(msg, GK_PROTO_ABORT " ", sizeof(GK_PROTO_ABORT))
				? msg + sizeof(GK_PROTO_ABORT)
				: "it closed the connection");
	}
	gk_managed_reload();
	/* Restored: the shepherd committed the folder before the process ended.
	 * A part of the task's checkpoint is where LOCKED said; when the
	 * checkpoint failed the shepherd moved it back before the unlock. */
	if (P.sealed) {
		if (part[0])
			snprintf(path, sizeof(path), "%s/%s", gk_rt.settings.dir, part);
		else
			snprintf(path, sizeof(path), "%s/" GK_CKPT_FMT, gk_rt.settings.dir,
				 (uint64_t)P.txn.sequence);
		restored = stat(path, &st) == 0;
		if (assisted)
			reload_all(restored ? path : P.txn.tmpdir, P.m);
		if (!restored)
			gk_store_abort(&P.txn);
	}
	/* Before the gate opens: the OpenCL objects may move to another
	 * device (interpose/opencl.c). */
	if (restored)
		gk_phase_resumed(path);
	gk_pipeline_release(&P);
	if (restored)
		gk_notice("transparent: restored from %s; the program goes on", path);
out_close:
	if (fd >= 0)
		close(fd);
	gk_nccl_resume();
	return restored;
}

static void *agent(void *arg)
{
	(void)arg;
	gk_driver_relax();
	/* Idle until a signal: learn the machine's topology now rather than
	 * in the first checkpoint's copy threads, inside Slurm's GraceTime. */
	gk_numa_preload();
	for (;;) {
		int signo, fd;
		gk_error_t err;

		while (sem_wait(&wake) < 0 && errno == EINTR)
			;
		signo = wake_signo;
		if (!agent_takes()) {
			/* An API user checkpoints itself: the shepherd only needs to
			 * know, so that it waits for the program instead. */
			fd = shepherd_connect(&err);
			if (fd >= 0) {
				say(fd, GK_PROTO_HELLO_APP);
				close(fd);
			}
			continue;
		}
		if (!checkpoint(signo))
			gk_trigger_as_usual(signo);
		/* The same request may have come twice (from Slurm and from the
		 * shepherd), and a restored process must not start over at once. */
		while (sem_trywait(&wake) == 0)
			;
	}
	return NULL;
}

/* Registered with the triggers once the thread runs (trigger.h). */
static const struct gk_trigger_taker taker = {
	.signal = agent_signal,
	.takes = agent_takes,
};

/*
 * A child forked without exec has no agent thread (fork copies only the
 * calling thread) and cannot use its parent's CUDA state: it never reports
 * to the shepherd, which sees no GK_AGENT_THREAD in it and does not wait for
 * it. CRIU dumps it as part of the tree; the trigger signals it gets from
 * outside meanwhile are held (gk_triggers_follow).
 */
static void forked_child(void)
{
	__atomic_store_n(&running, 0, __ATOMIC_RELEASE);
	gk_triggers_follow();
}

/*
 * At load, in the constructor: before the program runs any code of its own.
 * Not at gk_agent_start, which waits for the first CUDA call: PyTorch makes
 * its TCPStore (and so libuv's loop, which reads UV_USE_IO_URING once per
 * process) in init_process_group, before it touches CUDA, and the variables
 * must also reach processes that never use CUDA (torchrun's launcher, which
 * hosts the store). A value the job set stays.
 */
void gk_agent_prepare_env(void)
{
	if (!gk_rt_shepherded())
		return;
	/* NCCL's RAS thread keeps TCP connections to the other ranks for the
	 * whole process, beyond its communicators, which CRIU could not carry
	 * (docs/nccl.md). Read by NCCL at its first communicator. */
	setenv("NCCL_RAS_ENABLE", "0", 0);
	/* libuv (PyTorch's TCPStore server) would put its file operations on
	 * io_uring, whose rings CRIU cannot dump (shepherd/links.c refuses
	 * them by name); some of its versions make a ring for the loop itself
	 * whatever this says, which uring.c answers. */
	setenv("UV_USE_IO_URING", "0", 0);
	gk_uring_refuse();
}

void gk_agent_start(void)
{
	pthread_t t;
	pthread_attr_t attr;
	sigset_t all, old;

	if (!gk_rt_shepherded())
		return;
	if (sem_init(&wake, 0, 0) < 0)
		return;
	/* The thread must never take the program's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &attr, agent, NULL) == 0) {
		/* The shepherd tells a process that will report by this name. */
		(void)pthread_setname_np(t, GK_AGENT_THREAD);
		__atomic_store_n(&running, 1, __ATOMIC_RELEASE);
		gk_trigger_set_taker(&taker);
		gk_fork_maps_guard();
		(void)pthread_atfork(NULL, NULL, forked_child);
	} else {
		gk_warn("transparent: cannot start the runtime's thread: %s; no transparent "
			"checkpoint in this process",
			strerror(errno));
	}
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
