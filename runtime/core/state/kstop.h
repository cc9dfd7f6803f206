/*
 * kstop.h - the stop word of interruptible kernels (gpuckpt_kernel.h), and
 * what the runtime notes of launches: the functions marked interruptible (a
 * cooperative launch of one is refused) and the last kernel launched (the
 * drain's log names it). In state/, the lowest layer, because a signal
 * handler (trigger.c), the API (api.c), the launch entry points (interpose/)
 * and the helper (control/kernels.c) all meet here.
 *
 * The stop word is one unsigned int of mapped pinned host memory
 * (cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP), made by the helper at the
 * first marked kernel: a marked kernel reads it at its checks, the runtime
 * writes it from anywhere, a signal handler included (a plain store).
 */
#ifndef GK_KSTOP_H
#define GK_KSTOP_H

#include <stddef.h>
#include <stdint.h>

/* The host address of the stop word, NULL until the first marked kernel. */
extern unsigned int *gk_kstop_word;
/* The context the stop word was made in (a CUcontext). */
extern void *gk_kstop_ctx;
/* CLOCK_MONOTONIC ns when a checkpoint was last asked for (0: never). */
extern int64_t gk_kstop_raised_ns;

/* A checkpoint is due: raise the stop word (if any) and note when.
 * Async-signal-safe. */
void gk_kstop_raise(void);

/* The program destroys or resets ctx: a stop word made there is forgotten
 * (the driver frees it with the context; a signal handler must not write
 * into it after that); the next marked kernel makes another. */
void gk_kstop_context_gone(void *ctx);

/* Lower it (the checkpoint was taken, or is left to a later point). */
void gk_kstop_clear(void);

/* The runtime's GK_DUE_CHECKPOINT, with the stop word raised: every place
 * that asks for a checkpoint. Async-signal-safe. */
void gk_due_checkpoint(void);

/* Functions marked interruptible (CUfunction values, as void *), with the
 * names they were marked under. A launch handle may be a CUkernel instead
 * (cudart 12 and later launches its kernels by their CUkernel, cast to
 * CUfunction): gk_kstop_marked takes either, a CUkernel being marked when
 * its CUfunction in the context is (kstop.c says how it tells them apart). */
int gk_kstop_mark(void *function, const char *name);
void gk_kstop_unmark(void *function);
int gk_kstop_marked(void *function);

/* A kernel's name for messages, for a CUfunction or a CUkernel: its marked
 * name, else the driver's (cuFuncGetName, or cuKernelGetName for a CUkernel;
 * CUDA 12.3 and later), else its address. Returns buf. */
const char *gk_kernel_name(void *function, char *buf, size_t len);

/* A kernel was launched (f: the handle the launch got, a CUfunction or a
 * CUkernel, noted as it is: the launch path stays one store); and the last
 * one, with when (CLOCK_MONOTONIC ns). */
void gk_launch_note(void *function);
void *gk_launch_last(int64_t *when_ns);

#endif
