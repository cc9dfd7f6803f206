/*
 * order.h - the order in which the copy threads take the chunks of a
 * checkpoint. In allocation order all threads would write one allocation,
 * so one file, at any moment, and tmpfs adds pages to one file at a time
 * (about 4 GB/s on the H100 machine, against 8-9 GB/s for four files
 * written at once). So consecutive chunks go to a device's files in turn.
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
