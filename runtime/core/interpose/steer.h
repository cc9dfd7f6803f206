/*
 * steer.h - the runtime's mmap and mmap64 (steer.c): they pass every call to
 * the kernel untouched, except, in the one thread that opened a window
 * around a call into the driver, an anonymous PROT_NONE reservation (what
 * libcuda reserves managed memory with, through libc's mmap, before it maps
 * the memory inside it): that one is noted (where, how long) and, when the
 * window asks for it, placed at a given address (MAP_FIXED_NOREPLACE), so
 * that the driver's managed allocation lands where a checkpointed run had
 * it (managed.c). The runtime's munmap likewise, in such a window, can leave
 * a placeholder where the driver gives a range back (below). Outside a
 * window a call costs one relaxed load.
 */
#ifndef GK_STEER_H
#define GK_STEER_H

#include <stddef.h>
#include <stdint.h>

#define GK_STEER_KEPT 8

struct gk_steer {
	/* In: where a reservation of exactly want_len bytes should go (first
	 * want[0], then want[1] if that is taken; 0: no address), none when
	 * want_len is 0. */
	uintptr_t want[2];
	size_t want_len;
	/* want[0]'s range is all placeholders of the caller's own: replaced
	 * (MAP_FIXED) rather than only taken where free. */
	int own;
	/* Out: the last reservation the window saw (address, length, 0 when
	 * none), whether it was steered, and the error of the last attempt
	 * that failed (an errno, 0 if none). */
	uintptr_t seen;
	size_t seen_len;
	int steered;
	int failed;
	/* In: a range the driver gives back with munmap inside [keep_lo,
	 * keep_hi), or inside the reservation the window saw when keep_seen is
	 * set, is replaced in one step (MAP_FIXED) by an inaccessible
	 * placeholder, which the caller then owns: between the driver's munmap
	 * and a placeholder made after the call, another thread's mmap (a
	 * malloc arena, a thread's stack) could take the place, and the
	 * allocation could not be had there again. */
	uintptr_t keep_lo, keep_hi;
	int keep_seen;
	/* Out: the ranges so kept (page-rounded lengths); a munmap beyond the
	 * first GK_STEER_KEPT is done as asked. */
	struct {
		uintptr_t at;
		size_t len;
	} kept[GK_STEER_KEPT];
	unsigned nkept;
};

/* Open a window on this thread (s cleared of its outputs) and close it
 * again. Windows do not nest. */
void gk_steer_begin(struct gk_steer *s);
void gk_steer_end(void);

/* 1 if the window's kept ranges cover [a, a + len) (len > 0), else 0. */
int gk_steer_kept(const struct gk_steer *s, uintptr_t a, size_t len);

/* Give the window's kept ranges back (the call they were kept for failed). */
void gk_steer_unkeep(struct gk_steer *s);

/* Give back those not inside [lo, hi) (kept in an earlier reservation the
 * driver made in the same call, which is not the allocation's). */
void gk_steer_unkeep_outside(struct gk_steer *s, uintptr_t lo, uintptr_t hi);

#endif
