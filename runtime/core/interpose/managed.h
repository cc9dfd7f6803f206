/*
 * managed.h - managed (unified) memory: cuMemAllocManaged, and what the
 * program said about it (cuMemAdvise, cuMemPrefetchAsync,
 * cuStreamAttachMemAsync), recorded in allocation order (managed.c).
 *
 * The same addresses after a restore. No driver call lets the runtime choose
 * where managed memory goes, but the driver takes the place from the
 * process's mmap layout: for each allocation, libcuda first reserves an
 * inaccessible anonymous range through libc's mmap (on driver 580: the size
 * plus 32 MiB less a page), then maps /dev/nvidia-uvm inside it at the first
 * 32 MiB boundary, and returns that. So the runtime notes, for every
 * allocation, the reservation the driver made for it (steer.h: address and
 * length), and when the allocation is made again (a restarted run making the
 * same requests in the same order, or the transparent reload) it places the
 * driver's reservation of the same length where the checkpointed run had it
 * (MAP_FIXED_NOREPLACE), so that the driver computes the same address from
 * it. The result is still checked address by address: an allocation that
 * comes back elsewhere (the place taken, or a driver whose pattern differs)
 * gives the restore up, naming both addresses, rather than loading data
 * whose pointers would be wrong.
 *
 * Application checkpoints: every managed allocation is a host region of the
 * checkpoint ("gpuckpt.managed.<order>.<address>[.<offset>.<length>]": the
 * last two, in hex, the reservation it came from), written and loaded with
 * the registered regions; before the write the runtime prefetches it to
 * host memory in bulk, so the write does not fault it over page by page, and
 * afterwards (and after a load) it prefetches it back to where the program
 * last put it. Transparent mode: the driver's checkpoint cannot hold managed
 * memory, so the runtime moves it into ordinary host memory at the same
 * addresses (which CRIU saves with the rest of the process) and gives the
 * managed allocations back to the driver; after the driver's restore (or
 * when the shepherd gives up) it allocates them again, in order, at their
 * reservations, checks each address, and moves the contents back.
 */
#ifndef GK_MANAGED_H
#define GK_MANAGED_H

#include <cuda.h>
#include <stddef.h>

struct gk_vmm_restorer;

/* How many managed allocations are live. */
size_t gk_managed_live(void);

/* The program frees dptr: 1 and the driver's answer in *r if it was
 * managed memory the runtime recorded, 0 if not (nothing done). */
int gk_managed_free(CUdeviceptr dptr, CUresult *r);

/* The pending restore, as vmm.c hears of it (restore.c registers it at
 * load, so that managed.c, below restore, calls it only through this). */
void gk_managed_set_restorer(const struct gk_vmm_restorer *r);

/* Transparent mode (agent.c), with the gate closed: move every managed
 * allocation's contents into host memory at its address and give the
 * allocation back to the driver (returns how many); then, after the driver's
 * restore or the shepherd's abort, allocate them again at the same
 * addresses and move the contents back. A managed allocation that cannot be
 * had back at its address ends the process, naming it. */
size_t gk_managed_release(void);
void gk_managed_reload(void);

#endif
