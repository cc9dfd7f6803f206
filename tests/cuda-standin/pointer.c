/*
 * pointer.c - cuPointerGetAttribute(s). Answers come from the registry; for
 * VMM memory the range is the mapping, as with the real driver. Boolean
 * attributes are written as one byte (bool).
 */
#include <string.h>

#include "standin.h"

/* Size of each attribute's value; 0: not an attribute the stand-in answers. */
static size_t attr_size(CUpointer_attribute a)
{
	switch (a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		return sizeof(CUcontext);
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		return sizeof(unsigned int);
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		return sizeof(CUdeviceptr);
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		return sizeof(void *);
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
	case CU_POINTER_ATTRIBUTE_MAPPED:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
		return sizeof(bool);
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
		return sizeof(unsigned long long);
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		return sizeof(int);
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		return sizeof(size_t);
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		return sizeof(CUmemoryPool);
	default:
		return 0;
	}
}

static bool is_host_kind(enum si_mem_kind k)
{
	return k == SI_MEM_HOST || k == SI_MEM_REGISTERED;
}

static unsigned long long allowed_handle_types(const struct si_range *r);

/*
 * The attribute of memory range r at ptr: CUDA_ERROR_INVALID_VALUE when the
 * attribute does not apply to that kind of memory (a host pointer of device
 * memory).
 */
static CUresult attr_value(const struct si_range *r, uintptr_t ptr, CUpointer_attribute a,
			   void *data)
{
	struct CUctx_st *cur = NULL;
	bool b;

	switch (a) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = r->ctx;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data =
		    is_host_kind(r->kind) ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = ptr;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		if (!is_host_kind(r->kind) && r->kind != SI_MEM_MANAGED)
			return CUDA_ERROR_INVALID_VALUE;
		*(void **)data = (void *)ptr;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
		b = true; /* synchronous copies here always are */
		break;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
	case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
		*(unsigned long long *)data = r->id;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		b = r->kind == SI_MEM_MANAGED ||
		    (r->kind == SI_MEM_GLOBAL && (r->flags & SI_GLOBAL_MANAGED));
		break;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		/* Host memory belongs to the device of the context that allocated it. */
		*(int *)data = r->dev >= 0 ? r->dev : r->ctx ? r->ctx->dev : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
		b = r->kind == SI_MEM_DEVICE;
		break;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = r->base;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
	case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
		*(size_t *)data = r->size;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
		*(void **)data = (void *)r->base;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		b = true;
		break;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		*(unsigned long long *)data = allowed_handle_types(r);
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
	case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE:
		b = false;
		break;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		if (r->kind == SI_MEM_VMM) {
			if (si_ctx_current(&cur))
				return CUDA_ERROR_INVALID_CONTEXT;
			*(unsigned int *)data = r->access[cur->dev];
		} else {
			*(unsigned int *)data = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
		}
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data = r->kind == SI_MEM_POOL ? r->owner : NULL;
		return CUDA_SUCCESS;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	*(bool *)data = b;
	return CUDA_SUCCESS;
}

/* A VMM mapping carries the handle types its allocation was created with. */
static unsigned long long allowed_handle_types(const struct si_range *r)
{
	return r->kind == SI_MEM_VMM ? r->flags : 0;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	struct si_range r;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "attr=%d %#llx", (int)attribute, (unsigned long long)ptr);
	if (!data || !attr_size(attribute))
		SI_RETF(attribute == CU_POINTER_ATTRIBUTE_P2P_TOKENS ? CUDA_ERROR_NOT_SUPPORTED
								     : CUDA_ERROR_INVALID_VALUE,
			"attr=%d %#llx", (int)attribute, (unsigned long long)ptr);
	if (!si_reg_lookup(ptr, &r))
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "attr=%d %#llx (not CUDA memory)", (int)attribute,
			(unsigned long long)ptr);
	SI_RETF(attr_value(&r, ptr, attribute, data), "attr=%d %#llx", (int)attribute,
		(unsigned long long)ptr);
}

/*
 * Unlike cuPointerGetAttribute, an unknown pointer is no error here: every
 * attribute gets its empty value (and the device ordinal -2, "no device",
 * which the CUDA runtime reports for such pointers).
 */
CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes,
				void **data, CUdeviceptr ptr)
{
	struct si_range r;
	bool known;
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "n=%u %#llx", numAttributes, (unsigned long long)ptr);
	if (!numAttributes || !attributes || !data)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "n=%u %#llx", numAttributes,
			(unsigned long long)ptr);
	for (unsigned i = 0; i < numAttributes; i++)
		if (!attr_size(attributes[i]) || !data[i])
			SI_RETF(CUDA_ERROR_INVALID_VALUE, "n=%u %#llx: attribute %u (%d)",
				numAttributes, (unsigned long long)ptr, i, (int)attributes[i]);
	known = si_reg_lookup(ptr, &r);
	for (unsigned i = 0; i < numAttributes; i++) {
		if (known) {
			rc = attr_value(&r, ptr, attributes[i], data[i]);
			if (rc != CUDA_ERROR_INVALID_VALUE && rc != CUDA_SUCCESS)
				SI_RETF(rc, "n=%u %#llx", numAttributes, (unsigned long long)ptr);
			if (rc == CUDA_SUCCESS)
				continue;
		}
		memset(data[i], 0, attr_size(attributes[i]));
		if (!known && attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
			*(int *)data[i] = -2;
	}
	SI_RETF(CUDA_SUCCESS, "n=%u %#llx%s", numAttributes, (unsigned long long)ptr,
		known ? "" : " (not CUDA memory)");
}
