/*
 * mkimage - write a valid synthetic checkpoint through the image library, as
 * the runtime would: random allocations on several devices and random host
 * regions, filled with pseudo-random bytes, committed (and signed when munged
 * is reachable) into a checkpoint root. Prints the committed directory.
 *
 *	mkimage ROOT [--seed N] [--devices N] [--allocs N] [--regions N]
 *	             [--min-size BYTES] [--max-size BYTES] [--chunk-size BYTES] [--keep N]
 *	             [--label TEXT] [--unsigned] [--slurm] [--format 2|3]
 *	mkimage ROOT --increment-of N [--unsigned]
 *
 * --format 2 writes what gpuckpt wrote before format 3 (XXH64 checksums),
 * through the same writer, so that tests can check old checkpoints still
 * verify and restore.
 *
 * --increment-of N writes an increment of ROOT's ckpt.N: the same
 * allocations, every chunk of them left in ckpt.N's files (no data file of
 * its own, no host regions), as the runtime writes one when nothing changed.
 */
#include "config.h"
#include "image/image.h"
#include "common/error.h"
#include "common/log.h"
#include "common/settings.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define VA_BASE 0x200000000000ull
#define VA_SLICE (1ull << 40)
#define GRANULE (2ull << 20)

struct params {
	const char *root;
	uint64_t seed;
	unsigned devices, allocs, regions, keep;
	uint64_t min_size, max_size, chunk_size;
	const char *label;
	int unsigned_only, slurm, format;
	uint64_t increment_of;
};

static uint64_t rng_state;

/* splitmix64: tiny, and the same sequence everywhere for a given seed. */
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int usage(const char *msg)
{
	fprintf(stderr, "mkimage: %s\n", msg);
	return 2;
}

static int parse_args(int argc, char **argv, struct params *p)
{
	*p = (struct params){.seed = 1,
			     .devices = 1,
			     .allocs = 4,
			     .regions = 2,
			     .keep = 0,
			     .min_size = 1,
			     .max_size = 1 << 20,
			     .chunk_size = 64 << 10,
			     .label = "synthetic",
			     .format = GK_FORMAT_WRITTEN};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--unsigned")) {
			p->unsigned_only = 1;
			continue;
		}
		if (!strcmp(a, "--slurm")) {
			p->slurm = 1;
			continue;
		}
		if (a[0] != '-') {
			p->root = a;
			continue;
		}
		if (!v)
			return usage("option needs a value");
		i++;
		if (!strcmp(a, "--seed"))
			p->seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--devices"))
			p->devices = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--allocs"))
			p->allocs = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--regions"))
			p->regions = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--min-size")) {
			if (gk_parse_size(v, &p->min_size) < 0)
				return usage("bad size");
		} else if (!strcmp(a, "--max-size")) {
			if (gk_parse_size(v, &p->max_size) < 0)
				return usage("bad size");
		} else if (!strcmp(a, "--chunk-size")) {
			if (gk_parse_size(v, &p->chunk_size) < 0)
				return usage("bad size");
		} else if (!strcmp(a, "--keep"))
			p->keep = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(a, "--increment-of"))
			p->increment_of = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--label"))
			p->label = v;
		else if (!strcmp(a, "--format")) {
			p->format = atoi(v);
			if (p->format != 2 && p->format != GK_FORMAT_WRITTEN)
				return usage("--format: 2 or the current format");
		}
		else
			return usage("unknown option");
	}
	if (!p->root)
		return usage("missing ROOT");
	if (p->devices == 0 || p->min_size == 0 || p->max_size < p->min_size)
		return usage("need --devices >= 1 and 1 <= --min-size <= --max-size");
	return 0;
}

/* Write `size` pseudo-random bytes at `offset` of fd and checksum them. */
static int write_object(int fd, uint64_t offset, uint64_t size, uint64_t chunk_size,
			enum gk_sum_algo algo, struct gk_chunk **chunks, uint32_t *nchunks)
{
	uint8_t *buf = malloc(size ? size : 1);
	uint32_t n = gk_chunk_count(size, chunk_size);

