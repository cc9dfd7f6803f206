#include "config.h"

#include "core/capture/plan.h"
#include "common/error.h"
#include "core/state/eventlog.h"
#include "core/state/regions.h"
#include "core/placement/arena.h"
#include "core/interpose/vmm.h"
#include "core/interpose/ipc.h"
#include "core/capture/baseline.h"
#include "common/clock.h"
#include "core/state/phase.h"
#include "common/io.h"
#include "common/log.h"
#include "core/placement/peer_access.h"
#include "core/state/runtime.h"
#include "common/sizefmt.h"
#include "core/placement/spread.h"
#include "image/ckptname.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static uint64_t chunk_len(const struct gk_alloc_rec *r, uint32_t c, uint64_t chunk_size)
{
	uint64_t start = (uint64_t)c * chunk_size;

	return r->size - start < chunk_size ? r->size - start : chunk_size;
}

/* ---- describe ---- */

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
	m->va_base = gk_rt.settings.va_base;
	m->va_size = gk_rt.settings.va_size;
}

static int by_device_address(const void *x, const void *y)
{
	const struct gk_alloc_rec *a = x, *b = y;

	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return a->address < b->address ? -1 : a->address > b->address;
}

/* Memory the program mapped itself (vmm.h): saved like the placed
 * allocations, through its device's context; then the records are sorted by
 * device and address, as the manifest keeps them (the placed ones, beside
 * them in p->a, are all of one kind: rebuilt after the sort). */
static int describe_mapped(struct gk_plan *p, size_t cap, gk_error_t *err)
{
	struct gk_manifest *m = p->m;
	size_t first = m->nallocs, n;

	n = gk_vmm_describe(m->allocs + first, cap - first);
	for (size_t i = first; i < first + n; i++) {
		struct gk_alloc_rec *r = &m->allocs[i];
		struct gk_arena *a = r->device >= 0 && r->device < GK_MAX_DEVICES
					     ? gk_arenas[r->device]
					     : NULL;

		if (!a || !a->ctx) {
			gk_errprintf(err,
				     "memory the program mapped at 0x%llx is on device %d, where it "
				     "has no context gpuckpt knows",
				     (unsigned long long)r->address, r->device);
			return -ENODEV;
		}
		r->nchunks = gk_chunk_count(r->size, m->chunk_size);
		r->chunks = calloc(r->nchunks ? r->nchunks : 1, sizeof(*r->chunks));
		m->nallocs++;
		p->na = m->nallocs;
		if (!r->chunks)
			goto oom;
		p->state_bytes += r->size;
	}
	if (!n)
		return 0;
	qsort(m->allocs, m->nallocs, sizeof(*m->allocs), by_device_address);
	for (size_t i = 0; i < m->nallocs; i++) {
		struct gk_plan_alloc *pa = &p->a[i];
		uint32_t c = m->allocs[i].nchunks;

		free(pa->changed);
		free(pa->zero);
		free(pa->locs);
		pa->ctx = gk_arenas[m->allocs[i].device]->ctx;
		pa->ordinal = m->allocs[i].device;
		pa->changed = calloc(c ? c : 1, 1);
		pa->zero = calloc(c ? c : 1, 1);
		pa->locs = calloc(c ? c : 1, sizeof(*pa->locs));
		if (!pa->changed || !pa->zero || !pa->locs)
			goto oom;
	}
	return 0;
oom:
	gk_errprintf(err, "out of memory");
	return -ENOMEM;
}

