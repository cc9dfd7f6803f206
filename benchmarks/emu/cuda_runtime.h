/*
 * cuda_runtime.h of the benchmark emulator (benchmarks/emu/README.md): just
 * enough of the CUDA runtime API for the benchmarks to build as ordinary
 * host programs, after translate.py has turned their kernel launches into
 * emu_launch() calls. Kernels run on the host, one fiber per thread; device
 * memory is host memory at fixed addresses behind guard pages. It checks the
 * host code and the kernels' indexing; it says nothing about a GPU.
 */
#ifndef EMU_CUDA_RUNTIME_H
#define EMU_CUDA_RUNTIME_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <functional>

#define __global__
#define __device__
#define __host__
#define __constant__
/* One OS thread runs all fibers of a block, so a function-local static is block-shared. */
#define __shared__ static

struct uint3 {
	unsigned x, y, z;
};

struct dim3 {
	unsigned x, y, z;
	dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz)
	{
	}
};

extern uint3 emu_thread_idx, emu_block_idx;
extern dim3 emu_block_dim, emu_grid_dim;
#define threadIdx emu_thread_idx
#define blockIdx emu_block_idx
#define blockDim emu_block_dim
#define gridDim emu_grid_dim

void __syncthreads(void);

/* Fibers of a block never run at the same time, so a plain update is atomic here. */
template <class T> static inline T atomicAdd(T *p, T v)
{
	T old = *p;

	*p = old + v;
	return old;
}

enum cudaError {
	cudaSuccess = 0,
	cudaErrorInvalidValue = 1,
	cudaErrorMemoryAllocation = 2,
	cudaErrorInvalidConfiguration = 9,
	cudaErrorInvalidDevicePointer = 17,
	cudaErrorInvalidResourceHandle = 400,
	cudaErrorNoDevice = 100,
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
	cudaMemcpyHostToHost = 0,
	cudaMemcpyHostToDevice = 1,
	cudaMemcpyDeviceToHost = 2,
	cudaMemcpyDeviceToDevice = 3,
	cudaMemcpyDefault = 4,
};

typedef struct emu_stream *cudaStream_t;
#define cudaStreamNonBlocking 0x01

struct cudaDeviceProp {
	char name[256];
	size_t totalGlobalMem;
	int major, minor, multiProcessorCount;
};

const char *cudaGetErrorName(cudaError_t err);
const char *cudaGetErrorString(cudaError_t err);
cudaError_t cudaGetLastError(void);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total);

cudaError_t cudaMalloc(void **p, size_t size);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s);
cudaError_t cudaFreeAsync(void *p, cudaStream_t s);
cudaError_t cudaMallocHost(void **p, size_t size);
cudaError_t cudaFreeHost(void *p);
#define cudaHostRegisterDefault 0u
/* Host memory is host memory here: registering checks alignment and the range. */
cudaError_t cudaHostRegister(void *p, size_t size, unsigned flags);
cudaError_t cudaHostUnregister(void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
			    cudaStream_t s = 0);
cudaError_t cudaMemset(void *p, int value, size_t n);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamDestroy(cudaStream_t s);

/* Copies to a __constant__ (an ordinary global here); the size is checked against it. */
cudaError_t emu_copy_to_symbol(void *sym, size_t sym_size, const void *src, size_t n,
			       size_t offset);
template <class T>
cudaError_t cudaMemcpyToSymbol(T &sym, const void *src, size_t n, size_t offset = 0,
			       enum cudaMemcpyKind kind = cudaMemcpyHostToDevice)
{
	(void)kind;
	return emu_copy_to_symbol((void *)&sym, sizeof(T), src, n, offset);
}

/* What translate.py makes of kernel<<<grid, block[, shared, stream]>>>(args). */
void emu_launch(const char *name, dim3 grid, dim3 block, const std::function<void()> &body);
static inline void emu_launch(const char *name, dim3 grid, dim3 block, size_t shared,
			      const std::function<void()> &body)
{
	(void)shared;
	emu_launch(name, grid, block, body);
}
static inline void emu_launch(const char *name, dim3 grid, dim3 block, size_t shared,
			      cudaStream_t s, const std::function<void()> &body)
{
	(void)shared;
	(void)s;
	emu_launch(name, grid, block, body);
}

#endif
