/*
 * numa.h - running the copy threads, and so their pinned staging buffers, on
 * the NUMA node the GPU hangs off: device-to-host copies into memory of the
 * other socket cross the inter-socket link and lose bandwidth.
 */
#ifndef GK_NUMA_H
#define GK_NUMA_H

#include <cuda.h>

/* Bind the calling thread to the CPUs near `dev`. Best effort: when the
 * topology does not show the GPU (a VM, the stand-in), nothing changes. */
void gk_numa_bind_near(CUdevice dev);

/* Load the topology gk_numa_bind_near needs, if not yet (once per process). */
void gk_numa_preload(void);

#endif
