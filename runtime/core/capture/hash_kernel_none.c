/* hash_kernel_none.c - a runtime built without nvcc has no hash kernel: the
 * change keys are computed on the host (changes.c says so in the log). */
#include <stddef.h>

const unsigned char gk_hash_image[1] = {0};
const size_t gk_hash_image_size = 0;
