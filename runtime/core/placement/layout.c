#include "config.h"

#include "core/placement/layout.h"

#include <errno.h>

static uint64_t align_down(uint64_t v, uint64_t a)
{
	return v & ~(a - 1);
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

void gk_layout_init(struct gk_layout *l, uint64_t base, uint64_t size)
{
	l->base = base;
	l->size = size;
	l->small_end = base + size / 8;
}

uint64_t gk_layout_extent(uint64_t size)
{
	uint64_t align = gk_layout_is_small(size) ? GK_SMALL_ALIGN : GK_GRANULE;
	uint64_t extent = align_up(size, align);

	return size == 0 || extent < size ? 0 : extent;
}

void gk_layout_region(const struct gk_layout *l, uint64_t size, uint64_t *lo, uint64_t *hi,
		      uint64_t *align)
{
	/* The edge granules stay free of blocks: the guard of the first small
	 * block and of the last large one lie there, inside the slice. */
	if (gk_layout_is_small(size)) {
		*lo = l->base + GK_GUARD;
		*hi = l->small_end;
		*align = GK_SMALL_ALIGN;
	} else {
		*lo = l->small_end;
		*hi = l->base + l->size - GK_GUARD;
		*align = GK_GRANULE;
	}
}

int gk_layout_place(const struct gk_layout *l, const struct gk_itree *live, uint64_t size,
		    uint64_t *addr)
{
	uint64_t extent = gk_layout_extent(size), lo, hi, align;

	if (!extent)
		return -ENOMEM;
	gk_layout_region(l, size, &lo, &hi, &align);
	return gk_itree_first_fit(live, extent, align, lo, hi, addr);
}

/* [start - GK_GUARD, end + GK_GUARD) within the slice. */
static void widen(const struct gk_layout *l, uint64_t start, uint64_t end, uint64_t *lo,
		  uint64_t *hi)
{
	uint64_t slice_end = l->base + l->size;

	*lo = start - l->base >= GK_GUARD ? start - GK_GUARD : l->base;
	*hi = slice_end - end >= GK_GUARD ? end + GK_GUARD : slice_end;
}

void gk_layout_mapped(const struct gk_layout *l, uint64_t start, uint64_t end, uint64_t *lo,
		      uint64_t *hi)
{
	widen(l, align_down(start, GK_GRANULE), align_up(end, GK_GRANULE), lo, hi);
}

void gk_layout_near(const struct gk_layout *l, uint64_t start, uint64_t end, uint64_t *lo,
		    uint64_t *hi)
{
	widen(l, start, end, lo, hi);
}
