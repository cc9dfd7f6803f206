#include "config.h"

#include "common/io.h"

#include <errno.h>
#include <unistd.h>

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

int gk_write_all(int fd, const void *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf = (const char *)buf + n;
		len -= (size_t)n;
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
