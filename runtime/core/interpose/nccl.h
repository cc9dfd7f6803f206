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

#include <stdint.h>

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
/*
 * The cut's place among the step's checkpoints, agreed at the common point
 * when the step has several tasks (not declared independent) and the first
 * communicator the program made spans all of them: every rank writes its
 * part under the same checkpoint number (the largest next number of the
 * ranks' folders), as member GPUCKPT_TASK of a set with rank 0's id. Ranks
 * whose earlier cut failed somewhere never pair their parts with another
 * cut's under one number then. agreed is 0 when there is no such set.
 */
struct gk_nccl_cut {
	int agreed;
	uint64_t sequence, id;
};

int gk_nccl_quiesce(struct gk_nccl_cut *cut, gk_error_t *err);

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
