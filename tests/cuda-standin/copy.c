/*
 * copy.c - copies and memsets, synchronous and stream-ordered. Device
 * pointers are checked against the registry when the call is made; the bytes
 * move when the stream reaches the operation.
 *
 * Host memory that is not page-locked behaves as the real driver documents:
 * an asynchronous copy from it is staged (the caller may reuse the buffer at
 * once), an asynchronous copy into it returns only when done. Synchronous
 * calls run on the legacy stream (the per-thread stream for _ptds) and return
 * when the copy is complete.
 */
#include <stdlib.h>
#include <string.h>

#include "standin.h"

struct copy_op {
	struct si_op op;
	char *dst;
	const char *src;
	size_t dpitch, spitch, width, height;
	void *staging;
};

struct set_op {
	struct si_op op;
	char *dst;
	unsigned value, elem;
	size_t count;
};

static void copy_run(struct si_op *op)
{
	struct copy_op *c = (struct copy_op *)op;

	for (size_t y = 0; y < c->height; y++)
		memmove(c->dst + y * c->dpitch, c->src + y * c->spitch, c->width);
}

static void copy_fini(struct si_op *op)
{
	struct copy_op *c = (struct copy_op *)op;

	free(c->staging);
	free(c);
}

static void set_run(struct si_op *op)
{
	struct set_op *s = (struct set_op *)op;

	if (s->elem == 1) {
		memset(s->dst, (int)(s->value & 0xff), s->count);
	} else if (s->elem == 2) {
		uint16_t v = (uint16_t)s->value;

		for (size_t i = 0; i < s->count; i++)
			memcpy(s->dst + 2 * i, &v, 2);
	} else {
		uint32_t v = s->value;

		for (size_t i = 0; i < s->count; i++)
			memcpy(s->dst + 4 * i, &v, 4);
	}
}

/* Checks one side of a copy spanning [p, p+span); tells whether it is pageable host memory. */
static CUresult check_side(uintptr_t p, size_t span, enum si_side side, bool write, bool *pageable)
{
	struct si_range r;

	*pageable = false;
	if (side == SIDE_DEVICE || (side == SIDE_ANY && si_reg_lookup(p, &r)))
		return si_reg_check(p, span, write);
	*pageable = !si_reg_is_pinned((const void *)p, span);
	return CUDA_SUCCESS;
}

/* Queues op on the stream h names; waits for it unless it may stay asynchronous. */
static CUresult submit(struct si_op *op, CUstream h, bool ptds, bool wait)
{
	struct CUstream_st *s;
	uint64_t seq;
	CUresult rc = si_stream_resolve(h, ptds, &s);

	if (rc)
		return rc;
	rc = si_stream_submit(s, op, NULL, &seq);
	if (!rc && wait)
		si_stream_wait_seq(s, seq);
	si_stream_put(s);
	return rc;
}

