/*
 * prog-ipc-ranks - the two tasks of one Slurm step (srun -n 2) sharing device
 * memory through legacy CUDA IPC, checkpointed together as a set of the step
 * (tests/slurm/e2e-ipc.sh).
 *
 *   prog-ipc-ranks --handle FILE [--steps N] [--delay-ms D] [--wait-s S] [--no-coord]
 *                  [--lose-block]
 *
 * Task 0 (SLURM_PROCID) allocates a block (cuMemAlloc), exports it
 * (cuIpcGetMemHandle) and publishes the handle in FILE (a folder both tasks
 * see), written to a temporary name and renamed, with the run's
 * SLURM_RESTART_COUNT; task 1 waits for the handle of its own run and opens
 * it (cuIpcOpenMemHandle). Every step task 0 rewrites the block's first half
 * from what it read of the second, task 1 reads the first half through its
 * mapping and rewrites the second from it (each word also from the one it
 * replaces, as in tests/runtime/prog-ipc.c); each keeps a running checksum
 * and prints it at the end, so a run requeued and restored is compared with
 * an uninterrupted one.
 *
 * The tasks talk only through the shared block: a small control area at its
 * start holds two mailboxes per task (one per parity of the message number,
 * so a task never overwrites a message the other has not read). Turns and the
 * checkpoint agreement are exchanges of one word each.
 *
 * Checkpoints: under gpuckpt the program is the agreeing layer of
 * gpuckpt_coord.h, as gpuckpt_mpi.h is over MPI: at each step's point both
 * poll, exchange their "due" bits, and when either has one due (SIGTERM of
 * `scontrol requeue` reaches both) both write their part of one set (the
 * same number and id), task 0 records it once both committed, both settle
 * it and end (gpuckpt_coord_finish). The exporter's part holds the block;
 * the importer's holds none of it. After a restart task 0 restores the block
 * at its first point, clears the control area and only then publishes its
 * new handle: task 1 opens it (the runtime puts its first open at the
 * address it had, printed) and touches nothing before. The first exchange
 * compares the sets the two restored.
 *
 * Without the runtime (or the coord interface) the same binary runs natively
 * on the CUDA stand-in: the reference. --no-coord (the test's "before"): no
 * agreeing layer, gpuckpt_point() at each point, which the runtime refuses
 * to checkpoint in a step of two tasks. --lose-block (another "before"): task
 * 0 clears the whole block after a restore, as if its memory had not been
 * restored.
 */
#define _GNU_SOURCE
#include "gpuckpt.h"
#define GPUCKPT_COORD_WEAK
#include "gpuckpt_coord.h"

#pragma weak gpuckpt_protect
#pragma weak gpuckpt_point
#pragma weak gpuckpt_strerror

#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define CTL 4096u
#define BYTES (1u << 20)
#define HALF (BYTES / 2)
#define MAGIC "IPCRNK1"

static uint32_t host[HALF / 4];
#include "../runtime/ipc_half.h"

static int rank, on, no_coord, lose_block;
static long wait_s = 60;
static CUdeviceptr blk;
static uint64_t k; /* the next message's number, the same in both tasks */

struct handle_file {
	char magic[8];
	int64_t epoch;
	int32_t failed;
	int32_t pad;
	CUipcMemHandle h;
};

