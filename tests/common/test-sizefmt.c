/*
 * test-sizefmt - sizes for people (runtime/common/sizefmt.h): each style
 * prints what its messages printed before the formatters were one, at the
 * boundaries where the unit or the precision changes.
 */
#include "config.h"

#include "common/sizefmt.h"
#include "tap.h"

#include <string.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)

static const char *fmt(uint64_t bytes, enum gk_size_style style)
{
	static char buf[64];

	gk_size_format(buf, sizeof(buf), bytes, style);
	return buf;
}

int main(void)
{
	char small[6];

	plan(24);
	/* The tool: the unit that fits, one decimal, "B" below a KiB. */
	is_str(fmt(0, GK_SIZE_UNIT), "0 B", "unit: 0");
	is_str(fmt(1023, GK_SIZE_UNIT), "1023 B", "unit: 1023");
	is_str(fmt(1024, GK_SIZE_UNIT), "1.0 KiB", "unit: 1024");
	is_str(fmt(1536, GK_SIZE_UNIT), "1.5 KiB", "unit: 1536");
	is_str(fmt(8 * MiB, GK_SIZE_UNIT), "8.0 MiB", "unit: 8 MiB");
	is_str(fmt(GiB + GiB / 2, GK_SIZE_UNIT), "1.5 GiB", "unit: 1.5 GiB");
	is_str(fmt(3 * 1024 * GiB, GK_SIZE_UNIT), "3.0 TiB", "unit: 3 TiB");
	is_str(fmt(UINT64_MAX, GK_SIZE_UNIT), "16.0 EiB", "unit: the largest");
	/* A checkpoint's line: bytes, MiB with one decimal, GiB with two. */
	is_str(fmt(0, GK_SIZE_LOG), "0 bytes", "log: 0");
	is_str(fmt(MiB - 1, GK_SIZE_LOG), "1048575 bytes", "log: just under a MiB");
	is_str(fmt(MiB, GK_SIZE_LOG), "1.0 MiB", "log: a MiB");
	is_str(fmt(96 * MiB + MiB / 4, GK_SIZE_LOG), "96.2 MiB", "log: 96.25 MiB");
	is_str(fmt(GiB - 1, GK_SIZE_LOG), "1024.0 MiB", "log: just under a GiB");
	is_str(fmt(GiB, GK_SIZE_LOG), "1.00 GiB", "log: a GiB");
	is_str(fmt(5 * GiB + GiB / 4, GK_SIZE_LOG), "5.25 GiB", "log: 5.25 GiB");
	/* Restore's memory check: always MiB. */
	is_str(fmt(0, GK_SIZE_MIB), "0.0 MiB", "MiB: 0");
	is_str(fmt(MiB / 2, GK_SIZE_MIB), "0.5 MiB", "MiB: half");
	is_str(fmt(80 * GiB, GK_SIZE_MIB), "81920.0 MiB", "MiB: 80 GiB");
	/* The snapshot budget: always GiB. */
	is_str(fmt(0, GK_SIZE_GIB), "0.0 GiB", "GiB: 0");
	is_str(fmt(100 * MiB, GK_SIZE_GIB), "0.1 GiB", "GiB: 100 MiB");
	is_str(fmt(12 * GiB + GiB / 2, GK_SIZE_GIB), "12.5 GiB", "GiB: 12.5");
	is_str(fmt(2048 * GiB, GK_SIZE_GIB), "2048.0 GiB", "GiB: 2 TiB stays in GiB");
	/* A short buffer is cut as snprintf cuts, and stays a string. */
	gk_size_format(small, sizeof(small), 123456789, GK_SIZE_LOG);
	is_str(small, "117.7", "a short buffer: cut");
	ok(strlen(small) == sizeof(small) - 1, "a short buffer: terminated");
	return done_testing();
}