static CUresult copy2d(uintptr_t dst, size_t dpitch, enum si_side dside, uintptr_t src,
		       size_t spitch, enum si_side sside, size_t width, size_t height, CUstream h,
		       bool async, bool ptds)
{
	struct copy_op *c;
	bool dst_pageable, src_pageable;
	size_t dspan, sspan;
	CUresult rc = si_check_init();

	if (rc || !width || !height)
		return rc;
	if ((height > 1 && (dpitch < width || spitch < width)) || !dst || !src)
		return CUDA_ERROR_INVALID_VALUE;
	dspan = (height - 1) * dpitch + width;
	sspan = (height - 1) * spitch + width;
	rc = check_side(dst, dspan, dside, true, &dst_pageable);
	if (!rc)
		rc = check_side(src, sspan, sside, false, &src_pageable);
	if (rc)
		return rc;
	c = calloc(1, sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->op.run = copy_run;
	c->op.fini = copy_fini;
	c->dst = (char *)dst;
	c->src = (const char *)src;
	c->dpitch = dpitch;
	c->spitch = spitch;
	c->width = width;
	c->height = height;
	if (async && src_pageable) {
		char *buf = malloc(width * height);

		if (!buf) {
			free(c);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		for (size_t y = 0; y < height; y++)
			memcpy(buf + y * width, c->src + y * spitch, width);
		c->staging = buf;
		c->src = buf;
		c->spitch = width;
	}
	rc = submit(&c->op, h, ptds, !async || dst_pageable);
	if (rc)
		copy_fini(&c->op);
	return rc;
}

CUresult si_api_copy(uintptr_t dst, uintptr_t src, size_t n, CUstream h, bool async, bool ptds)
{
	return copy2d(dst, n, SIDE_ANY, src, n, SIDE_ANY, n, 1, h, async, ptds);
}

CUresult si_api_copy_dir(uintptr_t dst, enum si_side dside, uintptr_t src, enum si_side sside,
			 size_t n, CUstream h, bool async, bool ptds)
{
	return copy2d(dst, n, dside, src, n, sside, n, 1, h, async, ptds);
}

/* An asynchronous memset recorded by a stream capture (graph.c). Copies are
 * not recorded: a capture that meets one is invalidated (stream.c). */
struct set_node {
	struct si_node node;
	struct set_op tmpl;
};

static CUresult set_node_submit(struct si_node *n, struct CUstream_st *st)
{
	struct set_op *s = malloc(sizeof(*s));
	CUresult rc;

	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*s = ((struct set_node *)n)->tmpl;
	rc = si_stream_submit(st, &s->op, NULL, NULL);
	if (rc)
		free(s);
	return rc;
}

static void set_node_fini(struct si_node *n)
{
	free(n);
}

/* Records the memset if the stream h names captures; *recorded says whether. */
static CUresult set_capture(const struct set_op *tmpl, CUstream h, bool ptds, bool *recorded)
{
	struct CUstream_st *st;
	struct set_node *n;
	CUresult rc = si_stream_resolve(h, ptds, &st);

	*recorded = false;
	if (rc)
		return rc;
	if (!si_stream_capturing(st))
		goto out_stream;
	*recorded = true;
	n = calloc(1, sizeof(*n));
	if (!n) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out_stream;
	}
	n->node.submit = set_node_submit;
	n->node.fini = set_node_fini;
	n->tmpl = *tmpl;
	rc = si_capture_record(st, &n->node);
out_stream:
	si_stream_put(st);
	return rc;
}

CUresult si_api_set(uintptr_t dst, unsigned value, unsigned elem, size_t count, CUstream h,
		    bool async, bool ptds)
{
	struct set_op *s;
	bool recorded;
	CUresult rc = si_check_init();

	if (rc || !count)
		return rc;
	if (dst % elem || count > SIZE_MAX / elem)
		return CUDA_ERROR_INVALID_VALUE;
	rc = si_reg_check(dst, count * elem, true);
	if (rc)
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->op.run = set_run;
	s->dst = (char *)dst;
	s->value = value;
	s->elem = elem;
	s->count = count;
	if (async) {
		rc = set_capture(s, h, ptds, &recorded);
		if (rc || recorded) {
			free(s);
			return rc;
		}
	}
	rc = submit(&s->op, h, ptds, !async);
	if (rc)
		free(s);
	return rc;
}

static CUresult side_of(CUmemorytype type, const void *host, CUdeviceptr dev, uintptr_t *p,
			enum si_side *side)
{
	switch (type) {
	case CU_MEMORYTYPE_HOST:
		*p = (uintptr_t)host;
		*side = SIDE_HOST;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_DEVICE:
		*p = dev;
		*side = SIDE_DEVICE;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_UNIFIED:
		*p = dev;
		*side = SIDE_ANY;
		return CUDA_SUCCESS;
	case CU_MEMORYTYPE_ARRAY:
		return CUDA_ERROR_NOT_SUPPORTED; /* arrays hold no copyable layout here */
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

CUresult si_api_copy2d(const CUDA_MEMCPY2D *c, CUstream h, bool async, bool ptds)
{
	uintptr_t src, dst;
	enum si_side sside, dside;
	CUresult rc;

	if (!c)
		return CUDA_ERROR_INVALID_VALUE;
	rc = side_of(c->srcMemoryType, c->srcHost, c->srcDevice, &src, &sside);
	if (!rc)
		rc = side_of(c->dstMemoryType, c->dstHost, c->dstDevice, &dst, &dside);
	if (rc)
		return rc;
	src += c->srcY * c->srcPitch + c->srcXInBytes;
	dst += c->dstY * c->dstPitch + c->dstXInBytes;
	return copy2d(dst, c->dstPitch, dside, src, c->srcPitch, sside, c->WidthInBytes, c->Height,
		      h, async, ptds);
}

/* ---- entry points: legacy default stream semantics ---- */

#define P(x) ((unsigned long long)(x))

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	SI_RETF(si_api_copy(dst, src, ByteCount, NULL, false, false), "%#llx <- %#llx %zu", P(dst),
		P(src), ByteCount);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
	SI_RETF(si_api_copy(dst, src, ByteCount, hStream, true, false),
		"%#llx <- %#llx %zu stream=%p", P(dst), P(src), ByteCount, (void *)hStream);
}

CUresult cuMemcpyHtoD(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount)
{
	SI_RETF(si_api_copy_dir(dstDevice, SIDE_DEVICE, (uintptr_t)srcHost, SIDE_HOST, ByteCount,
				NULL, false, false),
		"%#llx <- %p %zu", P(dstDevice), srcHost, ByteCount);
}

CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	SI_RETF(si_api_copy_dir((uintptr_t)dstHost, SIDE_HOST, srcDevice, SIDE_DEVICE, ByteCount,
				NULL, false, false),
		"%p <- %#llx %zu", dstHost, P(srcDevice), ByteCount);
}

CUresult cuMemcpyDtoD(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount)
{
	SI_RETF(si_api_copy_dir(dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount, NULL,
				false, false),
		"%#llx <- %#llx %zu", P(dstDevice), P(srcDevice), ByteCount);
}

CUresult cuMemcpyHtoDAsync(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
			   CUstream hStream)
{
	SI_RETF(si_api_copy_dir(dstDevice, SIDE_DEVICE, (uintptr_t)srcHost, SIDE_HOST, ByteCount,
				hStream, true, false),
		"%#llx <- %p %zu stream=%p", P(dstDevice), srcHost, ByteCount, (void *)hStream);
}

CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount, CUstream hStream)
{
	SI_RETF(si_api_copy_dir((uintptr_t)dstHost, SIDE_HOST, srcDevice, SIDE_DEVICE, ByteCount,
				hStream, true, false),
		"%p <- %#llx %zu stream=%p", dstHost, P(srcDevice), ByteCount, (void *)hStream);
}

