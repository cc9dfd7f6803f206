/*
 * cudackpt.c - the CUDA driver's checkpoint API (driver 570 or later),
 * loaded at run time so that the shepherd runs, and `probe` can say why not,
 * on nodes whose driver lacks it or that have no driver at all.
 */
#include "config.h"

#include "common/log.h"
#include "common/error.h"
#include "shepherd/shepherd.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *symbol;
	size_t offset;
} entries[] = {
#define E(name)                                                                                    \
	{                                                                                          \
#name, offsetof(struct gk_cudackpt, name)                                          \
	}
    E(cuInit),
    E(cuGetErrorName),
    E(cuGetErrorString),
    E(cuDriverGetVersion),
    E(cuDeviceGetCount),
    E(cuDeviceGet),
    E(cuDeviceGetName),
    E(cuDeviceGetUuid),
    {"cuDeviceGetUuid_v2", offsetof(struct gk_cudackpt, uuid_v2)},
    E(cuCheckpointProcessGetState),
    E(cuCheckpointProcessGetRestoreThreadId),
    E(cuCheckpointProcessLock),
    E(cuCheckpointProcessCheckpoint),
    E(cuCheckpointProcessRestore),
    E(cuCheckpointProcessUnlock),
#undef E
};

int gk_cudackpt_load(struct gk_cudackpt *c, gk_error_t *err)
{
	CUresult r;

	memset(c, 0, sizeof(*c));
	/* RTLD_NODELETE: the table outlives any handle; the shepherd never
	 * unloads the driver. */
	c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!c->lib) {
		gk_errprintf(err, "libcuda.so.1: cannot load the CUDA driver: %s", dlerror());
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		void *p = dlsym(c->lib, entries[i].symbol);

		if (!p) {
			gk_errprintf(err,
				     "libcuda.so.1: the driver has no %s (the checkpoint API needs "
				     "driver 570 or later)",
				     entries[i].symbol);
			memset(c, 0, sizeof(*c));
			return -ENOTSUP;
		}
		memcpy((char *)c + entries[i].offset, &p, sizeof(p));
	}
	r = c->cuInit(0);
	gk_debug("transparent: cuInit: %d", (int)r);
	if (r != CUDA_SUCCESS && r != CUDA_ERROR_NO_DEVICE) {
		const char *name = NULL;

		c->cuGetErrorName(r, &name);
		gk_errprintf(err, "libcuda.so.1: cuInit: %s", name ? name : "unknown error");
		memset(c, 0, sizeof(*c));
		return -EIO;
	}
	return 0;
}

int gk_cuda_check(const struct gk_cudackpt *c, CUresult r, const char *op, pid_t pid)
{
	const char *name = NULL, *text = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	if (c->cuGetErrorName)
		c->cuGetErrorName(r, &name);
	if (c->cuGetErrorString)
		c->cuGetErrorString(r, &text);
	gk_error("transparent: %s: pid %d: %s: %s", op, (int)pid, name ? name : "CUDA error",
		 text ? text : "no description");
	return -EIO;
}

int gk_cudackpt_gpus(const struct gk_cudackpt *c, struct gk_gpu *gpus, size_t max, size_t *n,
		     gk_error_t *err)
{
	int count = 0;
	CUresult r;

	*n = 0;
	r = c->cuDeviceGetCount(&count);
	if (r == CUDA_ERROR_NO_DEVICE)
		return 0;
	if (gk_cuda_check(c, r, "cuDeviceGetCount", 0) < 0) {
		gk_errprintf(err, "cuDeviceGetCount failed");
		return -EIO;
	}
	for (int i = 0; i < count && (size_t)i < max; i++) {
		CUdevice dev;
		CUuuid u;

		if (gk_cuda_check(c, c->cuDeviceGet(&dev, i), "cuDeviceGet", 0) < 0 ||
		    gk_cuda_check(c, c->cuDeviceGetUuid(&u, dev), "cuDeviceGetUuid", 0) < 0 ||
		    gk_cuda_check(c,
				  c->cuDeviceGetName(gpus[i].name, (int)sizeof(gpus[i].name), dev),
				  "cuDeviceGetName", 0) < 0) {
			gk_errprintf(err, "cannot describe GPU %d", i);
			return -EIO;
		}
		gk_uuid_format(&u, gpus[i].uuid);
		*n = (size_t)i + 1;
	}
	return 0;
}

int gk_cudackpt_mig(const struct gk_cudackpt *c, char mig[64], gk_error_t *err)
{
	int count = 0;
	CUresult r;

	mig[0] = '\0';
	r = c->cuDeviceGetCount(&count);
	if (r == CUDA_ERROR_NO_DEVICE)
		return 0;
	if (gk_cuda_check(c, r, "cuDeviceGetCount", 0) < 0) {
		gk_errprintf(err, "cuDeviceGetCount failed");
		return -EIO;
	}
	for (int i = 0; i < count; i++) {
		CUdevice dev;
		CUuuid gpu, inst;

		if (gk_cuda_check(c, c->cuDeviceGet(&dev, i), "cuDeviceGet", 0) < 0 ||
		    gk_cuda_check(c, c->cuDeviceGetUuid(&gpu, dev), "cuDeviceGetUuid", 0) < 0 ||
		    gk_cuda_check(c, c->uuid_v2(&inst, dev), "cuDeviceGetUuid_v2", 0) < 0) {
			gk_errprintf(err, "cannot ask the driver whether GPU %d is a MIG instance", i);
			return -EIO;
		}
		if (memcmp(gpu.bytes, inst.bytes, sizeof(gpu.bytes))) {
			gk_uuid_format(&inst, mig);
			memcpy(mig, "MIG", 3); /* the driver's own spelling of an instance */
			return 1;
		}
	}
	return 0;
}

