/*
 * intervals.h - a set of disjoint address intervals in an AVL tree, each node
 * knowing the largest gap between intervals below it, so that "the lowest
 * aligned place where SIZE bytes fit" is found in O(log n). The placement
 * policy is built on that query: it depends only on which intervals are live,
 * never on the order they came and went, which is what makes placement the same
 * in every run that makes the same requests.
 */
#ifndef GK_INTERVALS_H
#define GK_INTERVALS_H

#include <stddef.h>
#include <stdint.h>

struct gk_ival {
	uint64_t start, end; /* [start, end) */
	/* set by the tree */
	struct gk_ival *left, *right;
	int height;
	uint64_t min_start, max_end, max_gap;
};

struct gk_itree {
	struct gk_ival *root;
	size_t count;
};

/* Insert a node (start/end set, not overlapping any other). */
void gk_itree_insert(struct gk_itree *t, struct gk_ival *node);

/* Remove a node that is in the tree. */
void gk_itree_remove(struct gk_itree *t, struct gk_ival *node);

/* The interval containing addr, or NULL. */
struct gk_ival *gk_itree_find(const struct gk_itree *t, uint64_t addr);

/* The lowest interval overlapping [start, end), or NULL. */
struct gk_ival *gk_itree_first_overlap(const struct gk_itree *t, uint64_t start, uint64_t end);

/*
 * The lowest address a >= lo, a multiple of align (a power of two), with
 * [a, a + size) inside [lo, hi) and overlapping no interval. Returns 0 and sets
 * *addr, or -ENOMEM when there is no such place.
 */
int gk_itree_first_fit(const struct gk_itree *t, uint64_t size, uint64_t align, uint64_t lo,
		       uint64_t hi, uint64_t *addr);

/* In address order: the first interval, and the one after n. */
struct gk_ival *gk_itree_first(const struct gk_itree *t);
struct gk_ival *gk_itree_next(const struct gk_itree *t, const struct gk_ival *n);

#endif
