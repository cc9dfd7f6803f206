/*
 * ipc.h - legacy CUDA IPC of memory the runtime placed (ipc.c), for the
 * interposed cuIpc* entry points (track_hooks.c).
 */
#ifndef GK_IPC_H
#define GK_IPC_H

#include "image/image.h"

#include <cuda.h>
#include <stddef.h>

/* A gpuckpt handle of the placed block at dptr (its start); the first call
 * starts the thread that serves importers. */
CUresult gk_ipc_export(CUipcMemHandle *out, CUdeviceptr dptr);
/* Whether the handle is gpuckpt's (else it is the driver's). */
int gk_ipc_is_ours(const CUipcMemHandle *handle);
/* Open a gpuckpt handle of another process: its memory mapped here. */
CUresult gk_ipc_open(CUdeviceptr *pdptr, const CUipcMemHandle *handle);
/* 1 (and *res) if dptr is an import gk_ipc_open made, now closed; 0 if not. */
int gk_ipc_close(CUdeviceptr dptr, CUresult *res);

/* This process has passed its first checkpoint point: restored from its
 * checkpoint (1) or started afresh (0). Importers waiting are answered. */
void gk_ipc_settle(int restored);
/* At the restore point of a process that restored: wait until every
 * process it imported memory from has passed its own (at most 60 s each),
 * so that it never reads that memory before it is loaded. */
void gk_ipc_wait_exporters(void);

/* Application checkpoints (manifest format 6): the imports at their places,
 * how many and which, in the order of the opens (gate closed). */
size_t gk_ipc_count(void);
size_t gk_ipc_describe(struct gk_import_rec *recs, size_t cap);
/* Restore, before anything is loaded: every import of the checkpoint must
 * have been opened again, as the same open, at the same address, of the same
 * block of its exporter. 0, or -EINVAL with why. */
int gk_ipc_check_restored(const struct gk_manifest *m, char *why, size_t len);

#endif
