/*
 * ipc_half.h - the work step of the CUDA IPC test programs (prog-ipc here,
 * and tests/slurm/prog-ipc-ranks): each process rewrites its half of the
 * shared block from the step, the other half's checksum and the word it
 * replaces, so that memory lost or stale after a restart (the exporter's, or
 * the importer's mapping of it) shows in the checksums.
 *
 * The includer defines HALF (the half's bytes, a multiple of 4) and
 * `static uint32_t host[HALF / 4]`, the staging buffer both steps use.
 */
#ifndef IPC_HALF_H
#define IPC_HALF_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

static CUresult write_half(CUdeviceptr p, long step, uint64_t from, uint32_t salt)
{
	CUresult r = cuMemcpyDtoH(host, p, HALF);

	for (size_t i = 0; r == CUDA_SUCCESS && i < HALF / 4; i++)
		host[i] = (uint32_t)(i * 2654435761u) ^ (uint32_t)(step * 40503u) ^ salt ^
			  (uint32_t)(from >> (i % 32)) ^ (host[i] >> 1);
	return r ? r : cuMemcpyHtoD(p, host, HALF);
}

/* The half's checksum (FNV-1a over its words). */
static uint64_t sum_half(CUdeviceptr p, CUresult *r)
{
	uint64_t h = 1469598103934665603ull;

	*r = cuMemcpyDtoH(host, p, HALF);
	for (size_t i = 0; *r == CUDA_SUCCESS && i < HALF / 4; i++)
		h = (h ^ host[i]) * 1099511628211ull;
	return h;
}

#endif /* IPC_HALF_H */
