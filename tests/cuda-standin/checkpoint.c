/*
 * checkpoint.c - the driver's checkpoint API (cuCheckpointProcess*), in the
 * stand-in's second build only: ckpt/libcuda.so.1 (local.mk). The first
 * build, .libs/libcuda.so.1, has no such entry points, as a driver older
 * than 570 has none, and the tests that need that keep it.
 *
 * With it, gpuckpt-shepherd's whole transparent path runs on a machine
 * without a GPU: its probe, the lock, the checkpoint, CRIU's dump and
 * restore, the driver's restore and the unlock. A stand-in process keeps its
 * "device" memory in its own address space, so CRIU carries it and there is
 * nothing to release or copy back: the calls only keep each process's state
 * as the driver reports it, and refuse the calls the driver refuses in that
 * state. That is all a test of the shepherd and the runtime around it can
 * observe; it is never evidence of what the driver does on a GPU.
 *
 * Who asks: the shepherd, for the job's processes, from another process,
 * and after CRIU's restore from yet another (`gpuckpt-shepherd restore`);
 * and the process itself, whose runtime waits for its own unlock. So the
 * state is not the caller's: it is a file named by the process's pid in
 * GPUCKPT_STANDIN_CKPT_DIR (made by the test, and set for the shepherd and
 * the job alike), absent while the process runs (RUNNING), written by Lock,
 * Checkpoint and Restore (readable by all), removed by Unlock. Without that
 * variable every call is CUDA_ERROR_NOT_SUPPORTED: a process that cannot
 * read its state does not wait for its unlock, and runs on while CRIU dumps
 * it.
 *
 * A process is the driver's when it has this same library mapped (the same
 * file, by device and inode in /proc/PID/maps), which only a CUDA program
 * does (the runtime does not link libcuda); any other is
 * CUDA_ERROR_NOT_FOUND, as the driver answers for a process that never
 * initialised CUDA.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "standin.h"

static const char *state_dir(void)
{
	const char *d = getenv("GPUCKPT_STANDIN_CKPT_DIR");

	return d && d[0] == '/' ? d : NULL;
}

/* 1 when process pid maps this library, 0 when not, -1 when its maps cannot
 * be read (it is gone, or not ours to see). */
static int maps_this_library(int pid)
{
	static int have_self;
	static dev_t self_dev;
	static ino_t self_ino;
	char path[64], line[512];
	FILE *f;
	int found = 0;

	if (!have_self) {
		Dl_info info;
		struct stat st;

		if (!dladdr((void *)maps_this_library, &info) || !info.dli_fname ||
		    stat(info.dli_fname, &st) < 0)
			return -1;
		self_dev = st.st_dev;
		self_ino = st.st_ino;
		have_self = 1;
	}
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned int major, minor;
		unsigned long ino;

		/* start-end perms offset major:minor inode path */
		if (sscanf(line, "%*s %*s %*s %x:%x %lu", &major, &minor, &ino) == 3 &&
		    (ino_t)ino == self_ino && makedev(major, minor) == self_dev)
			found = 1;
	}
	fclose(f);
	return found;
}

static void state_path(char *buf, size_t len, int pid)
{
	snprintf(buf, len, "%s/%d", state_dir(), pid);
}

/* The recorded state; RUNNING when there is no record. */
static CUprocessState read_state(int pid)
{
	char path[4096], c = 0;
	int fd;

	state_path(path, sizeof(path), pid);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return CU_PROCESS_STATE_RUNNING;
	if (read(fd, &c, 1) != 1)
		c = '0' + CU_PROCESS_STATE_FAILED;
	close(fd);
	return (CUprocessState)(c - '0');
}

/* Recorded whole (a new file renamed over the old), so that a reader never
 * sees half of it. RUNNING removes the record. */