static int fail(const char *what, CUresult r)
{
	const char *name = NULL;

	cuGetErrorName(r, &name);
	fprintf(stderr, "prog-ipc-ranks: rank %d: %s: %s\n", rank, what, name ? name : "?");
	return 1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Mailbox (task, parity): two words, the message's value, then its number + 1. */
static CUdeviceptr box(int task, uint64_t n)
{
	return blk + (CUdeviceptr)(task * 2 + (int)(n & 1)) * 64;
}

/* Send v as message k, wait for the other task's message k: its value. */
static int exchange(uint64_t v, uint64_t *other)
{
	uint64_t n = k++, tag = n + 1, got = 0;
	CUresult r;

	if ((r = cuMemcpyHtoD(box(rank, n), &v, 8)) || (r = cuMemcpyHtoD(box(rank, n) + 8, &tag, 8)))
		return fail("posting a message", r);
	for (long i = 0; got != tag; i++) {
		if ((r = cuMemcpyDtoH(&got, box(!rank, n) + 8, 8)))
			return fail("reading the other task's message", r);
		if (got == tag)
			break;
		if (i > wait_s * 1000) {
			fprintf(stderr, "prog-ipc-ranks: rank %d: no message %llu from rank %d in %ld s\n",
				rank, (unsigned long long)n, !rank, wait_s);
			return 1;
		}
		sleep_ms(1);
	}
	if ((r = cuMemcpyDtoH(other, box(!rank, n), 8)))
		return fail("reading the other task's message", r);
	return 0;
}


static uint64_t random_id(void)
{
	uint64_t id = 0;

	while (!id)
		if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
			id = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid();
	return id;
}

/* Both tasks, at the same point: write the set, learn whether it counts. */
static int take(long step, int agreed)
{
	struct gpuckpt_set set;
	unsigned long long next = 0;
	uint64_t o, id;
	int ret, recorded = 0;

	if (gpuckpt_coord_next(&next) < 0)
		next = 0; /* takes part; its "not committed" sinks the set */
	if (exchange(next, &o))
		return -1;
	set.sequence = next > o ? next : o;
	id = rank == 0 ? random_id() : 0;
	if (exchange(id, &o))
		return -1;
	set.id = rank == 0 ? id : o;
	set.step = step;
	ret = next ? gpuckpt_coord_write(step, &set) : -EIO;
	if (exchange(ret == 0, &o))
		return -1;
	if (rank == 0 && ret == 0 && o)
		recorded = gpuckpt_coord_record(&set) == 0;
	if (exchange((uint64_t)recorded, &o))
		return -1;
	if (rank == 1)
		recorded = (int)o;
	gpuckpt_coord_settle(&set, recorded);
	printf("prog-ipc-ranks: rank %d checkpoint at step %ld: set %llu %s (%d)\n", rank, step,
	       set.sequence, recorded ? "recorded" : "not recorded", ret);
	fflush(stdout);
	gpuckpt_coord_finish(agreed); /* ends the task after SIGTERM */
	return 0;
}

/* The checkpoint point of a step, in both tasks. */
static int point(long step)
{
	int due = 0;
	uint64_t o;

	if (on)
		gpuckpt_coord_poll(step, &due);
	else if (no_coord && gpuckpt_point)
		gpuckpt_point(step);
	if (exchange((uint64_t)due, &o))
		return -1;
	due |= (int)o;
	if (on && (due & GPUCKPT_DUE_CHECKPOINT))
		return take(step, due);
	return 0;
}

static int publish(const char *path, int64_t epoch, const CUipcMemHandle *h, int failed)
{
	struct handle_file f;
	char tmp[4200];
	int fd;

	memset(&f, 0, sizeof(f));
	memcpy(f.magic, MAGIC, 8);
	f.epoch = epoch;
	f.failed = failed;
	if (h)
		f.h = *h;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, &f, sizeof(f)) != (ssize_t)sizeof(f) || fsync(fd) ||
	    close(fd) || rename(tmp, path)) {
		perror("prog-ipc-ranks: rank 0: writing the handle file");
		return 1;
	}
	return 0;
}

/* Task 1: the handle of this run (epoch), once task 0 published it. */
static int wait_handle(const char *path, int64_t epoch, CUipcMemHandle *h)
{
	struct handle_file f;

	for (long i = 0; i <= wait_s * 100; i++) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			ssize_t n = read(fd, &f, sizeof(f));

			close(fd);
			if (n == (ssize_t)sizeof(f) && !memcmp(f.magic, MAGIC, 8) &&
			    f.epoch == epoch) {
				if (f.failed) {
					fprintf(stderr, "prog-ipc-ranks: rank 1: rank 0 could not "
							"export its memory\n");
					return 1;
				}
				*h = f.h;
				return 0;
			}
		}
		sleep_ms(10);
	}
	fprintf(stderr, "prog-ipc-ranks: rank 1: no handle of restart %lld in %s after %ld s\n",
		(long long)epoch, path, wait_s);
	return 1;
}

