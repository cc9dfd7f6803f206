/*
 * contract.h - the values that the runtime, the shepherd, the Slurm plugin and
 * the tools must agree on, defined once here. Header only: the plugin, which
 * links nothing of the runtime's, includes it as well.
 *
 *	GK_ERRLEN               size of the caller buffers error messages go into
 *	enum gk_mode            how programs are checkpointed: GPUCKPT_MODE, the
 *	                        plugin's mode= (runtime/transparent/README.md)
 */
#ifndef GK_CONTRACT_H
#define GK_CONTRACT_H

/* Error messages are written into a caller buffer of this size. */
#define GK_ERRLEN 512

/* How programs are checkpointed (runtime/transparent/README.md). */
enum gk_mode {
	GK_MODE_AUTO = 0,	 /* transparent for programs that do not use the API, where it can */
	GK_MODE_APP = 1,	 /* only programs that use the API: checkpoint points only */
	GK_MODE_TRANSPARENT = 2, /* transparent always, even for API users; a task of the
				  * plugin that cannot have it does not start */
};

#endif
