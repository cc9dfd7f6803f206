/*
 * arena.h - placement of device memory, one arena per visible device.
 *
 * Each device gets a slice of the reserved range (settings va_base + ordinal *
 * va_size), reserved at that fixed address through the VMM API. The first
 * eighth of the slice holds small allocations (up to 1 MiB, 512-byte aligned,
 * sharing 2 MiB granules); the rest holds large ones (2 MiB aligned, their own
 * granules). Within each, a block goes to the lowest address where it fits:
 * where an allocation lands depends only on what is live, so a program that
 * makes the same requests gets the same addresses in every run, on any GPU.
 * layout.h holds that policy, and the guards: the granule before and the
 * granule after every live block stay mapped, so that a program reading a
 * little out of bounds finds memory there, as it does natively.
 *
 * Physical memory is mapped under blocks on demand and kept mapped when they
 * are freed (a freed range is usually reused by the next request of the same
 * size: an alloc/free loop then costs no driver call); it is given back when
 * the driver runs out of memory. Stream-ordered frees leave a fence (an event
 * on the freeing stream) over the range; whoever reuses it waits for the fence
 * in stream order, as the driver's own pools do.
 */
#ifndef GK_ARENA_H
#define GK_ARENA_H

#include "core/driver/driver.h"
#include "core/placement/intervals.h"
#include "core/placement/layout.h"

#include <cuda.h>
#include <pthread.h>
#include <stdint.h>

enum gk_kind {
	GK_KIND_ALLOC = 0,
	GK_KIND_PITCH = 1,
	GK_KIND_ASYNC = 2,
};

struct gk_block {
	struct gk_ival iv; /* [start, start + extent) */
	uint64_t size;     /* what was asked for */
	uint64_t order;    /* the device's allocation counter at the request */
	uint64_t id;       /* CU_POINTER_ATTRIBUTE_BUFFER_ID */
	uint8_t kind;
	uint8_t restored;  /* recreated from a checkpoint, not yet claimed again */
};

struct gk_arena {
	int ordinal;
	CUdevice dev;
	CUcontext ctx; /* where the program allocates; the runtime's copies run there */
	struct gk_layout lay;	      /* the slice (lay.base, lay.size) and its regions */
	struct gk_itree small, large; /* live blocks */
	struct gk_itree segs;         /* mapped physical memory */
	/* A range known to be mapped throughout, so that an allocation that
	 * reuses memory costs no lookup of segs; emptied by every unmap. */
	uint64_t known_lo, known_hi;
	struct gk_itree fences;       /* ranges freed in stream order, maybe in use */
	uint64_t next_order;
	uint64_t live_extent; /* bytes of address space under live blocks */
	uint64_t mapped;      /* bytes of physical memory mapped */
	uint64_t nlive;
	pthread_mutex_t lock;
	/* restore: blocks recreated from the checkpoint, by order */
	struct gk_block **restored;
	size_t nrestored;
};

extern struct gk_arena *gk_arenas[GK_MAX_DEVICES];

/*
 * The arena of the current context's device, set up on first use (reserving
 * its slice; on a restart, recreating the checkpoint's blocks). NULL if the
 * device cannot be placed (the reason is logged once).
 */
struct gk_arena *gk_arena_current(CUresult *err);

/* The arena whose slice holds addr, or NULL (no lock needed: slices are fixed). */
struct gk_arena *gk_arena_of(uint64_t addr);

/*
 * Allocate `size` bytes. `stream` is the stream of a stream-ordered request
 * (or NULL with async = 0). On a restart, before the checkpoint is loaded, the
 * request that comes n-th gets the checkpoint's n-th allocation back.
 */
CUresult gk_arena_alloc(struct gk_arena *a, uint64_t size, enum gk_kind kind, int async,
			CUstream stream, CUdeviceptr *out);

/* Free the block starting at ptr. CUDA_ERROR_INVALID_VALUE if there is none. */
CUresult gk_arena_free(struct gk_arena *a, uint64_t ptr, int async, CUstream stream);

