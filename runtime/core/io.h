/* io.h - whole reads and writes at an offset, retrying short transfers. */
#ifndef GK_IO_H
#define GK_IO_H

#include <stddef.h>
#include <stdint.h>

/* 0, or a negative errno. */
int gk_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/* 0, a negative errno, or -ENODATA when the file ends first. */
int gk_pread_all(int fd, void *buf, size_t len, uint64_t off);

#endif
