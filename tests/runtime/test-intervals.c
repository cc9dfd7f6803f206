/*
 * The placement policy's data structure against a brute-force model: random
 * inserts, removals and first-fit queries must agree, and first-fit must give
 * the same answer for the same live set whatever history built it (that is
 * what makes placement reproducible across runs).
 */
#include "config.h"

#include "core/placement/intervals.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>

#define LO 0x200000000000ull
#define HI (LO + (1ull << 30))
#define MAXN 400

struct model {
	uint64_t s[MAXN], e[MAXN];
	int n;
};

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Brute force: the lowest aligned start after every interval end (or lo) that fits. */
static int model_fit(const struct model *m, uint64_t size, uint64_t align, uint64_t *out)
{
	int found = 0;
	uint64_t best = 0;

	for (int c = -1; c < m->n; c++) {
		uint64_t a = c < 0 ? LO : m->e[c];
		int ok = 1;

		a = (a + align - 1) & ~(align - 1);
		if (a + size > HI)
			continue;
		for (int i = 0; i < m->n && ok; i++)
			if (a < m->e[i] && m->s[i] < a + size)
				ok = 0;
		if (ok && (!found || a < best)) {
			best = a;
			found = 1;
		}
	}
	*out = best;
	return found;
}

static int check_tree(const struct gk_ival *n, uint64_t *count)
{
	if (!n)
		return 1;
	(*count)++;
	if (n->left && n->left->end > n->start)
		return 0;
	if (n->right && n->right->start < n->end)
		return 0;
	return check_tree(n->left, count) && check_tree(n->right, count);
}

int main(void)
{
	struct gk_itree t = {0}, t2 = {0};
	struct gk_ival *nodes[MAXN] = {0};
	struct model m = {{0}, {0}, 0};
	int agree = 1, ordered = 1, found_ok = 1, iters = 20000;
	uint64_t count;

	plan(6);
	for (int it = 0; it < iters; it++) {
		uint64_t r = next_rand();

		if (m.n > 0 && (r % 3 == 0 || m.n == MAXN)) {
			int i = (int)(next_rand() % (uint64_t)m.n);

			gk_itree_remove(&t, nodes[i]);
			free(nodes[i]);
			nodes[i] = nodes[m.n - 1];
			m.s[i] = m.s[m.n - 1];
			m.e[i] = m.e[m.n - 1];
			m.n--;
		} else {
			uint64_t size = 1 + next_rand() % (1u << 22);
			uint64_t align = 1ull << (next_rand() % 22);
			uint64_t want = 0, got = 0;
			int mf = model_fit(&m, size, align, &want);
			int tf = gk_itree_first_fit(&t, size, align, LO, HI, &got) == 0;

			if (mf != tf || (mf && want != got)) {
				agree = 0;
				printf("# size %llu align %llu: model %d 0x%llx tree %d 0x%llx\n",
				       (unsigned long long)size, (unsigned long long)align, mf,
				       (unsigned long long)want, tf, (unsigned long long)got);
				break;
			}
			if (!tf)
				continue;
			nodes[m.n] = calloc(1, sizeof(struct gk_ival));
			nodes[m.n]->start = got;
			nodes[m.n]->end = got + size;
			gk_itree_insert(&t, nodes[m.n]);
			m.s[m.n] = got;
			m.e[m.n] = got + size;
			m.n++;
		}
	}
	ok(agree, "first fit agrees with a brute-force search over %d random operations", iters);
	count = 0;
	ordered = check_tree(t.root, &count);
	ok(ordered && count == (uint64_t)m.n && t.count == (size_t)m.n,
	   "the tree stays ordered and holds every live interval (%d)", m.n);
	for (int i = 0; i < m.n && found_ok; i++) {
		struct gk_ival *f = gk_itree_find(&t, m.s[i] + (m.e[i] - m.s[i]) / 2);

		found_ok = f == nodes[i];
	}
	ok(found_ok, "find returns the interval holding an address");
	/* Same live set, built in reverse: the same answers. */
	for (int i = m.n - 1; i >= 0; i--) {
		struct gk_ival *c = calloc(1, sizeof(*c));

		c->start = m.s[i];
		c->end = m.e[i];
		gk_itree_insert(&t2, c);
	}
	{
		int same = 1;

		for (int q = 0; q < 2000 && same; q++) {
			uint64_t size = 1 + next_rand() % (1u << 23), align = 1ull << (next_rand() % 22);
			uint64_t a = 0, b = 0;
			int ra = gk_itree_first_fit(&t, size, align, LO, HI, &a);
			int rb = gk_itree_first_fit(&t2, size, align, LO, HI, &b);

			same = ra == rb && a == b;
		}
		ok(same, "placement depends only on the live set, not on the history that built it");
	}
	{
		uint64_t a;

		is_int(gk_itree_first_fit(&t, HI - LO + 1, 1, LO, HI, &a), -ENOMEM,
		       "a request larger than the range does not fit");
		is_int(gk_itree_first_fit(&t, 16, 3, LO, HI, &a), -EINVAL,
		       "a non-power-of-two alignment is refused");
	}
	for (int i = 0; i < m.n; i++)
		free(nodes[i]);
	while (t2.root) {
		struct gk_ival *n = t2.root;

		gk_itree_remove(&t2, n);
		free(n);
	}
	return done_testing();
}
