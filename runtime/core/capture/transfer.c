#include "config.h"

#include "core/capture/transfer.h"
#include "common/error.h"
#include "common/clock.h"
#include "core/placement/order.h"
#include "core/driver/driver.h"
#include "common/log.h"
#include "common/io.h"
#include "core/placement/numa.h"
#include "core/capture/segment_hash.h"
#include "core/capture/staging.h"

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
	uint64_t piece;   /* dump: device-to-host copies of at most this much */
	unsigned nslots;  /* dump: pieces in flight per thread */
	enum op op;
	int failed; /* atomic: first error wins */
	/* Thread-seconds spent in each phase, for the info-level summary that
	 * tells where a slow transfer's time went. */
	double t_setup, t_device, t_sum, t_file;
	gk_error_t *err;
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
		gk_verrprintf(j->err, fmt, ap);
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

/*
 * A staging slot: one piece of a chunk on its way from the device (dump), or
 * a whole chunk on its way to it (load). A thread's slots are cut from its
 * two pinned buffers.
 */
#define MAX_SLOTS 16

struct slot {
	void *buf;
	CUevent ev;
	const struct gk_order_unit *u; /* dump: the chunk the piece belongs to */
	uint64_t at, len;              /* dump: the piece's place in its chunk */
};

/* Per-thread resources for one context. */
struct lane {
	CUcontext ctx;
	CUstream stream;
	void *buf[2];
	uint64_t bufsize;
	struct slot slot[MAX_SLOTS];
	unsigned nslots;
};

/* nslots slots of `piece` bytes, taken alternately from the two buffers
 * (nslots / 2 * piece <= bufsize). */
