#include "config.h"

#include "transfer.h"
#include "clock.h"
#include "order.h"
#include "driver.h"
#include "log.h"
#include "io.h"
#include "numa.h"
#include "segment_hash.h"
#include "staging.h"

#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum op {
	OP_DUMP,
	OP_LOAD,
	OP_KEYS,
};

struct job {
	struct gk_xfer_item *items;
	struct gk_order_unit *units;
	size_t nunits;
	size_t next; /* atomic */
	uint64_t chunk_size;
	uint64_t bufsize; /* staging buffer: a chunk, or less for small images */
	enum op op;
	int failed; /* atomic: first error wins */
	/* Thread-seconds spent in each phase, for the info-level summary that
	 * tells where a slow transfer's time went. */
	double t_setup, t_device, t_sum, t_file;
	char *err;
	size_t errlen;
	pthread_mutex_t err_lock;
};

static void fail(struct job *j, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(struct job *j, int code, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&j->err_lock);
	if (!j->failed) {
		j->failed = code;
		va_start(ap, fmt);
		vsnprintf(j->err, j->errlen, fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&j->err_lock);
}

/* Per-thread phase times, added to the job's when the thread ends. */
struct clocks {
	double setup, device, sum, file;
};

static void add_clocks(struct job *j, const struct clocks *c)
{
	pthread_mutex_lock(&j->err_lock);
	j->t_setup += c->setup;
	j->t_device += c->device;
	j->t_sum += c->sum;
	j->t_file += c->file;
	pthread_mutex_unlock(&j->err_lock);
}

static int failed(struct job *j)
{
	return __atomic_load_n(&j->failed, __ATOMIC_ACQUIRE) != 0;
}

/* Per-thread resources for one context. */
struct lane {
	CUcontext ctx;
	CUstream stream;
	CUevent ev[2];
	void *buf[2];
	uint64_t bufsize;
};

static int lane_open(struct lane *l, CUcontext ctx, uint64_t bufsize, struct job *j)
{
	CUresult r;

	memset(l, 0, sizeof(*l));
	l->ctx = ctx;
	r = gk_real.cuCtxSetCurrent(ctx);
	if (r == CUDA_SUCCESS) {
		CUdevice dev;

		/* Before the staging buffers are allocated: they land where the
		 * thread runs. */
		if (gk_real.cuCtxGetDevice(&dev) == CUDA_SUCCESS)
			gk_numa_bind_near(dev);
	}
	if (r == CUDA_SUCCESS)
		r = gk_real.cuStreamCreate(&l->stream, CU_STREAM_NON_BLOCKING);
	for (int k = 0; k < 2 && r == CUDA_SUCCESS; k++) {
		r = gk_real.cuEventCreate(&l->ev[k], CU_EVENT_DISABLE_TIMING);
		if (r == CUDA_SUCCESS) {
			/* Kept from the last transfer, or pinned now (staging.c). */
			l->buf[k] = gk_staging_take(bufsize);
			l->bufsize = bufsize;
			if (!l->buf[k])
				r = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	if (r != CUDA_SUCCESS) {
		fail(j, r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO,
		     "cannot set up staging buffers: %s", gk_cu_name(r));
		return -EIO;
	}
	return 0;
}

static void lane_close(struct lane *l)
{
	if (!l->ctx)
		return;
	gk_real.cuCtxSetCurrent(l->ctx);
	if (l->stream)
		gk_real.cuStreamSynchronize(l->stream);
	for (int k = 0; k < 2; k++) {
		if (l->buf[k])
			gk_staging_give(l->buf[k], l->bufsize);
		if (l->ev[k])
			gk_real.cuEventDestroy_v2(l->ev[k]);
	}
	if (l->stream)
		gk_real.cuStreamDestroy_v2(l->stream);
	memset(l, 0, sizeof(*l));
}

static uint64_t unit_len(struct job *j, const struct gk_order_unit *u, uint64_t *off)
{
	const struct gk_xfer_item *it = &j->items[u->item];
	uint64_t start = (uint64_t)u->chunk * j->chunk_size;

	*off = start;
	return it->size - start < j->chunk_size ? it->size - start : j->chunk_size;
}

/*
 * A chunk is written and hashed, or read and hashed, a piece at a time, the
 * piece small enough to stay in the core's cache between the two: the chunk
 * then crosses the memory bus once, not twice (hashing the whole 8 MiB chunk,
 * then writing it, read it from memory twice: 0.8-1.0 thread-seconds of
 * hashing for 4 GiB on the H100 machine, 0.5 since).
 */
#define PIECE (256u << 10)

/* Write buf to the item's file at pos (or, with load, read it from there),
 * and hash the bytes; *sum gets the chunk's checksum. */
static int move_chunk(struct gk_xfer_item *it, const char *buf, uint64_t len, uint64_t pos, int load,
		      enum gk_sum_algo algo, uint64_t *sum, struct clocks *c)
{
	struct gk_sum_state st;
	int ret = 0;

	gk_sum_init(&st, algo);
	for (uint64_t o = 0; o < len && ret == 0; o += PIECE) {
		size_t n = len - o < PIECE ? (size_t)(len - o) : PIECE;
		double t0 = gk_now(), t1;

		ret = load ? gk_pread_all(it->fd, (char *)buf + o, n, pos + o)
			   : gk_pwrite_all(it->fd, buf + o, n, pos + o);
		t1 = gk_now();
		if (ret == 0)
			gk_sum_update(&st, buf + o, n);
		c->file += t1 - t0;
		c->sum += gk_now() - t1;
	}
	*sum = gk_sum_digest(&st);
	return ret;
}

/* A chunk that has arrived in host memory: written with its checksum
 * recorded (dump), or its change key computed (keys). */
static void dump_finish(struct job *j, const struct gk_order_unit *u, const void *buf,
			struct clocks *c)
{
	struct gk_xfer_item *it = &j->items[u->item];
	uint64_t off, len = unit_len(j, u, &off);
	int ret;

	if (j->op == OP_KEYS) {
		double t0 = gk_now();

		it->chunks[u->chunk].key = gk_sh_chunk_host(buf, len);
		c->sum += gk_now() - t0;
		return;
	}
	ret = move_chunk(it, buf, len, it->file_offset + off, 0, it->algo, &it->chunks[u->chunk].sum,
			 c);
	if (ret < 0)
		fail(j, ret, "%s: cannot write allocation %zu (0x%llx): %s", it->file, it->index,
		     (unsigned long long)it->dev_addr, strerror(-ret));
}

static void *worker(void *arg)
{
	struct job *j = arg;
	struct lane lane = {0};
	struct gk_order_unit *pending = NULL;
	int k = 0, pk = 0;
	uint64_t bufsize = j->bufsize;
	struct clocks c = {0};
	double t;

	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		struct gk_order_unit *u;
		struct gk_xfer_item *it;
		uint64_t off, len;
		CUresult r;

		if (i >= j->nunits || failed(j))
			break;
		u = &j->units[i];
		it = &j->items[u->item];
		len = unit_len(j, u, &off);
		if (it->host) {
			/* A snapshot: the bytes are in host memory already. */
			dump_finish(j, u, (const char *)it->host + off, &c);
			continue;
		}
		if (lane.ctx != it->ctx) {
			if (pending) {
				gk_real.cuEventSynchronize(lane.ev[pk]);
				dump_finish(j, pending, lane.buf[pk], &c);
				pending = NULL;
			}
			lane_close(&lane);
			t = gk_now();
			if (lane_open(&lane, it->ctx, bufsize, j) < 0)
				break;
			c.setup += gk_now() - t;
		}
		if (j->op != OP_LOAD) {
			r = gk_real.cuMemcpyDtoHAsync_v2(lane.buf[k], it->dev_addr + off, len,
							 lane.stream);
			if (r == CUDA_SUCCESS)
				r = gk_real.cuEventRecord(lane.ev[k], lane.stream);
			if (r != CUDA_SUCCESS) {
				fail(j, -EIO, "copying allocation %zu (0x%llx) from the device: %s",
				     it->index, (unsigned long long)it->dev_addr, gk_cu_name(r));
				break;
			}
			/* While this chunk comes over, the previous one is written. */
			if (pending) {
				t = gk_now();
				r = gk_real.cuEventSynchronize(lane.ev[pk]);
				c.device += gk_now() - t;
				if (r != CUDA_SUCCESS) {
					fail(j, -EIO, "copying from the device: %s", gk_cu_name(r));
					break;
				}
				dump_finish(j, pending, lane.buf[pk], &c);
			}
			pending = u;
			pk = k;
		} else {
			uint64_t sum;
			int ret;

			/* The buffer is free once its previous copy has reached the device. */
			t = gk_now();
			r = gk_real.cuEventSynchronize(lane.ev[k]);
			c.device += gk_now() - t;
			ret = move_chunk(it, lane.buf[k], len, it->file_offset + off, 1, it->algo, &sum,
					 &c);
			if (ret < 0) {
				fail(j, ret == -ENODATA ? -EBADMSG : ret,
				     "%s: cannot read allocation %zu (0x%llx): %s", it->file,
				     it->index, (unsigned long long)it->dev_addr,
				     ret == -ENODATA ? "file too short" : strerror(-ret));
				break;
			}
			if (sum != it->chunks[u->chunk].sum) {
				fail(j, -EBADMSG,
				     "%s: checksum mismatch in allocation %zu (0x%llx), chunk %u",
				     it->file, it->index, (unsigned long long)it->dev_addr, u->chunk);
				break;
			}
			r = gk_real.cuMemcpyHtoDAsync_v2(it->dev_addr + off, lane.buf[k], len,
							 lane.stream);
			if (r == CUDA_SUCCESS)
				r = gk_real.cuEventRecord(lane.ev[k], lane.stream);
			if (r != CUDA_SUCCESS) {
				fail(j, -EIO, "copying allocation %zu (0x%llx) to the device: %s",
				     it->index, (unsigned long long)it->dev_addr, gk_cu_name(r));
				break;
			}
		}
		k ^= 1;
	}
	if (pending && !failed(j)) {
		CUresult r = gk_real.cuEventSynchronize(lane.ev[pk]);

		if (r == CUDA_SUCCESS)
			dump_finish(j, pending, lane.buf[pk], &c);
		else
			fail(j, -EIO, "copying from the device: %s", gk_cu_name(r));
	}
	if (lane.ctx && lane.stream) {
		CUresult r = gk_real.cuStreamSynchronize(lane.stream);

		if (r != CUDA_SUCCESS)
			fail(j, -EIO, "copying to the device: %s", gk_cu_name(r));
	}
	t = gk_now();
	lane_close(&lane);
	c.setup += gk_now() - t;
	add_clocks(j, &c);
	return NULL;
}

static int run(struct gk_xfer_item *items, size_t n, uint64_t chunk_size, unsigned threads,
	       enum op op, char *err, size_t errlen)
{
	struct job j;
	struct gk_order_item *order;
	pthread_t tid[64];
	size_t nunits = 0;
	uint64_t biggest = 0;
	unsigned started = 0;
	double t0 = gk_now();
	uint64_t bytes = 0;

	memset(&j, 0, sizeof(j));
	for (size_t i = 0; i < n; i++) {
		nunits += (items[i].size + chunk_size - 1) / chunk_size;
		bytes += items[i].size;
		if (items[i].size > biggest)
			biggest = items[i].size;
	}
	if (nunits == 0)
		return 0;
	j.units = calloc(nunits, sizeof(*j.units));
	if (!j.units) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	order = malloc(n * sizeof(*order));
	if (!order) {
		free(j.units);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = (struct gk_order_item){items[i].ctx, items[i].fd, items[i].size};
	gk_order_chunks(order, n, chunk_size, j.units);
	free(order);
	j.items = items;
	j.nunits = nunits;
	j.chunk_size = chunk_size;
	/* Small images get small staging buffers: pinning memory is not free. */
	j.bufsize = biggest < chunk_size ? (biggest + 4095) & ~4095ull : chunk_size;
	j.op = op;
	j.err = err;
	j.errlen = errlen;
	pthread_mutex_init(&j.err_lock, NULL);
	if (threads > 64)
		threads = 64;
	if (threads > nunits)
		threads = (unsigned)nunits;
	for (unsigned t = 0; t < threads; t++) {
		if (pthread_create(&tid[t], NULL, worker, &j) != 0)
			break;
		started++;
	}
	if (!started)
		worker(&j);
	for (unsigned t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	gk_info("transfer: %s %llu bytes in %.3f s with %u threads; thread-seconds: staging "
		"set-up %.3f, waiting for the device %.3f, %s %.3f, %s %.3f",
		op == OP_LOAD ? "loaded" : op == OP_KEYS ? "hashed" : "dumped",
		(unsigned long long)bytes, gk_now() - t0, started ? started : 1, j.t_setup,
		j.t_device, op == OP_KEYS ? "change keys" : "checksums", j.t_sum,
		op == OP_LOAD ? "file reads" : "file writes", j.t_file);
	pthread_mutex_destroy(&j.err_lock);
	free(j.units);
	return j.failed;
}

int gk_xfer_dump(struct gk_xfer_item *items, size_t n, uint64_t chunk_size, unsigned threads,
		 char *err, size_t errlen)
{
	return run(items, n, chunk_size, threads, OP_DUMP, err, errlen);
}

int gk_xfer_load(struct gk_xfer_item *items, size_t n, uint64_t chunk_size, unsigned threads,
		 char *err, size_t errlen)
{
	return run(items, n, chunk_size, threads, OP_LOAD, err, errlen);
}

int gk_xfer_keys(struct gk_xfer_item *items, size_t n, uint64_t chunk_size, unsigned threads,
		 char *err, size_t errlen)
{
	return run(items, n, chunk_size, threads, OP_KEYS, err, errlen);
}
