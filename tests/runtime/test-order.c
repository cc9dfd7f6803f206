/*
 * test-order - the order in which the copy threads take chunks (order.h):
 * every chunk exactly once; a device's files in turn, so that threads that
 * take consecutive chunks write different files; devices one after the
 * other; one file alone keeps allocation order.
 */
#include "config.h"

#include "core/placement/order.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

#define MiB (1024ull * 1024)

/* Each chunk of each item appears once, and nothing else does. */
static int each_once(const struct gk_order_item *items, size_t n, uint64_t cs,
		     const struct gk_order_unit *u, size_t nu)
{
	size_t want = 0;

	for (size_t i = 0; i < n; i++)
		want += (items[i].size + cs - 1) / cs;
	if (nu != want)
		return 0;
	for (size_t k = 0; k < nu; k++) {
		if (u[k].item >= n || (uint64_t)u[k].chunk * cs >= items[u[k].item].size)
			return 0;
		for (size_t l = 0; l < k; l++)
			if (u[l].item == u[k].item && u[l].chunk == u[k].chunk)
				return 0;
	}
	return 1;
}

int main(void)
{
	int dev0, dev1;
	/* Four allocations of 4 chunks over two files of device 0 (the way
	 * dump.c lays them out: least-filled file first), then one of device 1. */
	struct gk_order_item items[] = {
	    {&dev0, 10, 4 * MiB}, {&dev0, 11, 4 * MiB}, {&dev0, 10, 4 * MiB},
	    {&dev0, 11, 3 * MiB + 1}, {&dev1, 20, 2 * MiB},
	};
	size_t n = sizeof(items) / sizeof(items[0]), nu, switches = 0, d1 = 0;
	struct gk_order_unit u[64];
	int interleaved = 1;

	plan(6);
	nu = gk_order_chunks(items, n, MiB, u);
	ok(each_once(items, n, MiB, u, nu), "every chunk once (%zu)", nu);
	/* While both files of device 0 have chunks left, consecutive chunks
	 * alternate between them. */
	for (size_t k = 1; k < 14; k++)
		if (items[u[k].item].file == items[u[k - 1].item].file)
			interleaved = 0;
	ok(interleaved, "consecutive chunks go to the device's two files in turn");
	ok(u[0].item == 0 && u[0].chunk == 0 && u[1].item == 1 && u[2].item == 0 &&
	       u[2].chunk == 1,
	   "each file's chunks stay in their own order");
	for (size_t k = 1; k < nu; k++)
		switches += items[u[k].item].device != items[u[k - 1].item].device;
	for (size_t k = 0; k < nu; k++)
		d1 += items[u[k].item].device == &dev1;
	ok(switches == 1 && d1 == 2 && items[u[nu - 1].item].device == &dev1,
	   "devices one after the other (one switch)");

	/* One file: allocation order, as before. */
	{
		struct gk_order_item one[] = {{&dev0, 3, 2 * MiB}, {&dev0, 3, 2 * MiB}};
		struct gk_order_unit v[8];
		size_t m = gk_order_chunks(one, 2, MiB, v);

		ok(m == 4 && v[0].item == 0 && v[1].item == 0 && v[1].chunk == 1 &&
		       v[2].item == 1 && v[3].chunk == 1,
		   "a single file keeps allocation order");
	}
	/* Empty items and no items. */
	{
		struct gk_order_item z[] = {{&dev0, 1, 0}, {&dev0, 2, MiB}};
		struct gk_order_unit v[4];

		ok(gk_order_chunks(z, 2, MiB, v) == 1 && v[0].item == 1 &&
		       gk_order_chunks(z, 0, MiB, v) == 0,
		   "empty allocations have no chunks");
	}
	return done_testing();
}
