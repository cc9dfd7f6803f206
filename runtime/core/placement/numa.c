#include "config.h"

#include "core/placement/numa.h"
#include "common/clock.h"
#include "core/driver/driver.h"
#include "common/log.h"

#include <hwloc.h>
#include <pthread.h>

static hwloc_topology_t topo;
static int topo_ok;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_topology(void)
{
	if (hwloc_topology_init(&topo) < 0)
		return;
#if HWLOC_API_VERSION >= 0x00020100
	/* hwloc's GPU plugins open the devices themselves (its NVML plugin
	 * maps /dev/nvidiactl into the process): a mapping the CUDA driver's
	 * checkpoint does not release, and CRIU then refuses to dump the
	 * process ("non-regular mapping"). The PCI tree is all that is needed. */
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "nvml");
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "cuda");
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
	hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
#endif
	/* PCI devices are needed to find the GPU; bridges and the rest are not. */
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	if (hwloc_topology_load(topo) < 0) {
		hwloc_topology_destroy(topo);
		return;
	}
	topo_ok = 1;
}

void gk_numa_preload(void)
{
	double t0 = gk_now();

	pthread_once(&once, load_topology);
	gk_debug("numa: topology %s in %.3f s", topo_ok ? "loaded" : "not loaded", gk_now() - t0);
}

void gk_numa_bind_near(CUdevice dev)
{
	char busid[32];
	hwloc_obj_t pci, near;

	if (!gk_real.cuDeviceGetPCIBusId ||
	    gk_real.cuDeviceGetPCIBusId(busid, sizeof(busid), dev) != CUDA_SUCCESS)
		return;
	pthread_once(&once, load_topology);
	if (!topo_ok)
		return;
	pci = hwloc_get_pcidev_by_busidstring(topo, busid);
	near = pci ? hwloc_get_non_io_ancestor_obj(topo, pci) : NULL;
	if (!near || !near->cpuset) {
		gk_debug("numa: device %d (%s): not in the topology; copy threads left unbound",
			 (int)dev, busid);
		return;
	}
	if (hwloc_set_cpubind(topo, near->cpuset, HWLOC_CPUBIND_THREAD) < 0)
		gk_debug("numa: device %d (%s): cannot bind a copy thread near it", (int)dev, busid);
}
