/*
 * procaddr.c - cuGetProcAddress, the route by which the CUDA runtime and
 * libraries reach the driver, and cuGetExportTable, the runtime's private
 * door, which stays shut: the real CUDA runtime cannot run on the stand-in.
 *
 * A base name and a CUDA version select an ABI in procaddr.def; the symbol is
 * then looked up in this library itself (not through the global scope, where
 * a preloaded interposer would answer), so an unimplemented ABI is "not found".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "standin.h"

static const struct proc {
	const char *base;
	int version;
	const char *symbol;
	bool per_thread;
} procs[] = {
#define SI_PROC(base, version, symbol) {#base, version, #symbol, false},
#define SI_PROC_PT(base, version, symbol) {#base, version, #symbol, true},
#include "procaddr.def"
#undef SI_PROC
#undef SI_PROC_PT
};

static pthread_once_t self_once = PTHREAD_ONCE_INIT;
static void *self;

static void open_self(void)
{
	Dl_info info;

	if (dladdr((void *)open_self, &info) && info.dli_fname)
		self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!self)
		si_msg("cuGetProcAddress: cannot find the stand-in library itself: %s", dlerror());
}

/* The newest row for base at or below version; NULL if there is none. */
static const struct proc *pick(const char *base, int version, bool per_thread, bool *known)
{
	const struct proc *best = NULL;

	for (size_t i = 0; i < sizeof(procs) / sizeof(procs[0]); i++) {
		const struct proc *p = &procs[i];

		if (strcmp(p->base, base) != 0)
			continue;
		*known = true;
		if (p->per_thread == per_thread && p->version <= version &&
		    (!best || p->version > best->version))
			best = p;
	}
	return best;
}

static CUresult get_proc(const char *symbol, void **pfn, int version, cuuint64_t flags,
			 CUdriverProcAddressQueryResult *status)
{
	const cuuint64_t valid =
	    CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	const struct proc *p = NULL;
	bool known = false;

	if (!symbol || !pfn || (flags & ~valid) || version <= 0 || version > SI_DRIVER_VERSION)
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	if (status)
		*status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	/* CU_GET_PROC_ADDRESS_DEFAULT means the legacy stream for a driver-level caller. */
	if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
		p = pick(symbol, version, true, &known);
	if (!p)
		p = pick(symbol, version, false, &known);
	if (!p) {
		if (known && status)
			*status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
		return CUDA_ERROR_NOT_FOUND;
	}
	pthread_once(&self_once, open_self);
	if (!self)
		return CUDA_ERROR_NOT_SUPPORTED;
	*pfn = dlsym(self, p->symbol);
	if (!*pfn)
		return CUDA_ERROR_NOT_FOUND; /* an ABI the stand-in does not implement */
	if (status)
		*status = CU_GET_PROC_ADDRESS_SUCCESS;
	return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
			  CUdriverProcAddressQueryResult *symbolStatus)
{
	CUresult rc = get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);

	SI_RETF(rc, "%s version=%d flags=%#llx -> %p", symbol ? symbol : "(null)", cudaVersion,
		(unsigned long long)flags, rc || !pfn ? NULL : *pfn);
}

/* The CUDA 11.3 ABI, without the status. */
CUresult cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion,
			     cuuint64_t flags) __asm__("cuGetProcAddress");
CUresult cuGetProcAddress_v1(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
	CUresult rc = get_proc(symbol, pfn, cudaVersion, flags, NULL);

	SI_RETF(rc, "%s version=%d flags=%#llx -> %p", symbol ? symbol : "(null)", cudaVersion,
		(unsigned long long)flags, rc || !pfn ? NULL : *pfn);
}

CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	(void)pExportTableId;
	if (ppExportTable)
		*ppExportTable = NULL;
	SI_RETF(CUDA_ERROR_NOT_SUPPORTED, "(the CUDA runtime does not run on the stand-in)");
}