static int write_state(int pid, CUprocessState s)
{
	char path[4096], tmp[4200], c = (char)('0' + s);
	int fd, ok;

	state_path(path, sizeof(path), pid);
	if (s == CU_PROCESS_STATE_RUNNING)
		return unlink(path) == 0 || errno == ENOENT ? 0 : -1;
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -1;
	ok = write(fd, &c, 1) == 1;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) < 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* The caller's question about pid answered so far: CUDA_SUCCESS when pid is
 * a stand-in CUDA process whose state may be asked. */
static CUresult whose(int pid)
{
	int m;

	if (!state_dir()) {
		si_msg("cuCheckpointProcess*: GPUCKPT_STANDIN_CKPT_DIR (an absolute folder) is not "
		       "set: the stand-in keeps each process's checkpoint state there");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (pid <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	m = maps_this_library(pid);
	return m == 1 ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

/* One transition, traced under the entry point's name fn: from the state
 * the call needs to the one it leaves. */
static CUresult transition(const char *fn, int pid, CUprocessState from, CUprocessState to)
{
	CUresult r = whose(pid);
	CUprocessState s;

	if (r != CUDA_SUCCESS)
		return si_traced(fn, r, "pid %d", pid);
	s = read_state(pid);
	if (s != from)
		return si_traced(fn, CUDA_ERROR_ILLEGAL_STATE, "pid %d is in state %d, not %d", pid,
				 (int)s, (int)from);
	if (write_state(pid, to) < 0) {
		si_msg("%s: pid %d: cannot record its state in %s: %s", fn, pid, state_dir(),
		       strerror(errno));
		return si_traced(fn, CUDA_ERROR_OPERATING_SYSTEM, "pid %d", pid);
	}
	return si_traced(fn, CUDA_SUCCESS, "pid %d: state %d", pid, (int)to);
}

CUresult cuCheckpointProcessGetState(int pid, CUprocessState *state)
{
	CUresult r;

	if (!state)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	r = whose(pid);
	if (r != CUDA_SUCCESS)
		SI_RETF(r, "pid %d", pid);
	*state = read_state(pid);
	SI_RETF(CUDA_SUCCESS, "pid %d: state %d", pid, (int)*state);
}

/* The driver restores a process through one of its threads, which the
 * shepherd lets run while the tree is held stopped. The stand-in restores
 * nothing inside the process, so it names none (the shepherd then lets
 * none run). */
CUresult cuCheckpointProcessGetRestoreThreadId(int pid, int *tid)
{
	CUresult r = whose(pid);

	if (!tid)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	if (r != CUDA_SUCCESS)
		SI_RETF(r, "pid %d", pid);
	SI_RETF(CUDA_ERROR_NOT_SUPPORTED, "pid %d: the stand-in has no restore thread", pid);
}

CUresult cuCheckpointProcessLock(int pid, CUcheckpointLockArgs *args)
{
	(void)args;
	return transition(__func__, pid, CU_PROCESS_STATE_RUNNING, CU_PROCESS_STATE_LOCKED);
}

CUresult cuCheckpointProcessCheckpoint(int pid, CUcheckpointCheckpointArgs *args)
{
	(void)args;
	return transition(__func__, pid, CU_PROCESS_STATE_LOCKED, CU_PROCESS_STATE_CHECKPOINTED);
}

/* The GPU pairs are not checked: a stand-in process's devices are what its
 * CUDA_VISIBLE_DEVICES was when it started, wherever it is restored. */
CUresult cuCheckpointProcessRestore(int pid, CUcheckpointRestoreArgs *args)
{
	(void)args;
	return transition(__func__, pid, CU_PROCESS_STATE_CHECKPOINTED, CU_PROCESS_STATE_LOCKED);
}

CUresult cuCheckpointProcessUnlock(int pid, CUcheckpointUnlockArgs *args)
{
	(void)args;
	return transition(__func__, pid, CU_PROCESS_STATE_LOCKED, CU_PROCESS_STATE_RUNNING);
}
