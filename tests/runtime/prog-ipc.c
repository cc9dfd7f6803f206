/*
 * Two processes sharing device memory through legacy CUDA IPC, as the ranks
 * of a node do: the parent allocates a buffer (cuMemAlloc), exports it
 * (cuIpcGetMemHandle) and passes the handle over a pipe to a child (this
 * program again, exec'd with --child), which opens it (cuIpcOpenMemHandle).
 * Every step the parent rewrites the first half from what it read of the
 * second; the child reads the first half through its mapping and rewrites the
 * second from it (each word also from the word it replaces); each keeps a running checksum. At the end each prints its
 * checksum, so a run under gpuckpt is compared with a native one.
 *
 *   prog-ipc [--steps N] [--checkpoint-at K] [--exit-after-checkpoint]
 *            [--peek] [--parent-delay-ms MS] [--other after|first]
 *
 * --checkpoint-at K: both ask for a checkpoint at step K and print what
 * gpuckpt_point() answered; with --exit-after-checkpoint both end once theirs
 * is saved. A restart (GPUCKPT_RESTORE=auto; the child's checkpoints are in
 * GPUCKPT_DIR/child) runs the setup again, exchanging a new handle, and
 * resumes both at the step: the checksums must be the uninterrupted run's,
 * and the child's mapping at the address it had (printed).
 *
 * --peek: a restored child reads the parent's half right after its restore
 * point, before the parent's first turn (the parent waits for it), and says
 * whether it is what it read last before the checkpoint ("same") or not
 * ("stale"). With
 * --parent-delay-ms the parent reaches its own restore point (where its
 * memory is loaded) that much later: only the runtime's wait at the child's
 * restore point keeps the child from reading the parent's fresh setup.
 *
 * --other: the parent also exports a second, smaller buffer, which the child
 * opens too (and only keeps open): after the first ("after"), or before it
 * ("first"). A checkpoint taken with one and restored with the other has the
 * child's opens in another order: its restore must be refused.
 */
#define _GNU_SOURCE
#include "gpuckpt.h"

/* Weak: the same binary runs natively (no gpuckpt: no checkpoint points) and
 * under the runtime's LD_PRELOAD. */
#pragma weak gpuckpt_point
#pragma weak gpuckpt_protect
#pragma weak gpuckpt_request
#pragma weak gpuckpt_strerror

#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BYTES (1u << 20)
#define HALF (BYTES / 2)
#define OTHER_BYTES (64u << 10)

static uint32_t host[HALF / 4];
static int peek;
static long parent_delay_ms;
static const char *other; /* NULL, "after" or "first" */

static int fail(const char *who, const char *what, CUresult r)
{
	const char *name = NULL;

	cuGetErrorName(r, &name);
	fprintf(stderr, "prog-ipc: %s: %s: %s\n", who, what, name ? name : "?");
	return 1;
}

#include "ipc_half.h"

static int setup(const char *who, CUcontext *ctx)
{
	CUdevice dev;
	CUresult r;

	if ((r = cuInit(0)) || (r = cuDeviceGet(&dev, 0)) ||
	    (r = cuDevicePrimaryCtxRetain(ctx, dev)) || (r = cuCtxSetCurrent(*ctx)))
		return fail(who, "setup", r);
	return 0;
}

static int rd(int fd, void *buf, size_t n)
{
	return read(fd, buf, n) == (ssize_t)n ? 0 : -1;
}

static int wr(int fd, const void *buf, size_t n)
{
	return write(fd, buf, n) == (ssize_t)n ? 0 : -1;
}

static int exit_after;

/* Both sides: the checkpoint point of a step, asked for at ckpt_at; 1: end now. */
static int point(const char *who, long step, long ckpt_at)
{
	int rc;

	if (!gpuckpt_point)
		return 0;
	rc = gpuckpt_point(step);

	if (step == ckpt_at) {
		gpuckpt_request();
		for (int i = 0; i < 1000 && (rc = gpuckpt_point(step)) == GPUCKPT_NOTHING; i++) {
			struct timespec ts = {0, 10000000};

			nanosleep(&ts, NULL);
		}
	}
	if (rc != GPUCKPT_NOTHING) {
		printf("prog-ipc: %s checkpoint at step %ld: %d (%s)\n", who, step, rc,
		       gpuckpt_strerror(rc));
		fflush(stdout);
	}
	return exit_after && rc == GPUCKPT_SAVED;
}

