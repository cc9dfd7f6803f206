#include "config.h"

#include "core/capture/changes.h"
#include "common/error.h"
#include "core/placement/arena.h"
#include "common/clock.h"
#include "core/driver/driver.h"
#include "common/log.h"
#include "core/state/runtime.h"
#include "core/capture/segment_hash.h"
#include "core/capture/transfer.h"
#include "common/settings_env.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The embedded kernel (hash_kernel.cu, built by nvcc into a fatbinary; size
 * 0 when the runtime was built without nvcc). */
extern const unsigned char gk_hash_image[];
extern const size_t gk_hash_image_size;

/* The kernel that also reports all-zero segments (a module with only the
 * older gk_hash_segments is refused by name, and keys go to the host). */
#define KERNEL "gk_hash_segments_z"
/* Far above the fatbinary, and above a stand-in's host module. */
#define MODULE_MAX (64u << 20)

/* What one context holds for hashing: the module, a stream, and the
 * segment table in device memory of the runtime's own (cuMemAlloc outside
 * the arena: it is never part of a checkpoint). */
struct hasher {
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUstream stream;
	CUdeviceptr desc, out; /* 2 and 1 words per segment */
	CUdeviceptr zero;      /* an unsigned int per segment */
	size_t cap;            /* segments */
};

