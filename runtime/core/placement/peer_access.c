/*
 * peer_access.c - the table of peer access (peer_access.h), read without a
 * lock on every mapping: atomics only.
 */
#include "config.h"

#include "core/placement/peer_access.h"
#include "core/driver/driver.h"

/* accessors[owner]: bit a set when device a may access owner's memory. */
static uint64_t accessors[GK_MAX_DEVICES];

uint64_t gk_peer_accessors(int owner)
{
	if (owner < 0 || owner >= GK_MAX_DEVICES)
		return 0;
	return __atomic_load_n(&accessors[owner], __ATOMIC_ACQUIRE);
}

int gk_peer_any(void)
{
	for (int i = 0; i < GK_MAX_DEVICES; i++)
		if (gk_peer_accessors(i))
			return 1;
	return 0;
}

uint64_t gk_peer_access_add(int accessor, int owner)
{
	return __atomic_fetch_or(&accessors[owner], 1ull << accessor, __ATOMIC_ACQ_REL);
}

void gk_peer_access_remove(int accessor, int owner)
{
	__atomic_and_fetch(&accessors[owner], ~(1ull << accessor), __ATOMIC_ACQ_REL);
}