/* 1 when the process restored there. */
static int first_point(const char *who, long *step)
{
	int restored = gpuckpt_point && gpuckpt_point(*step) == GPUCKPT_RESTORED;

	if (restored)
		printf("prog-ipc: %s restored at step %ld\n", who, *step);
	fflush(stdout);
	return restored;
}

static int child_main(int in, int out, long steps, long ckpt_at)
{
	CUipcMemHandle h, ho;
	CUcontext ctx;
	CUdeviceptr d, o = 0;
	CUresult r;
	uint64_t sum = 0, sa, last_sa = 0, now;
	long step = 0, go;
	int first = other && !strcmp(other, "first");

	if (setup("child", &ctx))
		return 1;
	if (rd(in, &h, sizeof(h)) || (other && rd(in, &ho, sizeof(ho))))
		return fail("child", "reading the handle", CUDA_ERROR_INVALID_VALUE);
	if (first && (r = cuIpcOpenMemHandle(&o, ho, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)))
		return fail("child", "cuIpcOpenMemHandle (the other buffer)", r);
	if ((r = cuIpcOpenMemHandle(&d, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)))
		return fail("child", "cuIpcOpenMemHandle", r);
	if (other && !first &&
	    (r = cuIpcOpenMemHandle(&o, ho, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)))
		return fail("child", "cuIpcOpenMemHandle (the other buffer)", r);
	printf("prog-ipc: child opened the buffer at 0x%llx\n", (unsigned long long)d);
	if (o)
		printf("prog-ipc: child opened the other buffer at 0x%llx (%s)\n",
		       (unsigned long long)o, other);
	fflush(stdout);
	if (gpuckpt_protect) {
		gpuckpt_protect("step", &step, sizeof(step));
		gpuckpt_protect("sum", &sum, sizeof(sum));
		gpuckpt_protect("last_sa", &last_sa, sizeof(last_sa));
	}
	if (first_point("child", &step) && peek) {
		now = sum_half(d, &r);
		if (r)
			return fail("child", "peeking", r);
		if (now == last_sa)
			printf("prog-ipc: child peek after restore: same\n");
		else
			printf("prog-ipc: child peek after restore: stale (%016llx, had %016llx)\n",
			       (unsigned long long)now, (unsigned long long)last_sa);
		fflush(stdout);
	}
	/* The parent writes its half again only after the peek. */
	go = -1;
	if (peek && wr(out, &go, sizeof(go)))
		return fail("child", "telling the parent it peeked", CUDA_ERROR_INVALID_VALUE);
	while (step < steps) {
		if (rd(in, &go, sizeof(go)) || go != step)
			return fail("child", "waiting for the parent", CUDA_ERROR_INVALID_VALUE);
		sa = sum_half(d, &r);
		if (r || (r = write_half(d + HALF, step, sa, 0x2222)) || (r = cuCtxSynchronize()))
			return fail("child", "a step", r);
		sum = sum * 31 + sa;
		last_sa = sa;
		step++;
		if (wr(out, &step, sizeof(step)))
			return fail("child", "answering the parent", CUDA_ERROR_INVALID_VALUE);
		if (point("child", step, ckpt_at))
			return 0;
	}
	if ((r = cuIpcCloseMemHandle(d)) || (o && (r = cuIpcCloseMemHandle(o))))
		return fail("child", "cuIpcCloseMemHandle", r);
	printf("prog-ipc: child sum %016llx\n", (unsigned long long)sum);
	return 0;
}

