/*
 * test-ckpt.c - the checkpoint API of the stand-in's second build
 * (checkpoint.c, ckpt/libcuda.so.1), as the shepherd calls it: each
 * process's state, kept in GPUCKPT_STANDIN_CKPT_DIR, through Lock,
 * Checkpoint, Restore and Unlock, the calls made in the wrong state refused
 * as the driver refuses them, and only processes that map this library
 * answered for. Run by test-ckpt.sh against that build.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tap.h"

static CUprocessState state_of(int pid, CUresult *rc)
{
	CUprocessState s = CU_PROCESS_STATE_FAILED;

	*rc = cuCheckpointProcessGetState(pid, &s);
	return s;
}

/* A child that waits to be killed: fork alone keeps this library mapped;
 * with exec it runs sleep(1), which does not map it. */
static pid_t child(int exec_sleep)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (exec_sleep)
			execl("/bin/sleep", "sleep", "60", (char *)NULL);
		pause();
		_exit(0);
	}
	/* Until the exec has happened: its maps are sleep's then. */
	if (exec_sleep)
		for (int i = 0; i < 200; i++) {
			char path[64], exe[256] = "";
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
			n = readlink(path, exe, sizeof(exe) - 1);
			if (n > 0 && strstr(exe, "sleep"))
				break;
			usleep(10000);
		}
	return pid;
}

static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

int main(void)
{
	char dir[] = "/tmp/gk-standin-ckpt.XXXXXX", file[256];
	CUcheckpointLockArgs la;
	CUcheckpointCheckpointArgs ca;
	CUcheckpointRestoreArgs ra;
	CUcheckpointUnlockArgs ua;
	int self = (int)getpid(), tid = 0;
	CUprocessState s;
	struct stat st;
	CUresult rc, call;
	pid_t pid;

	plan(10);
	memset(&la, 0, sizeof(la));
	memset(&ca, 0, sizeof(ca));
	memset(&ra, 0, sizeof(ra));
	memset(&ua, 0, sizeof(ua));
	unsetenv("GPUCKPT_STANDIN_CKPT_DIR");
	state_of(self, &rc);
	ok(rc == CUDA_ERROR_NOT_SUPPORTED, "without GPUCKPT_STANDIN_CKPT_DIR: not supported (%d)",
	   (int)rc);
	if (!mkdtemp(dir)) {
		printf("Bail out! mkdtemp %s failed\n", dir);
		return 1;
	}
	setenv("GPUCKPT_STANDIN_CKPT_DIR", dir, 1);
	snprintf(file, sizeof(file), "%s/%d", dir, self);
	s = state_of(self, &rc);
	ok(rc == CUDA_SUCCESS && s == CU_PROCESS_STATE_RUNNING, "this process: RUNNING");

	pid = child(1);
	state_of(pid, &rc);
	ok(rc == CUDA_ERROR_NOT_FOUND, "a process that does not map the driver: not found (%d)",
	   (int)rc);
	end(pid);
	pid = child(0);
	s = state_of(pid, &rc);
	ok(rc == CUDA_SUCCESS && s == CU_PROCESS_STATE_RUNNING,
	   "another process that maps it (a fork): RUNNING");
	end(pid);

	ok(cuCheckpointProcessUnlock(self, &ua) == CUDA_ERROR_ILLEGAL_STATE,
	   "unlock of a running process: illegal state");
	call = cuCheckpointProcessLock(self, &la);
	s = state_of(self, &rc);
	ok(call == CUDA_SUCCESS && rc == CUDA_SUCCESS && s == CU_PROCESS_STATE_LOCKED &&
	       stat(file, &st) == 0 && (st.st_mode & 0777) == 0644,
	   "lock: LOCKED, recorded in a file the process can read (%s)", file);
	ok(cuCheckpointProcessLock(self, &la) == CUDA_ERROR_ILLEGAL_STATE,
	   "lock of a locked process: illegal state");
	call = cuCheckpointProcessCheckpoint(self, &ca);
	s = state_of(self, &rc);
	ok(call == CUDA_SUCCESS && rc == CUDA_SUCCESS && s == CU_PROCESS_STATE_CHECKPOINTED &&
	       cuCheckpointProcessUnlock(self, &ua) == CUDA_ERROR_ILLEGAL_STATE,
	   "checkpoint: CHECKPOINTED, and an unlock before the restore is refused");
	ok(cuCheckpointProcessGetRestoreThreadId(self, &tid) == CUDA_ERROR_NOT_SUPPORTED,
	   "no restore thread is named");
	ok(cuCheckpointProcessRestore(self, &ra) == CUDA_SUCCESS &&
	       state_of(self, &rc) == CU_PROCESS_STATE_LOCKED &&
	       cuCheckpointProcessUnlock(self, &ua) == CUDA_SUCCESS &&
	       state_of(self, &rc) == CU_PROCESS_STATE_RUNNING && stat(file, &st) < 0,
	   "restore: LOCKED; unlock: RUNNING, the record gone");
	rmdir(dir);
	return done_testing();
}
