/*
 * standin_kernel.h - how a "kernel" looks to the host-memory CUDA driver
 * stand-in (tests/cuda-standin). The stand-in's cuModuleLoad() dlopen()s a host
 * shared object instead of a cubin; cuModuleGetFunction() looks the kernel up
 * by name; cuLaunchKernel() copies the argument values (their sizes come from
 * NAME__params) and calls the function on the stream's worker thread, once per
 * launch, with the grid and block dimensions. The function itself loops over
 * the threads it stands for. Device pointers are host addresses there, so the
 * body reads and writes them directly.
 *
 *	STANDIN_KERNEL(vec_add, sizeof(float *), sizeof(float *), sizeof(int))
 *	{
 *		float *x = STANDIN_ARG(float *, 0);
 *		...
 *	}
 *
 * A dereference of a bad pointer would crash the process. A kernel that
 * reads or writes where a GPU kernel might fault asks first:
 *
 *	if (!STANDIN_CAN_READ(x - 128, sizeof(float)))
 *		return;
 *
 * When the memory is not device-accessible (not allocated, not mapped, no
 * access granted), the answer is no and the launch counts as faulted, as a GPU
 * kernel's would: its context gets the sticky CUDA_ERROR_ILLEGAL_ADDRESS,
 * which every later call on that context returns, and later launches there do
 * not run. The kernel should stop at once.
 */
#ifndef STANDIN_KERNEL_H
#define STANDIN_KERNEL_H

#include <stddef.h>

struct standin_dim3 {
	unsigned x, y, z;
};

struct standin_launch {
	struct standin_dim3 grid, block;
	unsigned shared_bytes;
	/* 1 when [p, p + n) may be read (write 0) or written (write 1) by a
	 * kernel; 0 faults the launch (see above). */
	int (*access)(const struct standin_launch *launch, const void *p, size_t n, int write);
};

typedef void (*standin_kernel_fn)(const struct standin_launch *launch, void **params);

/* Argument i of the launch, as type T. */
#define STANDIN_ARG(T, i) (*(T *)params[(i)])

/* Inside a kernel body: may it touch [p, p + n)? No means the launch faulted. */
#define STANDIN_CAN_READ(p, n) (launch->access(launch, (p), (n), 0))
#define STANDIN_CAN_WRITE(p, n) (launch->access(launch, (p), (n), 1))

/*
 * Marks the module's global NAME as a __managed__ variable: cuModuleGetGlobal
 * finds it as any global, and cuPointerGetAttribute(IS_MANAGED) then says 1
 * for it, as the real driver does for a module's managed variable.
 *
 *	uint64_t counter;
 *	STANDIN_MANAGED(counter);
 */
#define STANDIN_MANAGED(name) const int name##__managed = 1

/* Defines kernel NAME and the zero-terminated list of its argument sizes. */
#define STANDIN_KERNEL(name, ...)                                                                  \
	const size_t name##__params[] = {__VA_ARGS__, 0};                                          \
	void name(const struct standin_launch *launch, void **params);                             \
	void name(const struct standin_launch *launch, void **params)

#endif
