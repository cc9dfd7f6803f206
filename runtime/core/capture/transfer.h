/*
 * transfer.h - moving device memory to and from checkpoint files, near the
 * hardware's limits: several threads, each with two pinned staging buffers,
 * copying one chunk (or piece of one) from (or to) the device while it
 * checksums and writes (or reads and verifies) the one before. Chunks are the checksum units of the image.
 */
#ifndef GK_TRANSFER_H
#define GK_TRANSFER_H

#include "common/error.h"

#include "image/image.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

struct gk_xfer_item {
	CUcontext ctx;        /* a context of the device holding the memory */
	uint64_t dev_addr;
	const void *host;     /* dump: the same bytes, already in host memory (a
	                         snapshot): written from there, the device untouched */
	uint64_t size;
	int fd;               /* data file */
	uint64_t file_offset;
	struct gk_chunk *chunks; /* ceil(size / chunk_size): sums filled by dump, checked by
	                            load; keys filled by gk_xfer_keys */
	const char *file;     /* for messages */
	size_t index;         /* allocation number, for messages */
	enum gk_sum_algo algo; /* of the chunks' sums (the image's format) */
	/* keys: per chunk, set to 1 when its bytes are all zero (NULL: not
	 * asked). load: the item is a zero part (format 5): no file is read,
	 * each chunk's checksum must be that of zeros, and the device range is
	 * set to zero. */
	uint8_t *zeros;
	int zero;
};

/* Device (or the items' host copies) to files; fills every chunk checksum.
 * piece: copy from the device in pieces of this many bytes (0: a chunk at a
 * time; see dump_worker in transfer.c). 0 or a negative errno (err says what). */
int gk_xfer_dump(struct gk_xfer_item *items, size_t n, uint64_t chunk_size, uint64_t piece,
		 unsigned threads, gk_error_t *err);

/* Files to device, checking every chunk before it is copied; a zero item's
 * chunks are checked against the checksum of zeros and set with cuMemsetD8. */
int gk_xfer_load(struct gk_xfer_item *items, size_t n, uint64_t chunk_size, unsigned threads,
		 gk_error_t *err);

/* Device to host only, to compute each chunk's change key there
 * (segment_hash.h): what finds changed chunks when the GPU cannot hash them
 * itself. The items' fd and file_offset are not used. */
int gk_xfer_keys(struct gk_xfer_item *items, size_t n, uint64_t chunk_size, unsigned threads,
		 gk_error_t *err);

#endif
