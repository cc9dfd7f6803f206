/*
 * track.h - what the runtime cannot checkpoint. Each such thing is noticed when
 * the program creates it and forgotten when the program destroys it; while any
 * is alive, a checkpoint is refused with a message that names it, instead of
 * writing an image that could not be restored.
 */
#ifndef GK_TRACK_H
#define GK_TRACK_H

#include <stddef.h>

#define GK_UNSUPPORTED_LIST(X)                                                                     \
	X(MANAGED, "managed (unified) memory the runtime could not record (out of memory)")      \
	X(MANAGED_VAR, "managed variables of a CUDA module (__managed__)")                          \
	X(IPC_OPEN, "device memory of another process opened through CUDA IPC")                   \
	X(IPC_EXPORT, "device memory another process opened through CUDA IPC")                   \
	X(IPC_IMPORT, "device memory of another process opened through gpuckpt's CUDA IPC")       \
	X(ARRAY, "CUDA arrays (cudaMallocArray, cuArrayCreate, mipmapped arrays)")                \
	X(MULTI_CONTEXT, "several CUDA contexts on one device")                                   \
	X(GRAPH_MEMORY, "memory allocated inside a CUDA graph or during stream capture")          \
	X(POOL_IPC, "memory pool pointers shared between processes")                              \
	X(VMM_IMPORT, "device memory imported from another process (cuMemImportFromShareableHandle)") \
	X(VMM_EXPORT, "device memory exported to other processes (cuMemExportToShareableHandle)") \
	X(VMM_OTHER, "memory mapped with cuMemMap that gpuckpt cannot save (not plain device memory, or outside the reservations it saw)") \
	X(UNPLACED, "device memory the runtime could not place at a fixed address")

enum gk_unsupported {
#define X(name, text) GK_UNSUP_##name,
	GK_UNSUPPORTED_LIST(X)
#undef X
	GK_UNSUP_COUNT
};

/*
 * Kinds an application checkpoint saves (legacy IPC served by the runtime,
 * interpose/ipc.c: the exporter saves its memory, the importer records its
 * imports) and only the driver's (transparent) checkpoint refuses.
 */
static inline int gk_track_app_ok(int kind)
{
	return kind == GK_UNSUP_IPC_EXPORT || kind == GK_UNSUP_IPC_IMPORT;
}

/* Kinds an NCCL communicator holds between processes: its buffers,
 * exported, imported and mapped through the VMM API (or legacy IPC). The
 * runtime takes every communicator down at a transparent checkpoint's cut
 * (interpose/nccl.c), which lets them go. */
static inline int gk_track_nccl_kind(int kind)
{
	return kind == GK_UNSUP_VMM_IMPORT || kind == GK_UNSUP_VMM_EXPORT ||
	       kind == GK_UNSUP_VMM_OTHER || kind == GK_UNSUP_IPC_OPEN ||
	       kind == GK_UNSUP_IPC_EXPORT;
}

/* The process made an NCCL communicator (interpose/nccl.c says so before
 * NCCL does): from then on, memory of gk_track_nccl_kind is announced as
 * most likely NCCL's, which does not stand in a transparent checkpoint's way,
 * rather than with a warning that checkpoints will be refused. */
void gk_track_nccl_made(void);

/* One more (delta 1) or one fewer (delta -1) live thing of this kind. */
void gk_track(enum gk_unsupported kind, long delta);

/* How many of this kind are alive now. */
long gk_track_live(enum gk_unsupported kind);

/* Whether the CUDA driver's own checkpoint cannot save what this process
 * holds either (memory shared with other processes, managed memory: NVIDIA's
 * cuda-checkpoint documents neither UVM nor IPC memory as supported). Writes
 * the protocol word of transparent mode ("managed", "ipc") into *word and
 * the reason into buf; returns 0 when nothing stands in the driver's way. */
int gk_track_driver_cannot(const char **word, char *buf, size_t len);

/* A device was used from a second context. */
void gk_track_multi_context(int device);

/* Why no checkpoint can be taken now: writes "managed memory ... (2 live); ..."
 * into buf and returns how many kinds block it (0: nothing does). */
int gk_track_report(char *buf, size_t len);

/* Remember/forget a pointer of a tracked kind (managed memory, IPC mappings,
 * mappings the program made): returns 1 if ptr was known (and forgets it). */
void gk_track_ptr_add(enum gk_unsupported kind, unsigned long long ptr);
int gk_track_ptr_remove(enum gk_unsupported kind, unsigned long long ptr);

#endif
