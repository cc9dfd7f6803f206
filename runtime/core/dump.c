#include "config.h"

#include "dump.h"
#include "clock.h"
#include "api.h"
#include "arena.h"
#include "driver.h"
#include "gate.h"
#include "image.h"
#include "io.h"
#include "log.h"
#include "runtime.h"
#include "track.h"
#include "transfer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static void copy_env(char *dst, size_t len, const char *name)
{
	const char *v = getenv(name);

	snprintf(dst, len, "%s", v ? v : "");
}

static void describe_process(struct gk_manifest *m, long step)
{
	struct timespec ts;
	struct tm tm;
	const char *job = getenv("SLURM_JOB_ID");

	clock_gettime(CLOCK_REALTIME, &ts);
	m->version = GK_FORMAT_VERSION;
	m->created_unix = ts.tv_sec;
	gmtime_r(&ts.tv_sec, &tm);
	strftime(m->created, sizeof(m->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	gethostname(m->hostname, sizeof(m->hostname) - 1);
	m->uid = getuid();
	m->pid = getpid();
	if (job && *job) {
		const char *v;

		m->slurm = 1;
		copy_env(m->job_id, sizeof(m->job_id), "SLURM_JOB_ID");
		copy_env(m->step_id, sizeof(m->step_id), "SLURM_STEP_ID");
		v = getenv("SLURM_PROCID");
		m->task = v ? atoi(v) : 0;
		v = getenv("SLURM_RESTART_COUNT");
		m->restart_count = v ? atoi(v) : 0;
	}
	m->step = step;
	snprintf(m->label, sizeof(m->label), "step %ld", step);
	gk_program_exe(m->exe, sizeof(m->exe));
	m->chunk_size = gk_rt.settings.chunk_size;
}

/* Drain: every stream of every context holding placed memory. */
static int drain(void)
{
	for (int i = 0; i < GK_MAX_DEVICES; i++) {
		struct gk_arena *a = gk_arenas[i];
		char obj[32];
		CUresult r;

		if (!a || !a->ctx)
			continue;
		snprintf(obj, sizeof(obj), "device %d", i);
		r = gk_real.cuCtxPushCurrent_v2(a->ctx);
		if (r == CUDA_SUCCESS) {
			r = gk_real.cuCtxSynchronize();
			gk_real.cuCtxPopCurrent_v2(NULL);
		}
		if (r != CUDA_SUCCESS)
			return gk_cu_check(r, "cuCtxSynchronize", "checkpoint", obj);
	}
	return 0;
}

/*
 * A device's bytes are spread evenly over up to this many files (one per copy
 * thread), an allocation cut into parts where a file is full. Why: write()
 * into a tmpfs file holds that file's lock, so threads sharing a file take
 * turns; with a file each they do not (H100 machine, 4 GiB in 4 allocations:
 * 10.6 GB/s in 8 files, 7.3 GB/s in 4).
 */
#define GK_FILES_PER_DEVICE 8

/* Describe every live allocation and lay its bytes out in its device's files;
 * fds[] gets one descriptor per file of m->files. */
static int plan_devices(struct gk_manifest *m, struct gk_xfer_item **items_out, size_t *nitems,
			struct gk_store_txn *txn, int *fds, int device_data, char *err,
			size_t errlen)
{
	size_t nallocs = 0, ndev = 0, k = 0;
	struct gk_xfer_item *items = NULL;
	int ret;

	for (int i = 0; i < GK_MAX_DEVICES; i++) {
		if (!gk_arenas[i])
			continue;
		ndev++;
		nallocs += gk_arenas[i]->nlive;
	}
	m->devices = calloc(ndev ? ndev : 1, sizeof(*m->devices));
	m->allocs = calloc(nallocs ? nallocs : 1, sizeof(*m->allocs));
	m->files = calloc(ndev * GK_FILES_PER_DEVICE + 1, sizeof(*m->files));
	/* Each allocation is one part, but where a file fills up: at most
	 * GK_FILES_PER_DEVICE - 1 more parts per device. */
	items = calloc(nallocs + ndev * GK_FILES_PER_DEVICE, sizeof(*items));
	if (!m->devices || !m->allocs || !m->files || !items) {
		free(items);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (int i = 0; i < GK_MAX_DEVICES; i++) {
		struct gk_arena *a = gk_arenas[i];
		struct gk_device_rec *d;
		struct gk_device_info info;
		uint64_t off[GK_FILES_PER_DEVICE] = {0}, used = 0, quota, total = 0, chunks = 0;
		size_t first = m->nfiles, nf = gk_rt.settings.writers, j = 0;

		if (!a)
			continue;
		d = &m->devices[m->ndevices++];
		gk_device_info(a->dev, &info);
		d->ordinal = a->ordinal;
		snprintf(d->name, sizeof(d->name), "%s", info.name);
		snprintf(d->uuid, sizeof(d->uuid), "%s", info.uuid);
		d->cc_major = info.cc_major;
		d->cc_minor = info.cc_minor;
		d->total_memory = info.total_memory;
		d->va_base = a->base;
		d->va_size = a->size;
		d->next_order = a->next_order;
		d->mapped_bytes = a->mapped;
		pthread_mutex_lock(&a->lock);
		for (struct gk_block *b = device_data ? gk_arena_first(a) : NULL; b;
		     b = gk_arena_next(a, b)) {
			total += b->size;
			chunks += gk_chunk_count(b->size, m->chunk_size);
		}
		/* No more files than threads, nor than chunks to put in them. */
		if (nf > GK_FILES_PER_DEVICE)
			nf = GK_FILES_PER_DEVICE;
		if (nf > chunks)
			nf = chunks;
		if (nf == 0)
			nf = 1;
		quota = (total / nf + m->chunk_size - 1) / m->chunk_size * m->chunk_size;
		for (size_t f = 0; f < nf; f++) {
			struct gk_file_rec *fr = &m->files[m->nfiles];

			if (f == 0)
				snprintf(fr->name, sizeof(fr->name), "device%d.data", a->ordinal);
			else
				snprintf(fr->name, sizeof(fr->name), "device%d.%zu.data", a->ordinal, f);
			ret = gk_store_create(txn, fr->name, &fds[m->nfiles], err, errlen);
			if (ret < 0) {
				pthread_mutex_unlock(&a->lock);
				goto fail;
			}
			m->nfiles++;
		}
		for (struct gk_block *b = device_data ? gk_arena_first(a) : NULL; b;
		     b = gk_arena_next(a, b)) {
			struct gk_alloc_rec *r = &m->allocs[m->nallocs];
			static const char *const kinds[] = {"alloc", "pitch", "async"};
			uint64_t start = 0;

			if (m->nallocs == nallocs)
				break;
			r->device = a->ordinal;
			r->address = b->iv.start;
			r->size = b->size;
			r->order = b->order;
			snprintf(r->kind, sizeof(r->kind), "%s", kinds[b->kind]);
			r->nchunks = gk_chunk_count(b->size, m->chunk_size);
			r->chunks = calloc(r->nchunks ? r->nchunks : 1, sizeof(*r->chunks));
			r->parts = calloc(nf, sizeof(*r->parts));
			m->nallocs++;
			if (!r->chunks || !r->parts) {
				pthread_mutex_unlock(&a->lock);
				snprintf(err, errlen, "out of memory");
				ret = -ENOMEM;
				goto fail;
			}
			/* Whole chunks into the current file up to its quota; the rest
			 * of the allocation goes on in the next file. */
			while (start < b->size) {
				uint64_t left = b->size - start, room = quota > used ? quota - used : 0;
				uint64_t take = j == nf - 1 || left <= room
						    ? left
						    : room / m->chunk_size * m->chunk_size;
				struct gk_part *p = &r->parts[r->nparts];

				if (take == 0) {
					j++;
					used = 0;
					continue;
				}
				snprintf(p->file, sizeof(p->file), "%s", m->files[first + j].name);
				p->offset = off[j];
				p->start = start;
				p->size = take;
				r->nparts++;
				items[k++] = (struct gk_xfer_item){a->ctx,
								   b->iv.start + start,
								   take,
								   fds[first + j],
								   off[j],
								   r->chunks + start / m->chunk_size,
								   p->file,
								   m->nallocs - 1};
				m->files[first + j].size = off[j] + take;
				off[j] = align_up(off[j] + take, GK_DATA_ALIGN);
				used += take;
				start += take;
			}
		}
		pthread_mutex_unlock(&a->lock);
	}
	*items_out = items;
	*nitems = k;
	return 0;
fail:
	free(items);
	return ret;
}

/* Host regions are the program's own memory: written from where they are. */
static int write_regions(struct gk_manifest *m, struct gk_store_txn *txn, char *err,
			 size_t errlen)
{
	uint64_t off = 0, end = 0;
	int fd = -1, ret = 0;
	struct gk_file_rec *f;

	pthread_mutex_lock(&gk_regions_lock);
	if (!gk_nregions)
		goto out;
	m->regions = calloc(gk_nregions, sizeof(*m->regions));
	if (!m->regions) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	ret = gk_store_create(txn, GK_HOST_DATA_FILE, &fd, err, errlen);
	if (ret < 0)
		goto out;
	for (size_t i = 0; i < gk_nregions; i++) {
		struct gk_region_rec *r = &m->regions[m->nregions++];
		const struct gk_region *g = &gk_regions[i];

		snprintf(r->name, sizeof(r->name), "%s", g->name);
		snprintf(r->file, sizeof(r->file), "%s", GK_HOST_DATA_FILE);
		r->size = g->size;
		r->offset = off;
		r->nchunks = gk_chunk_count(g->size, m->chunk_size);
		r->chunks = calloc(r->nchunks ? r->nchunks : 1, sizeof(*r->chunks));
		if (!r->chunks) {
			ret = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		for (uint32_t c = 0; c < r->nchunks; c++) {
			uint64_t start = (uint64_t)c * m->chunk_size;
			uint64_t len = g->size - start < m->chunk_size ? g->size - start : m->chunk_size;

			r->chunks[c].xxh64 = gk_xxh64((const char *)g->addr + start, len, 0);
		}
		ret = gk_pwrite_all(fd, g->addr, g->size, off);
		if (ret < 0) {
			snprintf(err, errlen, "%s: cannot write host region '%s': %s",
				 GK_HOST_DATA_FILE, g->name, strerror(-ret));
			goto out;
		}
		end = off + g->size;
		off = align_up(end, GK_DATA_ALIGN);
	}
	f = &m->files[m->nfiles++];
	snprintf(f->name, sizeof(f->name), "%s", GK_HOST_DATA_FILE);
	f->size = end;
out:
	pthread_mutex_unlock(&gk_regions_lock);
	if (fd >= 0)
		close(fd);
	return ret;
}

static void human(char *buf, size_t len, uint64_t bytes)
{
	if (bytes >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", bytes / 1073741824.0);
	else if (bytes >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", bytes / 1048576.0);
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
}

/*
 * Write this process's image into a new checkpoint folder (txn): device
 * memory (unless device_data is 0: then the manifest only lists the devices)
 * and registered host regions, everything but the manifest. The gate
 * is closed and the devices drained by the caller. *mp gets the manifest to
 * commit, *bytes what was written.
 */
static int dump_image_at(long step, int device_data, uint64_t sequence, struct gk_store_txn *txn,
			 struct gk_manifest **mp, uint64_t *bytes, char *err, size_t errlen);

int gk_dump_image(long step, int device_data, struct gk_store_txn *txn, struct gk_manifest **mp,
		  uint64_t *bytes, char *err, size_t errlen)
{
	return dump_image_at(step, device_data, 0, txn, mp, bytes, err, errlen);
}

static int dump_image_at(long step, int device_data, uint64_t sequence, struct gk_store_txn *txn,
			 struct gk_manifest **mp, uint64_t *bytes, char *err, size_t errlen)
{
	const char *dir = gk_rt.settings.dir;
	struct gk_manifest *m = NULL;
	struct gk_xfer_item *items = NULL;
	size_t nitems = 0, nfds = GK_MAX_DEVICES * GK_FILES_PER_DEVICE;
	int *fds, ret = -ENOMEM, began = 0;
	double t[4] = {0};

	*mp = NULL;
	*bytes = 0;
	fds = malloc(nfds * sizeof(*fds));
	if (!fds) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < nfds; i++)
		fds[i] = -1;
	ret = gk_store_begin_at(dir, sequence, txn, err, errlen);
	if (ret < 0)
		goto out;
	began = 1;
	m = gk_manifest_new();
	if (!m) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	describe_process(m, step);
	m->va_base = gk_rt.settings.va_base;
	m->va_size = gk_rt.settings.va_size;
	t[0] = gk_now();
	ret = plan_devices(m, &items, &nitems, txn, fds, device_data, err, errlen);
	if (ret < 0)
		goto out;
	t[1] = gk_now();
	ret = gk_xfer_dump(items, nitems, m->chunk_size, gk_rt.settings.writers, err, errlen);
	if (ret < 0)
		goto out;
	t[2] = gk_now();
	ret = write_regions(m, txn, err, errlen);
	if (ret < 0)
		goto out;
	t[3] = gk_now();
	for (size_t i = 0; i < m->nallocs; i++)
		*bytes += m->allocs[i].size;
	for (size_t i = 0; i < m->nregions; i++)
		*bytes += m->regions[i].size;
out:
	for (size_t i = 0; fds && i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(fds);
	free(items);
	if (ret == 0)
		gk_info("checkpoint: image: files %.3f s, device data %.3f s, host regions %.3f s, "
			"closing %.3f s",
			t[1] - t[0], t[2] - t[1], t[3] - t[2], gk_now() - t[3]);
	if (ret < 0) {
		if (began)
			gk_store_abort(txn);
		gk_manifest_free(m);
		return ret;
	}
	*mp = m;
	return 0;
}

int gk_dump_drain(void)
{
	return drain();
}

static int dump_to(long step, const struct gk_member *mem);

int gk_dump(long step)
{
	return dump_to(step, NULL);
}

int gk_dump_member(long step, const struct gk_member *mem)
{
	return dump_to(step, mem);
}

static int dump_to(long step, const struct gk_member *mem)
{
	const char *dir = gk_rt.settings.dir;
	char why[1024], err[GK_ERRLEN], size_text[32];
	struct gk_manifest *m = NULL;
	struct gk_store_txn txn;
	int ret, is_signed = 0;
	uint64_t bytes = 0;
	double t0 = gk_now(), t_drained, t_written, secs;

	if (!dir[0]) {
		gk_error("checkpoint: no checkpoint directory is set (GPUCKPT_DIR); no checkpoint "
			 "written");
		return -EINVAL;
	}
	if (gk_track_report(why, sizeof(why))) {
		gk_error("checkpoint: %s: refused, no checkpoint written: this process holds %s, "
			 "which gpuckpt cannot checkpoint",
			 dir, why);
		return -ENOTSUP;
	}
	gk_gate_close();
	ret = drain();
	if (ret < 0) {
		snprintf(err, sizeof(err), "the device reported an error while draining its work");
		goto out;
	}
	t_drained = gk_now();
	ret = dump_image_at(step, 1, mem ? mem->sequence : 0, &txn, &m, &bytes, err, sizeof(err));
	if (ret < 0)
		goto out;
	if (mem) {
		m->set_id = mem->id;
		m->set_members = mem->members;
		m->set_member = mem->member;
		snprintf(m->set_agreement, sizeof(m->set_agreement), "%s", mem->agreement);
	}
	m->write_seconds = gk_now() - t0;
	t_written = gk_now();
	ret = gk_store_commit(&txn, m, mem ? 0 : gk_rt.settings.keep, &is_signed, err,
			      sizeof(err));
	if (ret == 0)
		gk_info("checkpoint: draining %.3f s, image %.3f s, commit %.3f s", t_drained - t0,
			t_written - t_drained, gk_now() - t_written);
out:
	gk_gate_open();
	{
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		__atomic_store_n(&gk_rt.last_checkpoint_ns,
				 (int64_t)now.tv_sec * 1000000000 + now.tv_nsec, __ATOMIC_RELEASE);
	}
	secs = gk_now() - t0;
	if (ret < 0) {
		gk_error("checkpoint: %s: no checkpoint written: %s; the previous checkpoints are "
			 "kept",
			 dir, err);
	} else {
		human(size_text, sizeof(size_text), bytes);
		gk_notice("checkpoint: %s/ckpt.%06llu: wrote %llu bytes (%s: %zu allocations, %zu host "
			"regions) in %.3f s%s%s",
			dir, (unsigned long long)m->sequence, (unsigned long long)bytes, size_text,
			m->nallocs, m->nregions, secs, is_signed ? "" : ", unsigned",
			mem ? "; waiting for the step's other tasks" : "");
	}
	gk_manifest_free(m);
	return ret;
}
