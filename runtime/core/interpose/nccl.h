/*
 * nccl.h - NCCL communicators taken down before a transparent checkpoint and
 * made again after it (interpose/nccl.c; issue 27; docs/nccl.md).
 *
 * NCCL's ranks on a node share device memory through exported and imported
 * VMM handles, and talk over TCP bootstrap sockets and proxy threads: state
 * spread over several processes, which neither the driver's checkpoint nor
 * one task's CRIU dump can hold. So the runtime interposes NCCL's entry
 * points, gives the program handles of its own, and at a checkpoint brings
 * every rank to the same collective, destroys the communicators (NCCL then
 * unmaps and releases everything it shared), and after the restore (or when
 * no checkpoint was taken) makes them again, in step with the other ranks,
 * behind the same handles.
 */
#ifndef GK_INTERPOSE_NCCL_H
#define GK_INTERPOSE_NCCL_H

#include "common/error.h"

/* 1 when the process holds a live communicator of more than one rank. */
int gk_nccl_active(void);

/*
 * Before a transparent checkpoint, from the agent's thread, the gate open:
 * hold every thread at its next NCCL call, agree with the other ranks of
 * each communicator on how many collectives each has issued (ranks behind
 * run forward to the largest count), wait until those have finished, and
 * destroy the communicators. 0 (nothing to do, or done) or a negative errno
 * and why; then nothing was destroyed and the program's threads go on.
 */
int gk_nccl_quiesce(gk_error_t *err);

/*
 * After gk_nccl_quiesce succeeded, whether or not a checkpoint was then
 * taken or this process was restored: make every communicator again with
 * the other ranks (a new unique id from rank 0, through the rendezvous
 * folder), behind the program's handles, and let the program's threads go.
 * A communicator that cannot be made again leaves the program with no way
 * on: the process is ended with the reason, not left to hang.
 */
void gk_nccl_resume(void);

#endif