int gk_cudackpt_is_cuda(const struct gk_cudackpt *c, pid_t pid, CUprocessState *state)
{
	/* The driver answers only for processes that initialised CUDA;
	 * anything else (CUDA_ERROR_NOT_FOUND, ...) means "not ours to lock". */
	return c->cuCheckpointProcessGetState(pid, state) == CUDA_SUCCESS;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int gk_node_gpus(const char *proc, char (*uuids)[64], size_t max, size_t *n)
{
	char path[512], line[256];
	struct dirent **list = NULL;
	int count;

	*n = 0;
	snprintf(path, sizeof(path), "%s/driver/nvidia/gpus", proc);
	count = scandir(path, &list, NULL, by_name);
	if (count < 0)
		return -errno;
	for (int i = 0; i < count; i++) {
		FILE *f;

		if (list[i]->d_name[0] != '.' && *n < max) {
			snprintf(path, sizeof(path), "%s/driver/nvidia/gpus/%.64s/information", proc,
				 list[i]->d_name);
			f = fopen(path, "re");
			while (f && fgets(line, sizeof(line), f)) {
				char *v;
				CUuuid u;

				if (strncmp(line, "GPU UUID:", 9))
					continue;
				for (v = line + 9; *v == ' ' || *v == '\t'; v++)
					;
				v[strcspn(v, " \t\n")] = 0;
				if (strlen(v) < 64 && gk_uuid_parse(v, &u) == 0)
					memcpy(uuids[(*n)++], v, strlen(v) + 1);
				break;
			}
			if (f)
				fclose(f);
		}
		free(list[i]);
	}
	free(list);
	return 0;
}

static int listed(char (*list)[64], size_t n, const char *uuid)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i], uuid))
			return 1;
	return 0;
}

static int used(const struct gk_gpu *gpus, size_t n, const char *uuid)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(gpus[i].uuid, uuid))
			return 1;
	return 0;
}

int gk_gpu_shared_move(const struct gk_gpu *old_used, size_t nold_used,
		       const struct gk_gpu *new_used, size_t nnew_used, char (*new_node)[64],
		       size_t nnew_node, gk_error_t *err)
{
	if (!nnew_node || nold_used >= nnew_node)
		return 0;
	for (size_t i = 0; i < nold_used; i++) {
		if (used(new_used, nnew_used, old_used[i].uuid) ||
		    !listed(new_node, nnew_node, old_used[i].uuid))
			continue;
		gk_errprintf(err,
			     "this rank saw %zu of the node's %zu GPUs and would move off %s, "
			     "which stays on this node; the CUDA driver cannot map the other "
			     "ranks' memory on that GPU into a process moved that way, so its "
			     "NCCL communicators could not be made again. Restore it onto the "
			     "GPUs it had (the same --gpu-bind), or run each rank with every "
			     "GPU of the node visible",
			     nold_used, nnew_node, old_used[i].uuid);
		return -EXDEV;
	}
	return 0;
}

int gk_gpu_pairs(const struct gk_gpu *old_used, size_t nold_used, char (*old_node)[64],
		 size_t nold_node, const struct gk_gpu *new_used, size_t nnew_used,
		 char (*new_node)[64], size_t nnew_node, CUcheckpointGpuPair *pairs, size_t max,
		 gk_error_t *err)
{
	size_t np = 0, k = 0;

	if (nnew_used < nold_used) {
		gk_errprintf(err, "the checkpoint used %zu GPU(s); this task sees %zu", nold_used,
			     nnew_used);
		return -ENODEV;
	}
	if (nold_node && nnew_node) {
		if (nold_node != nnew_node) {
			gk_errprintf(
			    err,
			    "the checkpoint's node had %zu GPU(s) and this one has %zu; the "
			    "driver restores only onto a node with as many",
			    nold_node, nnew_node);
			return -ENODEV;
		}
		for (size_t i = 0; i < nold_used; i++)
			if (!listed(old_node, nold_node, old_used[i].uuid) ||
			    !listed(new_node, nnew_node, new_used[i].uuid)) {
				gk_errprintf(err, "GPU %zu is not among the node's GPUs", i);
				return -EINVAL;
			}
	}
	if (nold_used > max || (nold_node && nnew_node && nold_node > max)) {
		gk_errprintf(err, "too many GPUs");
		return -E2BIG;
	}
	for (size_t i = 0; i < nold_used; i++) {
		if (gk_uuid_parse(old_used[i].uuid, &pairs[np].oldUuid) < 0 ||
		    gk_uuid_parse(new_used[i].uuid, &pairs[np].newUuid) < 0) {
			gk_errprintf(err, "GPU %zu: malformed UUID", i);
			return -EINVAL;
		}
		np++;
	}
	if (!nold_node || !nnew_node)
		return (int)np;
	/* The rest of the old node onto the rest of the new one, in order. */
	for (size_t i = 0; i < nold_node; i++) {
		if (used(old_used, nold_used, old_node[i]))
			continue;
		while (k < nnew_node && used(new_used, nold_used, new_node[k]))
			k++;
		if (k == nnew_node) {
			gk_errprintf(err, "the node's GPUs do not pair up");
			return -EINVAL;
		}
		if (gk_uuid_parse(old_node[i], &pairs[np].oldUuid) < 0 ||
		    gk_uuid_parse(new_node[k++], &pairs[np].newUuid) < 0) {
			gk_errprintf(err, "node GPU %zu: malformed UUID", i);
			return -EINVAL;
		}
		np++;
	}
	return (int)np;
}
