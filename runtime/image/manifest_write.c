/*
 * manifest_write.c - the manifest of a checkpoint written as JSON (json-c).
 *
 * Addresses are "0x..." strings because JSON numbers are doubles to many
 * readers and lose bits above 2^53; sizes stay integers (json-c reads int64).
 * The reader, manifest_read.c, checks every field this writes.
 */
#include "config.h"
#include "image/image.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

struct builder {
	int failed;
};

static json_object *put(struct builder *b, json_object *obj, const char *key, json_object *val)
{
	if (!val || !obj || json_object_object_add(obj, key, val) < 0) {
		json_object_put(val);
		b->failed = 1;
	}
	return val;
}

static void push(struct builder *b, json_object *arr, json_object *val)
{
	if (!val || !arr || json_object_array_add(arr, val) < 0) {
		json_object_put(val);
		b->failed = 1;
	}
}

static json_object *new_hex(uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	return json_object_new_string(buf);
}

static json_object *new_size(uint64_t v)
{
	return json_object_new_int64((int64_t)v);
}

/* The checksums' field: named for the algorithm of the format. */
static const char *sums_key(int version)
{
	return gk_sum_algo_of(version) == GK_SUM_XXH3 ? "xxh3" : "xxh64";
}

/* Each chunk's checksum (keys 0) or change key (keys 1), 16 hex digits. */
static json_object *new_checksums(struct builder *b, const struct gk_chunk *chunks, uint32_t n,
				  int keys)
{
	json_object *arr = json_object_new_array();

	for (uint32_t i = 0; arr && i < n; i++) {
		char buf[17];

		snprintf(buf, sizeof(buf), "%016" PRIx64, keys ? chunks[i].key : chunks[i].sum);
		push(b, arr, json_object_new_string(buf));
	}
	if (!arr)
		b->failed = 1;
	return arr;
}

static void put_devices(struct builder *b, json_object *top, const struct gk_manifest *m)
{
	json_object *arr = put(b, top, "devices", json_object_new_array());

	for (size_t i = 0; arr && i < m->ndevices; i++) {
		const struct gk_device_rec *d = &m->devices[i];
		json_object *o = json_object_new_object();
		char cc[32];

		snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
		put(b, o, "ordinal", json_object_new_int(d->ordinal));
		put(b, o, "name", json_object_new_string(d->name));
		put(b, o, "uuid", json_object_new_string(d->uuid));
		put(b, o, "compute_capability", json_object_new_string(cc));
		put(b, o, "total_memory", new_size(d->total_memory));
		put(b, o, "va_base", new_hex(d->va_base));
		put(b, o, "va_size", new_size(d->va_size));
		put(b, o, "next_order", new_size(d->next_order));
		put(b, o, "mapped_bytes", new_size(d->mapped_bytes));
		if (d->peer_access) {
			json_object *peers = put(b, o, "peer_access", json_object_new_array());

			for (int k = 0; peers && k < GK_PEER_ORDINALS; k++)
				if (d->peer_access >> k & 1)
					push(b, peers, json_object_new_int(k));
		}
		push(b, arr, o);
	}
}

/* The parts' starts are implied: each begins where the one before ends. */
static json_object *new_parts(struct builder *b, const struct gk_part *parts, uint32_t n)
{
	json_object *arr = json_object_new_array();

	for (uint32_t i = 0; arr && i < n; i++) {
		json_object *o = json_object_new_object();

		if (parts[i].zero) {
			/* Format 5: no file holds it. */
			put(b, o, "zero", json_object_new_boolean(1));
			put(b, o, "size", new_size(parts[i].size));
			push(b, arr, o);
			continue;
		}
		if (parts[i].sequence)
			put(b, o, "sequence", new_size(parts[i].sequence));
		put(b, o, "file", json_object_new_string(parts[i].file));
		put(b, o, "offset", new_size(parts[i].offset));
		put(b, o, "size", new_size(parts[i].size));
		push(b, arr, o);
	}
	if (!arr)
		b->failed = 1;
	return arr;
}

static void put_allocs(struct builder *b, json_object *top, const struct gk_manifest *m)
{
	json_object *arr = put(b, top, "allocations", json_object_new_array());

	for (size_t i = 0; arr && i < m->nallocs; i++) {
		const struct gk_alloc_rec *a = &m->allocs[i];
		json_object *o = json_object_new_object();

		put(b, o, "device", json_object_new_int(a->device));
		put(b, o, "address", new_hex(a->address));
		put(b, o, "size", new_size(a->size));
		put(b, o, "order", new_size(a->order));
		put(b, o, "kind", json_object_new_string(a->kind));
		if (!strcmp(a->kind, GK_KIND_VMM)) {
			json_object *r = put(b, o, "reservation", json_object_new_object());

			if (r) {
				put(b, r, "address", new_hex(a->resv_address));
				put(b, r, "size", new_size(a->resv_size));
			}
		}
		put(b, o, "parts", new_parts(b, a->parts, a->nparts));
		put(b, o, sums_key(m->version), new_checksums(b, a->chunks, a->nchunks, 0));
		if (a->has_keys && m->version >= 3)
			put(b, o, "keys", new_checksums(b, a->chunks, a->nchunks, 1));
		push(b, arr, o);
	}
}

static void put_regions(struct builder *b, json_object *top, const struct gk_manifest *m)
{
	json_object *arr = put(b, top, "host_regions", json_object_new_array());

	for (size_t i = 0; arr && i < m->nregions; i++) {
		const struct gk_region_rec *r = &m->regions[i];
		json_object *o = json_object_new_object();

		put(b, o, "name", json_object_new_string(r->name));
		put(b, o, "size", new_size(r->size));
		put(b, o, "file", json_object_new_string(r->file));
		put(b, o, "offset", new_size(r->offset));
		put(b, o, sums_key(m->version), new_checksums(b, r->chunks, r->nchunks, 0));
		push(b, arr, o);
	}
}

