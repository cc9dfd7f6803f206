/*
 * array.c - CUDA arrays, only so that they exist: host storage of the right
 * size, a descriptor to read back, destroyed with their context. Copies to
 * and from arrays are not emulated (CUDA_ERROR_NOT_SUPPORTED).
 */
#include <stdlib.h>

#include "standin.h"

struct CUarray_st {
	struct si_obj obj;
	CUDA_ARRAY_DESCRIPTOR desc;
	void *storage;
};

static void array_release(struct si_obj *obj)
{
	struct CUarray_st *a = (struct CUarray_st *)obj;

	free(a->storage);
	free(a);
}

static size_t format_size(CUarray_format f)
{
	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		return 1;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		return 2;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		return 4;
	default:
		return 0;
	}
}

CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
	struct CUctx_st *ctx;
	struct CUarray_st *a;
	size_t elem, height, bytes;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		SI_RET(rc);
	if (!pHandle || !pAllocateArray)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	elem = format_size(pAllocateArray->Format);
	height = pAllocateArray->Height ? pAllocateArray->Height : 1;
	if (!elem || !pAllocateArray->Width ||
	    (pAllocateArray->NumChannels != 1 && pAllocateArray->NumChannels != 2 &&
	     pAllocateArray->NumChannels != 4))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%zu x %zu format=%d channels=%u",
			pAllocateArray->Width, pAllocateArray->Height, (int)pAllocateArray->Format,
			pAllocateArray->NumChannels);
	elem *= pAllocateArray->NumChannels;
	if (pAllocateArray->Width > SIZE_MAX / elem / height)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	bytes = pAllocateArray->Width * elem * height;
	a = calloc(1, sizeof(*a));
	if (!a)
		SI_RET(CUDA_ERROR_OUT_OF_MEMORY);
	si_obj_init(&a->obj, SI_T_ARRAY, ctx, array_release);
	a->desc = *pAllocateArray;
	a->storage = calloc(1, bytes);
	if (!a->storage || si_handle_add(&a->obj)) {
		si_obj_put(&a->obj);
		SI_RETF(CUDA_ERROR_OUT_OF_MEMORY, "%zu bytes", bytes);
	}
	*pHandle = a;
	SI_RETF(CUDA_SUCCESS, "%zu x %zu -> %p", pAllocateArray->Width, pAllocateArray->Height,
		(void *)a);
}

CUresult cuArrayGetDescriptor(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
	struct si_obj *obj;
	CUresult rc = si_check_init();

	if (rc)
		SI_RET(rc);
	if (!pArrayDescriptor)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	obj = si_handle_get(hArray, SI_T_ARRAY);
	if (!obj)
		SI_RETF(CUDA_ERROR_INVALID_HANDLE, "%p", (void *)hArray);
	*pArrayDescriptor = ((struct CUarray_st *)obj)->desc;
	si_obj_put(obj);
	SI_RETF(CUDA_SUCCESS, "%p", (void *)hArray);
}

CUresult cuArrayDestroy(CUarray hArray)
{
	struct si_obj *obj;
	CUresult rc = si_check_init();

	if (rc)
		SI_RET(rc);
	obj = si_handle_get(hArray, SI_T_ARRAY);
	if (!obj)
		SI_RETF(CUDA_ERROR_INVALID_HANDLE, "%p", (void *)hArray);
	if (si_handle_del(obj))
		si_obj_put(obj);
	si_obj_put(obj);
	SI_RETF(CUDA_SUCCESS, "%p", (void *)hArray);
}

void si_array_ctx_teardown(struct CUctx_st *ctx)
{
	struct si_obj **objs;
	size_t n = si_handle_take_owned(ctx, SI_T_ARRAY, &objs);

	for (size_t i = 0; i < n; i++)
		si_obj_put(objs[i]);
	free(objs);
}
