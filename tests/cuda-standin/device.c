/*
 * device.c - device enumeration and properties. Ordinals are those of the
 * visible devices (renumbered from 0 as CUDA_VISIBLE_DEVICES lists them); the
 * name, UUID and PCI bus id are those of the physical device behind them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "standin.h"

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult rc = si_check_init();

	if (rc)
		SI_RETF(rc, "%d", ordinal);
	if (!device)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "NULL, %d", ordinal);
	if (ordinal < 0 || ordinal >= si.ndev)
		SI_RETF(CUDA_ERROR_INVALID_DEVICE, "%d", ordinal);
	*device = ordinal;
	SI_RETF(CUDA_SUCCESS, "%d", ordinal);
}

CUresult cuDeviceGetCount(int *count)
{
	CUresult rc = si_check_init();

	if (rc)
		SI_RET(rc);
	if (!count)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	*count = si.ndev;
	SI_RETF(CUDA_SUCCESS, "-> %d", si.ndev);
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult rc = si_check_device(dev);

	if (rc)
		SI_RETF(rc, "dev=%d", dev);
	if (!name || len <= 0)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "dev=%d len=%d", dev, len);
	snprintf(name, (size_t)len, "%s", si.dev[dev].name);
	SI_RETF(CUDA_SUCCESS, "dev=%d -> %s", dev, name);
}

static CUresult get_uuid(CUuuid *uuid, CUdevice dev)
{
	CUresult rc = si_check_device(dev);

	if (rc)
		return rc;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	*uuid = si.dev[dev].uuid;
	return CUDA_SUCCESS;
}

/*
 * Whether visible device dev stands for a MIG instance: listed in
 * GPUCKPT_STANDIN_MIG ("0,2"; ordinals as CUDA numbers them). Read at each
 * call: a test switches it between processes, never within one.
 */
static int is_mig(CUdevice dev)
{
	const char *s = getenv("GPUCKPT_STANDIN_MIG");
	char *end;

	while (s && *s) {
		long v = strtol(s, &end, 10);

		if (end == s)
			return 0;
		if (v == dev)
			return 1;
		s = *end == ',' ? end + 1 : "";
	}
	return 0;
}

/*
 * cuDeviceGetUuid (CUDA 9.2) answers with the GPU's UUID; its _v2 (11.4) with
 * the MIG instance's where the device is one, as the real driver does. Here
 * they agree unless GPUCKPT_STANDIN_MIG makes the device a MIG instance.
 */
CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	CUresult rc = get_uuid(uuid, dev);

	if (rc == CUDA_SUCCESS && is_mig(dev))
		((unsigned char *)uuid->bytes)[8] ^= 0x4d; /* any other value will do */
	SI_RETF(rc, "dev=%d%s", dev, rc == CUDA_SUCCESS && is_mig(dev) ? " (MIG)" : "");
}

CUresult cuDeviceGetUuid_v1(CUuuid *uuid, CUdevice dev) __asm__("cuDeviceGetUuid");
CUresult cuDeviceGetUuid_v1(CUuuid *uuid, CUdevice dev)
{
	SI_RETF(get_uuid(uuid, dev), "dev=%d", dev);
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	CUresult rc = si_check_device(dev);

	if (rc)
		SI_RETF(rc, "dev=%d", dev);
	if (!bytes)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "dev=%d", dev);
	*bytes = si.dev[dev].total;
	SI_RETF(CUDA_SUCCESS, "dev=%d -> %zu", dev, *bytes);
}

static int attribute(const struct si_device *d, CUdevice_attribute a)
{
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		return d->cc_major;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
		return d->cc_minor;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		return SI_SM_COUNT;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
		return d->pci_bus;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
		return 0;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
		return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
		return 64;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
		return 0x7fffffff;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
		return 65535;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		return 32;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
		return 1;
	default:
		return 0;
	}
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CUresult rc = si_check_device(dev);

	if (rc)
		SI_RETF(rc, "attr=%d dev=%d", (int)attrib, dev);
	if (!pi || (int)attrib < 1 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "attr=%d dev=%d", (int)attrib, dev);
	*pi = attribute(&si.dev[dev], attrib);
	SI_RETF(CUDA_SUCCESS, "attr=%d dev=%d -> %d", (int)attrib, dev, *pi);
}

static void pci_bus_id(const struct si_device *d, char *buf, size_t len)
{
	snprintf(buf, len, "0000:%02x:00.0", (unsigned)d->pci_bus);
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	CUresult rc = si_check_device(dev);

	if (rc)
		SI_RETF(rc, "dev=%d", dev);
	if (!pciBusId || len <= 0)
		SI_RETF(CUDA_ERROR_INVALID_VALUE, "dev=%d len=%d", dev, len);
	pci_bus_id(&si.dev[dev], pciBusId, (size_t)len);
	SI_RETF(CUDA_SUCCESS, "dev=%d -> %s", dev, pciBusId);
}

CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
	CUresult rc = si_check_init();
	char id[32];

	if (rc)
		SI_RET(rc);
	if (!dev || !pciBusId)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	for (int d = 0; d < si.ndev; d++) {
		pci_bus_id(&si.dev[d], id, sizeof(id));
		/* The domain may be left out ("10:00.0"), as the real driver accepts. */
		if (strcasecmp(id, pciBusId) == 0 || strcasecmp(id + 5, pciBusId) == 0) {
			*dev = d;
			SI_RETF(CUDA_SUCCESS, "%s -> %d", pciBusId, d);
		}
	}
	SI_RETF(CUDA_ERROR_INVALID_DEVICE, "%s", pciBusId);
}
