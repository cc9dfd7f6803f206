#include "config.h"

#include "common/sizefmt.h"

#include <stdio.h>

static void unit_that_fits(char *buf, size_t n, uint64_t bytes)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, n, "%llu B", (unsigned long long)bytes);
		return;
	}
	while (v >= 1024 && u < 5) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, "%.1f %s", v, units[u]);
}

void gk_size_format(char *buf, size_t len, uint64_t bytes, enum gk_size_style style)
{
	switch (style) {
	case GK_SIZE_UNIT:
		unit_that_fits(buf, len, bytes);
		break;
	case GK_SIZE_LOG:
		if (bytes >= (1ull << 30))
			snprintf(buf, len, "%.2f GiB", bytes / 1073741824.0);
		else if (bytes >= (1ull << 20))
			snprintf(buf, len, "%.1f MiB", bytes / 1048576.0);
		else
			snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
		break;
	case GK_SIZE_MIB:
		snprintf(buf, len, "%.1f MiB", bytes / 1048576.0);
		break;
	case GK_SIZE_GIB:
		snprintf(buf, len, "%.1f GiB", bytes / 1073741824.0);
		break;
	}
}