/* The live block containing addr (caller holds a->lock), or NULL. */
struct gk_block *gk_arena_find(struct gk_arena *a, uint64_t addr);

/*
 * Whether legacy IPC of placed memory is served (GPUCKPT_CUDA_IPC, 1 unless
 * it says 0, read once): only then is physical memory created exportable and
 * is such IPC served (interpose/ipc.c, track_hooks.c).
 */
int gk_arena_ipc_wanted(void);

/*
 * Legacy IPC (interpose/ipc.c): the physical memory under the live block that
 * starts at addr, exported as POSIX file descriptors, one per segment in
 * address order (the caller closes them). The block starts `offset` bytes
 * into the first segment and is `size` bytes long. 0, -ENOENT (no such
 * block, or stream-ordered memory), -E2BIG (too many segments), -EOPNOTSUPP
 * (the driver would not export it).
 */
#define GK_ARENA_EXPORT_MAX 16
struct gk_arena_export {
	uint64_t offset, size;
	int nseg;
	uint64_t len[GK_ARENA_EXPORT_MAX];
	int fd[GK_ARENA_EXPORT_MAX];
};
int gk_arena_export(struct gk_arena *a, uint64_t addr, struct gk_arena_export *ex);

/* Bytes mapped under no live block: free memory as far as the program knows. */
uint64_t gk_arena_slack(struct gk_arena *a);

/* Free every block and unmap everything (the program reset its context). */
void gk_arena_reset(struct gk_arena *a);

/* Iterate live blocks in address order (caller holds a->lock). */
struct gk_block *gk_arena_first(struct gk_arena *a);
struct gk_block *gk_arena_next(struct gk_arena *a, struct gk_block *b);

/*
 * What a restart puts into each arena as it is created, lazily at the first
 * allocation on its device: restore.c registers it when the runtime loads,
 * before anything can be placed. Placement calls restore only through it, so
 * that restore, which drives placement (gk_arena_recreate and the functions
 * below), stays above it.
 */
struct gk_arena_seeder {
	/* The slice device ordinal must use (the checkpoint's): 1, with *base
	 * and *size set; 0 to take the settings' slice. */
	int (*slice)(int ordinal, uint64_t *base, uint64_t *size);
	/* Recreate the checkpoint's allocations of a's device in a, just
	 * reserved: 0, or a negative errno (-EXDEV: the GPUs lack a peer route
	 * the checkpointed run used). */
	int (*populate)(struct gk_arena *a);
	/* The program's setup asked for something else than the checkpointed
	 * run did: the restore is given up (which may end the process). */
	void (*abandon)(const char *why);
};
void gk_arena_set_seeder(const struct gk_arena_seeder *s);

/* Restore support (restore.c): recreate a checkpointed block at its address. */
int gk_arena_recreate(struct gk_arena *a, uint64_t addr, uint64_t size, uint64_t order,
		      enum gk_kind kind);
/* Forget the recreated blocks the program's setup did not claim (restore abandoned). */
void gk_arena_drop_unclaimed(struct gk_arena *a);

/* The checkpoint was loaded: recreated blocks become ordinary ones. */
void gk_arena_restore_done(struct gk_arena *a, uint64_t next_order);

/*
 * Transparent mode (agent.c): give the physical memory under the live
 * blocks back to the driver, addresses staying reserved and the blocks
 * listed, so that the driver's checkpoint has no device memory left to copy
 * (returns the bytes released); then, after the driver's restore, back the
 * same addresses again on the device the arena is on now.
 */
uint64_t gk_arena_release_memory(struct gk_arena *a);
/* Grant device accessor read/write access to everything mapped (peer.c). */
CUresult gk_arena_grant(struct gk_arena *a, int accessor);
CUresult gk_arena_remap_memory(struct gk_arena *a);

/* Device facts for the manifest and messages. */
struct gk_device_info {
	char name[256];
	char uuid[64];
	int cc_major, cc_minor;
	uint64_t total_memory;
};
int gk_device_info(CUdevice dev, struct gk_device_info *info);

#endif
