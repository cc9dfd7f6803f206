/*
 * prog-nccl - one rank of a plain NCCL all-reduce job that knows nothing of
 * gpuckpt (issue 27): N processes, one per GPU, each started on its own (as
 * srun starts one task per GPU). Rank 0 writes NCCL's unique id to --id; the
 * others read it there. Each step every rank changes its vector a little
 * (by its rank and the step), and the ranks average the vectors with
 * --per-step all-reduces in a row on one stream, so that each step's result
 * depends on every rank's whole history. Each step prints a checksum of the
 * result, which is the same on every rank; the end prints it and a checksum
 * of --mib MiB of device ballast written at the start. A run checkpointed
 * and restored anywhere in between must print the lines of the uninterrupted
 * run.
 *
 * Built against the CUDA driver and NCCL: in `make check` the stand-ins
 * (tests/cuda-standin, tests/nccl-standin); on the GPU machine the driver
 * and the libnccl.so.2 that PyTorch ships (tests/gpu/nccl-gpu.sh).
 *
 *   prog-nccl --rank R --nranks N --id FILE [--steps S] [--per-step P]
 *             [--floats F] [--mib M] [--sleep-ms T] [--late-rank R] [--device D]
 *
 * --device: the CUDA device to use (default 0: one GPU per process, as
 * under srun; torchrun shows every GPU and picks one per rank).
 * --late-rank: that rank sleeps before its step's collectives and the others
 * do not sleep at all, so that they wait in the step's collectives most of
 * the time, ahead of it: a checkpoint then finds it behind them. (When the
 * others slept after their collectives, all ranks slept at once and a
 * checkpoint found them level.)
 */
#include <cuda.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl_abi.h"

static void die(const char *what, int code)
{
	fprintf(stderr, "prog-nccl: %s failed (%d)\n", what, code);
	exit(1);
}
#define CU(call)                                                                                   \
	do {                                                                                       \
		CUresult r_ = (call);                                                              \
		if (r_ != CUDA_SUCCESS)                                                            \
			die(#call, (int)r_);                                                       \
	} while (0)
#define NC(call)                                                                                   \
	do {                                                                                       \
		ncclResult_t r_ = (call);                                                          \
		if (r_ != ncclSuccess)                                                             \
			die(#call, (int)r_);                                                       \
	} while (0)

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static void nap(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void id_exchange(int rank, const char *file, ncclUniqueId *id)
{
	char tmp[4200];
	FILE *f;

	if (rank == 0) {
		NC(ncclGetUniqueId(id));
		snprintf(tmp, sizeof(tmp), "%s.tmp", file);
		f = fopen(tmp, "wb");
		if (!f || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f) || rename(tmp, file))
			die("writing the unique id", errno);
		return;
	}
	for (int i = 0; i < 60000; i++) {
		f = fopen(file, "rb");
		if (f) {
			size_t n = fread(id, sizeof(*id), 1, f);

			fclose(f);
			if (n == 1)
				return;
		}
		nap(10);
	}
	die("waiting for rank 0's unique id", ETIMEDOUT);
}

int main(int argc, char **argv)
{
	int rank = -1, nranks = 0, steps = 40, per_step = 4, sleep_ms = 100, late = -1, device = 0;
	size_t floats = 1 << 20, mib = 64;
	const char *idfile = NULL;
	CUdevice dev;
	CUcontext ctx;
	CUstream st;
	CUdeviceptr x, ballast;
	ncclUniqueId id;
	ncclComm_t comm;
	float *h;
	uint64_t sum = 0;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--rank"))
			rank = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--nranks"))
			nranks = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--id"))
			idfile = argv[i + 1];
		else if (!strcmp(argv[i], "--steps"))
			steps = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--per-step"))
			per_step = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--floats"))
			floats = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--mib"))
			mib = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--sleep-ms"))
			sleep_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--device"))
			device = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--late-rank"))
			late = atoi(argv[i + 1]);
		else {
			fprintf(stderr, "prog-nccl: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (rank < 0 || nranks < 1 || rank >= nranks || !idfile || floats == 0) {
		fprintf(stderr, "usage: prog-nccl --rank R --nranks N --id FILE [--steps S] "
				"[--per-step P] [--floats F] [--mib M] [--sleep-ms T] "
				"[--late-rank R] [--device D]\n");
		return 2;
	}
	CU(cuInit(0));
	CU(cuDeviceGet(&dev, device));
	CU(cuDevicePrimaryCtxRetain(&ctx, dev));
	CU(cuCtxSetCurrent(ctx));
	CU(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	id_exchange(rank, idfile, &id);
	NC(ncclCommInitRank(&comm, nranks, id, rank));
	CU(cuMemAlloc(&x, floats * sizeof(float)));
	if (mib) {
		CU(cuMemAlloc(&ballast, mib << 20));
		CU(cuMemsetD32(ballast, 0x5eed0000u + (unsigned)rank, (mib << 20) / 4));
	}
	h = malloc(floats * sizeof(float));
	if (!h)
		die("malloc", ENOMEM);
	for (size_t i = 0; i < floats; i++)
		h[i] = (float)(i % 1000) * 0.001f;
	printf("ready rank %d of %d\n", rank, nranks);
	fflush(stdout);
	for (int s = 1; s <= steps; s++) {
		if (rank == late)
			nap(sleep_ms);
		for (size_t i = 0; i < floats; i++)
			h[i] += (float)((rank + 1) * s % 13) * 0.0001f + (float)(i % 7) * 0.00001f;
		CU(cuMemcpyHtoD(x, h, floats * sizeof(float)));
		for (int k = 0; k < per_step; k++)
			NC(ncclAllReduce((const void *)x, (void *)x, floats, ncclFloat32, ncclAvg,
					 comm, st));
		CU(cuStreamSynchronize(st));
		CU(cuMemcpyDtoH(h, x, floats * sizeof(float)));
		sum = fnv(h, floats * sizeof(float));
		printf("step %d checksum %016llx\n", s, (unsigned long long)sum);
		fflush(stdout);
		if (late < 0)
			nap(sleep_ms);
	}
	if (mib) {
		uint32_t *b = malloc(mib << 20);

		if (!b)
			die("malloc", ENOMEM);
		CU(cuMemcpyDtoH(b, ballast, mib << 20));
		printf("ballast %016llx\n", (unsigned long long)fnv(b, mib << 20));
		free(b);
	}
	printf("done checksum %016llx\n", (unsigned long long)sum);
	fflush(stdout);
	NC(ncclCommDestroy(comm));
	return 0;
}
