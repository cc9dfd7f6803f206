/*
 * io.h - whole reads and writes, retrying short transfers and EINTR: at an
 * offset (the runtime's data files) or at the file position (the signature,
 * the plugin's job record; the plugin compiles io.c in, as it links nothing
 * of the runtime's).
 */
#ifndef GK_IO_H
#define GK_IO_H

#include <stddef.h>
#include <stdint.h>

/* 0, or a negative errno. */
int gk_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

/* 0, or a negative errno; -EIO where write() writes nothing. */
int gk_write_all(int fd, const void *buf, size_t len);

/* 0, a negative errno, or -ENODATA when the file ends first. */
int gk_pread_all(int fd, void *buf, size_t len, uint64_t off);

#endif
