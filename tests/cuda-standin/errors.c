/*
 * errors.c - cuGetErrorName and cuGetErrorString. Like the real driver they
 * work before cuInit, and refuse codes that are not CUresult values.
 */
#include <stddef.h>

#include "standin.h"

static const struct {
	CUresult code;
	const char *name;
	const char *text;
} si_errors[] = {
#define SI_ERROR(code, text) {code, #code, text},
#include "errors.def"
#undef SI_ERROR
};

static int error_index(CUresult rc)
{
	for (size_t i = 0; i < sizeof(si_errors) / sizeof(si_errors[0]); i++)
		if (si_errors[i].code == rc)
			return (int)i;
	return -1;
}

const char *si_error_name(CUresult rc)
{
	int i = error_index(rc);

	return i < 0 ? "CUDA_ERROR_?" : si_errors[i].name;
}

CUresult cuGetErrorName(CUresult error, const char **pStr)
{
	int i = error_index(error);

	if (!pStr)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%d, NULL", (int)error);
	*pStr = i < 0 ? NULL : si_errors[i].name;
	SI_RETF(i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS, "%d", (int)error);
}

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
	int i = error_index(error);

	if (!pStr)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%d, NULL", (int)error);
	*pStr = i < 0 ? NULL : si_errors[i].text;
	SI_RETF(i < 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS, "%d", (int)error);
}
