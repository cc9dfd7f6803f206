#include "config.h"

#include "core/capture/staging.h"
#include "core/driver/driver.h"
#include "common/log.h"
#include "core/placement/numa.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Far above 2 buffers per copy thread (at most 64 threads). */
#define MAX_KEPT 256

struct buf {
	void *p;
	uint64_t size;
	CUcontext pinned_in;
};

static struct {
	pthread_mutex_t lock;
	struct buf kept[MAX_KEPT]; /* idle, ready to be taken */
	size_t nkept;
	struct buf out[MAX_KEPT];  /* taken: remembered to know their context */
	size_t nout;
} P = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Pin a new buffer in the current context. */
static int pin(uint64_t size, struct buf *b)
{
	CUcontext ctx = NULL;
	void *p;

	if (gk_real.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || !ctx)
		return -1;
	/* MAP_POPULATE: the pages exist before the driver locks them. */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
		 0);
	if (p == MAP_FAILED)
		return -1;
	if (gk_real.cuMemHostRegister_v2(p, size, CU_MEMHOSTREGISTER_PORTABLE) != CUDA_SUCCESS) {
		munmap(p, size);
		return -1;
	}
	*b = (struct buf){p, size, ctx};
	return 0;
}

static void unpin(struct buf *b, int registered)
{
	if (registered && b->pinned_in &&
	    gk_real.cuCtxPushCurrent_v2(b->pinned_in) == CUDA_SUCCESS) {
		gk_real.cuMemHostUnregister(b->p);
		gk_real.cuCtxPopCurrent_v2(NULL);
	}
	munmap(b->p, b->size);
}

void *gk_staging_take(uint64_t size)
{
	struct buf b = {0};
	void *p = NULL;

	pthread_mutex_lock(&P.lock);
	for (size_t i = 0; i < P.nkept; i++)
		if (P.kept[i].size == size) {
			b = P.kept[i];
			P.kept[i] = P.kept[--P.nkept];
			break;
		}
	if (!b.p && pin(size, &b) < 0)
		b.p = NULL;
	if (b.p && P.nout < MAX_KEPT) {
		P.out[P.nout++] = b;
		p = b.p;
	} else if (b.p) {
		unpin(&b, 1);
	}
	pthread_mutex_unlock(&P.lock);
	return p;
}

void gk_staging_give(void *p, uint64_t size)
{
	pthread_mutex_lock(&P.lock);
	for (size_t i = 0; i < P.nout; i++) {
		struct buf b = P.out[i];

		if (b.p != p)
			continue;
		P.out[i] = P.out[--P.nout];
		(void)size;
		if (b.pinned_in && P.nkept < MAX_KEPT)
			P.kept[P.nkept++] = b;
		else
			unpin(&b, b.pinned_in != NULL);
		break;
	}
	pthread_mutex_unlock(&P.lock);
}

void gk_staging_fill(CUcontext ctx, unsigned n, uint64_t size)
{
	unsigned have = 0, pinned = 0;
	CUdevice dev;

	if (gk_real.cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
		return;
	/* The pages land where this thread runs: near the GPU, as the copy
	 * threads' own would (transfer.c). */
	if (gk_real.cuCtxGetDevice(&dev) == CUDA_SUCCESS)
		gk_numa_bind_near(dev);
	pthread_mutex_lock(&P.lock);
	for (size_t i = 0; i < P.nkept; i++)
		have += P.kept[i].size == size;
	while (have + pinned < n && P.nkept < MAX_KEPT) {
		struct buf b;

		if (pin(size, &b) < 0)
			break;
		P.kept[P.nkept++] = b;
		pinned++;
	}
	pthread_mutex_unlock(&P.lock);
	if (pinned)
		gk_debug("checkpoint: %u staging buffers of %llu bytes pinned for the copy threads",
			 pinned, (unsigned long long)size);
}

void gk_staging_forget(CUcontext ctx)
{
	pthread_mutex_lock(&P.lock);
	for (size_t i = 0; i < P.nkept;)
		if (P.kept[i].pinned_in == ctx) {
			unpin(&P.kept[i], 0); /* the registration went with ctx */
			P.kept[i] = P.kept[--P.nkept];
		} else {
			i++;
		}
	/* Taken ones are not pinned any more: dropped when given back. */
	for (size_t i = 0; i < P.nout; i++)
		if (P.out[i].pinned_in == ctx)
			P.out[i].pinned_in = NULL;
	pthread_mutex_unlock(&P.lock);
}