static int describe_devices(struct gk_plan *p, int device_data, gk_error_t *err)
{
	struct gk_manifest *m = p->m;
	size_t nallocs = 0, ndev = 0;

	for (int i = 0; i < GK_MAX_DEVICES; i++) {
		if (!gk_arenas[i])
			continue;
		ndev++;
		nallocs += gk_arenas[i]->nlive;
	}
	if (device_data)
		nallocs += gk_vmm_count();
	m->devices = calloc(ndev ? ndev : 1, sizeof(*m->devices));
	m->allocs = calloc(nallocs ? nallocs : 1, sizeof(*m->allocs));
	p->a = calloc(nallocs ? nallocs : 1, sizeof(*p->a));
	if (!m->devices || !m->allocs || !p->a)
		goto oom;
	for (int i = 0; i < GK_MAX_DEVICES; i++) {
		struct gk_arena *a = gk_arenas[i];
		struct gk_device_rec *d;
		struct gk_device_info info;

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
		d->va_base = a->lay.base;
		d->va_size = a->lay.size;
		d->next_order = a->next_order;
		d->mapped_bytes = a->mapped;
		d->peer_access = gk_peer_accessors(a->ordinal);
		if (!device_data)
			continue;
		pthread_mutex_lock(&a->lock);
		for (struct gk_block *b = gk_arena_first(a); b && m->nallocs < nallocs;
		     b = gk_arena_next(a, b)) {
			static const char *const kinds[] = {"alloc", "pitch", "async"};
			struct gk_alloc_rec *r = &m->allocs[m->nallocs];
			struct gk_plan_alloc *pa = &p->a[m->nallocs];
			uint32_t n = gk_chunk_count(b->size, m->chunk_size);

			m->nallocs++;
			p->na = m->nallocs;
			r->device = a->ordinal;
			r->address = b->iv.start;
			r->size = b->size;
			r->order = b->order;
			snprintf(r->kind, sizeof(r->kind), "%s", kinds[b->kind]);
			r->nchunks = n;
			r->chunks = calloc(n ? n : 1, sizeof(*r->chunks));
			pa->ctx = a->ctx;
			pa->ordinal = a->ordinal;
			pa->changed = calloc(n ? n : 1, 1);
			pa->zero = calloc(n ? n : 1, 1);
			pa->locs = calloc(n ? n : 1, sizeof(*pa->locs));
			if (!r->chunks || !pa->changed || !pa->zero || !pa->locs) {
				pthread_mutex_unlock(&a->lock);
				goto oom;
			}
			p->state_bytes += b->size;
		}
		pthread_mutex_unlock(&a->lock);
	}
	if (device_data)
		return describe_mapped(p, nallocs, err);
	return 0;
oom:
	gk_errprintf(err, "out of memory");
	return -ENOMEM;
}

/* Memory of other processes open through the runtime's CUDA IPC (ipc.h):
 * none of it is saved here, but a restart must open the same again
 * (manifest format 6). */
static int describe_imports(struct gk_manifest *m, gk_error_t *err)
{
	size_t n = gk_ipc_count();

	if (!n)
		return 0;
	m->imports = calloc(n, sizeof(*m->imports));
	if (!m->imports) {
		gk_errprintf(err, "out of memory");
		return -ENOMEM;
	}
	m->nimports = gk_ipc_describe(m->imports, n);
	return 0;
}

static int describe_regions(struct gk_plan *p, gk_error_t *err)
{
	int ret = 0;

	pthread_mutex_lock(&gk_regions_lock);
	if (gk_nregions) {
		p->regions = calloc(gk_nregions, sizeof(*p->regions));
		if (!p->regions) {
			gk_errprintf(err, "out of memory");
			ret = -ENOMEM;
			goto out;
		}
	}
	for (size_t i = 0; i < gk_nregions; i++) {
		struct gk_plan_region *r = &p->regions[p->nregions++];

		snprintf(r->name, sizeof(r->name), "%s", gk_regions[i].name);
		r->addr = gk_regions[i].addr;
		r->size = gk_regions[i].size;
		p->region_bytes += r->size;
	}
	p->state_bytes += p->region_bytes;
out:
	pthread_mutex_unlock(&gk_regions_lock);
	return ret;
}

int gk_plan_describe(struct gk_plan *p, long step, int device_data, gk_error_t *err)
{
	return gk_plan_describe_at(p, step, device_data, 0, err);
}

