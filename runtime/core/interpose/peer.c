#include "config.h"

#include "core/interpose/peer.h"
#include "core/placement/peer_access.h"
#include "core/placement/arena.h"
#include "core/driver/driver.h"
#include "core/interpose/handlers.h"
#include "common/log.h"
#include "core/state/phase.h"
#include "core/state/runtime.h"

#include <errno.h>
#include <stdio.h>

static int valid_pair(int accessor, int owner)
{
	return accessor >= 0 && accessor < GK_MAX_DEVICES && owner >= 0 && owner < GK_MAX_DEVICES &&
	       accessor != owner;
}

int gk_peer_grant(int accessor, int owner)
{
	uint64_t bit = 1ull << accessor, old;
	struct gk_arena *a;
	CUresult r;

	if (!valid_pair(accessor, owner))
		return -EINVAL;
	/* The bit first: memory the arena maps from here on is granted by
	 * arena.c; what it mapped before is granted below. */
	old = gk_peer_access_add(accessor, owner);
	if (old & bit)
		return 0;
	a = __atomic_load_n(&gk_arenas[owner], __ATOMIC_ACQUIRE);
	if (!a)
		return 0;
	r = gk_arena_grant(a, accessor);
	if (r != CUDA_SUCCESS) {
		char obj[64];

		gk_peer_access_remove(accessor, owner);
		snprintf(obj, sizeof(obj), "device %d's memory for device %d", owner, accessor);
		return gk_cu_check(r, "cuMemSetAccess", "peer", obj);
	}
	gk_info("peer: device %d may now access the memory placed on device %d", accessor, owner);
	return 0;
}

void gk_peer_forget(int accessor, int owner)
{
	if (valid_pair(accessor, owner))
		gk_peer_access_remove(accessor, owner);
}

/* "device 1 (NVIDIA H100 ..., GPU-...)" */
static void describe(int ordinal, char *buf, size_t len)
{
	struct gk_device_info info;
	CUdevice dev;

	if (gk_real.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS) {
		snprintf(buf, len, "device %d (not present in this run)", ordinal);
		return;
	}
	gk_device_info(dev, &info);
	snprintf(buf, len, "device %d (%s, %s)", ordinal, info.name, info.uuid);
}

int gk_peer_restore(int owner, uint64_t mask, const char *checkpoint)
{
	for (int p = 0; p < GK_MAX_DEVICES; p++) {
		char from[384], to[384];
		CUdevice dev, peer;
		int can = 0;

		if (!(mask >> p & 1))
			continue;
		if (gk_real.cuDeviceGet(&peer, p) != CUDA_SUCCESS ||
		    gk_real.cuDeviceGet(&dev, owner) != CUDA_SUCCESS ||
		    !gk_real.cuDeviceCanAccessPeer ||
		    gk_real.cuDeviceCanAccessPeer(&can, peer, dev) != CUDA_SUCCESS)
			can = 0;
		if (!can) {
			describe(p, from, sizeof(from));
			describe(owner, to, sizeof(to));
			gk_error(
			    "restore: %s: %s has no peer access to the memory of %s, which the "
			    "checkpointed run used (cuDeviceCanAccessPeer says no); run it on "
			    "GPUs with a peer route between them",
			    checkpoint, from, to);
			return -EXDEV;
		}
	}
	for (int p = 0; p < GK_MAX_DEVICES; p++)
		if (mask >> p & 1 && gk_peer_grant(p, owner) < 0)
			return -EXDEV;
	return 0;
}

/* ---- the interposed entry points ---- */

/* The devices of the current context and of peer. */
static int devices_of(CUcontext peer, int *accessor, int *owner)
{
	CUdevice a, o;

	if (gk_real.cuCtxGetDevice(&a) != CUDA_SUCCESS ||
	    gk_real.cuCtxPushCurrent_v2(peer) != CUDA_SUCCESS)
		return -EINVAL;
	if (gk_real.cuCtxGetDevice(&o) != CUDA_SUCCESS)
		o = -1;
	gk_real.cuCtxPopCurrent_v2(NULL);
	*accessor = a;
	*owner = o;
	return valid_pair(a, o) ? 0 : -EINVAL;
}

CUresult gk_on_cuCtxEnablePeerAccess(CUcontext peer, unsigned int Flags)
{
	int accessor, owner;
	CUresult r;

	if (gk_driver_ensure() < 0)
		return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
	r = gk_real.cuCtxEnablePeerAccess(peer, Flags);
	if (r != CUDA_SUCCESS || !gk_enabled() || devices_of(peer, &accessor, &owner) < 0)
		return r;
	if (gk_peer_grant(accessor, owner) < 0) {
		/* The program must not believe it has access the memory lacks. */
		gk_real.cuCtxDisablePeerAccess(peer);
		return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
	}
	return r;
}

CUresult gk_on_cuCtxDisablePeerAccess(CUcontext peer)
{
	int accessor, owner;
	CUresult r;

	if (gk_driver_ensure() < 0)
		return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
	r = gk_real.cuCtxDisablePeerAccess(peer);
	if (r == CUDA_SUCCESS && gk_enabled() && devices_of(peer, &accessor, &owner) == 0)
		gk_peer_forget(accessor, owner);
	return r;
}

/* Peer access's part in a checkpoint (phase.h). The runtime grants peer
 * access again only in application mode (peer.h, gk_peer_restore): a
 * transparent checkpoint of a process that holds some leaves device memory
 * to the driver, which keeps the access with the memory it copies. */
static int peer_before(enum gk_phase phase, enum gk_ckpt_kind kind, struct gk_phase_verdict *v)
{
	if (phase != GK_PHASE_HOLD || kind != GK_CKPT_TRANSPARENT || !gk_peer_any())
		return 0;
	snprintf(v->why, sizeof(v->why), "peer access between GPUs");
	return -ENOTSUP;
}

static const struct gk_phase_hooks peer_hooks = {
	.name = "peer",
	.order = 20,
	.before = peer_before,
};
GK_PHASE_HOOKS(peer_hooks)
