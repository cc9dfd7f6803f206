/*
 * prog-uring.c - for uring.sh: asks the kernel for an io_uring instance the
 * way libuv does (glibc's syscall()), and prints what it got and the two
 * variables the runtime sets for transparent checkpoints, as the program
 * sees them at its start:
 *
 *	uring: ring|ENOSYS|<errno name> UV_USE_IO_URING=<value or -> NCCL_RAS_ENABLE=<value or ->
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(void)
{
	/* struct io_uring_params is 120 bytes; zeroed asks for defaults. */
	unsigned char params[120];
	const char *uv = getenv("UV_USE_IO_URING"), *ras = getenv("NCCL_RAS_ENABLE");
	long fd;

	memset(params, 0, sizeof(params));
	fd = syscall(SYS_io_uring_setup, 4, params);
	printf("uring: %s UV_USE_IO_URING=%s NCCL_RAS_ENABLE=%s\n",
	       fd >= 0		 ? "ring"
	       : errno == ENOSYS ? "ENOSYS"
				 : strerror(errno),
	       uv ? uv : "-", ras ? ras : "-");
	if (fd >= 0)
		close((int)fd);
	return 0;
}
