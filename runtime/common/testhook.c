/*
 * testhook.c - see testhook.h. Nothing happens unless a root-only program
 * was given --test-hook.
 */
#include "config.h"

#include "common/testhook.h"
#include "common/error.h"
#include "common/fsafe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char armed[64];
static int armed_dir = -1;

int gk_test_hook_arm(const char *spec, gk_error_t *err)
{
	const char *colon = strchr(spec, ':');
	size_t n = colon ? (size_t)(colon - spec) : 0;
	int fd;

	if (!colon || n == 0 || n >= sizeof(armed)) {
		gk_errprintf(err, "--test-hook '%s': expected POINT:DIR", spec);
		return -EINVAL;
	}
	fd = gk_open_trusted_dir(colon + 1, "--test-hook", err);
	if (fd < 0)
		return fd;
	if (armed_dir >= 0)
		close(armed_dir);
	armed_dir = fd;
	memcpy(armed, spec, n);
	armed[n] = 0;
	return 0;
}

void gk_test_hook(const char *point)
{
	char reached[96], go[96];
	int fd;

	if (armed_dir < 0 || strcmp(point, armed))
		return;
	snprintf(reached, sizeof(reached), "%s.reached", point);
	snprintf(go, sizeof(go), "%s.go", point);
	fd = openat(armed_dir, reached, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 12000; i++) {
		struct timespec ts = {0, 10 * 1000 * 1000};

		if (faccessat(armed_dir, go, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			break;
		nanosleep(&ts, NULL);
	}
	unlinkat(armed_dir, go, 0);
	unlinkat(armed_dir, reached, 0);
	armed[0] = 0;
}
