/*
 * spread.h - how a checkpoint spreads one device's changed chunks over that
 * device's data files, without the driver or the store: which byte range of
 * which allocation goes to which file, at which offset. plan.c creates the
 * files and the copies this says; the unit test (tests/runtime/test-spread.c)
 * checks it on its own.
 *
 * Why a file per copy thread: write() into a tmpfs file holds that file's
 * lock, so threads sharing a file take turns; with a file each they do not
 * (H100 machine, 4 GiB in 4 allocations: 10.6 GB/s in 8 files, 7.3 GB/s in 4).
 */
#ifndef GK_SPREAD_H
#define GK_SPREAD_H

#include <stddef.h>
#include <stdint.h>

/* The most data files of one device (the most threads a transfer runs). */
#define GK_FILES_PER_DEVICE 64

/* One allocation of the device, in the order they are laid out. */
struct gk_spread_alloc {
	uint64_t size;          /* bytes */
	uint32_t nchunks;       /* chunk_size bytes each, the last one shorter */
	const uint8_t *changed; /* per chunk: written by this checkpoint */
};

/* A range of changed chunks that lies whole in one file. */
struct gk_spread_piece {
	size_t alloc;         /* index into the allocations given */
	uint64_t start;       /* offset in the allocation: a multiple of chunk_size */
	uint64_t size;        /* to the end of a chunk, or of the allocation */
	size_t file;          /* which of the device's files: 0 .. nfiles-1 */
	uint64_t file_offset; /* a multiple of align */
};

/* Spread the changed chunks of allocs[0..n) over up to `writers` files (at
 * most GK_FILES_PER_DEVICE, at most one per changed chunk): runs of changed
 * chunks, whole chunks into each file up to its share of the total (both to
 * the nearest chunk, and at least one chunk), the rest of a run in the next
 * file, the last file taking what is left. In a file, pieces follow each
 * other at offsets rounded up to align (a power of two).
 *
 * Writes the pieces to out, which has room for the changed chunks plus
 * GK_FILES_PER_DEVICE, and returns how many. *nfiles: the files used, 0 when
 * no chunk changed; file_size[f]: where file f's last piece ends (0 for a
 * file given no piece). */
size_t gk_spread_device(const struct gk_spread_alloc *allocs, size_t n, uint64_t chunk_size,
			uint64_t align, unsigned writers, struct gk_spread_piece *out,
			size_t *nfiles, uint64_t file_size[GK_FILES_PER_DEVICE]);

#endif
