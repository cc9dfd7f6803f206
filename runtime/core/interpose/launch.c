/*
 * launch.c - the driver's kernel launches: held back at the gate while a
 * checkpoint is written (as every call that writes device memory), noted
 * (state/kstop.c: the drain's log names the last kernel launched), and a
 * cooperative launch of a kernel marked interruptible (gpuckpt_kernel.h)
 * refused: its blocks meet at a grid barrier, which a block that returned
 * early for a checkpoint never reaches, so the kernel would hang.
 */
#include "config.h"

#include "core/driver/driver.h"
#include "core/interpose/gate.h"
#include "core/interpose/handlers.h"
#include "core/state/kstop.h"
#include "core/state/runtime.h"
#include "common/log.h"

#define GATED(expr)                                                                                \
	do {                                                                                       \
		CUresult r_;                                                                       \
		if (!gk_enabled())                                                                 \
			return expr;                                                               \
		gk_launch_note((void *)f);                                                         \
		gk_gate_enter();                                                                   \
		r_ = expr;                                                                         \
		gk_gate_leave();                                                                   \
		return r_;                                                                         \
	} while (0)

/* A cooperative launch of a marked kernel: refused, saying why. */
static int refuse_cooperative(CUfunction f, const char *how)
{
	char name[80];

	if (!gk_enabled() || !gk_kstop_marked((void *)f))
		return 0;
	gk_error("launch: %s: %s of a kernel marked interruptible is refused: its blocks "
		 "may return early for a checkpoint and never reach the grid barrier (launch it "
		 "the ordinary way through gpuckpt_kernel_run, or do not mark it)",
		 gk_kernel_name((void *)f, name, sizeof(name)), how);
	return 1;
}

static int cooperative_config(const CUlaunchConfig *config)
{
	if (!config || !config->attrs)
		return 0;
	for (unsigned i = 0; i < config->numAttrs; i++)
		if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE &&
		    config->attrs[i].value.cooperative)
			return 1;
	return 0;
}

CUresult gk_on_cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
			      unsigned int bx, unsigned int by, unsigned int bz, unsigned int shm,
			      CUstream s, void **params, void **extra)
{
	GK_NEED_REAL(cuLaunchKernel);
	GATED(gk_real.cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shm, s, params, extra));
}

CUresult gk_on_cuLaunchKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz,
				   unsigned int bx, unsigned int by, unsigned int bz,
				   unsigned int shm, CUstream s, void **params, void **extra)
{
	GK_NEED_REAL(cuLaunchKernel_ptsz);
	GATED(gk_real.cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shm, s, params, extra));
}

CUresult gk_on_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **params,
				void **extra)
{
	if (cooperative_config(config) &&
	    refuse_cooperative(f, "cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE"))
		return CUDA_ERROR_NOT_SUPPORTED;
	GK_NEED_REAL(cuLaunchKernelEx);
	GATED(gk_real.cuLaunchKernelEx(config, f, params, extra));
}

CUresult gk_on_cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **params,
				     void **extra)
{
	if (cooperative_config(config) &&
	    refuse_cooperative(f, "cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE"))
		return CUDA_ERROR_NOT_SUPPORTED;
	GK_NEED_REAL(cuLaunchKernelEx_ptsz);
	GATED(gk_real.cuLaunchKernelEx_ptsz(config, f, params, extra));
}

CUresult gk_on_cuLaunchCooperativeKernel(CUfunction f, unsigned int gx, unsigned int gy,
					 unsigned int gz, unsigned int bx, unsigned int by,
					 unsigned int bz, unsigned int shm, CUstream s,
					 void **params)
{
	if (refuse_cooperative(f, "cuLaunchCooperativeKernel (cudaLaunchCooperativeKernel)"))
		return CUDA_ERROR_NOT_SUPPORTED;
	GK_NEED_REAL(cuLaunchCooperativeKernel);
	GATED(gk_real.cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shm, s, params));
}

CUresult gk_on_cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gx, unsigned int gy,
					      unsigned int gz, unsigned int bx, unsigned int by,
					      unsigned int bz, unsigned int shm, CUstream s,
					      void **params)
{
	if (refuse_cooperative(f, "cuLaunchCooperativeKernel (cudaLaunchCooperativeKernel)"))
		return CUDA_ERROR_NOT_SUPPORTED;
	GK_NEED_REAL(cuLaunchCooperativeKernel_ptsz);
	GATED(gk_real.cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx, by, bz, shm, s, params));
}
