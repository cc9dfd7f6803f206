/*
 * fuzz-manifest - libFuzzer target: the manifest parser (gk_manifest_parse),
 * which every restore, gpuckpt verify and gpuckpt-stage (as root) run on
 * text a user wrote. Anything it accepts must also serialise again.
 */
#include "config.h"
#include "image/image.h"
#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gk_manifest *m = NULL;
	char *text = NULL;
	gk_error_t err;
	size_t len;

	if (gk_manifest_parse((const char *)data, size, &m, &err) == 0) {
		if (gk_manifest_to_json(m, &text, &len) != 0)
			abort();
		free(text);
		gk_manifest_free(m);
	}
	return 0;
}