static json_object *new_files(struct builder *b, const struct gk_file_rec *files, size_t n)
{
	json_object *arr = json_object_new_array();

	for (size_t i = 0; arr && i < n; i++) {
		json_object *o = json_object_new_object();

		put(b, o, "name", json_object_new_string(files[i].name));
		put(b, o, "size", new_size(files[i].size));
		push(b, arr, o);
	}
	if (!arr)
		b->failed = 1;
	return arr;
}

static void put_refs(struct builder *b, json_object *top, const struct gk_manifest *m)
{
	json_object *arr = put(b, top, "references", json_object_new_array());

	for (size_t i = 0; arr && i < m->nrefs; i++) {
		const struct gk_ref *r = &m->refs[i];
		json_object *o = json_object_new_object();

		put(b, o, "sequence", new_size(r->sequence));
		put(b, o, "id", json_object_new_string(r->id));
		put(b, o, "files", new_files(b, r->files, r->nfiles));
		push(b, arr, o);
	}
}

/* m's version, raised to what holds everything m has: a version 1 manifest
 * is written as version 2, one with peer access as version 4, one with zero
 * parts as version 5, one with IPC imports as version 6. */
static int written_version(const struct gk_manifest *m)
{
	int v = m->version;

	if (v < 3)
		return 2;
	if (m->nimports)
		return 6;
	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].peer_access && v < 4)
			v = 4;
	for (size_t i = 0; i < m->nallocs; i++)
		for (uint32_t k = 0; k < m->allocs[i].nparts; k++)
			if (m->allocs[i].parts[k].zero)
				return 5;
	return v;
}

static void put_imports(struct builder *b, json_object *top, const struct gk_manifest *m)
{
	json_object *arr;

	if (!m->nimports || written_version(m) < 6)
		return;
	arr = put(b, top, "ipc_imports", json_object_new_array());
	for (size_t i = 0; arr && i < m->nimports; i++) {
		const struct gk_import_rec *r = &m->imports[i];
		json_object *o = json_object_new_object();

		put(b, o, "ordinal", new_size(r->ordinal));
		put(b, o, "address", new_hex(r->address));
		put(b, o, "size", new_size(r->size));
		put(b, o, "exporter_address", new_hex(r->exporter_address));
		push(b, arr, o);
	}
}

int gk_manifest_to_json(const struct gk_manifest *m, char **text, size_t *len)
{
	struct builder b = {0};
	json_object *top = json_object_new_object(), *o;
	const char *s;
	char seconds[64];
	size_t n;
	int ret = 0;

	*text = NULL;
	put(&b, top, "format", json_object_new_string(GK_FORMAT_NAME));
	put(&b, top, "version", json_object_new_int(written_version(m)));
	put(&b, top, "created", json_object_new_string(m->created));
	put(&b, top, "created_unix", json_object_new_int64(m->created_unix));
	/* Fixed decimals: the default %.17g would print 0.1 as 0.10000000000000001. */
	snprintf(seconds, sizeof(seconds), "%.6f", m->write_seconds);
	put(&b, top, "write_seconds", json_object_new_double_s(m->write_seconds, seconds));
	put(&b, top, "host", json_object_new_string(m->hostname));
	put(&b, top, "uid", json_object_new_int64((int64_t)m->uid));
	put(&b, top, "pid", json_object_new_int64((int64_t)m->pid));
	if (m->slurm) {
		o = put(&b, top, "slurm", json_object_new_object());
		put(&b, o, "job_id", json_object_new_string(m->job_id));
		put(&b, o, "step_id", json_object_new_string(m->step_id));
		put(&b, o, "task", json_object_new_int(m->task));
		put(&b, o, "restart_count", json_object_new_int(m->restart_count));
	}
	if (m->set_members) {
		o = put(&b, top, "set", json_object_new_object());
		put(&b, o, "id", new_hex(m->set_id));
		put(&b, o, "members", json_object_new_int64(m->set_members));
		put(&b, o, "member", json_object_new_int64(m->set_member));
		put(&b, o, "agreement", json_object_new_string(m->set_agreement));
	}
	put(&b, top, "label", json_object_new_string(m->label));
	if (m->exe[0])
		put(&b, top, "exe", json_object_new_string(m->exe));
	put(&b, top, "step", json_object_new_int64(m->step));
	put(&b, top, "sequence", new_size(m->sequence));
	put(&b, top, "chunk_size", new_size(m->chunk_size));
	o = put(&b, top, "va", json_object_new_object());
	put(&b, o, "base", new_hex(m->va_base));
	put(&b, o, "size", new_size(m->va_size));
	if (m->version >= 3) {
		put(&b, top, "id", json_object_new_string(m->id));
		put(&b, top, "increment", new_size(m->increment));
		put_refs(&b, top, m);
	}
	put_devices(&b, top, m);
	put_allocs(&b, top, m);
	put_regions(&b, top, m);
	put_imports(&b, top, m);
	put(&b, top, "files", new_files(&b, m->files, m->nfiles));
	if (b.failed || !top) {
		ret = -ENOMEM;
		goto out_put;
	}
	s = json_object_to_json_string_length(
	    top, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE,
	    &n);
	if (!s) {
		ret = -ENOMEM;
		goto out_put;
	}
	*text = malloc(n + 2);
	if (!*text) {
		ret = -ENOMEM;
		goto out_put;
	}
	memcpy(*text, s, n);
	(*text)[n++] = '\n';
	(*text)[n] = 0;
	if (len)
		*len = n;
out_put:
	json_object_put(top);
	return ret;
}
