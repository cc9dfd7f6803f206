/*
 * smallfile.c - reading a small file whole (the manifest, a signature):
 * the bytes fstat promised, into a NUL-terminated buffer. A file that
 * shrinks while it is read is an error, not a shorter text: a checkpoint's
 * files do not change once committed, so that is someone writing into it.
 */
#include "config.h"

#include "image/image.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

int gk_read_small(int fd, size_t size, char **out)
{
	char *buf = malloc(size + 1);
	size_t n = 0;

	if (!buf)
		return -ENOMEM;
	while (n < size) {
		ssize_t r = read(fd, buf + n, size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int ret = r < 0 ? -errno : -EIO;

			free(buf);
			return ret;
		}
		n += (size_t)r;
	}
	buf[n] = 0;
	*out = buf;
	return 0;
}