CUresult cuMemcpyDtoDAsync(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
			   CUstream hStream)
{
	SI_RETF(si_api_copy_dir(dstDevice, SIDE_DEVICE, srcDevice, SIDE_DEVICE, ByteCount, hStream,
				true, false),
		"%#llx <- %#llx %zu stream=%p", P(dstDevice), P(srcDevice), ByteCount,
		(void *)hStream);
}

CUresult cuMemcpy2D(const CUDA_MEMCPY2D *pCopy)
{
	SI_RET(si_api_copy2d(pCopy, NULL, false, false));
}

CUresult cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *pCopy)
{
	SI_RET(si_api_copy2d(pCopy, NULL, false, false));
}

CUresult cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
	SI_RETF(si_api_copy2d(pCopy, hStream, true, false), "stream=%p", (void *)hStream);
}

CUresult cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	SI_RETF(si_api_set(dstDevice, uc, 1, N, NULL, false, false), "%#llx %#x x%zu", P(dstDevice),
		uc, N);
}

CUresult cuMemsetD16(CUdeviceptr dstDevice, unsigned short us, size_t N)
{
	SI_RETF(si_api_set(dstDevice, us, 2, N, NULL, false, false), "%#llx %#x x%zu", P(dstDevice),
		us, N);
}

CUresult cuMemsetD32(CUdeviceptr dstDevice, unsigned int ui, size_t N)
{
	SI_RETF(si_api_set(dstDevice, ui, 4, N, NULL, false, false), "%#llx %#x x%zu", P(dstDevice),
		ui, N);
}

CUresult cuMemsetD8Async(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
	SI_RETF(si_api_set(dstDevice, uc, 1, N, hStream, true, false), "%#llx %#x x%zu stream=%p",
		P(dstDevice), uc, N, (void *)hStream);
}

CUresult cuMemsetD16Async(CUdeviceptr dstDevice, unsigned short us, size_t N, CUstream hStream)
{
	SI_RETF(si_api_set(dstDevice, us, 2, N, hStream, true, false), "%#llx %#x x%zu stream=%p",
		P(dstDevice), us, N, (void *)hStream);
}

CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
	SI_RETF(si_api_set(dstDevice, ui, 4, N, hStream, true, false), "%#llx %#x x%zu stream=%p",
		P(dstDevice), ui, N, (void *)hStream);
}
