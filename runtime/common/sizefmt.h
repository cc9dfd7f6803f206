/*
 * sizefmt.h - a byte count for people, in the styles the messages have always
 * printed (tests and users read them, so each keeps its own):
 *
 *   GK_SIZE_UNIT  the unit that fits, one decimal: "512 B", "4.0 KiB",
 *                 "1.5 GiB" (the gpuckpt tool)
 *   GK_SIZE_LOG   "512 bytes", "3.4 MiB", "1.25 GiB" (a checkpoint's log line)
 *   GK_SIZE_MIB   always MiB, one decimal: "0.5 MiB" (restore's memory check)
 *   GK_SIZE_GIB   always GiB, one decimal: "0.1 GiB" (the snapshot budget)
 */
#ifndef GK_SIZEFMT_H
#define GK_SIZEFMT_H

#include <stddef.h>
#include <stdint.h>

enum gk_size_style {
	GK_SIZE_UNIT,
	GK_SIZE_LOG,
	GK_SIZE_MIB,
	GK_SIZE_GIB,
};

/* bytes in style into buf (len bytes, truncated as snprintf does). */
void gk_size_format(char *buf, size_t len, uint64_t bytes, enum gk_size_style style);

#endif
