/*
 * ipc.h - legacy CUDA IPC of memory the runtime placed (ipc.c), for the
 * interposed cuIpc* entry points (track_hooks.c).
 */
#ifndef GK_IPC_H
#define GK_IPC_H

#include <cuda.h>

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

#endif
