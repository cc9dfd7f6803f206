/*
 * gpuckpt_kernel.cuh - interruptible long kernels: the checks inside a
 * kernel (header-only, CUDA C++). gpuckpt_kernel.h has the host side and the
 * protocol; docs/api.md ("Long kernels") what is safe.
 *
 * Block mode: the grid has many more blocks than run at once; each block
 * checks once, at its top, with every thread of the block:
 *
 *	__global__ void step(float *u, int n, gpuckpt_kernel k)
 *	{
 *		GPUCKPT_BLOCK_BEGIN(k); // returns: block done before, or stop
 *		... the block's work, unchanged ...
 *	}
 *
 * A block that passed its check is recorded as executed and runs to its end;
 * the drain before the checkpoint waits for it. A relaunch skips it.
 *
 * Loop mode: few blocks, each looping for long (persistent threads, a
 * grid-stride loop); each thread keeps its own position:
 *
 *	__global__ void mc(..., gpuckpt_kernel k)
 *	{
 *		GPUCKPT_LOOP_BEGIN(k);  // returns at once when stopped
 *		long long r = gpuckpt_loop_start(k);
 *		for (; r < rounds; r++) {
 *			if (gpuckpt_loop_stop(k, r))  // saves r, the next round
 *				return;
 *			... round r: must not depend on rounds this thread has
 *			    not run, and must be the whole of round r ...
 *		}
 *		gpuckpt_loop_end(k, rounds);
 *	}
 *
 * gpuckpt_loop_stop reads the stop word once per warp (the lowest active
 * lane, broadcast with a shuffle) and needs no barrier: threads stop at
 * different rounds, so the loop body must not hold __syncthreads(). A loop
 * with block barriers uses gpuckpt_loop_stop_block (every thread of the block
 * calls it, at the same round).
 *
 * Never in a kernel launched cooperatively (grid sync): a block that returns
 * early never arrives at the grid barrier; the runtime refuses a cooperative
 * launch of a marked kernel.
 */
#ifndef GPUCKPT_KERNEL_CUH
#define GPUCKPT_KERNEL_CUH

#include "gpuckpt_kernel.h"

typedef struct gpuckpt_kernel gpuckpt_kernel;

#ifdef __CUDACC__

