/*
 * hostfn.c - host functions in stream order (cuLaunchHostFunc,
 * cuStreamAddCallback). They run on the stream's worker thread, like the
 * driver's callback thread, and must not call CUDA.
 */
#include <stdlib.h>

#include "standin.h"

struct hostfn_op {
	struct si_op op;
	CUhostFn fn;
	CUstreamCallback cb;
	CUstream handle;
	void *data;
};

static void hostfn_run(struct si_op *op)
{
	struct hostfn_op *h = (struct hostfn_op *)op;

	if (h->fn)
		h->fn(h->data);
	else
		h->cb(h->handle, CUDA_SUCCESS, h->data);
}

static CUresult submit_host(CUstream hs, CUhostFn fn, CUstreamCallback cb, void *data, bool ptds)
{
	struct CUstream_st *s;
	struct hostfn_op *h;
	CUresult rc = si_stream_resolve(hs, ptds, &s);

	if (rc)
		return rc;
	h = calloc(1, sizeof(*h));
	if (!h) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	h->op.run = hostfn_run;
	h->fn = fn;
	h->cb = cb;
	h->handle = hs;
	h->data = data;
	rc = si_stream_submit(s, &h->op, NULL, NULL);
	if (rc)
		free(h);
out:
	si_stream_put(s);
	return rc;
}

CUresult si_api_host_func(CUstream h, CUhostFn fn, void *data, bool ptds)
{
	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	return submit_host(h, fn, NULL, data, ptds);
}

CUresult si_api_add_callback(CUstream h, CUstreamCallback cb, void *data, unsigned flags, bool ptds)
{
	if (!cb || flags)
		return CUDA_ERROR_INVALID_VALUE;
	return submit_host(h, NULL, cb, data, ptds);
}

CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
	SI_RETF(si_api_host_func(hStream, fn, userData, false), "stream=%p", (void *)hStream);
}

CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
			     unsigned int flags)
{
	SI_RETF(si_api_add_callback(hStream, callback, userData, flags, false), "stream=%p",
		(void *)hStream);
}
