/*
 * layout.h - the placement policy of one device's slice, without the driver:
 * where a block of a given size may go, where it goes, and what physical
 * memory must be mapped around it. arena.c maps what this says; the unit test
 * (tests/runtime/test-layout.c) checks it on its own.
 *
 *	base     +GK_GRANULE                    small_end                 end-GK_GRANULE   end
 *	| edge   | small blocks (<= 1 MiB,      | large blocks            | edge    |
 *	|granule | 512-byte aligned)            | (2 MiB aligned)         | granule |
 *
 * Slack. Programs that run natively may read a little outside their
 * allocations: Rodinia's srad_v2 reads up to 512 bytes before one. The
 * driver's allocator packs allocations, so those bytes belong to a
 * neighbour and the read is harmless; here a block may have no neighbour,
 * and the read would fault (CUDA_ERROR_ILLEGAL_ADDRESS, which breaks the
 * program's context for good). So the granule before and the granule after
 * every live block stay mapped (the block's guards), and each end of the
 * slice keeps a granule no block is placed in, where the guard of the first
 * or last block can lie. Guards are only mapped memory, never placement:
 * addresses depend on the live blocks alone, as before, so the same requests
 * give the same addresses on any GPU; a guard costs memory only where the
 * neighbouring granule holds no block.
 */
#ifndef GK_LAYOUT_H
#define GK_LAYOUT_H

#include "core/placement/intervals.h"

#include <stdint.h>

#define GK_GRANULE (2ull << 20)
#define GK_SMALL_MAX (1ull << 20)
#define GK_SMALL_ALIGN 512ull
/* Mapped memory kept before and after every block: one granule each side. */
#define GK_GUARD GK_GRANULE

/*
 * Below the device slices (GPUCKPT_VA_BASE) lie two windows of address space
 * where the runtime itself places reservations the driver would put anywhere,
 * so that a restart can make them at the same addresses again:
 *
 *	base - 12 TiB            base - 8 TiB            base
 *	| program's small        | CUDA IPC imports     | device slices ...
 *	| reservations (vmm.c)   | (interpose/ipc.c)    |
 *
 * With the default base (32 TiB) both lie above 16 TiB + 2 GiB, where
 * AddressSanitizer's shadow ends: a program built with it (and the CI's
 * sanitizer build) can have them too.
 *
 * The driver takes an address only for a reservation of GK_HINT_MIN or more,
 * at a multiple of GK_HINT_ALIGN: on the H200 (driver 580, 2026-11-29) one of
 * 16 MiB or less went to the driver's own pool whatever the address asked,
 * and an address that was no multiple of 32 MiB came back rounded up. So
 * what goes into a window starts at such a multiple and is at least that long.
 */
#define GK_IMPORT_WINDOW (8ull << 40)
#define GK_RESV_WINDOW (4ull << 40)
#define GK_HINT_MIN (32ull << 20)
#define GK_HINT_ALIGN (32ull << 20)

static inline uint64_t gk_align_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) & ~(to - 1);
}

struct gk_layout {
	uint64_t base, size; /* the slice, reserved at base */
	uint64_t small_end;  /* small blocks below, large ones from here */
};

/* The slice's regions (the first eighth for small blocks). */
void gk_layout_init(struct gk_layout *l, uint64_t base, uint64_t size);

/* Address space a block of `size` bytes takes: its size rounded up to the
 * alignment of its kind; 0 when size is 0 or too large to round. */
uint64_t gk_layout_extent(uint64_t size);

static inline int gk_layout_is_small(uint64_t size)
{
	return size <= GK_SMALL_MAX;
}

/* Where a block of `size` bytes may start: [*lo, *hi) with *align. */
void gk_layout_region(const struct gk_layout *l, uint64_t size, uint64_t *lo, uint64_t *hi,
		      uint64_t *align);

/* The lowest place for a block of `size` among the live blocks of its kind
 * (`live`: small ones for a small block, large ones for a large block).
 * 0 and *addr, or -ENOMEM. */
int gk_layout_place(const struct gk_layout *l, const struct gk_itree *live, uint64_t size,
		    uint64_t *addr);

/* The granules to keep mapped for the block [start, end): its own and its
 * guards, as far as they lie inside the slice. */
void gk_layout_mapped(const struct gk_layout *l, uint64_t start, uint64_t end, uint64_t *lo,
		      uint64_t *hi);

/* The addresses a live block must overlap for mapped memory [start, end) to
 * be its own or its guard: memory no block is near may be given back. */
void gk_layout_near(const struct gk_layout *l, uint64_t start, uint64_t end, uint64_t *lo,
		    uint64_t *hi);

#endif