int gk_plan_describe_at(struct gk_plan *p, long step, int device_data, uint64_t sequence,
			gk_error_t *err)
{
	int ret;

	memset(p, 0, sizeof(*p));
	p->t_start = gk_now();
	p->m = gk_manifest_new();
	if (!p->m) {
		gk_errprintf(err, "out of memory");
		return -ENOMEM;
	}
	describe_process(p->m, step);
	ret = gk_store_begin_seq(gk_rt.settings.dir, sequence, &p->txn, err);
	if (ret < 0)
		return ret;
	p->began = 1;
	ret = describe_devices(p, device_data, err);
	if (ret == 0 && device_data)
		ret = describe_imports(p->m, err);
	if (ret == 0)
		ret = describe_regions(p, err);
	return ret;
}

/* ---- what changed ---- */

/* The checkpoints the baseline's chunks lie in are all still there (a user
 * may have removed one by hand): otherwise nothing may refer to them. */
static int base_present(const struct gk_manifest *b)
{
	int fd = open(gk_rt.settings.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), ok = fd >= 0;
	char name[32];
	struct stat st;

	for (size_t i = 0; ok && i <= b->nrefs; i++) {
		snprintf(name, sizeof(name), GK_CKPT_FMT,
			 i < b->nrefs ? b->refs[i].sequence : b->sequence);
		ok = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
	}
	if (fd >= 0)
		close(fd);
	return ok;
}

static void all_changed(struct gk_plan *p)
{
	for (size_t i = 0; i < p->m->nallocs; i++) {
		memset(p->a[i].changed, 1, p->m->allocs[i].nchunks);
		memset(p->a[i].zero, 0, p->m->allocs[i].nchunks);
		p->m->allocs[i].has_keys = 0;
	}
}

/* The chunks found all zero: not written, recorded as zero (a zero part)
 * with the checksum of zeros, which a restore checks before it sets them. */
static void record_zeros(struct gk_plan *p)
{
	struct gk_manifest *m = p->m;
	enum gk_sum_algo algo = gk_sum_algo_of(m->version);

	for (size_t i = 0; i < m->nallocs; i++) {
		struct gk_alloc_rec *r = &m->allocs[i];

		for (uint32_t c = 0; c < r->nchunks; c++) {
			uint64_t len = chunk_len(r, c, m->chunk_size);

			if (!p->a[i].zero[c])
				continue;
			p->a[i].changed[c] = 0;
			memset(&p->a[i].locs[c], 0, sizeof(p->a[i].locs[c]));
			p->a[i].locs[c].zero = 1;
			r->chunks[c].sum = gk_sum_zeros(algo, len);
			p->zero_bytes += len;
		}
	}
}