static struct hasher hashers[GK_MAX_DEVICES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char why_not[512]; /* set once the GPU cannot hash: the reason */
static int told_host, told_zero; /* the reason logged: for the host keys, for the zeros */
static void *image;       /* the module loaded: embedded, or the file's contents */
static size_t image_size;

static void cannot(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void cannot(const char *fmt, ...)
{
	va_list ap;

	if (why_not[0])
		return;
	va_start(ap, fmt);
	vsnprintf(why_not, sizeof(why_not), fmt, ap);
	va_end(ap);
}

/* Why there is no kernel, said once for what it costs: keys found on the host
 * (host 1), or, where no keys are wanted, zero chunks not looked for. */
static void tell(int host)
{
	int *told = host ? &told_host : &told_zero;

	if (!why_not[0] || *told)
		return;
	*told = 1;
	if (host)
		gk_notice("checkpoint: changed chunks are found on the host, by copying every chunk "
			  "from the device and hashing it there (correct, but it moves all the "
			  "data): %s",
			  why_not);
	else
		gk_info("checkpoint: chunks that are all zero are written like the others, not "
			"recorded as zero: %s",
			why_not);
}

/* The module's bytes: GPUCKPT_HASH_MODULE's file, else the embedded one. */
static int load_image(void)
{
	const char *path = gk_rt.settings.hash_module;
	struct stat st;
	size_t done = 0;
	int fd;

	if (image)
		return 0;
	if (!path[0]) {
		if (!gk_hash_image_size) {
			cannot("this runtime was built without nvcc, so it has no hash kernel");
			return -ENOENT;
		}
		image = (void *)gk_hash_image;
		image_size = gk_hash_image_size;
		return 0;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
	    st.st_size > MODULE_MAX) {
		cannot(GK_ENV(HASH_MODULE) "=%s: %s", path,
		       fd < 0 ? strerror(errno) : "not a module file of a sensible size");
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	image = malloc((size_t)st.st_size);
	while (image && done < (size_t)st.st_size) {
		ssize_t r = read(fd, (char *)image + done, (size_t)st.st_size - done);

		if (r <= 0) {
			free(image);
			image = NULL;
			break;
		}
		done += (size_t)r;
	}
	close(fd);
	if (!image) {
		cannot(GK_ENV(HASH_MODULE) "=%s: cannot read it", path);
		return -EIO;
	}
	image_size = done;
	return 0;
}

/* The hasher of a device, set up in its context on first use. */
static struct hasher *hasher_of(CUcontext ctx, int ordinal)
{
	struct hasher *h = &hashers[ordinal];
	CUresult r;

	if (why_not[0] || ordinal < 0 || ordinal >= GK_MAX_DEVICES)
		return NULL;
	if (h->ctx == ctx && h->fn)
		return h;
	memset(h, 0, sizeof(*h));
	if (load_image() < 0)
		return NULL;
	r = gk_real.cuModuleLoadData(&h->mod, image);
	if (r != CUDA_SUCCESS) {
		cannot("the driver cannot load the hash kernel%s%s: %s",
		       gk_rt.settings.hash_module[0] ? " " : "", gk_rt.settings.hash_module,
		       gk_cu_name(r));
		return NULL;
	}
	r = gk_real.cuModuleGetFunction(&h->fn, h->mod, KERNEL);
	if (r == CUDA_SUCCESS)
		r = gk_real.cuStreamCreate(&h->stream, CU_STREAM_NON_BLOCKING);
	if (r != CUDA_SUCCESS) {
		cannot("the hash kernel's module has no usable %s: %s", KERNEL, gk_cu_name(r));
		gk_real.cuModuleUnload(h->mod);
		memset(h, 0, sizeof(*h));
		return NULL;
	}
	h->ctx = ctx;
	gk_info("checkpoint: device %d: the hash kernel is loaded (%s); changed chunks are found "
		"on the GPU",
		ordinal, gk_rt.settings.hash_module[0] ? gk_rt.settings.hash_module : "built in");
	return h;
}

static int reserve(struct hasher *h, size_t nseg)
{
	CUresult r;

	if (nseg <= h->cap)
		return 0;
	if (h->desc)
		gk_real.cuMemFree_v2(h->desc);
	if (h->out)
		gk_real.cuMemFree_v2(h->out);
	if (h->zero)
		gk_real.cuMemFree_v2(h->zero);
	h->desc = h->out = h->zero = 0;
	h->cap = 0;
	r = gk_real.cuMemAlloc_v2(&h->desc, nseg * 16);
	if (r == CUDA_SUCCESS)
		r = gk_real.cuMemAlloc_v2(&h->out, nseg * 8);
	if (r == CUDA_SUCCESS)
		r = gk_real.cuMemAlloc_v2(&h->zero, nseg * 4);
	if (r != CUDA_SUCCESS) {
		gk_warn("checkpoint: no device memory for the hash kernel's table (%zu segments): %s",
			nseg, gk_cu_name(r));
		return -ENOMEM;
	}
	h->cap = nseg;
	return 0;
}

static uint32_t nchunks_of(const struct gk_key_range *r, uint64_t chunk_size)
{
	return gk_chunk_count(r->size, chunk_size);
}

static uint64_t chunk_len(const struct gk_key_range *r, uint32_t c, uint64_t chunk_size)
{
	uint64_t start = (uint64_t)c * chunk_size;

	return r->size - start < chunk_size ? r->size - start : chunk_size;
}

/* The keys of every range of one device, by the kernel: a table of segments
 * (address, length) goes over, one block hashes each, the segments' hashes
 * come back and are folded into each chunk's key here. */
static int keys_on_device(struct hasher *h, struct gk_key_range *r, size_t n, int ordinal,
			  uint64_t chunk_size)
{
	size_t nseg = 0, s = 0;
	uint64_t *desc, *out;
	unsigned int count, *zero;
	void *args[4];
	CUresult cr;
	int ret = 0;

	for (size_t i = 0; i < n; i++)
		if (r[i].ordinal == ordinal)
			for (uint32_t c = 0; c < nchunks_of(&r[i], chunk_size); c++)
				nseg += (chunk_len(&r[i], c, chunk_size) + GK_SEG_BYTES - 1) /
					GK_SEG_BYTES;
	if (nseg == 0)
		return 0;
	if (nseg > 0x7fffffffu)
		return -E2BIG;
	desc = malloc(nseg * 16);
	out = malloc(nseg * 8);
	zero = malloc(nseg * 4);
	if (!desc || !out || !zero) {
		ret = -ENOMEM;
		goto out_free;
	}
	for (size_t i = 0; i < n; i++) {
		if (r[i].ordinal != ordinal)
			continue;
		for (uint32_t c = 0; c < nchunks_of(&r[i], chunk_size); c++) {
			uint64_t base = r[i].address + (uint64_t)c * chunk_size;
			uint64_t len = chunk_len(&r[i], c, chunk_size);

			for (uint64_t o = 0; o < len; o += GK_SEG_BYTES) {
				desc[2 * s] = base + o;
				desc[2 * s + 1] = len - o < GK_SEG_BYTES ? len - o : GK_SEG_BYTES;
				s++;
			}
		}
	}
	ret = reserve(h, nseg);
	if (ret < 0)
		goto out_free;
	count = (unsigned int)nseg;
	args[0] = &h->desc;
	args[1] = &h->out;
	args[2] = &h->zero;
	args[3] = &count;
	cr = gk_real.cuMemcpyHtoDAsync_v2(h->desc, desc, nseg * 16, h->stream);
	if (cr == CUDA_SUCCESS)
		cr = gk_real.cuLaunchKernel(h->fn, count, 1, 1, GK_SEG_LANES, 1, 1, 0, h->stream,
					    args, NULL);
	if (cr == CUDA_SUCCESS)
		cr = gk_real.cuMemcpyDtoHAsync_v2(out, h->out, nseg * 8, h->stream);
	if (cr == CUDA_SUCCESS)
		cr = gk_real.cuMemcpyDtoHAsync_v2(zero, h->zero, nseg * 4, h->stream);
	if (cr == CUDA_SUCCESS)
		cr = gk_real.cuStreamSynchronize(h->stream);
	if (cr != CUDA_SUCCESS) {
		gk_warn("checkpoint: device %d: the hash kernel failed: %s", ordinal,
			gk_cu_name(cr));
		ret = -EIO;
		goto out_free;
	}
	s = 0;
	for (size_t i = 0; i < n; i++) {
		if (r[i].ordinal != ordinal)
			continue;
		for (uint32_t c = 0; c < nchunks_of(&r[i], chunk_size); c++) {
			uint64_t len = chunk_len(&r[i], c, chunk_size), key = gk_sh_chunk_begin();
			unsigned int all_zero = 1;

			for (uint64_t o = 0; o < len; o += GK_SEG_BYTES) {
				all_zero &= zero[s] == 1;
				key = gk_sh_chunk_add(key, out[s++]);
			}
			r[i].chunks[c].key = gk_sh_chunk_final(key, len);
			if (r[i].zero)
				r[i].zero[c] = (uint8_t)all_zero;
		}
	}
out_free:
	free(desc);
	free(out);
	free(zero);
	return ret;
}

static int keys_on_gpu(struct gk_key_range *r, size_t n, uint64_t chunk_size)
{
	int done[GK_MAX_DEVICES] = {0}, ret = 0;

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n && ret == 0; i++) {
		struct hasher *h;
		int o = r[i].ordinal;

		if (o < 0 || o >= GK_MAX_DEVICES || done[o])
			continue;
		done[o] = 1;
		if (gk_real.cuCtxPushCurrent_v2(r[i].ctx) != CUDA_SUCCESS) {
			ret = -EIO;
			break;
		}
		h = hasher_of(r[i].ctx, o);
		ret = h ? keys_on_device(h, r, n, o, chunk_size) : -ENOENT;
		gk_real.cuCtxPopCurrent_v2(NULL);
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

/* The host fallback: every chunk copied through the staging buffers of the
 * copy threads and hashed there. */
static int keys_on_host(struct gk_key_range *r, size_t n, uint64_t chunk_size)
{
	struct gk_xfer_item *items = calloc(n ? n : 1, sizeof(*items));
	gk_error_t err;
	int ret;

	if (!items)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		items[i] = (struct gk_xfer_item){
		    .ctx = r[i].ctx,
		    .dev_addr = r[i].address,
		    .size = r[i].size,
		    .fd = -1,
		    .chunks = r[i].chunks,
		    .zeros = r[i].zero,
		    .file = "(change keys)",
		    .index = i,
		};
	ret = gk_xfer_keys(items, n, chunk_size, gk_rt.settings.writers, &err);
	if (ret < 0)
		gk_warn("checkpoint: change keys on the host: %s", err.text);
	free(items);
	return ret;
}

int gk_changes_keys(struct gk_key_range *r, size_t n, uint64_t chunk_size, int host_allowed,
		    enum gk_keys_where *where)
{
	double t0 = gk_now();
	int ret;

	*where = GK_KEYS_NONE;
	ret = keys_on_gpu(r, n, chunk_size);
	if (ret == 0) {
		*where = GK_KEYS_GPU;
		gk_debug("checkpoint: change keys on the GPU in %.4f s", gk_now() - t0);
		return 0;
	}
	pthread_mutex_lock(&lock);
	tell(host_allowed);
	pthread_mutex_unlock(&lock);
	if (!host_allowed)
		return ret;
	ret = keys_on_host(r, n, chunk_size);
	if (ret == 0) {
		*where = GK_KEYS_HOST;
		gk_debug("checkpoint: change keys on the host in %.4f s", gk_now() - t0);
	}
	return ret;
}

int gk_changes_on_gpu(CUcontext ctx, int ordinal)
{
	int ok;

	pthread_mutex_lock(&lock);
	ok = gk_real.cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS;
	if (ok) {
		ok = hasher_of(ctx, ordinal) != NULL;
		gk_real.cuCtxPopCurrent_v2(NULL);
	}
	pthread_mutex_unlock(&lock);
	return ok;
}

void gk_changes_forget(CUcontext ctx)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < GK_MAX_DEVICES; i++)
		if (hashers[i].ctx == ctx)
			memset(&hashers[i], 0, sizeof(hashers[i]));
	pthread_mutex_unlock(&lock);
}