	if (!buf)
		return -ENOMEM;
	for (uint64_t i = 0; i < size; i += 8) {
		uint64_t r = rnd();

		memcpy(buf + i, &r, size - i < 8 ? size - i : 8);
	}
	if (pwrite(fd, buf, size, (off_t)offset) != (ssize_t)size) {
		free(buf);
		return -EIO;
	}
	*chunks = n ? calloc(n, sizeof(**chunks)) : NULL;
	*nchunks = n;
	for (uint32_t c = 0; c < n; c++) {
		uint64_t start = (uint64_t)c * chunk_size;
		uint64_t len = size - start < chunk_size ? size - start : chunk_size;

		(*chunks)[c].sum = gk_sum(algo, buf + start, len);
	}
	free(buf);
	return 0;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* An increment of ROOT's ckpt.<base> (--increment-of). */
static int write_increment(const struct params *p)
{
	struct gk_manifest *m = NULL, *fresh = gk_manifest_new();
	struct gk_store_txn txn;
	gk_error_t err;
	size_t k = 0;
	int rootfd, is_signed = 0, ret;

	rootfd = open(p->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!fresh || rootfd < 0 || gk_chain_read_manifest(rootfd, p->increment_of, &m, &err) < 0) {
		fprintf(stderr, "mkimage: %s: cannot read ckpt.%06" PRIu64 "\n", p->root,
			p->increment_of);
		return 1;
	}
	close(rootfd);
	m->refs = calloc(1, sizeof(*m->refs));
	if (!m->refs || !(m->refs[0].files = calloc(m->nfiles + 1, sizeof(struct gk_file_rec))))
		return 1;
	m->nrefs = 1;
	m->refs[0].sequence = p->increment_of;
	snprintf(m->refs[0].id, sizeof(m->refs[0].id), "%s", m->id);
	memcpy(m->id, fresh->id, sizeof(m->id));
	gk_manifest_free(fresh);
	m->pid = getpid();
	for (size_t i = 0; i < m->nallocs; i++)
		for (uint32_t j = 0; j < m->allocs[i].nparts; j++)
			if (!m->allocs[i].parts[j].sequence)
				m->allocs[i].parts[j].sequence = p->increment_of;
	for (size_t i = 0; i < m->nregions; i++)
		free(m->regions[i].chunks);
	m->nregions = 0;
	m->increment = 1;
	for (size_t i = 0; i < m->nfiles; i++)
		if (strcmp(m->files[i].name, GK_HOST_DATA_FILE) != 0)
			m->refs[0].files[k++] = m->files[i];
	m->refs[0].nfiles = k;
	m->nfiles = 0;
	ret = gk_store_begin(p->root, &txn, &err);
	if (ret == 0)
		ret = gk_store_commit(&txn, m, 0, &is_signed, &err);
	if (ret < 0) {
		fprintf(stderr, "mkimage: %s\n", err.text);
		gk_manifest_free(m);
		return 1;
	}
	printf("%s/ckpt.%06" PRIu64 "\n", p->root, m->sequence);
	gk_manifest_free(m);
	return 0;
}

int main(int argc, char **argv)
{
	struct gk_store_txn txn;
	struct gk_manifest *m;
	struct params p;
	gk_error_t err;
	struct timespec t0, t1;
	int ret, is_signed = 0, host_fd = -1;
	uint64_t host_off = 0;
	time_t now = time(NULL);
	struct tm tm;

	ret = parse_args(argc, argv, &p);
	if (ret)
		return ret;
	rng_state = p.seed;
	if (p.unsigned_only) {
		/* Make signing impossible rather than delete a signature after
		 * the fact: that is the path a node without munged takes. */
		setenv("GPUCKPT_MUNGE_SOCKET", "/nonexistent/munge.socket", 1);
		gk_log_set_level(GK_LOG_ERROR);
	}
	if (p.increment_of)
		return write_increment(&p);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	m = gk_manifest_new();
	if (!m)
		return 1;
	m->version = p.format;
	gmtime_r(&now, &tm);
	strftime(m->created, sizeof(m->created), "%Y-%m-%dT%H:%M:%SZ", &tm);
	m->created_unix = now;
	gethostname(m->hostname, sizeof(m->hostname) - 1);
	m->uid = geteuid();
	m->pid = getpid();
	if (p.slurm) {
		m->slurm = 1;
		snprintf(m->job_id, sizeof(m->job_id), "%" PRIu64, 1000 + p.seed);
		snprintf(m->step_id, sizeof(m->step_id), "0");
		m->task = 0;
		m->restart_count = (int)(p.seed % 3);
	}
	snprintf(m->label, sizeof(m->label), "%s", p.label);
	m->step = (int64_t)(p.seed * 100);
	m->chunk_size = p.chunk_size;
	m->va_base = VA_BASE;
	m->va_size = VA_SLICE * p.devices;
	m->devices = calloc(p.devices, sizeof(*m->devices));
	m->allocs = calloc(p.allocs ? p.allocs : 1, sizeof(*m->allocs));
	m->regions = calloc(p.regions ? p.regions : 1, sizeof(*m->regions));
	if (!m->devices || !m->allocs || !m->regions)
		return 1;
	m->ndevices = p.devices;

	ret = gk_store_begin(p.root, &txn, &err);
	if (ret < 0) {
		fprintf(stderr, "mkimage: %s\n", err.text);
		return 1;
	}
	for (unsigned d = 0; d < p.devices; d++) {
		struct gk_device_rec *dev = &m->devices[d];
		uint64_t addr, off = 0;
		char name[GK_NAME_MAX];
		int fd;

		dev->ordinal = (int)d;
		snprintf(dev->name, sizeof(dev->name), "Synthetic GPU %u", d);
		snprintf(dev->uuid, sizeof(dev->uuid), "GPU-%08x-0000-4000-8000-%012" PRIx64,
			 (unsigned)p.seed, (uint64_t)d);
		dev->cc_major = 9;
		dev->cc_minor = 0;
		dev->total_memory = 80ull << 30;
		dev->va_base = VA_BASE + d * VA_SLICE;
		dev->va_size = VA_SLICE;
		addr = dev->va_base;
		snprintf(name, sizeof(name), "device%u.data", d);
		ret = gk_store_create(&txn, name, &fd, &err);
		if (ret < 0) {
			fprintf(stderr, "mkimage: %s\n", err.text);
			goto out_abort;
		}
		/* Allocations go round-robin over devices, so every device's
		 * allocations are consecutive when listed device by device. */
		for (unsigned i = d; i < p.allocs; i += p.devices) {
			struct gk_alloc_rec *a = &m->allocs[m->nallocs++];

			a->device = (int)d;
			a->size = p.min_size + rnd() % (p.max_size - p.min_size + 1);
			a->address = addr;
			a->order = dev->next_order++;
			snprintf(a->kind, sizeof(a->kind), "%s", (i % 3) ? "alloc" : "async");
			a->parts = calloc(1, sizeof(*a->parts));
			if (!a->parts) {
				ret = -ENOMEM;
				goto out_abort;
			}
			a->nparts = a->size ? 1 : 0;
			snprintf(a->parts[0].file, sizeof(a->parts[0].file), "%s", name);
			a->parts[0].offset = off;
			a->parts[0].size = a->size;
			ret = write_object(fd, off, a->size, p.chunk_size, gk_sum_algo_of(m->version),
					   &a->chunks, &a->nchunks);
			if (ret < 0)
				goto out_abort;
			off = align_up(off + a->size, GK_DATA_ALIGN);
			addr += align_up(a->size, GRANULE) + GRANULE * (rnd() % 3);
			dev->mapped_bytes += align_up(a->size, GRANULE);
		}
		close(fd);
	}
	if (p.regions) {
		ret = gk_store_create(&txn, GK_HOST_DATA_FILE, &host_fd, &err);
		if (ret < 0) {
			fprintf(stderr, "mkimage: %s\n", err.text);
			goto out_abort;
		}
	}
	for (unsigned i = 0; i < p.regions; i++) {
		struct gk_region_rec *r = &m->regions[m->nregions++];

		snprintf(r->name, sizeof(r->name), "region%u", i);
		r->size = 1 + rnd() % (p.max_size / 4 + 1);
		snprintf(r->file, sizeof(r->file), "%s", GK_HOST_DATA_FILE);
		r->offset = host_off;
		ret = write_object(host_fd, host_off, r->size, p.chunk_size,
				   gk_sum_algo_of(m->version), &r->chunks, &r->nchunks);
		if (ret < 0)
			goto out_abort;
		host_off = align_up(host_off + r->size, GK_DATA_ALIGN);
	}
	if (host_fd >= 0)
		close(host_fd);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	m->write_seconds =
	    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	ret = gk_store_commit(&txn, m, p.keep, &is_signed, &err);
	if (ret < 0) {
		fprintf(stderr, "mkimage: %s\n", err.text);
		gk_manifest_free(m);
		return 1;
	}
	printf("%s/ckpt.%06" PRIu64 "\n", p.root, m->sequence);
	gk_manifest_free(m);
	return 0;
out_abort:
	fprintf(stderr, "mkimage: writing failed: %s\n", strerror(-ret));
	gk_store_abort(&txn);
	gk_manifest_free(m);
	return 1;
}
