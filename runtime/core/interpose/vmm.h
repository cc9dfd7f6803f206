/*
 * vmm.h - memory the program maps itself through the CUDA virtual memory
 * management API (cuMemAddressReserve, cuMemCreate, cuMemMap, cuMemSetAccess),
 * as XLA, NCCL and PyTorch's expandable segments do. vmm.c records every
 * reservation, allocation handle (its properties) and mapping (address, size,
 * offset, access) the program makes, so that:
 *
 *   a checkpoint saves the mappings' contents through the runtime's own
 *   pipeline, as allocations of kind "vmm" (plan.c asks for them here);
 *
 *   a restart in application mode hands the program's n-th reservation the
 *   checkpoint's address of it (the program makes the same requests again),
 *   and the load checks every mapping is there again before copying into it;
 *
 *   a transparent checkpoint gives the physical memory back before the
 *   driver's checkpoint (the driver then has none of it to copy) and, after
 *   the driver's restore, creates allocations with the same properties on the
 *   device the process has now, maps them at the same addresses with the same
 *   access, and the agent loads the contents back. The program keeps the
 *   handle values it was given: they are translated to the driver's new ones.
 *
 * What cannot be saved is refused by name (track.h): memory imported from
 * another process, memory exported to one (transparent mode: releasing it
 * would pull it from under the importer), allocations that are not plain
 * device memory (host or NUMA locations).
 */
#ifndef GK_VMM_H
#define GK_VMM_H

#include "image/image.h"

#include <stddef.h>
#include <stdint.h>

/* Mappings a checkpoint saves (gate closed: none can come or go). */
size_t gk_vmm_count(void);

/* Fill up to cap records with the saveable mappings: device, address, size,
 * order (the reservation's number), kind GK_KIND_VMM, reservation. Returns
 * how many were written. Gate closed. */
size_t gk_vmm_describe(struct gk_alloc_rec *recs, size_t cap);

/* Restore, application mode: every mapping of the checkpoint must be mapped
 * again, whole, when its contents are loaded. 0, or -EINVAL with why. */
int gk_vmm_check_restored(const struct gk_manifest *m, char *why, size_t len);

/* Transparent mode (agent.c): unmap every mapping and release every handle
 * (after the runtime wrote them); returns the bytes given back. Then, after
 * the driver's restore or the shepherd's abort, create, map and grant access
 * again: 0, or a negative errno with the reason logged. */
/*
 * What a restart tells vmm.c, as placement's seeder (arena.h): restore.c
 * registers it when the runtime loads, so that vmm.c, below restore, calls
 * it only through these. pending: the checkpoint still to be loaded, or NULL;
 * abandon: the program's setup asked for something else (may end the process).
 */
struct gk_vmm_restorer {
	const struct gk_manifest *(*pending)(void);
	void (*abandon)(const char *why);
};
void gk_vmm_set_restorer(const struct gk_vmm_restorer *r);

uint64_t gk_vmm_release_memory(void);
int gk_vmm_remap_memory(void);

#endif
