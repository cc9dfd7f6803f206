/*
 * cudackpt.c - the CUDA driver's checkpoint API (driver 570 or later),
 * loaded at run time so that the shepherd runs, and `probe` can say why not,
 * on nodes whose driver lacks it or that have no driver at all.
 */
#include "config.h"

#include "log.h"
#include "shepherd.h"

#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
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
    E(cuCheckpointProcessGetState),
    E(cuCheckpointProcessGetRestoreThreadId),
    E(cuCheckpointProcessLock),
    E(cuCheckpointProcessCheckpoint),
    E(cuCheckpointProcessRestore),
    E(cuCheckpointProcessUnlock),
#undef E
};

int gk_cudackpt_load(struct gk_cudackpt *c, char *err, size_t errlen)
{
	CUresult r;

	memset(c, 0, sizeof(*c));
	/* RTLD_NODELETE: the table outlives any handle; the shepherd never
	 * unloads the driver. */
	c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!c->lib) {
		snprintf(err, errlen, "libcuda.so.1: cannot load the CUDA driver: %s", dlerror());
		return -ENOENT;
	}
	for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
		void *p = dlsym(c->lib, entries[i].symbol);

		if (!p) {
			snprintf(err, errlen,
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
		snprintf(err, errlen, "libcuda.so.1: cuInit: %s", name ? name : "unknown error");
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

int gk_uuid_format(const CUuuid *u, char out[64])
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	return snprintf(out, 64,
			"GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
			b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11],
			b[12], b[13], b[14], b[15]) == 40
		   ? 0
		   : -EINVAL;
}

int gk_uuid_parse(const char *text, CUuuid *u)
{
	static const int dash[] = {8, 13, 18, 23};
	const char *p;
	int nb = 0;

	if (strncmp(text, "GPU-", 4) != 0 || strlen(text) != 40)
		return -EINVAL;
	p = text + 4;
	for (int i = 0; i < 36;) {
		unsigned v;

		if (i == dash[0] || i == dash[1] || i == dash[2] || i == dash[3]) {
			if (p[i] != '-')
				return -EINVAL;
			i++;
			continue;
		}
		if (sscanf(p + i, "%2x", &v) != 1 || !strchr("0123456789abcdef", p[i]) ||
		    !strchr("0123456789abcdef", p[i + 1]))
			return -EINVAL;
		u->bytes[nb++] = (char)v;
		i += 2;
	}
	return nb == 16 ? 0 : -EINVAL;
}

int gk_cudackpt_gpus(const struct gk_cudackpt *c, struct gk_gpu *gpus, size_t max, size_t *n,
		     char *err, size_t errlen)
{
	int count = 0;
	CUresult r;

	*n = 0;
	r = c->cuDeviceGetCount(&count);
	if (r == CUDA_ERROR_NO_DEVICE)
		return 0;
	if (gk_cuda_check(c, r, "cuDeviceGetCount", 0) < 0) {
		snprintf(err, errlen, "cuDeviceGetCount failed");
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
			snprintf(err, errlen, "cannot describe GPU %d", i);
			return -EIO;
		}
		gk_uuid_format(&u, gpus[i].uuid);
		*n = (size_t)i + 1;
	}
	return 0;
}

int gk_cudackpt_is_cuda(const struct gk_cudackpt *c, pid_t pid, CUprocessState *state)
{
	/* The driver answers only for processes that initialised CUDA;
	 * anything else (CUDA_ERROR_NOT_FOUND, ...) means "not ours to lock". */
	return c->cuCheckpointProcessGetState(pid, state) == CUDA_SUCCESS;
}
