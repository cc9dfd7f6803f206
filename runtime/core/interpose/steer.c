/*
 * steer.c - mmap and mmap64, exported by libgpuckpt (steer.h). The kernel is
 * called directly (syscall), not through libc's mmap: no lookup of the next
 * definition, no allocation, usable before any constructor ran. errno is
 * what the kernel's answer makes it, as libc's mmap does; a steering attempt
 * that fails leaves errno as it found it.
 */
#include "config.h"

#include "core/interpose/steer.h"

#include <errno.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* How many windows are open in the process: the only thing a call outside
 * a window reads. */
static int open_windows;
static __thread struct gk_steer *window __attribute__((tls_model("initial-exec")));

void gk_steer_begin(struct gk_steer *s)
{
	s->seen = 0;
	s->seen_len = 0;
	s->steered = 0;
	s->failed = 0;
	window = s;
	__atomic_add_fetch(&open_windows, 1, __ATOMIC_SEQ_CST);
}

void gk_steer_end(void)
{
	if (!window)
		return;
	window = NULL;
	__atomic_sub_fetch(&open_windows, 1, __ATOMIC_SEQ_CST);
}

static void *kernel_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

/* A reservation as the driver makes one: anonymous, private, inaccessible,
 * anywhere. */
static int is_reservation(int prot, int flags, int fd, off_t off)
{
	return prot == PROT_NONE && fd == -1 && off == 0 &&
	       (flags & (MAP_ANONYMOUS | MAP_PRIVATE | MAP_SHARED | MAP_FIXED |
			 MAP_FIXED_NOREPLACE)) == (MAP_ANONYMOUS | MAP_PRIVATE);
}

static void *in_window(struct gk_steer *s, void *addr, size_t len, int prot, int flags, int fd,
		       off_t off)
{
	void *p;

	if (s->want_len && len == s->want_len && !s->steered) {
		int saved = errno;

		for (int i = 0; i < 2; i++) {
			void *at = (void *)s->want[i];

			if (!at)
				continue;
			p = kernel_mmap(at, len, prot,
					flags | (i == 0 && s->own ? MAP_FIXED : MAP_FIXED_NOREPLACE),
					fd, off);
			if (p == at) {
				s->steered = 1;
				s->seen = (uintptr_t)p;
				s->seen_len = len;
				errno = saved;
				return p;
			}
			/* A kernel before 4.17 takes the flag for a hint. */
			if (p != MAP_FAILED) {
				munmap(p, len);
				s->failed = EEXIST;
			} else {
				s->failed = errno;
			}
		}
		errno = saved;
	}
	p = kernel_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED) {
		s->seen = (uintptr_t)p;
		s->seen_len = len;
	}
	return p;
}

__attribute__((visibility("default"))) void *mmap(void *addr, size_t len, int prot, int flags,
						   int fd, off_t off)
{
	if (__atomic_load_n(&open_windows, __ATOMIC_RELAXED)) {
		struct gk_steer *s = window;

		if (s && is_reservation(prot, flags, fd, off))
			return in_window(s, addr, len, prot, flags, fd, off);
	}
	return kernel_mmap(addr, len, prot, flags, fd, off);
}

/* The same function under its large-file name (off_t is 64 bits here). */
__attribute__((visibility("default"))) void *mmap64(void *addr, size_t len, int prot, int flags,
						     int fd, off_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}
