/*
 * The placement policy (runtime/core/placement/layout.c) on its own: where blocks go,
 * that the same requests give the same addresses whatever slice or history,
 * and that the mapped range of every block covers its guards, the granule
 * before and the granule after it, inside the slice. The stand-in test
 * (tests/gpu/standin.sh, gpu-slack) shows the same on a driver: reads before
 * and after allocations land on mapped memory.
 */
#include "config.h"

#include "core/placement/intervals.h"
#include "core/placement/layout.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>

#define BASE 0x200000000000ull
#define SLICE (1ull << 40)
#define G GK_GRANULE
#define MAXB 64

struct run {
	struct gk_layout lay;
	struct gk_itree small, large;
	struct gk_ival *blocks[MAXB];
	uint64_t addr[MAXB];
	int n;
};

/* Place a block of size, as the arena does; its address or 0. */
static uint64_t place(struct run *r, uint64_t size)
{
	struct gk_itree *t = gk_layout_is_small(size) ? &r->small : &r->large;
	struct gk_ival *b;
	uint64_t addr;

	if (r->n == MAXB || gk_layout_place(&r->lay, t, size, &addr) < 0)
		return 0;
	b = calloc(1, sizeof(*b));
	if (!b)
		return 0;
	b->start = addr;
	b->end = addr + gk_layout_extent(size);
	gk_itree_insert(t, b);
	r->blocks[r->n] = b;
	r->addr[r->n++] = addr;
	return addr;
}

static void drop(struct run *r, int i)
{
	struct gk_ival *b = r->blocks[i];

	gk_itree_remove(b->start < r->lay.small_end ? &r->small : &r->large, b);
	free(b);
	r->blocks[i] = NULL;
}

static void clear(struct run *r)
{
	for (int i = 0; i < r->n; i++)
		if (r->blocks[i])
			drop(r, i);
	r->n = 0;
}

/* A program's requests, srad-like: large images first, then small ones, a
 * free in between and requests after it. */
static const uint64_t sizes[] = {16u << 20, 16u << 20, 16u << 20, 3u << 20, 1000,
				 4096,	    1u << 20,  512,	  64,	    (16u << 20) - 4};

static void program(struct run *r, uint64_t base)
{
	gk_layout_init(&r->lay, base, SLICE);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		place(r, sizes[i]);
		if (i == 5)
			drop(r, 1); /* the second image is freed: the next large one fits there */
	}
}

/* Every block's mapped range covers it, the granule before and the granule
 * after it (where they are in the slice), and stays in the slice. */
static int guards_covered(const struct run *r, int *edge_seen)
{
	for (int i = 0; i < r->n; i++) {
		const struct gk_ival *b = r->blocks[i];
		uint64_t lo, hi, gstart, gend;

		if (!b)
			continue;
		gk_layout_mapped(&r->lay, b->start, b->end, &lo, &hi);
		gstart = b->start & ~(G - 1);
		gend = (b->end + G - 1) & ~(G - 1);
		if (lo < r->lay.base || hi > r->lay.base + r->lay.size)
			return 0;
		if (lo > gstart - G || hi < gend + G)
			return 0; /* every block of this program is away from the slice's edges */
		if (lo % G || hi % G)
			return 0;
		if (gstart - G == r->lay.base)
			*edge_seen = 1;
	}
	return 1;
}

int main(void)
{
	struct run a = {0}, b = {0};
	uint64_t lo, hi, align, x, y;
	int same = 1, edge = 0;

	plan(12);

	gk_layout_init(&a.lay, BASE, SLICE);
	gk_layout_region(&a.lay, 512, &lo, &hi, &align);
	ok(lo == BASE + G && hi == BASE + SLICE / 8 && align == GK_SMALL_ALIGN,
	   "small blocks go from the slice's second granule to its first eighth, 512-byte aligned");
	gk_layout_region(&a.lay, 2 * G, &lo, &hi, &align);
	ok(lo == BASE + SLICE / 8 && hi == BASE + SLICE - G && align == G,
	   "large blocks go from there to the slice's last granule, 2 MiB aligned");
	ok(gk_layout_extent(0) == 0 && gk_layout_extent(~0ull) == 0 && gk_layout_extent(1) == 512 &&
	       gk_layout_extent(GK_SMALL_MAX) == GK_SMALL_MAX &&
	       gk_layout_extent(GK_SMALL_MAX + 1) == G && gk_layout_extent(3 * G + 1) == 4 * G,
	   "extents: 512-byte steps up to 1 MiB, 2 MiB steps above; 0 for nothing or too much");

	program(&a, BASE);
	ok(a.addr[0] == BASE + SLICE / 8 && a.addr[1] == a.addr[0] + (16u << 20) &&
	       a.addr[4] == BASE + G && a.addr[5] == BASE + G + 1024,
	   "the lowest place that fits: images packed from the large region's start, small "
	   "blocks from the second granule");
	ok(a.addr[9] == a.addr[1] && a.addr[3] == a.addr[2] + (16u << 20),
	   "a freed range goes to the next block that fits in it");
	ok(guards_covered(&a, &edge) && edge,
	   "every block's mapped range holds it and the granules before and after it (the "
	   "first small block's guard is the slice's first granule)");

	/* The same requests on another device's slice: the same offsets. */
	program(&b, BASE + 3 * SLICE);
	for (int i = 0; i < a.n; i++)
		same &= b.addr[i] - (BASE + 3 * SLICE) == a.addr[i] - BASE;
	ok(same && a.n == b.n && a.n == (int)(sizeof(sizes) / sizeof(sizes[0])),
	   "the same requests give the same addresses, relative to any slice");

	/* The same live set reached by another history: the same next place. */
	clear(&b);
	gk_layout_init(&b.lay, BASE, SLICE);
	for (int i = a.n - 1; i >= 0; i--) {
		if (!a.blocks[i])
			continue;
		struct gk_itree *t = a.blocks[i]->start < a.lay.small_end ? &b.small : &b.large;
		struct gk_ival *c = calloc(1, sizeof(*c));

		c->start = a.blocks[i]->start;
		c->end = a.blocks[i]->end;
		gk_itree_insert(t, c);
		b.blocks[b.n++] = c;
	}
	x = place(&a, 5u << 20);
	y = place(&b, 5u << 20);
	ok(x && x == y, "a live set built in another order gives the next block the same place");

	/* Guards at the slice's edges stay inside it. */
	gk_layout_mapped(&a.lay, BASE, BASE + 512, &lo, &hi);
	ok(lo == BASE && hi == BASE + 2 * G,
	   "a block in the first granule (an older checkpoint's) maps from the slice start");
	gk_layout_mapped(&a.lay, BASE + SLICE - G, BASE + SLICE, &lo, &hi);
	ok(lo == BASE + SLICE - 2 * G && hi == BASE + SLICE,
	   "a block in the last granule maps up to the slice end, not beyond");

	/* What trim may give back: memory near no block. */
	gk_layout_near(&a.lay, a.addr[0] - G, a.addr[0], &lo, &hi);
	ok(lo == a.addr[0] - 2 * G && hi == a.addr[0] + G &&
	       gk_itree_first_overlap(&a.large, lo, hi),
	   "the granule before the first image is near it (its guard), so it stays mapped");
	gk_layout_near(&a.lay, a.addr[0] - 2 * G, a.addr[0] - G, &lo, &hi);
	ok(!gk_itree_first_overlap(&a.large, lo, hi) && !gk_itree_first_overlap(&a.small, lo, hi),
	   "the granule before that is near no block: it may be given back");

	clear(&a);
	clear(&b);
	return done_testing();
}
