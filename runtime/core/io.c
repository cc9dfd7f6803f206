#include "config.h"

#include "io.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

int gk_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t w = pwrite(fd, buf, len, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf = (const char *)buf + w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return 0;
}

int gk_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	while (len) {
		ssize_t r = pread(fd, buf, len, (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -ENODATA;
		buf = (char *)buf + r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

void *gk_map_for_write(int fd, uint64_t size)
{
	struct statfs fs;
	void *map;

	if (size == 0 || fstatfs(fd, &fs) < 0 || fs.f_type != TMPFS_MAGIC)
		return NULL;
	if (ftruncate(fd, (off_t)size) < 0)
		return NULL;
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	return map == MAP_FAILED ? NULL : map;
}

void gk_unmap_written(void *map, uint64_t size)
{
	if (map)
		munmap(map, size);
}

int gk_mapped_write(void *map, int fd, const void *buf, size_t len, uint64_t off)
{
	char *dst = (char *)map + off;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)dst & ~(page - 1);

	if (madvise((void *)lo, (uintptr_t)dst + len - lo, MADV_POPULATE_WRITE) < 0) {
		/* Before Linux 5.14 there is no such advice: write() is safe. */
		if (errno == EINVAL)
			return gk_pwrite_all(fd, buf, len, off);
		return errno == ENOMEM || errno == EFAULT ? -ENOSPC : -errno;
	}
	memcpy(dst, buf, len);
	return 0;
}
