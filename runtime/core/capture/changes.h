/*
 * changes.h - the change key of every chunk of device memory
 * (segment_hash.h), computed where the data lives: by a kernel on the GPU,
 * at memory bandwidth, so that finding what changed since the last
 * checkpoint costs no copy over PCIe.
 *
 * The kernel is built by nvcc with the runtime and embedded in it
 * (hash_kernel.cu); GPUCKPT_HASH_MODULE names a module file to load instead
 * (the CUDA stand-in's host kernel, in tests). Where there is no kernel, or
 * the driver cannot load it, the keys are computed on the host over a copy
 * of every chunk: correct, but it moves all the data over PCIe. The log says
 * so once, with the reason; the checkpoint's log line says which was used.
 */
#ifndef GK_CHANGES_H
#define GK_CHANGES_H

#include "image/image.h"

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* Device memory whose chunks (of the checkpoint's chunk size, from address)
 * get keys: chunks[ceil(size / chunk_size)].key; and, when zero is set,
 * zero[c] = 1 for every chunk whose bytes are all zero (found by the same
 * pass: the kernel ORs the words it reads, the host scans its copy). */
struct gk_key_range {
	CUcontext ctx;
	int ordinal;
	uint64_t address;
	uint64_t size;
	struct gk_chunk *chunks;
	uint8_t *zero;
};

enum gk_keys_where {
	GK_KEYS_NONE = 0,
	GK_KEYS_GPU = 1,  /* the kernel hashed them on the device */
	GK_KEYS_HOST = 2, /* copied to the host and hashed there */
};

/*
 * Compute the keys of every range, on the GPU when the kernel is there, else
 * (host_allowed) on the host. *where says which; GK_KEYS_NONE with a negative
 * errno when no key was computed (the checkpoint is then written whole).
 * Called with the devices quiesced (the gate closed, every stream drained).
 */
int gk_changes_keys(struct gk_key_range *r, size_t n, uint64_t chunk_size, int host_allowed,
		    enum gk_keys_where *where);

/* Whether keys can be computed on the GPU (loads the kernel on first use). */
int gk_changes_on_gpu(CUcontext ctx, int ordinal);

/* The program destroyed or reset ctx: the module and buffers loaded there
 * went with it. */
void gk_changes_forget(CUcontext ctx);

#endif
