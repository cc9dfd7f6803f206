/*
 * fuzz-seal - libFuzzer target: the seal parser (gk_seal_parse), the part of
 * a transparent checkpoint's criu/SEAL the shepherd believes once root's
 * credential over it checks out.
 */
#include "config.h"
#include "image/seal.h"
#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct gk_seal s;
	gk_error_t err;

	if (gk_seal_parse((const char *)data, size, &s, &err) == 0 &&
	    (s.ngpus > GK_SEAL_MAX_GPUS || s.nnode_gpus > GK_SEAL_MAX_GPUS))
		abort();
	return 0;
}