__device__ __forceinline__ unsigned long long gpuckpt_block_id_(void)
{
	return (unsigned long long)blockIdx.x +
	       (unsigned long long)gridDim.x *
		   ((unsigned long long)blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
}

__device__ __forceinline__ unsigned long long gpuckpt_thread_id_(void)
{
	unsigned long long in_block =
	    threadIdx.x + (unsigned long long)blockDim.x * (threadIdx.y + (unsigned long long)blockDim.y * threadIdx.z);

	return gpuckpt_block_id_() * ((unsigned long long)blockDim.x * blockDim.y * blockDim.z) +
	       in_block;
}

__device__ __forceinline__ bool gpuckpt_first_thread_(void)
{
	return threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
}

/* Is the stop word raised? Uncached: it is host memory the runtime writes. */
__device__ __forceinline__ unsigned int gpuckpt_stop_word_(const gpuckpt_kernel &k)
{
	return k.stop ? *k.stop : 0u;
}

/*
 * Block mode, at the top of the kernel, by every thread of the block (it
 * holds a __syncthreads): true when the block is to run. False when it ran
 * in an earlier launch, or when a checkpoint is due (the block is then
 * counted as interrupted, and runs in a later launch).
 */
__device__ __forceinline__ bool gpuckpt_block_enter(const gpuckpt_kernel &k)
{
	__shared__ int gpuckpt_go_;

	if (!k.state)
		return true;
	if (gpuckpt_first_thread_()) {
		unsigned long long b = gpuckpt_block_id_();
		unsigned long long *word = k.state + GPUCKPT_KREC_HEADER + b / 64;
		unsigned long long bit = 1ull << (b % 64);

		if (b >= k.nblocks || (*(volatile unsigned long long *)word & bit)) {
			gpuckpt_go_ = 0;
		} else if (gpuckpt_stop_word_(k)) {
			atomicAdd(k.state + GPUCKPT_KREC_INTERRUPTED, 1ull);
			gpuckpt_go_ = 0;
		} else {
			atomicOr(word, bit);
			atomicAdd(k.state + GPUCKPT_KREC_EXECUTED, 1ull);
			gpuckpt_go_ = 1;
		}
	}
	__syncthreads();
	return gpuckpt_go_ != 0;
}

#define GPUCKPT_BLOCK_BEGIN(k)                                                                     \
	do {                                                                                       \
		if (!gpuckpt_block_enter(k))                                                       \
			return;                                                                    \
	} while (0)

/* Loop mode, at the top of the kernel, by every thread: false when a
 * checkpoint is due before the thread started (nothing to save). */
__device__ __forceinline__ bool gpuckpt_loop_enter(const gpuckpt_kernel &k)
{
	if (!k.state || !gpuckpt_stop_word_(k))
		return true;
	atomicAdd(k.state + GPUCKPT_KREC_INTERRUPTED, 1ull);
	return false;
}

#define GPUCKPT_LOOP_BEGIN(k)                                                                      \
	do {                                                                                       \
		if (!gpuckpt_loop_enter(k))                                                        \
			return;                                                                    \
	} while (0)

/* Loop mode: where this thread's loop starts (0, or where it stopped). */
__device__ __forceinline__ long long gpuckpt_loop_start(const gpuckpt_kernel &k)
{
	unsigned long long t;

	if (!k.state)
		return 0;
	t = gpuckpt_thread_id_();
	if (t >= k.npos)
		return 0;
	return (long long)k.state[GPUCKPT_KREC_HEADER + t];
}

/* Loop mode, a thread that stops: its position `next` saved, and counted
 * as interrupted. */
__device__ __forceinline__ void gpuckpt_loop_save_(const gpuckpt_kernel &k, long long next)
{
	unsigned long long t = gpuckpt_thread_id_();

	if (t < k.npos)
		k.state[GPUCKPT_KREC_HEADER + t] = (unsigned long long)next;
	atomicAdd(k.state + GPUCKPT_KREC_INTERRUPTED, 1ull);
}

/* Loop mode, at the top of iteration `next`: true when the thread must
 * return now (its position `next` is saved). The stop word is read by one
 * lane of each warp. */
__device__ __forceinline__ bool gpuckpt_loop_stop(const gpuckpt_kernel &k, long long next)
{
	unsigned int mask, lane, leader, s = 0;

	if (!k.stop || !k.state)
		return false;
	mask = __activemask();
	asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
	leader = (unsigned int)__ffs(mask) - 1;
	if (lane == leader)
		s = *k.stop;
	s = __shfl_sync(mask, s, leader);
	if (!s)
		return false;
	gpuckpt_loop_save_(k, next);
	return true;
}

/* Loop mode with block barriers in the loop: every thread of the block calls
 * it at the same iteration; all stop together. */
__device__ __forceinline__ bool gpuckpt_loop_stop_block(const gpuckpt_kernel &k, long long next)
{
	__shared__ unsigned int gpuckpt_stop_;

	if (!k.stop || !k.state)
		return false;
	if (gpuckpt_first_thread_())
		gpuckpt_stop_ = *k.stop;
	__syncthreads();
	if (!gpuckpt_stop_) {
		__syncthreads(); /* nobody overwrites it before every thread read it */
		return false;
	}
	gpuckpt_loop_save_(k, next);
	return true;
}

/* Loop mode, after the loop: the thread is done (`end`: the loop's end). */
__device__ __forceinline__ void gpuckpt_loop_end(const gpuckpt_kernel &k, long long end)
{
	unsigned long long t;

	if (!k.state)
		return;
	t = gpuckpt_thread_id_();
	if (t >= k.npos || k.state[GPUCKPT_KREC_HEADER + t] == (unsigned long long)end)
		return;
	k.state[GPUCKPT_KREC_HEADER + t] = (unsigned long long)end;
	atomicAdd(k.state + GPUCKPT_KREC_EXECUTED, 1ull);
}

#endif /* __CUDACC__ */

#ifdef __cplusplus
#include <cuda_runtime_api.h>

/*
 * The C++ form of gpuckpt_kernel_run: `launch` is any callable taking a
 * gpuckpt_kernel (a lambda that launches the kernel with <<<...>>> on
 * `stream`). Without the runtime (the functions bound weakly and absent:
 * gpuckpt_optional.h) it launches once with a kernel handle that never stops
 * and waits for the stream. 0, a negative errno, or -EIO when the CUDA
 * runtime reported an error.
 */
template <typename F> struct gpuckpt_launcher_ {
	F *f;
	static int call(void *arg, struct gpuckpt_kernel k)
	{
		gpuckpt_launcher_ *self = (gpuckpt_launcher_ *)arg;

		(*self->f)(k);
		return cudaPeekAtLastError() == cudaSuccess ? 0 : -5 /* EIO */;
	}
};

template <typename F>
static inline int gpuckpt_kernel_launch(gpuckpt_kernel_record *rec, long step, cudaStream_t stream,
					 F launch)
{
	gpuckpt_launcher_<F> l = {&launch};
	/* Through a volatile pointer: gpuckpt_optional.h binds it weakly. */
	int (*volatile run)(gpuckpt_kernel_record *, long, void *, gpuckpt_launch_fn, void *) =
	    &gpuckpt_kernel_run;

	if (rec && run)
		return run(rec, step, (void *)stream, gpuckpt_launcher_<F>::call, &l);
	{
		struct gpuckpt_kernel none = {0, 0, 0, 0};

		launch(none);
		return cudaStreamSynchronize(stream) == cudaSuccess ? 0 : -5;
	}
}

/* The CUfunction of a __global__ function, for gpuckpt_kernel_create (NULL
 * when the CUDA runtime cannot say). The CUDA runtime (12 and later) launches
 * the kernel by another handle, its CUkernel cast to CUfunction; the gpuckpt
 * runtime knows both for the same kernel (a cooperative launch through
 * either is refused; its messages name it). */
template <typename K> static inline void *gpuckpt_kernel_function(K *kernel)
{
	cudaFunction_t f = 0;

	if (cudaGetFuncBySymbol(&f, (const void *)kernel) != cudaSuccess)
		return 0;
	return (void *)f;
}
#endif /* __cplusplus */

#endif /* GPUCKPT_KERNEL_CUH */