int main(int argc, char **argv)
{
	long steps = 8, ckpt_at = -1, step = 0, ack;
	int to_child[2], from_child[2], status;
	uint64_t sum = 0, sb = 0;
	CUipcMemHandle h, ho;
	CUcontext ctx;
	CUdeviceptr d, o;
	CUresult r;
	pid_t pid;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atol(argv[++i]);
		else if (!strcmp(argv[i], "--checkpoint-at") && i + 1 < argc)
			ckpt_at = atol(argv[++i]);
		else if (!strcmp(argv[i], "--exit-after-checkpoint"))
			exit_after = 1;
		else if (!strcmp(argv[i], "--peek"))
			peek = 1;
		else if (!strcmp(argv[i], "--parent-delay-ms") && i + 1 < argc)
			parent_delay_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--other") && i + 1 < argc &&
			 (!strcmp(argv[i + 1], "after") || !strcmp(argv[i + 1], "first")))
			other = argv[++i];
		else if (!strcmp(argv[i], "--child") && i + 2 < argc) {
			int in = atoi(argv[i + 1]), out = atoi(argv[i + 2]);

			return child_main(in, out, steps, ckpt_at);
		} else {
			fprintf(stderr, "prog-ipc: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	/* The child before any CUDA call: a driver does not survive fork. Its
	 * GPUCKPT_DIR, its own checkpoints' beside the parent's, is made here:
	 * the runtime's threads may already run, and a child may not malloc
	 * (setenv) under a lock one of them held at the fork. */
	const char *dir = getenv("GPUCKPT_DIR");
	static char cdir[4096];

	if (dir)
		snprintf(cdir, sizeof(cdir), "GPUCKPT_DIR=%s/child", dir);
	if (pipe(to_child) || pipe(from_child))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		char in[16], out[16], n[32], k[32];
		char *args[16];
		int a = 0;

		close(to_child[1]);
		close(from_child[0]);
		snprintf(in, sizeof(in), "%d", to_child[0]);
		snprintf(out, sizeof(out), "%d", from_child[1]);
		snprintf(n, sizeof(n), "%ld", steps);
		snprintf(k, sizeof(k), "%ld", ckpt_at);
		/* Replacing a variable the environment has: no allocation. */
		if (dir)
			putenv(cdir);
		args[a++] = "prog-ipc";
		args[a++] = "--steps";
		args[a++] = n;
		args[a++] = "--checkpoint-at";
		args[a++] = k;
		if (exit_after)
			args[a++] = "--exit-after-checkpoint";
		if (peek)
			args[a++] = "--peek";
		if (other) {
			args[a++] = "--other";
			args[a++] = (char *)other;
		}
		args[a++] = "--child";
		args[a++] = in;
		args[a++] = out;
		args[a] = NULL;
		execv("/proc/self/exe", args);
		_exit(127);
	}
	close(to_child[0]);
	close(from_child[1]);
	if (setup("parent", &ctx))
		return 1;
	if ((r = cuMemAlloc(&d, BYTES)) || (r = cuMemsetD8(d, 0, BYTES)))
		return fail("parent", "cuMemAlloc", r);
	if ((r = cuIpcGetMemHandle(&h, d)))
		return fail("parent", "cuIpcGetMemHandle", r);
	if (wr(to_child[1], &h, sizeof(h)))
		return fail("parent", "sending the handle", CUDA_ERROR_INVALID_VALUE);
	if (other && ((r = cuMemAlloc(&o, OTHER_BYTES)) || (r = cuMemsetD8(o, 0x5a, OTHER_BYTES)) ||
		      (r = cuIpcGetMemHandle(&ho, o))))
		return fail("parent", "the other buffer", r);
	if (other && wr(to_child[1], &ho, sizeof(ho)))
		return fail("parent", "sending the other handle", CUDA_ERROR_INVALID_VALUE);
	if (gpuckpt_protect) {
		gpuckpt_protect("step", &step, sizeof(step));
		gpuckpt_protect("sum", &sum, sizeof(sum));
		gpuckpt_protect("sb", &sb, sizeof(sb));
	}
	if (parent_delay_ms) {
		struct timespec ts = {parent_delay_ms / 1000, (parent_delay_ms % 1000) * 1000000};

		nanosleep(&ts, NULL);
	}
	first_point("parent", &step);
	if (peek && (rd(from_child[0], &ack, sizeof(ack)) || ack != -1))
		return fail("parent", "waiting for the child's peek", CUDA_ERROR_INVALID_VALUE);
	while (step < steps) {
		if ((r = write_half(d, step, sb, 0x1111)) || (r = cuCtxSynchronize()))
			return fail("parent", "a step", r);
		if (wr(to_child[1], &step, sizeof(step)) || rd(from_child[0], &ack, sizeof(ack)) ||
		    ack != step + 1)
			return fail("parent", "the child's step", CUDA_ERROR_INVALID_VALUE);
		sb = sum_half(d + HALF, &r);
		if (r)
			return fail("parent", "reading the child's half", r);
		sum = sum * 37 + sb;
		step++;
		if (point("parent", step, ckpt_at))
			break;
	}
	/* A child still waiting for a step (its checkpoint refused) reads EOF. */
	close(to_child[1]);
	close(from_child[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "prog-ipc: the child failed (status %#x)\n", status);
		return 1;
	}
	if (step == steps)
		printf("prog-ipc: parent sum %016llx\n", (unsigned long long)sum);
	return 0;
}
