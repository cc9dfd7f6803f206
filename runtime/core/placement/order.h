/*
 * order.h - the order in which the copy threads take the chunks of a
 * checkpoint. In the order of the items all threads would write one file at
 * any moment, and write() into a tmpfs file holds that file's lock, so they
 * would take turns. So consecutive chunks go to a device's files in turn.
 * Devices stay one after the other: a thread's staging buffers belong to
 * one device's context, and changing it costs a new pinned buffer.
 */
#ifndef GK_ORDER_H
#define GK_ORDER_H

#include <stddef.h>
#include <stdint.h>

struct gk_order_item {
	const void *device; /* items of one device are consecutive */
	int file;           /* which of its files the item is written to */
	uint64_t size;
};

struct gk_order_unit {
	size_t item;
	uint32_t chunk;
};

/* Every chunk (chunk_size bytes, the last one shorter) of every item, once,
 * into out (room for all of them); returns how many. */
size_t gk_order_chunks(const struct gk_order_item *items, size_t n, uint64_t chunk_size,
		       struct gk_order_unit *out);

#endif
