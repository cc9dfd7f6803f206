/*
 * ckptname.h - the names of the folders in a checkpoint root (image.h), defined
 * once for the runtime, the shepherd, the tool, the Slurm plugin and
 * gpuckpt-stage:
 *
 *	ckpt.000007                 committed, sequence 7
 *	.tmp.ckpt.000008.HOST.PID   being written by PID on HOST; never read
 *	.trash.ckpt.000005.PID      being deleted; never read
 *
 * and, inside a transparent checkpoint whose task ran several processes with
 * the runtime (torchrun's ranks: runtime/shepherd/proc_parts.c), one folder per
 * such process, holding what its runtime wrote:
 *
 *	ckpt.000007/proc.4242       the part of the process with pid 4242
 *
 * The sequence is written with at least GK_CKPT_DIGITS digits, and only that
 * one spelling counts when a name is read, so that "ckpt.7" and "ckpt.000007"
 * can never both be sequence 7. Header only: the plugin and gpuckpt-stage link
 * nothing of the image library.
 */
#ifndef GK_CKPTNAME_H
#define GK_CKPTNAME_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define GK_CKPT_PREFIX "ckpt."
#define GK_CKPT_TMP_PREFIX ".tmp.ckpt."
#define GK_CKPT_TRASH_PREFIX ".trash.ckpt."
#define GK_CKPT_DIGITS 6
/* printf: a sequence (uint64_t) as it is spelled in names, and a committed name */
#define GK_CKPT_SEQ_FMT "%06" PRIu64
#define GK_CKPT_FMT GK_CKPT_PREFIX GK_CKPT_SEQ_FMT
/* A buffer for any committed name */
#define GK_CKPT_NAME_LEN 32
/* In a committed folder: the manifest, whose presence makes it committed */
#define GK_MANIFEST_FILE "manifest.json"

/* A part's folder inside a checkpoint: "proc." and the process's pid, as the
 * shepherd sees it, in decimal without leading zeros. */
#define GK_CKPT_PART_PREFIX "proc."

/* "ckpt.NNNNNN" into buf; the length written, as snprintf returns it. */
static inline int gk_ckpt_name(char *buf, size_t len, uint64_t sequence)
{
	return snprintf(buf, len, GK_CKPT_FMT, sequence);
}

/*
 * The sequence at the start of s, in its one spelling (GK_CKPT_SEQ_FMT).
 * Returns the character after its digits, or NULL when s does not start
 * with a sequence so spelled.
 */
static inline const char *gk_ckpt_parse_seq(const char *s, uint64_t *sequence)
{
	char canon[32];
	const char *p = s;
	uint64_t v = 0;

	while (*p >= '0' && *p <= '9') {
		if (p - s >= 20)
			return NULL;
		v = v * 10 + (uint64_t)(*p - '0');
		p++;
	}
	if (p == s)
		return NULL;
	snprintf(canon, sizeof(canon), GK_CKPT_SEQ_FMT, v);
	if (strlen(canon) != (size_t)(p - s) || strncmp(canon, s, (size_t)(p - s)) != 0)
		return NULL;
	*sequence = v;
	return p;
}

/* 0 and the sequence when name is a committed name (ckpt.NNNNNN and nothing
 * else), -1 otherwise. */
static inline int gk_ckpt_parse(const char *name, uint64_t *sequence)
{
	const char *end;

	if (strncmp(name, GK_CKPT_PREFIX, sizeof(GK_CKPT_PREFIX) - 1) != 0)
		return -1;
	end = gk_ckpt_parse_seq(name + sizeof(GK_CKPT_PREFIX) - 1, sequence);
	return end && *end == 0 ? 0 : -1;
}

/* 0 and the pid when name is a part's folder name (proc.PID and nothing else,
 * PID in 1..2^31-1 without leading zeros), -1 otherwise. */
static inline int gk_ckpt_parse_part(const char *name, int *pid)
{
	const char *p = name + sizeof(GK_CKPT_PART_PREFIX) - 1;
	long long v = 0;

	if (strncmp(name, GK_CKPT_PART_PREFIX, sizeof(GK_CKPT_PART_PREFIX) - 1) != 0 ||
	    !(*p >= '1' && *p <= '9'))
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > 2147483647LL)
			return -1;
	}
	if (*p)
		return -1;
	*pid = (int)v;
	return 0;
}

#endif
