/*
 * uring.c - no io_uring in a process that a transparent checkpoint may dump.
 *
 * CRIU cannot dump an io_uring instance (its rings are kernel memory mapped
 * into the process), so the shepherd refuses a task holding one
 * (shepherd/links.c). Libraries make rings on their own: on an H200 with
 * PyTorch 2.11, rank 0 of a DDP job (which hosts the TCPStore, on libuv)
 * held one, and no checkpoint of the job could be taken. UV_USE_IO_URING=0
 * (agent.c) is libuv's own switch, but only for the versions that read it
 * and only if set before its loop starts; and other libraries have none.
 * Those libraries already handle kernels without io_uring, so the runtime
 * answers io_uring_setup made through glibc's syscall() the way such a
 * kernel does (ENOSYS) and they use epoll instead. With both in place the
 * DDP job's rank 0 held no ring and round-tripped.
 *
 * Only where gk_uring_refuse() was called (the agent's environment, at load,
 * in processes that run under a shepherd in transparent mode); elsewhere
 * every call goes straight to glibc. A ring made with inline system calls
 * (liburing) is not seen here; the shepherd still names it.
 */
#include "config.h"

#include "core/driver/driver.h"
#include "core/interpose/uring.h"
#include "common/export.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef long (*syscall_fn)(long, ...);

static int refusing;
static syscall_fn real_syscall;

void gk_uring_refuse(void)
{
	__atomic_store_n(&refusing, 1, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void resolve(void)
{
	real_syscall = (syscall_fn)gk_real_dlsym(RTLD_NEXT, "syscall");
}

/* syscall(2) takes at most six arguments after the number; passing six
 * longs on is what glibc's own wrapper reads whatever the call. */
GK_EXPORT long syscall(long nr, ...)
{
	long a[6];
	va_list ap;

	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
#ifdef SYS_io_uring_setup
	if (nr == SYS_io_uring_setup && __atomic_load_n(&refusing, __ATOMIC_ACQUIRE)) {
		errno = ENOSYS;
		return -1;
	}
#endif
	if (!real_syscall)
		resolve();
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}
