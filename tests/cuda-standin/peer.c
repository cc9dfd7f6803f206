/*
 * peer.c - peer access between the emulated devices. Every pair of distinct
 * devices has a peer route (host memory is shared by all of them), except the
 * pairs of physical devices listed in GPUCKPT_STANDIN_NO_PEER ("0-1,2-3"),
 * so that a test can move a job onto GPUs that lack a route it had. A
 * malformed list gives no route at all, and cuDeviceCanAccessPeer fails
 * with CUDA_ERROR_INVALID_VALUE.
 *
 * As on the GPU, peer access is what cuCtxEnablePeerAccess records for a
 * context; for memory mapped through the VMM API it is what cuMemSetAccess
 * grants to the peer device (vmm.c asks si_peer_route first).
 */
#include <stdlib.h>
#include <string.h>

#include "standin.h"

/* 1 when the physical devices a and b are listed as a pair without a route,
 * 0 when not, -1 when the list is malformed (said on stderr). Read at each
 * question, so that a test may change it between runs of one program. */
static int listed_unreachable(int a, int b)
{
	const char *list = getenv("GPUCKPT_STANDIN_NO_PEER"), *s = list;
	int found = 0;

	while (s && *s) {
		char *end;
		long x = strtol(s, &end, 10), y;

		if (end == s || *end != '-')
			goto malformed;
		s = end + 1;
		y = strtol(s, &end, 10);
		if (end == s || (*end && *end != ','))
			goto malformed;
		if ((x == a && y == b) || (x == b && y == a))
			found = 1;
		s = *end ? end + 1 : end;
	}
	return found;
malformed:
	si_msg("GPUCKPT_STANDIN_NO_PEER: '%s' is not a list like 0-1,2-3", list);
	return -1;
}

bool si_peer_route(int dev, int peer)
{
	if (dev == peer || dev < 0 || peer < 0 || dev >= si.ndev || peer >= si.ndev)
		return false;
	return listed_unreachable(si.dev[dev].phys, si.dev[peer].phys) == 0;
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%d %d", dev, peerDev);
	if (!canAccessPeer)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%d %d", dev, peerDev);
	if (si_check_device(dev) || si_check_device(peerDev))
		SI_RETF(CUDA_ERROR_INVALID_DEVICE, "%d %d", dev, peerDev);
	if (listed_unreachable(0, 0) < 0)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%d %d (GPUCKPT_STANDIN_NO_PEER)", dev, peerDev);
	*canAccessPeer = si_peer_route(dev, peerDev);
	SI_RETF(CUDA_SUCCESS, "%d %d -> %d", dev, peerDev, *canAccessPeer);
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
	struct CUctx_st *cur, *peer;
	unsigned long long bit;
	CUresult rc = si_ctx_current(&cur);

	if (rc)
		SI_RETF(rc, "%p", (void *)peerContext);
	if (Flags)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "%p flags=%u", (void *)peerContext, Flags);
	rc = si_ctx_resolve(peerContext, &peer);
	if (rc || !peerContext)
		SI_RETF(CUDA_ERROR_INVALID_CONTEXT, "%p", (void *)peerContext);
	if (peer->dev == cur->dev)
		SI_RETF(CUDA_ERROR_INVALID_DEVICE, "%p (same device %d)", (void *)peerContext,
			cur->dev);
	if (!si_peer_route(cur->dev, peer->dev))
		SI_RETF(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "device %d -> %d", cur->dev, peer->dev);
	bit = 1ull << peer->dev;
	if (atomic_fetch_or(&cur->peers, bit) & bit)
		SI_RETF(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "device %d -> %d", cur->dev,
			peer->dev);
	SI_RETF(CUDA_SUCCESS, "device %d -> %d", cur->dev, peer->dev);
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
	struct CUctx_st *cur, *peer;
	unsigned long long bit;
	CUresult rc = si_ctx_current(&cur);

	if (rc)
		SI_RETF(rc, "%p", (void *)peerContext);
	rc = si_ctx_resolve(peerContext, &peer);
	if (rc || !peerContext)
		SI_RETF(CUDA_ERROR_INVALID_CONTEXT, "%p", (void *)peerContext);
	bit = 1ull << peer->dev;
	if (!(atomic_fetch_and(&cur->peers, ~bit) & bit))
		SI_RETF(CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "device %d -> %d", cur->dev, peer->dev);
	SI_RETF(CUDA_SUCCESS, "device %d -> %d", cur->dev, peer->dev);
}
