#include "config.h"

#include "core/placement/intervals.h"

#include <errno.h>

static int height(const struct gk_ival *n)
{
	return n ? n->height : 0;
}

static uint64_t max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;

	return m > c ? m : c;
}

/* Recompute the node's summary from its children. */
static void update(struct gk_ival *n)
{
	uint64_t gap_left = 0, gap_right = 0;
	int hl = height(n->left), hr = height(n->right);

	n->height = 1 + (hl > hr ? hl : hr);
	n->min_start = n->left ? n->left->min_start : n->start;
	n->max_end = n->right ? n->right->max_end : n->end;
	if (n->left)
		gap_left = n->start - n->left->max_end;
	if (n->right)
		gap_right = n->right->min_start - n->end;
	n->max_gap = max3(n->left ? n->left->max_gap : 0, n->right ? n->right->max_gap : 0,
			  gap_left > gap_right ? gap_left : gap_right);
}

static struct gk_ival *rotate_right(struct gk_ival *n)
{
	struct gk_ival *l = n->left;

	n->left = l->right;
	l->right = n;
	update(n);
	update(l);
	return l;
}

static struct gk_ival *rotate_left(struct gk_ival *n)
{
	struct gk_ival *r = n->right;

	n->right = r->left;
	r->left = n;
	update(n);
	update(r);
	return r;
}

static struct gk_ival *balance(struct gk_ival *n)
{
	int bf;

	update(n);
	bf = height(n->left) - height(n->right);
	if (bf > 1) {
		if (height(n->left->left) < height(n->left->right))
			n->left = rotate_left(n->left);
		return rotate_right(n);
	}
	if (bf < -1) {
		if (height(n->right->right) < height(n->right->left))
			n->right = rotate_right(n->right);
		return rotate_left(n);
	}
	return n;
}

static struct gk_ival *insert(struct gk_ival *root, struct gk_ival *node)
{
	if (!root)
		return node;
	if (node->start < root->start)
		root->left = insert(root->left, node);
	else
		root->right = insert(root->right, node);
	return balance(root);
}

void gk_itree_insert(struct gk_itree *t, struct gk_ival *node)
{
	node->left = node->right = NULL;
	update(node);
	t->root = insert(t->root, node);
	t->count++;
}

/* Detach the leftmost node of a subtree into *min; returns the new subtree. */
static struct gk_ival *remove_min(struct gk_ival *n, struct gk_ival **min)
{
	if (!n->left) {
		*min = n;
		return n->right;
	}
	n->left = remove_min(n->left, min);
	return balance(n);
}

static struct gk_ival *remove_node(struct gk_ival *root, struct gk_ival *node)
{
	if (!root)
		return NULL;
	if (node->start < root->start) {
		root->left = remove_node(root->left, node);
	} else if (node->start > root->start) {
		root->right = remove_node(root->right, node);
	} else {
		struct gk_ival *l = root->left, *r = root->right, *min;

		if (!r)
			return l;
		r = remove_min(r, &min);
		min->left = l;
		min->right = r;
		return balance(min);
	}
	return balance(root);
}

void gk_itree_remove(struct gk_itree *t, struct gk_ival *node)
{
	t->root = remove_node(t->root, node);
	t->count--;
}

struct gk_ival *gk_itree_find(const struct gk_itree *t, uint64_t addr)
{
	struct gk_ival *n = t->root;

	while (n) {
		if (addr < n->start)
			n = n->left;
		else if (addr >= n->end)
			n = n->right;
		else
			return n;
	}
	return NULL;
}

struct gk_ival *gk_itree_first_overlap(const struct gk_itree *t, uint64_t start, uint64_t end)
{
	struct gk_ival *n = t->root, *best = NULL;

	/* The lowest interval whose end is above start; it overlaps if it begins
	 * before end. Intervals are disjoint, so ends are ordered like starts. */
	while (n) {
		if (n->end > start) {
			best = n;
			n = n->left;
		} else {
			n = n->right;
		}
	}
	return best && best->start < end ? best : NULL;
}

static int fits(uint64_t gap_start, uint64_t gap_end, uint64_t size, uint64_t align,
		uint64_t *addr)
{
	uint64_t a = (gap_start + align - 1) & ~(align - 1);

	if (a < gap_start || a > gap_end || gap_end - a < size)
		return 0;
	*addr = a;
	return 1;
}

/*
 * Search subtree n, whose intervals all lie after `prev_end` (the end of the
 * interval before the subtree, or lo). Gaps below `size` cannot hold the block
 * whatever the alignment, which is what lets whole subtrees be skipped.
 */
static int search(const struct gk_ival *n, uint64_t prev_end, uint64_t size, uint64_t align,
		  uint64_t lo, uint64_t *addr)
{
	uint64_t before;

	if (!n)
		return 0;
	if (n->min_start - prev_end < size && n->max_gap < size)
		return 0;
	if (search(n->left, prev_end, size, align, lo, addr))
		return 1;
	before = n->left ? n->left->max_end : prev_end;
	if (before < lo)
		before = lo;
	if (n->start > before && fits(before, n->start, size, align, addr))
		return 1;
	return search(n->right, n->end, size, align, lo, addr);
}

int gk_itree_first_fit(const struct gk_itree *t, uint64_t size, uint64_t align, uint64_t lo,
		       uint64_t hi, uint64_t *addr)
{
	uint64_t tail = lo;

	if (size == 0 || align == 0 || (align & (align - 1)))
		return -EINVAL;
	if (t->root) {
		if (search(t->root, lo, size, align, lo, addr))
			return *addr + size <= hi ? 0 : -ENOMEM;
		tail = t->root->max_end > lo ? t->root->max_end : lo;
	}
	if (tail < hi && fits(tail, hi, size, align, addr))
		return 0;
	return -ENOMEM;
}

struct gk_ival *gk_itree_first(const struct gk_itree *t)
{
	struct gk_ival *n = t->root;

	while (n && n->left)
		n = n->left;
	return n;
}

struct gk_ival *gk_itree_next(const struct gk_itree *t, const struct gk_ival *cur)
{
	struct gk_ival *n = t->root, *succ = NULL;

	while (n) {
		if (cur->start < n->start) {
			succ = n;
			n = n->left;
		} else {
			n = n->right;
		}
	}
	return succ;
}