static int lane_open(struct lane *l, CUcontext ctx, uint64_t bufsize, uint64_t piece,
		     unsigned nslots, struct job *j)
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
		/* Kept from the last transfer, or pinned now (staging.c). */
		l->buf[k] = gk_staging_take(bufsize);
		l->bufsize = bufsize;
		if (!l->buf[k])
			r = CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (unsigned s = 0; s < nslots && r == CUDA_SUCCESS; s++) {
		r = gk_real.cuEventCreate(&l->slot[s].ev, CU_EVENT_DISABLE_TIMING);
		l->slot[s].buf = (char *)l->buf[s % 2] + (uint64_t)(s / 2) * piece;
		l->nslots = s + 1;
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
	/* No copy may still be writing into a buffer that goes back to the pool. */
	if (l->stream)
		gk_real.cuStreamSynchronize(l->stream);
	for (int k = 0; k < 2; k++)
		if (l->buf[k])
			gk_staging_give(l->buf[k], l->bufsize);
	for (unsigned s = 0; s < l->nslots; s++)
		if (l->slot[s].ev)
			gk_real.cuEventDestroy_v2(l->slot[s].ev);
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

/* Write buf to fd at pos (or, with load, read it from there), adding the
 * bytes to the checksum st. */
static int move_bytes(int fd, const char *buf, uint64_t len, uint64_t pos, int load,
		      struct gk_sum_state *st, struct clocks *c)
{
	int ret = 0;

	for (uint64_t o = 0; o < len && ret == 0; o += PIECE) {
		size_t n = len - o < PIECE ? (size_t)(len - o) : PIECE;
		double t0 = gk_now(), t1;

		ret = load ? gk_pread_all(fd, (char *)buf + o, n, pos + o)
			   : gk_pwrite_all(fd, buf + o, n, pos + o);
		t1 = gk_now();
		if (ret == 0)
			gk_sum_update(st, buf + o, n);
		c->file += t1 - t0;
		c->sum += gk_now() - t1;
	}
	return ret;
}

/* A whole chunk: *sum gets its checksum. */
static int move_chunk(struct gk_xfer_item *it, const char *buf, uint64_t len, uint64_t pos, int load,
		      uint64_t *sum, struct clocks *c)
{
	struct gk_sum_state st;
	int ret;

	gk_sum_init(&st, it->algo);
	ret = move_bytes(it->fd, buf, len, pos, load, &st, c);
	*sum = gk_sum_digest(&st);
	return ret;
}

static void write_failed(struct job *j, const struct gk_xfer_item *it, int ret)
{
	fail(j, ret, "%s: cannot write allocation %zu (0x%llx): %s", it->file, it->index,
	     (unsigned long long)it->dev_addr, strerror(-ret));
}

/* A chunk that is in host memory already (a snapshot): written at once. */
static void dump_host_chunk(struct job *j, const struct gk_order_unit *u, struct clocks *c)
{
	struct gk_xfer_item *it = &j->items[u->item];
	uint64_t off, len = unit_len(j, u, &off);
	int ret = move_chunk(it, (const char *)it->host + off, len, it->file_offset + off, 0,
			     &it->chunks[u->chunk].sum, c);

	if (ret < 0)
		write_failed(j, it, ret);
}

/*
 * A piece that has arrived in a staging slot: written, its bytes added to
 * its chunk's checksum (st), which is complete at the chunk's last piece
 * (dump); or, for keys (whole chunks), the chunk's change key computed.
 * Pieces come in order within a chunk, and a thread finishes one chunk
 * before the next: one checksum state per thread is enough.
 */
static void finish_piece(struct job *j, const struct slot *s, struct gk_sum_state *st,
			 struct clocks *c)
{
	struct gk_xfer_item *it = &j->items[s->u->item];
	uint64_t off, len = unit_len(j, s->u, &off);
	int ret;

	if (j->op == OP_KEYS) {
		double t0 = gk_now();

		it->chunks[s->u->chunk].key = gk_sh_chunk_host(s->buf, len);
		/* The chunk is in host memory now: whether it is all zero costs
		 * a scan that stops at the first non-zero word. */
		if (it->zeros)
			it->zeros[s->u->chunk] = (uint8_t)gk_is_zero(s->buf, len);
		c->sum += gk_now() - t0;
		return;
	}
	if (s->at == 0)
		gk_sum_init(st, it->algo);
	ret = move_bytes(it->fd, s->buf, s->len, it->file_offset + off + s->at, 0, st, c);
	if (ret < 0)
		write_failed(j, it, ret);
	else if (s->at + s->len == len)
		it->chunks[s->u->chunk].sum = gk_sum_digest(st);
}

/*
 * Device to files (or to change keys): a ring of staging slots per thread.
 * Up to nslots pieces are on their way from the device while the oldest one
 * is written and hashed, so the copy engine stays ahead of the writes. With
 * pieces of a whole chunk and two slots this is plain double buffering; with
 * small pieces a piece is written soon after it arrived, while it may still
 * be in the processor's cache (on processors whose I/O writes into the last
 * level cache), and the write() reads it from there rather than from memory.
 */
static void *dump_worker(struct job *j)
{
	struct lane lane = {0};
	struct clocks c = {0};
	struct gk_sum_state st;
	const struct gk_order_unit *cur = NULL, *waiting = NULL;
	uint64_t cur_off = 0, cur_at = 0, cur_len = 0;
	unsigned head = 0, tail = 0, inflight = 0;
	int taken_all = 0;
	double t;

	memset(&st, 0, sizeof(st));
	for (;;) {
		/* Start copies while a slot is free and there is work. */
		while (!failed(j) && (!lane.ctx || inflight < lane.nslots)) {
			struct slot *s;
			uint64_t len;
			CUresult r;

			if (!cur) {
				const struct gk_order_unit *u = waiting;
				struct gk_xfer_item *it;

				if (!u) {
					size_t i;

					if (taken_all)
						break;
					i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
					if (i >= j->nunits) {
						taken_all = 1;
						break;
					}
					u = &j->units[i];
				}
				it = &j->items[u->item];
				if (it->host) {
					/* A snapshot: the bytes are in host memory already. */
					dump_host_chunk(j, u, &c);
					waiting = NULL;
					continue;
				}
				if (lane.ctx != it->ctx) {
					/* The slots belong to the old context: emptied first. */
					if (inflight) {
						waiting = u;
						break;
					}
					lane_close(&lane);
					t = gk_now();
					if (lane_open(&lane, it->ctx, j->bufsize, j->piece, j->nslots,
						      j) < 0) {
						lane_close(&lane);
						goto out;
					}
					c.setup += gk_now() - t;
					head = tail = 0;
				}
				waiting = NULL;
				cur = u;
				cur_at = 0;
				cur_len = unit_len(j, u, &cur_off);
			}
			s = &lane.slot[head];
			len = cur_len - cur_at < j->piece ? cur_len - cur_at : j->piece;
			r = gk_real.cuMemcpyDtoHAsync_v2(
			    s->buf, j->items[cur->item].dev_addr + cur_off + cur_at, len, lane.stream);
			if (r == CUDA_SUCCESS)
				r = gk_real.cuEventRecord(s->ev, lane.stream);
			if (r != CUDA_SUCCESS) {
				const struct gk_xfer_item *it = &j->items[cur->item];

				fail(j, -EIO, "copying allocation %zu (0x%llx) from the device: %s",
				     it->index, (unsigned long long)it->dev_addr, gk_cu_name(r));
				break;
			}
			s->u = cur;
			s->at = cur_at;
			s->len = len;
			head = (head + 1) % lane.nslots;
			inflight++;
			cur_at += len;
			if (cur_at >= cur_len)
				cur = NULL;
		}
		/* Nothing in flight: every chunk was taken (the loop above
		 * stops with an empty ring only then, or on a failure). */
		if (!inflight || failed(j))
			break;
		/* The oldest piece: written while the others come over. */
		{
			struct slot *s = &lane.slot[tail];
			CUresult r;

			t = gk_now();
			r = gk_real.cuEventSynchronize(s->ev);
			c.device += gk_now() - t;
			if (r != CUDA_SUCCESS) {
				fail(j, -EIO, "copying from the device: %s", gk_cu_name(r));
				break;
			}
			finish_piece(j, s, &st, &c);
			tail = (tail + 1) % lane.nslots;
			inflight--;
		}
	}
out:
	t = gk_now();
	lane_close(&lane);
	c.setup += gk_now() - t;
	add_clocks(j, &c);
	return NULL;
}

/* Files to device: a chunk read (and checked) into one buffer while the
 * other's copy to the device runs. */
static void *load_worker(struct job *j)
{
	struct lane lane = {0};
	struct clocks c = {0};
	unsigned k = 0;
	double t;

	for (;;) {
		size_t i = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED);
		struct gk_order_unit *u;
		struct gk_xfer_item *it;
		uint64_t off, len, sum;
		struct slot *s;
		CUresult r;
		int ret;

		if (i >= j->nunits || failed(j))
			break;
		u = &j->units[i];
		it = &j->items[u->item];
		len = unit_len(j, u, &off);
		if (lane.ctx != it->ctx) {
			lane_close(&lane);
			t = gk_now();
			if (lane_open(&lane, it->ctx, j->bufsize, j->bufsize, 2, j) < 0)
				break;
			c.setup += gk_now() - t;
			k = 0;
		}
		if (it->zero) {
			/* Recorded as zero: nothing to read, but the record is
			 * checked like data, so that a manifest edited to call a
			 * chunk zero is refused rather than loaded as zeros. */
			if (it->chunks[u->chunk].sum != gk_sum_zeros(it->algo, len)) {
				fail(j, -EBADMSG,
				     "allocation %zu (0x%llx), chunk %u, is recorded as all zero, "
				     "but its checksum is not that of zeros: the manifest was "
				     "changed",
				     it->index, (unsigned long long)it->dev_addr, u->chunk);
				break;
			}
			r = gk_real.cuMemsetD8Async(it->dev_addr + off, 0, len, lane.stream);
			if (r != CUDA_SUCCESS) {
				fail(j, -EIO, "setting allocation %zu (0x%llx) to zero: %s",
				     it->index, (unsigned long long)it->dev_addr, gk_cu_name(r));
				break;
			}
			continue;
		}
		s = &lane.slot[k];
		/* The buffer is free once its previous copy has reached the device. */
		t = gk_now();
		r = gk_real.cuEventSynchronize(s->ev);
		c.device += gk_now() - t;
		ret = move_chunk(it, s->buf, len, it->file_offset + off, 1, &sum, &c);
		if (ret < 0) {
			fail(j, ret == -ENODATA ? -EBADMSG : ret,
			     "%s: cannot read allocation %zu (0x%llx): %s", it->file, it->index,
			     (unsigned long long)it->dev_addr,
			     ret == -ENODATA ? "file too short" : strerror(-ret));
			break;
		}
		if (sum != it->chunks[u->chunk].sum) {
			fail(j, -EBADMSG, "%s: checksum mismatch in allocation %zu (0x%llx), chunk %u",
			     it->file, it->index, (unsigned long long)it->dev_addr, u->chunk);
			break;
		}
		r = gk_real.cuMemcpyHtoDAsync_v2(it->dev_addr + off, s->buf, len, lane.stream);
		if (r == CUDA_SUCCESS)
			r = gk_real.cuEventRecord(s->ev, lane.stream);
		if (r != CUDA_SUCCESS) {
			fail(j, -EIO, "copying allocation %zu (0x%llx) to the device: %s", it->index,
			     (unsigned long long)it->dev_addr, gk_cu_name(r));
			break;
		}
		k ^= 1;
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

static void *worker(void *arg)
{
	struct job *j = arg;

	gk_driver_relax();
	return j->op == OP_LOAD ? load_worker(j) : dump_worker(j);
}

static int run(struct gk_xfer_item *items, size_t n, uint64_t chunk_size, uint64_t piece,
	       unsigned threads, enum op op, gk_error_t *err)
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
		gk_errprintf(err, "out of memory");
		return -ENOMEM;
	}
	order = malloc(n * sizeof(*order));
	if (!order) {
		free(j.units);
		gk_errprintf(err, "out of memory");
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
	/* Pieces smaller than half a buffer: four in flight, two in each
	 * buffer. Otherwise (and for keys, which need whole chunks) a chunk per
	 * copy, double-buffered. */
	piece &= ~4095ull;
	if (op == OP_DUMP && piece && 2 * piece <= j.bufsize) {
		j.piece = piece;
		j.nslots = 4;
	} else {
		j.piece = j.bufsize;
		j.nslots = 2;
	}
	j.op = op;
	j.err = err;
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
	gk_info("transfer: %s %llu bytes in %.3f s with %u threads, copies of %llu KiB, %u in "
		"flight per thread; thread-seconds: staging set-up %.3f, waiting for the device "
		"%.3f, %s %.3f, %s %.3f",
		op == OP_LOAD ? "loaded" : op == OP_KEYS ? "hashed" : "dumped",
		(unsigned long long)bytes, gk_now() - t0, started ? started : 1,
		(unsigned long long)(j.piece >> 10), j.nslots, j.t_setup, j.t_device,
		op == OP_KEYS ? "change keys" : "checksums", j.t_sum,
		op == OP_LOAD ? "file reads" : "file writes", j.t_file);
	pthread_mutex_destroy(&j.err_lock);
	free(j.units);
	return j.failed;
}

int gk_xfer_dump(struct gk_xfer_item *items, size_t n, uint64_t chunk_size, uint64_t piece,
		 unsigned threads, gk_error_t *err)
{
	return run(items, n, chunk_size, piece, threads, OP_DUMP, err);
}

int gk_xfer_load(struct gk_xfer_item *items, size_t n, uint64_t chunk_size, unsigned threads,
		 gk_error_t *err)
{
	return run(items, n, chunk_size, 0, threads, OP_LOAD, err);
}

int gk_xfer_keys(struct gk_xfer_item *items, size_t n, uint64_t chunk_size, unsigned threads,
		 gk_error_t *err)
{
	return run(items, n, chunk_size, 0, threads, OP_KEYS, err);
}