int gk_plan_changes(struct gk_plan *p, const struct gk_manifest *base, int want_keys,
		    int host_keys)
{
	struct gk_manifest *m = p->m;
	struct gk_key_range *ranges;
	size_t n = 0;
	int ret;

	all_changed(p);
	p->base = NULL;
	p->zero_bytes = 0;
	if (!m->nallocs)
		goto count;
	ranges = calloc(m->nallocs, sizeof(*ranges));
	if (!ranges)
		goto count;
	for (size_t i = 0; i < m->nallocs; i++)
		if (m->allocs[i].size)
			ranges[n++] = (struct gk_key_range){p->a[i].ctx,	  p->a[i].ordinal,
							    m->allocs[i].address, m->allocs[i].size,
							    m->allocs[i].chunks,  p->a[i].zero};
	/* No keys wanted: the kernel alone, for the zero chunks (a copy of
	 * everything to the host would cost more than it saves). */
	ret = gk_changes_keys(ranges, n, m->chunk_size, want_keys ? host_keys : 0, &p->keys);
	free(ranges);
	if (ret < 0) {
		all_changed(p);
		goto count;
	}
	record_zeros(p);
	if (!want_keys) {
		/* Computed for the zeros only: not recorded. */
		p->keys = GK_KEYS_NONE;
		goto count;
	}
	for (size_t i = 0; i < m->nallocs; i++)
		m->allocs[i].has_keys = 1;
	if (!base || base->chunk_size != m->chunk_size || !base_present(base))
		goto count;
	p->base = base;
	for (size_t i = 0; i < m->nallocs; i++) {
		const struct gk_alloc_rec *r = &m->allocs[i];
		const struct gk_alloc_rec *b = gk_baseline_alloc(base, r->device, r->address);

		if (!b || !b->has_keys)
			continue;
		for (uint32_t c = 0; c < r->nchunks && c < b->nchunks; c++) {
			if (p->a[i].zero[c] ||
			    chunk_len(r, c, m->chunk_size) != chunk_len(b, c, m->chunk_size) ||
			    r->chunks[c].key != b->chunks[c].key ||
			    gk_chunk_where(base, b, c, &p->a[i].locs[c]) < 0)
				continue;
			p->a[i].changed[c] = 0;
			r->chunks[c].sum = b->chunks[c].sum;
		}
	}
count:
	p->changed_bytes = 0;
	for (size_t i = 0; i < m->nallocs; i++)
		for (uint32_t c = 0; c < m->allocs[i].nchunks; c++)
			if (p->a[i].changed[c])
				p->changed_bytes += chunk_len(&m->allocs[i], c, m->chunk_size);
	return 0;
}

/* ---- layout ---- */

/* The changed chunks of one device's allocations [first, end), spread over
 * up to `writers` files of their own (spread.c says where each goes): the
 * files created, and a copy for each piece. sa and pieces: the caller's room,
 * sa[i] beside m->allocs[i]. */
static int layout_device(struct gk_plan *p, size_t first, size_t end, int ordinal, unsigned writers,
			 const struct gk_spread_alloc *sa, struct gk_spread_piece *pieces,
			 gk_error_t *err)
{
	struct gk_manifest *m = p->m;
	uint64_t cs = m->chunk_size, file_size[GK_FILES_PER_DEVICE];
	size_t nf, file0 = m->nfiles, npieces;
	int ret;

	npieces = gk_spread_device(sa + first, end - first, cs, GK_DATA_ALIGN, writers, pieces, &nf,
				   file_size);
	for (size_t f = 0; f < nf; f++) {
		struct gk_file_rec *fr = &m->files[m->nfiles];

		if (f == 0)
			snprintf(fr->name, sizeof(fr->name), "device%d.data", ordinal);
		else
			snprintf(fr->name, sizeof(fr->name), "device%d.%zu.data", ordinal, f);
		ret = gk_store_create(&p->txn, fr->name, &p->fds[p->nfds], err);
		if (ret < 0)
			return ret;
		p->nfds++;
		m->nfiles++;
	}
	for (size_t k = 0; k < npieces; k++) {
		const struct gk_spread_piece *pc = &pieces[k];
		size_t i = first + pc->alloc;
		struct gk_alloc_rec *r = &m->allocs[i];
		struct gk_file_rec *fr = &m->files[file0 + pc->file];

		p->items[p->nitems++] = (struct gk_xfer_item){
		    .ctx = p->a[i].ctx,
		    .dev_addr = r->address + pc->start,
		    .size = pc->size,
		    .fd = p->fds[file0 + pc->file],
		    .file_offset = pc->file_offset,
		    .chunks = r->chunks + pc->start / cs,
		    .file = fr->name,
		    .index = i,
		    .algo = gk_sum_algo_of(m->version),
		};
		for (uint64_t o = 0; o < pc->size; o += cs) {
			struct gk_chunk_loc *l = &p->a[i].locs[(pc->start + o) / cs];

			l->sequence = 0;
			snprintf(l->file, sizeof(l->file), "%s", fr->name);
			l->offset = pc->file_offset + o;
		}
	}
	for (size_t f = 0; f < nf; f++)
		m->files[file0 + f].size = file_size[f];
	return 0;
}

