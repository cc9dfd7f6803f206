/*
 * peer.h - peer access between the GPUs of one process (application mode).
 *
 * The runtime places device memory through the VMM API, and a peer reaches
 * VMM memory only where cuMemSetAccess granted it: cuCtxEnablePeerAccess
 * alone does nothing for such memory. So when the program enables access
 * from device A to device B's memory, the runtime grants A access to all it
 * has mapped on B, and to everything it maps there later (arena.c reads
 * the table of peer_access.h). The grants go into the checkpoint (each device's
 * peer_access, image format 4); a restore checks that the GPUs the process
 * has now still have each route (the device ordinals are the process's own,
 * whatever physical GPUs CUDA_VISIBLE_DEVICES names) and grants them again.
 */
#ifndef GK_PEER_H
#define GK_PEER_H

#include <stddef.h>
#include <stdint.h>

/* Device accessor may read and write the memory placed on device owner, from
 * now on: 0, or a negative errno when the mapped memory could not be granted
 * (nothing is recorded then). */
int gk_peer_grant(int accessor, int owner);

/* The program disabled that access: new memory on owner is not granted to
 * accessor, and checkpoints no longer record it. */
void gk_peer_forget(int accessor, int owner);

/* Before a restore recreates device owner's memory: every device the
 * checkpoint granted access to it (mask) must still reach it; then the grants
 * are made again. -EXDEV when a route is missing (logged, naming the devices);
 * checkpoint names the checkpoint for messages. */
int gk_peer_restore(int owner, uint64_t mask, const char *checkpoint);

#endif
