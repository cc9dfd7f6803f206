/* io.h - whole reads and writes at an offset, retrying short transfers. */
#ifndef GK_IO_H
#define GK_IO_H

#include <stddef.h>
#include <stdint.h>

/* 0, or a negative errno. */
int gk_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/* 0, a negative errno, or -ENODATA when the file ends first. */
int gk_pread_all(int fd, void *buf, size_t len, uint64_t off);

/*
 * A shared writable mapping of the first `size` bytes of fd (extended to that
 * size), when the file lives in tmpfs; NULL otherwise, and the caller writes
 * with gk_pwrite_all. Why: a write() into tmpfs holds the inode's lock, so
 * several threads writing one file take turns (3.4 GB/s for one stream on the
 * H100 machine); stores through a mapping fault pages in without that lock and
 * scale with the threads. Undo with gk_unmap_written().
 */
void *gk_map_for_write(int fd, uint64_t size);
void gk_unmap_written(void *map, uint64_t size);

/* Copy into a mapping from gk_map_for_write, faulting the range in first in
 * one call rather than page by page: a full tmpfs then fails the call (0 or a
 * negative errno) instead of killing the process with SIGBUS in memcpy. */
int gk_mapped_write(void *map, int fd, const void *buf, size_t len, uint64_t off);

#endif