int gk_plan_layout(struct gk_plan *p, unsigned writers, gk_error_t *err)
{
	struct gk_manifest *m = p->m;
	size_t changed = 0, ndev = m->ndevices, i = 0;
	struct gk_spread_alloc *sa = calloc(m->nallocs + 1, sizeof(*sa));
	struct gk_spread_piece *pieces;
	int ret = 0;

	for (size_t k = 0; k < m->nallocs; k++)
		for (uint32_t c = 0; c < m->allocs[k].nchunks; c++)
			changed += p->a[k].changed[c];
	/* A run per changed chunk at worst, plus a cut per file. */
	p->items = calloc(changed + ndev * GK_FILES_PER_DEVICE + 1, sizeof(*p->items));
	p->fds = malloc((ndev * GK_FILES_PER_DEVICE + 1) * sizeof(*p->fds));
	m->files = calloc(ndev * GK_FILES_PER_DEVICE + 1, sizeof(*m->files));
	pieces = calloc(changed + GK_FILES_PER_DEVICE + 1, sizeof(*pieces));
	if (!sa || !p->items || !p->fds || !m->files || !pieces) {
		gk_errprintf(err, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < m->nallocs; k++)
		sa[k] = (struct gk_spread_alloc){m->allocs[k].size, m->allocs[k].nchunks,
						 p->a[k].changed};
	/* Allocations are in device order: one device's are consecutive. */
	while (i < m->nallocs && ret == 0) {
		size_t end = i;

		while (end < m->nallocs && m->allocs[end].device == m->allocs[i].device)
			end++;
		ret = layout_device(p, i, end, m->allocs[i].device, writers, sa, pieces, err);
		i = end;
	}
out:
	free(pieces);
	free(sa);
	return ret;
}

/* ---- write ---- */

int gk_plan_copy_regions(struct gk_plan *p, gk_error_t *err)
{
	for (size_t i = 0; i < p->nregions; i++) {
		struct gk_plan_region *r = &p->regions[i];

		r->copy = malloc(r->size ? r->size : 1);
		if (!r->copy) {
			gk_errprintf(err, "out of memory copying host region '%s' (%zu bytes)",
				     r->name, r->size);
			return -ENOMEM;
		}
		memcpy(r->copy, r->addr, r->size);
	}
	return 0;
}

static int write_regions(struct gk_plan *p, gk_error_t *err)
{
	struct gk_manifest *m = p->m;
	enum gk_sum_algo algo = gk_sum_algo_of(m->version);
	uint64_t off = 0, end = 0;
	struct gk_file_rec *f;
	int fd = -1, ret = 0;

	if (!p->nregions)
		return 0;
	m->regions = calloc(p->nregions, sizeof(*m->regions));
	if (!m->regions) {
		gk_errprintf(err, "out of memory");
		return -ENOMEM;
	}
	ret = gk_store_create(&p->txn, GK_HOST_DATA_FILE, &fd, err);
	if (ret < 0)
		return ret;
	for (size_t i = 0; i < p->nregions; i++) {
		const struct gk_plan_region *g = &p->regions[i];
		const char *data = g->copy ? g->copy : g->addr;
		struct gk_region_rec *r = &m->regions[m->nregions++];

		snprintf(r->name, sizeof(r->name), "%s", g->name);
		snprintf(r->file, sizeof(r->file), "%s", GK_HOST_DATA_FILE);
		r->size = g->size;
		r->offset = off;
		r->nchunks = gk_chunk_count(g->size, m->chunk_size);
		r->chunks = calloc(r->nchunks ? r->nchunks : 1, sizeof(*r->chunks));
		if (!r->chunks) {
			ret = -ENOMEM;
			gk_errprintf(err, "out of memory");
			goto out;
		}
		for (uint32_t c = 0; c < r->nchunks; c++) {
			uint64_t start = (uint64_t)c * m->chunk_size;
			uint64_t len = g->size - start < m->chunk_size ? g->size - start : m->chunk_size;

			r->chunks[c].sum = gk_sum(algo, data + start, len);
		}
		ret = gk_pwrite_all(fd, data, g->size, off);
		if (ret < 0) {
			gk_errprintf(err, "%s: cannot write host region '%s': %s",
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
	close(fd);
	return ret;
}

int gk_plan_write(struct gk_plan *p, unsigned writers, gk_error_t *err)
{
	int ret = gk_xfer_dump(p->items, p->nitems, p->m->chunk_size, gk_rt.settings.copy_piece,
			       writers, err);

	if (ret == 0)
		ret = write_regions(p, err);
	for (size_t i = 0; i < p->nfds; i++)
		close(p->fds[i]);
	p->nfds = 0;
	return ret;
}

/* ---- commit ---- */

static struct gk_ref *ref_of(struct gk_manifest *m, uint64_t sequence)
{
	for (size_t i = 0; i < m->nrefs; i++)
		if (m->refs[i].sequence == sequence)
			return &m->refs[i];
	return NULL;
}

/* Record that this checkpoint reads `file` of checkpoint `sequence`. */
static int add_ref(struct gk_plan *p, uint64_t sequence, const char *file)
{
	struct gk_manifest *m = p->m;
	struct gk_ref *r = ref_of(m, sequence);
	struct gk_file_rec *files;
	const char *id;
	uint64_t size;

	if (!p->base || gk_baseline_file(p->base, sequence, file, &id, &size) < 0)
		return -ENOENT; /* cannot happen: the location came from the baseline */
	if (!r) {
		struct gk_ref *grown = realloc(m->refs, (m->nrefs + 1) * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		m->refs = grown;
		r = &m->refs[m->nrefs++];
		memset(r, 0, sizeof(*r));
		r->sequence = sequence;
		snprintf(r->id, sizeof(r->id), "%s", id);
	}
	for (size_t i = 0; i < r->nfiles; i++)
		if (!strcmp(r->files[i].name, file))
			return 0;
	files = realloc(r->files, (r->nfiles + 1) * sizeof(*files));
	if (!files)
		return -ENOMEM;
	r->files = files;
	memset(&files[r->nfiles], 0, sizeof(files[0]));
	snprintf(files[r->nfiles].name, sizeof(files[0].name), "%s", file);
	files[r->nfiles++].size = size;
	return 0;
}

/* Parts from where every chunk lies; references to the checkpoints that
 * hold the unchanged ones. */
static int finish(struct gk_plan *p, gk_error_t *err)
{
	struct gk_manifest *m = p->m;
	int ret;

	for (size_t i = 0; i < m->nallocs; i++) {
		struct gk_alloc_rec *r = &m->allocs[i];

		for (uint32_t c = 0; c < r->nchunks; c++) {
			const struct gk_chunk_loc *l = &p->a[i].locs[c];

			if (p->a[i].changed[c] || !l->sequence)
				continue;
			ret = add_ref(p, l->sequence, l->file);
			if (ret < 0) {
				gk_errprintf(err, "recording what this checkpoint refers to: %s",
					     strerror(-ret));
				return ret;
			}
		}
		ret = gk_parts_from_chunks(r, m->chunk_size, 0, p->a[i].locs);
		if (ret < 0) {
			gk_errprintf(err, "out of memory");
			return ret;
		}
	}
	m->increment = m->nrefs ? p->base->increment + 1 : 0;
	return 0;
}

int gk_plan_commit(struct gk_plan *p, unsigned keep, struct gk_plan_result *res, gk_error_t *err)
{
	int ret = finish(p, err);

	memset(res, 0, sizeof(*res));
	if (ret < 0)
		return ret;
	p->m->write_seconds = gk_now() - p->t_start;
	ret = gk_store_commit(&p->txn, p->m, keep, &res->is_signed, err);
	p->began = 0; /* committed, or removed by the failed commit */
	if (ret < 0)
		return ret;
	res->sequence = p->m->sequence;
	res->nallocs = p->m->nallocs;
	res->nregions = p->m->nregions;
	res->ndevices = (unsigned)p->m->ndevices;
	res->increment = p->m->increment;
	res->base_sequence = p->m->increment && p->base ? p->base->sequence : 0;
	/* From here on the plan's base may be gone: the new one replaces it. */
	gk_baseline_set(p->m);
	p->m = NULL;
	p->base = NULL;
	/* Committed: whoever takes part hears of it (the flush thread may
	 * copy it off the node now). */
	gk_phase_committed();
	return 0;
}

void gk_plan_say(const struct gk_plan *p, int ret, const struct gk_plan_result *res,
		 const char *err)
{
	const char *dir = gk_runtime_dir();
	uint64_t written = p->changed_bytes + p->region_bytes;
	char size[32], kept[32], how[256] = "", when[160], zeros[96] = "";

	/* The record for the node's admins: every checkpoint's outcome passes
	 * here, written in the foreground or the background. A refusal was
	 * recorded where it was decided; -ENOTSUP from a write is a failure. */
	gk_eventlog_checkpoint(ret == -ENOTSUP ? -EIO : ret, ret == 0 ? res->sequence : 0,
			       ret == 0 ? written : 0, p->t_start > 0 ? gk_now() - p->t_start : 0,
			       ret == 0 ? res->ndevices : 0);
	if (ret < 0) {
		gk_error("checkpoint: %s: no checkpoint written%s: %s; the previous checkpoints are "
			 "kept",
			 dir, p->background ? " (in the background)" : "", err);
		return;
	}
	gk_size_format(size, sizeof(size), written, GK_SIZE_LOG);
	if (res->increment) {
		gk_size_format(kept, sizeof(kept), p->state_bytes - written, GK_SIZE_LOG);
		snprintf(how, sizeof(how), "; increment %u of " GK_CKPT_FMT ": %s unchanged",
			 res->increment, (uint64_t)res->base_sequence, kept);
	}
	if (p->zero_bytes) {
		char z[32];

		gk_size_format(z, sizeof(z), p->zero_bytes, GK_SIZE_LOG);
		snprintf(zeros, sizeof(zeros), "; %s of all-zero chunks recorded, not written", z);
	}
	if (p->background)
		snprintf(when, sizeof(when), "; the program was paused %.3f s, the rest in the background",
			 p->paused);
	else
		when[0] = 0;
	gk_notice("checkpoint: %s/" GK_CKPT_FMT ": wrote %llu bytes (%s: %zu allocations, %zu host "
		  "regions) in %.3f s%s%s%s%s",
		  dir, (uint64_t)res->sequence, (unsigned long long)written, size, res->nallocs,
		  res->nregions, gk_now() - p->t_start, how, zeros, when,
		  res->is_signed ? "" : ", unsigned");
}

/* For transparent mode: the image written, not committed (pipeline.c, the transparent kind). */
int gk_plan_finish_uncommitted(struct gk_plan *p, gk_error_t *err)
{
	return finish(p, err);
}

void gk_plan_free(struct gk_plan *p)
{
	for (size_t i = 0; i < p->nfds; i++)
		close(p->fds[i]);
	if (p->began)
		gk_store_abort(&p->txn);
	for (size_t i = 0; p->a && i < p->na; i++) {
		free(p->a[i].changed);
		free(p->a[i].zero);
		free(p->a[i].locs);
	}
	for (size_t i = 0; i < p->nregions; i++)
		free(p->regions[i].copy);
	free(p->regions);
	free(p->a);
	free(p->items);
	free(p->fds);
	gk_manifest_free(p->m);
	memset(p, 0, sizeof(*p));
}
