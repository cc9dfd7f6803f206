/*
 * kern_uvm_var_host.c - the module of prog-uvm-var.c for the CUDA driver
 * stand-in: a __managed__ variable (STANDIN_MANAGED) and the kernel that
 * bumps it, as tests/gpu/gpu-uvm-var.cu has on a GPU.
 */
#include <stdint.h>

#include "standin_kernel.h"

uint64_t counter;
STANDIN_MANAGED(counter);

STANDIN_KERNEL(bump, sizeof(long))
{
	(void)launch;
	counter += (uint64_t)STANDIN_ARG(long, 0);
}
