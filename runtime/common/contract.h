/*
 * contract.h - the values that the runtime, the shepherd, the Slurm plugin and
 * the tools must agree on, defined once here. Header only: the plugin, which
 * links nothing of the runtime's, includes it as well.
 *
 *	GK_ERRLEN               size of an error message (error.h: gk_error_t)
 *	enum gk_mode            how programs are checkpointed: GPUCKPT_MODE, the
 *	                        plugin's mode= (runtime/shepherd/README.md)
 *	GK_DEFAULT_CHUNK_SIZE   chunk_size: the checksum and copy unit, 8 MiB
 *	GK_DEFAULT_VA_BASE      va_base: start of the device address range the
 *	                        runtime owns, 0x200000000000
 *	GK_DEFAULT_VA_SIZE      va_size: its slice per device, 1 TiB
 *
 * The defaults are the runtime's settings (settings.h, gpuckpt.conf(5)); the
 * shepherd writes the same into the manifests of the checkpoints it makes.
 */
#ifndef GK_CONTRACT_H
#define GK_CONTRACT_H

/* Error messages are written into a caller buffer of this size. */
#define GK_ERRLEN 512

/* How programs are checkpointed (runtime/shepherd/README.md). */
enum gk_mode {
	GK_MODE_AUTO = 0,	 /* transparent for programs that do not use the API, where it can */
	GK_MODE_APP = 1,	 /* only programs that use the API: checkpoint points only */
	GK_MODE_TRANSPARENT = 2, /* transparent always, even for API users; a task of the
				  * plugin that cannot have it does not start */
};

/* Small enough that each copy thread pins little staging memory (pinning
 * runs at about 1 GB/s, in the driver, one thread at a time): 8 threads
 * pin 128 MiB. */
#define GK_DEFAULT_CHUNK_SIZE (8ull << 20)

/* 32 TiB: far above where Linux puts executables, heaps and mmaps of a
 * 47-bit address space, below the GPU's own limits; one 1 TiB slice per
 * device, more than any GPU's memory, so an allocator never runs out of
 * addresses before it runs out of memory. */
#define GK_DEFAULT_VA_BASE 0x200000000000ull
#define GK_DEFAULT_VA_SIZE (1ull << 40)

#endif
