/*
 * peer_access.h - which devices may access each device's memory (peer.h):
 * one mask per owner. Placement reads it whenever it maps memory (arena.c),
 * a checkpoint records it (plan.c); only peer.c changes it, and then grants
 * what was mapped before. A table of its own, under placement, because
 * peer.c calls placement and placement must not call it back.
 */
#ifndef GK_PEER_ACCESS_H
#define GK_PEER_ACCESS_H

#include <stdint.h>

/* The devices that may access owner's memory, one bit per ordinal. */
uint64_t gk_peer_accessors(int owner);

/* Whether any peer access is granted. */
int gk_peer_any(void);

/* Add accessor to owner's mask (both checked by the caller); returns the
 * mask as it was before. */
uint64_t gk_peer_access_add(int accessor, int owner);

/* Take accessor out of owner's mask. */
void gk_peer_access_remove(int accessor, int owner);

#endif