int main(int argc, char **argv)
{
	const char *handle = NULL, *e;
	long steps = 40, delay_ms = 0, step = 0;
	uint64_t sum = 0, sb = 0, sa, o;
	unsigned long long rid = 0, rseq = 0;
	int64_t epoch = 0;
	CUipcMemHandle h;
	CUcontext ctx;
	CUdevice dev;
	CUresult r;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--handle") && i + 1 < argc)
			handle = argv[++i];
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atol(argv[++i]);
		else if (!strcmp(argv[i], "--delay-ms") && i + 1 < argc)
			delay_ms = atol(argv[++i]);
		else if (!strcmp(argv[i], "--lose-block"))
			lose_block = 1;
		else if (!strcmp(argv[i], "--no-coord"))
			no_coord = 1;
		else if (!strcmp(argv[i], "--wait-s") && i + 1 < argc)
			wait_s = atol(argv[++i]);
		else {
			fprintf(stderr, "prog-ipc-ranks: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	if (!handle || !(e = getenv("SLURM_PROCID")) || ((rank = atoi(e)) != 0 && rank != 1) ||
	    ((e = getenv("SLURM_NTASKS")) && atoi(e) != 2)) {
		fprintf(stderr, "prog-ipc-ranks: needs --handle FILE and two tasks "
				"(SLURM_PROCID 0 or 1, SLURM_NTASKS 2)\n");
		return 2;
	}
	if ((e = getenv("SLURM_RESTART_COUNT")))
		epoch = atoll(e);
	if ((r = cuInit(0)) || (r = cuDeviceGet(&dev, 0)) ||
	    (r = cuDevicePrimaryCtxRetain(&ctx, dev)) || (r = cuCtxSetCurrent(ctx)))
		return fail("setup", r);

	if (rank == 0) {
		if ((r = cuMemAlloc(&blk, CTL + BYTES)) || (r = cuMemsetD8(blk, 0, CTL + BYTES)))
			return fail("cuMemAlloc", r);
		if ((r = cuIpcGetMemHandle(&h, blk))) {
			publish(handle, epoch, NULL, 1);
			return fail("cuIpcGetMemHandle", r);
		}
	} else {
		if (wait_handle(handle, epoch, &h))
			return 1;
		if ((r = cuIpcOpenMemHandle(&blk, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)))
			return fail("cuIpcOpenMemHandle", r);
		printf("prog-ipc-ranks: rank 1 opened the block at 0x%llx\n", (unsigned long long)blk);
		fflush(stdout);
	}
	if (!no_coord && gpuckpt_coord_attach && gpuckpt_coord_poll && gpuckpt_coord_next &&
	    gpuckpt_coord_write && gpuckpt_coord_record && gpuckpt_coord_settle &&
	    gpuckpt_coord_finish && gpuckpt_coord_restored && gpuckpt_protect) {
		rc = gpuckpt_coord_attach("cudaipc", 2, rank);
		on = rc == 0;
		if (!on)
			printf("prog-ipc-ranks: rank %d: no checkpoints (gpuckpt_coord_attach: %d)\n",
			       rank, rc);
	}
	if (gpuckpt_protect) {
		gpuckpt_protect("step", &step, sizeof(step));
		gpuckpt_protect("sum", &sum, sizeof(sum));
		gpuckpt_protect("sb", &sb, sizeof(sb));
	}
	/* The first point: a restart loads the checkpoint here (task 0: the block). */
	if (on) {
		int due;

		if (gpuckpt_coord_poll(step, &due) == GPUCKPT_RESTORED &&
		    gpuckpt_coord_restored(&rid, &rseq))
			printf("prog-ipc-ranks: rank %d restored at step %ld from set %llu\n", rank,
			       step, rseq);
		fflush(stdout);
	}
	if (rank == 0) {
		/* The control area as restored is the old run's: cleared before task 1 sees it. */
		if ((r = cuMemsetD8(blk, 0, lose_block && rseq ? CTL + BYTES : CTL)) ||
		    (r = cuCtxSynchronize()))
			return fail("clearing the control area", r);
		if (publish(handle, epoch, &h, 0))
			return 1;
	}
	/* Both restored the same set, or neither restored one. */
	if (exchange(rseq, &o) || exchange(rid, &sa))
		return 1;
	if (o != rseq || sa != rid) {
		fprintf(stderr, "prog-ipc-ranks: rank %d restored set %llu (id %016llx), rank %d set "
				"%llu (id %016llx): stopping\n",
			rank, rseq, rid, !rank, (unsigned long long)o, (unsigned long long)sa);
		return 1;
	}
	printf("prog-ipc-ranks: rank %d starts at step %ld\n", rank, step);
	fflush(stdout);
	while (step < steps) {
		if (rank == 0) {
			if ((r = write_half(blk + CTL, step, sb, 0x1111)) || (r = cuCtxSynchronize()))
				return fail("a step", r);
			if (exchange(0, &o) || exchange(0, &o))
				return 1;
			sb = sum_half(blk + CTL + HALF, &r);
			if (r)
				return fail("reading rank 1's half", r);
			sum = sum * 37 + sb;
		} else {
			if (exchange(0, &o))
				return 1;
			sa = sum_half(blk + CTL, &r);
			if (r || (r = write_half(blk + CTL + HALF, step, sa, 0x2222)) ||
			    (r = cuCtxSynchronize()))
				return fail("a step", r);
			sum = sum * 31 + sa;
			if (exchange(0, &o))
				return 1;
		}
		step++;
		printf("prog-ipc-ranks: rank %d step %ld\n", rank, step);
		fflush(stdout);
		if (point(step))
			return 1;
		if (delay_ms)
			sleep_ms(delay_ms);
	}
	/* The last message: task 0 keeps the block until task 1 is done with it. */
	if (exchange(0, &o))
		return 1;
	if (rank == 1 && (r = cuIpcCloseMemHandle(blk)))
		return fail("cuIpcCloseMemHandle", r);
	printf("prog-ipc-ranks: rank %d sum %016llx\n", rank, (unsigned long long)sum);
	return 0;
}
