/*
 * steer.c - mmap, mmap64 and munmap, exported by libgpuckpt (steer.h). The kernel is
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
	s->nkept = 0;
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

static int kernel_munmap(void *addr, size_t len)
{
	return (int)syscall(SYS_munmap, addr, len);
}

static size_t page_size(void)
{
	static size_t pg;

	if (!pg)
		pg = (size_t)sysconf(_SC_PAGESIZE);
	return pg;
}

int gk_steer_kept(const struct gk_steer *s, uintptr_t a, size_t len)
{
	uintptr_t at = a, end = a + len;

	if (!len)
		return 0;
	/* Walk up from a through ranges that touch: at most nkept steps. */
	for (unsigned step = 0; step <= s->nkept && at < end; step++) {
		unsigned i;

		for (i = 0; i < s->nkept; i++)
			if (s->kept[i].at <= at && at < s->kept[i].at + s->kept[i].len)
				break;
		if (i == s->nkept)
			return 0;
		at = s->kept[i].at + s->kept[i].len;
	}
	return at >= end;
}

void gk_steer_unkeep(struct gk_steer *s)
{
	gk_steer_unkeep_outside(s, 0, 0);
}

void gk_steer_unkeep_outside(struct gk_steer *s, uintptr_t lo, uintptr_t hi)
{
	unsigned k = 0;

	for (unsigned i = 0; i < s->nkept; i++) {
		if (s->kept[i].at >= lo && s->kept[i].len <= hi - s->kept[i].at &&
		    s->kept[i].at < hi)
			s->kept[k++] = s->kept[i];
		else
			kernel_munmap((void *)s->kept[i].at, s->kept[i].len);
	}
	s->nkept = k;
}

/* The driver gives [addr, addr + len) back inside the window's keep range:
 * a placeholder takes its place at once (1), or nothing was done (0). */
static int keep(struct gk_steer *s, void *addr, size_t len)
{
	uintptr_t a = (uintptr_t)addr, lo = s->keep_lo, hi = s->keep_hi;
	size_t pg = page_size();
	int saved = errno;
	void *p;

	if (s->keep_seen && s->seen_len) {
		lo = s->seen;
		hi = s->seen + s->seen_len;
	}
	len = (len + pg - 1) & ~(pg - 1);
	if (!len || a % pg || a < lo || a >= hi || len > hi - a || s->nkept == GK_STEER_KEPT)
		return 0;
	p = kernel_mmap(addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
			-1, 0);
	errno = saved;
	if (p != addr)
		return 0;
	s->kept[s->nkept].at = a;
	s->kept[s->nkept].len = len;
	s->nkept++;
	return 1;
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
				kernel_munmap(p, len);
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

__attribute__((visibility("default"))) int munmap(void *addr, size_t len)
{
	if (__atomic_load_n(&open_windows, __ATOMIC_RELAXED)) {
		struct gk_steer *s = window;

		if (s && (s->keep_hi || s->keep_seen) && keep(s, addr, len))
			return 0;
	}
	return kernel_munmap(addr, len);
}
