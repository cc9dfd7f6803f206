/*
 * manifest_read.c - the manifest of a checkpoint read back from JSON (json-c)
 * with every field checked, so that nothing later (restore, verify, inspect)
 * has to trust a value it did not see validated.
 *
 * Addresses are "0x..." strings because JSON numbers are doubles to many
 * readers and lose bits above 2^53; sizes stay integers (json-c reads int64).
 */
#include "config.h"
#include "image/image.h"
#include "common/error.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#define MAX_CHUNK_SIZE (1ull << 30)
/* IPC imports a manifest may list: far more than a node's processes open. */
#define MAX_IMPORTS 65536

/* Names that can hold data: safe, and not one of the image's own files. */
static int data_file_name_ok(const char *name)
{
	return gk_name_valid(name) && strcmp(name, GK_MANIFEST_FILE) != 0 &&
	       strcmp(name, GK_SIGNATURE_FILE) != 0;
}

struct pctx {
	gk_error_t *err;
	uint64_t chunk_size;
	int version;
};

static int fail(struct pctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct pctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gk_verrprintf(c->err, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const char *field(char *buf, size_t n, const char *where, const char *key)
{
	if (*where)
		snprintf(buf, n, "%s.%s", where, key);
	else
		snprintf(buf, n, "%s", key);
	return buf;
}

static int get_field(struct pctx *c, json_object *obj, const char *where, const char *key,
		     json_object **val)
{
	char f[128];

	if (!json_object_object_get_ex(obj, key, val))
		return fail(c, "missing field '%s'", field(f, sizeof(f), where, key));
	return 0;
}

static int get_string(struct pctx *c, json_object *obj, const char *where, const char *key,
		      char *buf, size_t size)
{
	json_object *v;
	char f[128];
	const char *s;
	size_t len;
	int ret = get_field(c, obj, where, key, &v);

	if (ret < 0)
		return ret;
	field(f, sizeof(f), where, key);
	if (!json_object_is_type(v, json_type_string))
		return fail(c, "field '%s' must be a string", f);
	s = json_object_get_string(v);
	len = (size_t)json_object_get_string_len(v);
	if (strlen(s) != len)
		return fail(c, "field '%s' contains a NUL character", f);
	if (len >= size)
		return fail(c, "field '%s' is too long (%zu bytes, at most %zu)", f, len, size - 1);
	memcpy(buf, s, len + 1);
	return 0;
}

static int get_int(struct pctx *c, json_object *obj, const char *where, const char *key,
		   int64_t min, int64_t max, int64_t *out)
{
	json_object *v;
	char f[128];
	int64_t n;
	int ret = get_field(c, obj, where, key, &v);

	if (ret < 0)
		return ret;
	field(f, sizeof(f), where, key);
	if (!json_object_is_type(v, json_type_int))
		return fail(c, "field '%s' must be an integer", f);
	n = json_object_get_int64(v);
	/* json-c keeps integers above INT64_MAX as uint64 and clamps them here. */
	if (n == INT64_MAX && json_object_get_uint64(v) > (uint64_t)INT64_MAX)
		return fail(c, "field '%s' is out of range (at most %" PRId64 ")", f, max);
	if (n < min && min == 0)
		return fail(c, "field '%s' must not be negative (%" PRId64 ")", f, n);
	if (n < min || n > max)
		return fail(
		    c, "field '%s' is out of range (%" PRId64 "; from %" PRId64 " to %" PRId64 ")",
		    f, n, min, max);
	*out = n;
	return 0;
}

static int get_size(struct pctx *c, json_object *obj, const char *where, const char *key,
		    uint64_t *out)
{
	int64_t n;
	int ret = get_int(c, obj, where, key, 0, INT64_MAX, &n);

	if (ret == 0)
		*out = (uint64_t)n;
	return ret;
}

static int parse_hex(const char *s, size_t digits_max, int prefix, uint64_t *out)
{
	uint64_t v = 0;
	size_t n = 0;

	if (prefix) {
		if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
			return -1;
		s += 2;
	}
	for (; *s; s++, n++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			return -1;
		if (n == digits_max)
			return -1;
		v = v << 4 | d;
	}
	if (n == 0)
		return -1;
	*out = v;
	return (int)n;
}

static int get_hex(struct pctx *c, json_object *obj, const char *where, const char *key,
		   uint64_t *out)
{
	json_object *v;
	char f[128];
	int ret = get_field(c, obj, where, key, &v);

	if (ret < 0)
		return ret;
	field(f, sizeof(f), where, key);
	/* The whole string: a NUL inside it must not end it early. */
	if (!json_object_is_type(v, json_type_string) ||
	    strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v) ||
	    parse_hex(json_object_get_string(v), 16, 1, out) < 0)
		return fail(c, "field '%s' must be a hex string like \"0x200000000000\"", f);
	return 0;
}

static int get_typed(struct pctx *c, json_object *obj, const char *where, const char *key,
		     json_type type, json_object **out)
{
	char f[128];
	int ret = get_field(c, obj, where, key, out);

	if (ret < 0)
		return ret;
	if (!json_object_is_type(*out, type))
		return fail(c, "field '%s' must be %s", field(f, sizeof(f), where, key),
			    type == json_type_array	? "an array"
			    : type == json_type_boolean ? "true or false"
							: "an object");
	return 0;
}

/* "2026-11-22T10:00:00Z", optionally with fractions of a second. */
static int iso8601_utc_ok(const char *s)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:dd";

	for (size_t i = 0; i < sizeof(shape) - 1; i++) {
		if (shape[i] == 'd' ? !(s[i] >= '0' && s[i] <= '9') : s[i] != shape[i])
			return 0;
	}
	s += sizeof(shape) - 1;
	if (*s == '.') {
		s++;
		if (!(*s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return strcmp(s, "Z") == 0;
}

static int parse_cc(const char *s, int *major, int *minor)
{
	char *end;
	long a, b;

	if (!(*s >= '0' && *s <= '9'))
		return -1;
	a = strtol(s, &end, 10);
	if (*end != '.' || !(end[1] >= '0' && end[1] <= '9'))
		return -1;
	b = strtol(end + 1, &end, 10);
	if (*end || a > 99 || b > 99)
		return -1;
	*major = (int)a;
	*minor = (int)b;
	return 0;
}

/* One 16-hex-digit value per chunk, in field `key`: the checksums, or
 * (keys) the change keys of chunks already read. */
static int parse_chunk_values(struct pctx *c, json_object *arr, const char *where, const char *key,
			      const char *what, uint64_t size, struct gk_chunk **chunks,
			      uint32_t *nchunks, int keys)
{
	uint32_t want = gk_chunk_count(size, c->chunk_size);
	size_t n = json_object_array_length(arr);

	if (n != want)
		return fail(c,
			    "%s has %zu %s, expected %" PRIu32 " (%" PRIu64
			    " bytes in chunks of %" PRIu64 " bytes)",
			    what, n, keys ? "change keys" : "checksums", want, size,
			    c->chunk_size);
	if (n == 0)
		return 0;
	if (!keys) {
		*chunks = calloc(n, sizeof(**chunks));
		if (!*chunks)
			return -ENOMEM;
		*nchunks = (uint32_t)n;
	}
	for (size_t i = 0; i < n; i++) {
		json_object *v = json_object_array_get_idx(arr, i);
		uint64_t *out = keys ? &(*chunks)[i].key : &(*chunks)[i].sum;

		if (!json_object_is_type(v, json_type_string) ||
		    json_object_get_string_len(v) != 16 ||
		    parse_hex(json_object_get_string(v), 16, 0, out) != 16)
			return fail(c, "field '%s.%s[%zu]' must be 16 hex digits", where, key, i);
	}
	return 0;
}

static int parse_checksums(struct pctx *c, json_object *obj, const char *where, const char *what,
			   uint64_t size, struct gk_chunk **chunks, uint32_t *nchunks)
{
	const char *key = gk_sum_algo_of(c->version) == GK_SUM_XXH3 ? "xxh3" : "xxh64";
	json_object *arr;
	int ret = get_typed(c, obj, where, key, json_type_array, &arr);

	if (ret < 0)
		return ret;
	return parse_chunk_values(c, arr, where, key, what, size, chunks, nchunks, 0);
}

static int parse_header(struct pctx *c, json_object *top, struct gk_manifest *m)
{
	json_object *v, *o;
	int64_t n;
	double d;
	int ret;

	if ((ret = get_string(c, top, "", "created", m->created, sizeof(m->created))) < 0)
		return ret;
	if (!iso8601_utc_ok(m->created))
		return fail(c,
			    "field 'created' must be a UTC time like \"2026-11-22T10:00:00Z\" "
			    "(got \"%s\")",
			    m->created);
	if ((ret = get_int(c, top, "", "created_unix", INT64_MIN, INT64_MAX, &m->created_unix)) < 0)
		return ret;
	if ((ret = get_field(c, top, "", "write_seconds", &v)) < 0)
		return ret;
	if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
		return fail(c, "field 'write_seconds' must be a number");
	d = json_object_get_double(v);
	if (!isfinite(d) || d < 0)
		return fail(c, "field 'write_seconds' must be a non-negative number");
	m->write_seconds = d;
	if ((ret = get_string(c, top, "", "host", m->hostname, sizeof(m->hostname))) < 0)
		return ret;
	if ((ret = get_int(c, top, "", "uid", 0, (int64_t)UINT32_MAX - 1, &n)) < 0)
		return ret;
	m->uid = (uid_t)n;
	if ((ret = get_int(c, top, "", "pid", 1, INT_MAX, &n)) < 0)
		return ret;
	m->pid = (pid_t)n;
	if (json_object_object_get_ex(top, "slurm", &o)) {
		if (!json_object_is_type(o, json_type_object))
			return fail(c, "field 'slurm' must be an object");
		m->slurm = 1;
		if ((ret = get_string(c, o, "slurm", "job_id", m->job_id, sizeof(m->job_id))) < 0 ||
		    (ret = get_string(c, o, "slurm", "step_id", m->step_id, sizeof(m->step_id))) <
			0)
			return ret;
		if ((ret = get_int(c, o, "slurm", "task", 0, INT_MAX, &n)) < 0)
			return ret;
		m->task = (int)n;
		if ((ret = get_int(c, o, "slurm", "restart_count", 0, INT_MAX, &n)) < 0)
			return ret;
		m->restart_count = (int)n;
	}
	if (json_object_object_get_ex(top, "set", &o)) {
		if (!json_object_is_type(o, json_type_object))
			return fail(c, "field 'set' must be an object");
		if ((ret = get_hex(c, o, "set", "id", &m->set_id)) < 0 ||
		    (ret = get_string(c, o, "set", "agreement", m->set_agreement,
				      sizeof(m->set_agreement))) < 0)
			return ret;
		if (!m->set_agreement[0] ||
		    strspn(m->set_agreement, "abcdefghijklmnopqrstuvwxyz0123456789_-") !=
			strlen(m->set_agreement))
			return fail(c, "field 'set.agreement' must be a lowercase word like \"mpi\"");
		if ((ret = get_int(c, o, "set", "members", 1, 1 << 24, &n)) < 0)
			return ret;
		m->set_members = (uint32_t)n;
		if ((ret = get_int(c, o, "set", "member", 0, (int64_t)m->set_members - 1, &n)) < 0)
			return ret;
		m->set_member = (uint32_t)n;
	}
	if (json_object_object_get_ex(top, "exe", NULL) &&
	    (ret = get_string(c, top, "", "exe", m->exe, sizeof(m->exe))) < 0)
		return ret;
	if ((ret = get_string(c, top, "", "label", m->label, sizeof(m->label))) < 0)
		return ret;
	if ((ret = get_int(c, top, "", "step", INT64_MIN, INT64_MAX, &m->step)) < 0)
		return ret;
	if ((ret = get_size(c, top, "", "sequence", &m->sequence)) < 0)
		return ret;
	if ((ret = get_size(c, top, "", "chunk_size", &m->chunk_size)) < 0)
		return ret;
	if (m->chunk_size < GK_DATA_ALIGN || m->chunk_size > MAX_CHUNK_SIZE ||
	    m->chunk_size % GK_DATA_ALIGN)
		return fail(c,
			    "chunk_size %" PRIu64 " is not allowed (a multiple of %u, from %u "
			    "bytes to 1 GiB)",
			    m->chunk_size, GK_DATA_ALIGN, GK_DATA_ALIGN);
	c->chunk_size = m->chunk_size;
	if ((ret = get_typed(c, top, "", "va", json_type_object, &o)) < 0)
		return ret;
	if ((ret = get_hex(c, o, "va", "base", &m->va_base)) < 0 ||
	    (ret = get_size(c, o, "va", "size", &m->va_size)) < 0)
		return ret;
	if (m->va_size > UINT64_MAX - m->va_base)
		return fail(c, "the reserved range 0x%" PRIx64 " + %" PRIu64 " bytes wraps around",
			    m->va_base, m->va_size);
	return 0;
}

/* "peer_access": the ordinals of the devices granted access to d's memory. */
static int parse_peers(struct pctx *c, json_object *o, const char *where, struct gk_device_rec *d)
{
	json_object *arr;

	if (!json_object_object_get_ex(o, "peer_access", &arr))
		return 0;
	/* An older gpuckpt would ignore it and restore without the grants. */
	if (c->version < 4)
		return fail(c, "field '%s.peer_access' needs format version 4 (this is %d)", where,
			    c->version);
	if (!json_object_is_type(arr, json_type_array))
		return fail(c, "field '%s.peer_access' must be an array", where);
	for (size_t k = 0; k < json_object_array_length(arr); k++) {
		json_object *v = json_object_array_get_idx(arr, k);
		int64_t p = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;

		if (p < 0 || p >= GK_PEER_ORDINALS || p == d->ordinal)
			return fail(c,
				    "field '%s.peer_access[%zu]' must be another device's ordinal "
				    "below %d",
				    where, k, GK_PEER_ORDINALS);
		if (d->peer_access >> p & 1)
			return fail(c, "field '%s.peer_access' lists device %" PRId64 " twice",
				    where, p);
		d->peer_access |= 1ull << p;
	}
	return 0;
}

static int parse_devices(struct pctx *c, json_object *top, struct gk_manifest *m)
{
	json_object *arr;
	int ret = get_typed(c, top, "", "devices", json_type_array, &arr);
	size_t n;

	if (ret < 0)
		return ret;
	n = json_object_array_length(arr);
	if (n && !(m->devices = calloc(n, sizeof(*m->devices))))
		return -ENOMEM;
	m->ndevices = n;
	for (size_t i = 0; i < n; i++) {
		struct gk_device_rec *d = &m->devices[i];
		json_object *o = json_object_array_get_idx(arr, i);
		char where[32], cc[16];
		int64_t v;

		snprintf(where, sizeof(where), "devices[%zu]", i);
		if (!json_object_is_type(o, json_type_object))
			return fail(c, "%s must be an object", where);
		if ((ret = get_int(c, o, where, "ordinal", 0, INT_MAX, &v)) < 0)
			return ret;
		d->ordinal = (int)v;
		if ((ret = get_string(c, o, where, "name", d->name, sizeof(d->name))) < 0 ||
		    (ret = get_string(c, o, where, "uuid", d->uuid, sizeof(d->uuid))) < 0 ||
		    (ret = get_string(c, o, where, "compute_capability", cc, sizeof(cc))) < 0)
			return ret;
		if (parse_cc(cc, &d->cc_major, &d->cc_minor) < 0)
			return fail(
			    c, "field '%s.compute_capability' must look like \"9.0\" (got \"%s\")",
			    where, cc);
		if ((ret = get_size(c, o, where, "total_memory", &d->total_memory)) < 0 ||
		    (ret = get_hex(c, o, where, "va_base", &d->va_base)) < 0 ||
		    (ret = get_size(c, o, where, "va_size", &d->va_size)) < 0 ||
		    (ret = get_size(c, o, where, "next_order", &d->next_order)) < 0 ||
		    (ret = get_size(c, o, where, "mapped_bytes", &d->mapped_bytes)) < 0)
			return ret;
		if (d->va_size > UINT64_MAX - d->va_base)
			return fail(
			    c, "device %d's range 0x%" PRIx64 " + %" PRIu64 " bytes wraps around",
			    d->ordinal, d->va_base, d->va_size);
		if ((ret = parse_peers(c, o, where, d)) < 0)
			return ret;
		for (size_t j = 0; j < i; j++) {
			const struct gk_device_rec *e = &m->devices[j];

			if (e->ordinal == d->ordinal)
				return fail(
				    c, "device %d is listed twice (devices[%zu] and devices[%zu])",
				    d->ordinal, j, i);
			if (d->va_size && e->va_size && d->va_base < e->va_base + e->va_size &&
			    e->va_base < d->va_base + d->va_size)
				return fail(c, "device %d's range overlaps device %d's", d->ordinal,
					    e->ordinal);
		}
	}
	return 0;
}

static int parse_files(struct pctx *c, json_object *top, struct gk_manifest *m)
{
	json_object *arr;
	int ret = get_typed(c, top, "", "files", json_type_array, &arr);
	size_t n;

	if (ret < 0)
		return ret;
	n = json_object_array_length(arr);
	if (n && !(m->files = calloc(n, sizeof(*m->files))))
		return -ENOMEM;
	m->nfiles = n;
	for (size_t i = 0; i < n; i++) {
		struct gk_file_rec *f = &m->files[i];
		json_object *o = json_object_array_get_idx(arr, i);
		char where[32];

		snprintf(where, sizeof(where), "files[%zu]", i);
		if (!json_object_is_type(o, json_type_object))
			return fail(c, "%s must be an object", where);
		if ((ret = get_string(c, o, where, "name", f->name, sizeof(f->name))) < 0 ||
		    (ret = get_size(c, o, where, "size", &f->size)) < 0)
			return ret;
		if (!data_file_name_ok(f->name))
			return fail(c, "file name '%s' is not allowed (%s.name)", f->name, where);
		for (size_t j = 0; j < i; j++)
			if (strcmp(m->files[j].name, f->name) == 0)
				return fail(c,
					    "file '%s' is listed twice (files[%zu] and files[%zu])",
					    f->name, j, i);
	}
	return 0;
}

static const struct gk_file_rec *find_file(const struct gk_manifest *m, const char *name)
{
	for (size_t i = 0; i < m->nfiles; i++)
		if (strcmp(m->files[i].name, name) == 0)
			return &m->files[i];
	return NULL;
}

static const struct gk_device_rec *find_device(const struct gk_manifest *m, int ordinal)
{
	for (size_t i = 0; i < m->ndevices; i++)
		if (m->devices[i].ordinal == ordinal)
			return &m->devices[i];
	return NULL;
}

static const struct gk_ref *find_ref(const struct gk_manifest *m, uint64_t sequence)
{
	for (size_t i = 0; i < m->nrefs; i++)
		if (m->refs[i].sequence == sequence)
			return &m->refs[i];
	return NULL;
}

static const struct gk_file_rec *find_ref_file(const struct gk_ref *r, const char *name)
{
	for (size_t i = 0; i < r->nfiles; i++)
		if (strcmp(r->files[i].name, name) == 0)
			return &r->files[i];
	return NULL;
}

/* Where an object's bytes are: in a listed file (of this checkpoint, or of
 * the referenced checkpoint `sequence`), aligned, inside it. */
static int check_data_range(struct pctx *c, const struct gk_manifest *m, const char *what,
			    const char *where, uint64_t sequence, const char *file, uint64_t offset,
			    uint64_t size)
{
	const struct gk_file_rec *f;

	if (!data_file_name_ok(file))
		return fail(c, "file name '%s' is not allowed (%s.file)", file, where);
	if (sequence) {
		const struct gk_ref *r = find_ref(m, sequence);

		if (!r)
			return fail(c,
				    "%s lies in checkpoint %" PRIu64
				    ", which is not listed in 'references'",
				    what, sequence);
		f = find_ref_file(r, file);
		if (!f)
			return fail(c,
				    "%s is in file '%s' of checkpoint %" PRIu64
				    ", which its reference does not list",
				    what, file, sequence);
	} else {
		f = find_file(m, file);
	}
	if (!f)
		return fail(c, "%s is in file '%s', which is not listed in 'files'", what, file);
	if (offset % GK_DATA_ALIGN)
		return fail(c, "%s's data offset %" PRIu64 " in '%s' is not a multiple of %u", what,
			    offset, file, GK_DATA_ALIGN);
	if (offset > f->size || size > f->size - offset)
		return fail(c,
			    "%s's data (offset %" PRIu64 ", %" PRIu64 " bytes) runs past the end "
			    "of '%s' (%" PRIu64 " bytes)",
			    what, offset, size, file, f->size);
	return 0;
}

/* Version 1: the allocation's own "file" and "offset", one part. */
static int parse_v1_place(struct pctx *c, json_object *o, const struct gk_manifest *m,
			  const char *where, const char *what, struct gk_alloc_rec *a)
{
	struct gk_part *p = calloc(1, sizeof(*p));
	int ret;

	if (!p)
		return -ENOMEM;
	a->parts = p;
	a->nparts = a->size ? 1 : 0;
	p->size = a->size;
	if ((ret = get_string(c, o, where, "file", p->file, sizeof(p->file))) < 0 ||
	    (ret = get_size(c, o, where, "offset", &p->offset)) < 0)
		return ret;
	return check_data_range(c, m, what, where, 0, p->file, p->offset, p->size);
}

/* Format 5: a part whose bytes are all zero, held by no file: {"zero":
 * true, "size": N} and nothing that names a place. Its chunks' checksums must
 * be those of zeros; the data check and the restore compare them (a part
 * turned into a zero one by an edit that kept the checksums is refused
 * there, before any byte is loaded). */
static int parse_zero_part(struct pctx *c, json_object *po, const char *pwhere, struct gk_part *p)
{
	static const char *const places[] = {"file", "offset", "sequence"};
	json_object *z;
	int ret;

	if (c->version < 5)
		return fail(c, "field '%s.zero' needs format version 5 (this is %d)", pwhere,
			    c->version);
	if ((ret = get_typed(c, po, pwhere, "zero", json_type_boolean, &z)) < 0)
		return ret;
	if (!json_object_get_boolean(z))
		return fail(c, "field '%s.zero' is false: leave it out for a part held by a file",
			    pwhere);
	for (size_t k = 0; k < sizeof(places) / sizeof(places[0]); k++)
		if (json_object_object_get_ex(po, places[k], NULL))
			return fail(c, "%s is a zero part, held by no file: it has no '%s'", pwhere,
				    places[k]);
	p->zero = 1;
	return get_size(c, po, pwhere, "size", &p->size);
}

/* Where an allocation's bytes are: parts that cover it in order, every one
 * but the last a whole number of chunks (struct gk_part). */
static int parse_parts(struct pctx *c, json_object *o, const struct gk_manifest *m,
		       const char *where, const char *what, struct gk_alloc_rec *a)
{
	json_object *arr;
	uint64_t start = 0;
	size_t n;
	int ret;

	if (m->version == 1)
		return parse_v1_place(c, o, m, where, what, a);
	if ((ret = get_typed(c, o, where, "parts", json_type_array, &arr)) < 0)
		return ret;
	n = json_object_array_length(arr);
	if (n == 0 && a->size)
		return fail(c, "%s has no parts: its %" PRIu64 " bytes are nowhere", what, a->size);
	if (n > a->size / c->chunk_size + 1)
		return fail(c, "%s has %zu parts, more than its %" PRIu64 " bytes can fill", what, n,
			    a->size);
	a->parts = calloc(n ? n : 1, sizeof(*a->parts));
	if (!a->parts)
		return -ENOMEM;
	a->nparts = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		struct gk_part *p = &a->parts[i];
		json_object *po = json_object_array_get_idx(arr, i);
		char pwhere[80];

		snprintf(pwhere, sizeof(pwhere), "%s.parts[%zu]", where, i);
		if (!json_object_is_type(po, json_type_object))
			return fail(c, "%s must be an object", pwhere);
		if (json_object_object_get_ex(po, "zero", NULL)) {
			if ((ret = parse_zero_part(c, po, pwhere, p)) < 0)
				return ret;
			goto sized;
		}
		if ((ret = get_string(c, po, pwhere, "file", p->file, sizeof(p->file))) < 0 ||
		    (ret = get_size(c, po, pwhere, "offset", &p->offset)) < 0 ||
		    (ret = get_size(c, po, pwhere, "size", &p->size)) < 0)
			return ret;
		if (json_object_object_get_ex(po, "sequence", NULL)) {
			if (m->version < 3)
				return fail(c, "%s.sequence: parts in other checkpoints need format 3",
					    pwhere);
			if ((ret = get_size(c, po, pwhere, "sequence", &p->sequence)) < 0)
				return ret;
			if (p->sequence == 0 || p->sequence == m->sequence)
				return fail(c,
					    "field '%s.sequence' is %" PRIu64
					    ": name another checkpoint, or leave it out",
					    pwhere, p->sequence);
		}
	sized:
		if (p->size == 0)
			return fail(c, "field '%s.size' is 0: a part holds at least one byte", pwhere);
		if (p->size > a->size - start)
			return fail(c, "the parts of %s hold more than its %" PRIu64 " bytes", what,
				    a->size);
		if (i + 1 < n && p->size % c->chunk_size)
			return fail(c,
				    "part %zu of %s (%" PRIu64 " bytes) is not a whole number "
				    "of chunks of %" PRIu64 " bytes",
				    i, what, p->size, c->chunk_size);
		p->start = start;
		start += p->size;
		if (!p->zero && (ret = check_data_range(c, m, what, pwhere, p->sequence, p->file,
							p->offset, p->size)) < 0)
			return ret;
	}
	if (start != a->size)
		return fail(c, "the parts of %s hold %" PRIu64 " of its %" PRIu64 " bytes", what,
			    start, a->size);
	return 0;
}

static int parse_allocs(struct pctx *c, json_object *top, struct gk_manifest *m)
{
	json_object *arr;
	int ret = get_typed(c, top, "", "allocations", json_type_array, &arr);
	uint64_t end_max = 0;
	size_t n, end_idx = 0;

	if (ret < 0)
		return ret;
	n = json_object_array_length(arr);
	if (n && !(m->allocs = calloc(n, sizeof(*m->allocs))))
		return -ENOMEM;
	m->nallocs = n;
	for (size_t i = 0; i < n; i++) {
		struct gk_alloc_rec *a = &m->allocs[i];
		const struct gk_alloc_rec *prev = i ? &m->allocs[i - 1] : NULL;
		json_object *o = json_object_array_get_idx(arr, i);
		const struct gk_device_rec *d;
		char where[48], what[48];
		int64_t v;

		snprintf(where, sizeof(where), "allocations[%zu]", i);
		snprintf(what, sizeof(what), "allocation %zu", i);
		if (!json_object_is_type(o, json_type_object))
			return fail(c, "%s must be an object", where);
		if ((ret = get_int(c, o, where, "device", 0, INT_MAX, &v)) < 0)
			return ret;
		a->device = (int)v;
		if ((ret = get_hex(c, o, where, "address", &a->address)) < 0 ||
		    (ret = get_size(c, o, where, "size", &a->size)) < 0 ||
		    (ret = get_size(c, o, where, "order", &a->order)) < 0 ||
		    (ret = get_string(c, o, where, "kind", a->kind, sizeof(a->kind))) < 0)
			return ret;
		if (!a->kind[0])
			return fail(c, "field '%s.kind' is empty", where);
		d = find_device(m, a->device);
		if (!d)
			return fail(c, "%s is on device %d, which is not listed in 'devices'", what,
				    a->device);
		if (!strcmp(a->kind, GK_KIND_VMM)) {
			/* Mapped by the program, where it reserved: outside the
			 * placed range, inside its own reservation. */
			json_object *rv;

			if ((ret = get_typed(c, o, where, "reservation", json_type_object, &rv)) < 0 ||
			    (ret = get_hex(c, rv, where, "address", &a->resv_address)) < 0 ||
			    (ret = get_size(c, rv, where, "size", &a->resv_size)) < 0)
				return ret;
			if (a->resv_size > UINT64_MAX - a->resv_address || a->address < a->resv_address ||
			    a->size > a->resv_size || a->address - a->resv_address > a->resv_size - a->size)
				return fail(c,
					    "%s (0x%" PRIx64 ", %" PRIu64
					    " bytes) lies outside its reservation 0x%" PRIx64 " + %" PRIu64,
					    what, a->address, a->size, a->resv_address, a->resv_size);
		} else if (a->address < d->va_base || a->size > d->va_size ||
		    a->address - d->va_base > d->va_size - a->size)
			return fail(c,
				    "%s (0x%" PRIx64 ", %" PRIu64
				    " bytes) lies outside device %d's "
				    "range 0x%" PRIx64 "-0x%" PRIx64,
				    what, a->address, a->size, d->ordinal, d->va_base,
				    d->va_base + d->va_size);
		if (strcmp(a->kind, GK_KIND_VMM) && a->order >= d->next_order)
			return fail(c,
				    "%s has order %" PRIu64
				    ", not below device %d's next_order %" PRIu64,
				    what, a->order, d->ordinal, d->next_order);
		if (prev && (a->device < prev->device ||
			     (a->device == prev->device && a->address < prev->address)))
			return fail(c,
				    "%s (device %d, 0x%" PRIx64
				    ") is out of order: allocations must "
				    "be sorted by device, then address",
				    what, a->device, a->address);
		if (!prev || prev->device != a->device)
			end_max = 0;
		/* Sorted by address, so an overlap is with the allocation that
		 * reaches furthest among those before it on this device. */
		if (a->size && a->address < end_max)
			return fail(c,
				    "%s (0x%" PRIx64 ", %" PRIu64 " bytes) overlaps allocation %zu",
				    what, a->address, a->size, end_idx);
		if (a->size && a->address + a->size > end_max) {
			end_max = a->address + a->size;
			end_idx = i;
		}
		if ((ret = parse_parts(c, o, m, where, what, a)) < 0)
			return ret;
		if ((ret = parse_checksums(c, o, where, what, a->size, &a->chunks, &a->nchunks)) <
		    0)
			return ret;
		if (m->version >= 3 && json_object_object_get_ex(o, "keys", NULL)) {
			json_object *keys;

			if ((ret = get_typed(c, o, where, "keys", json_type_array, &keys)) < 0 ||
			    (ret = parse_chunk_values(c, keys, where, "keys", what, a->size,
						      &a->chunks, &a->nchunks, 1)) < 0)
				return ret;
			a->has_keys = 1;
		}
	}
	return 0;
}

static int parse_regions(struct pctx *c, json_object *top, struct gk_manifest *m)
{
	json_object *arr;
	int ret = get_typed(c, top, "", "host_regions", json_type_array, &arr);
	size_t n;

	if (ret < 0)
		return ret;
	n = json_object_array_length(arr);
	if (n && !(m->regions = calloc(n, sizeof(*m->regions))))
		return -ENOMEM;
	m->nregions = n;
	for (size_t i = 0; i < n; i++) {
		struct gk_region_rec *r = &m->regions[i];
		json_object *o = json_object_array_get_idx(arr, i);
		char where[48], what[128];

		snprintf(where, sizeof(where), "host_regions[%zu]", i);
		if (!json_object_is_type(o, json_type_object))
			return fail(c, "%s must be an object", where);
		if ((ret = get_string(c, o, where, "name", r->name, sizeof(r->name))) < 0)
			return ret;
		if (!gk_name_valid(r->name))
			return fail(c, "region name '%s' is not allowed (%s.name)", r->name, where);
		for (size_t j = 0; j < i; j++)
			if (strcmp(m->regions[j].name, r->name) == 0)
				return fail(c,
					    "host region '%s' is listed twice (host_regions[%zu] "
					    "and host_regions[%zu])",
					    r->name, j, i);
		snprintf(what, sizeof(what), "host region '%s'", r->name);
		if ((ret = get_size(c, o, where, "size", &r->size)) < 0 ||
		    (ret = get_string(c, o, where, "file", r->file, sizeof(r->file))) < 0 ||
		    (ret = get_size(c, o, where, "offset", &r->offset)) < 0)
			return ret;
		if ((ret = check_data_range(c, m, what, where, 0, r->file, r->offset, r->size)) < 0)
			return ret;
		if ((ret = parse_checksums(c, o, where, what, r->size, &r->chunks, &r->nchunks)) <
		    0)
			return ret;
	}
	return 0;
}

/* Format 6, optional: the IPC imports, in the order of the opens (image.h). */
static int parse_imports(struct pctx *c, json_object *top, struct gk_manifest *m)
{
	json_object *arr;
	size_t n;
	int ret;

	if (!json_object_object_get_ex(top, "ipc_imports", NULL))
		return 0;
	if (c->version < 6)
		return fail(c, "field 'ipc_imports' needs format version 6 (this is %d)",
			    c->version);
	if ((ret = get_typed(c, top, "", "ipc_imports", json_type_array, &arr)) < 0)
		return ret;
	n = json_object_array_length(arr);
	if (n > MAX_IMPORTS)
		return fail(c, "%zu IPC imports: at most %d", n, MAX_IMPORTS);
	if (n && !(m->imports = calloc(n, sizeof(*m->imports))))
		return -ENOMEM;
	m->nimports = n;
	for (size_t i = 0; i < n; i++) {
		struct gk_import_rec *r = &m->imports[i];
		json_object *o = json_object_array_get_idx(arr, i);
		char where[32];

		snprintf(where, sizeof(where), "ipc_imports[%zu]", i);
		if (!json_object_is_type(o, json_type_object))
			return fail(c, "%s must be an object", where);
		if ((ret = get_size(c, o, where, "ordinal", &r->ordinal)) < 0 ||
		    (ret = get_hex(c, o, where, "address", &r->address)) < 0 ||
		    (ret = get_size(c, o, where, "size", &r->size)) < 0 ||
		    (ret = get_hex(c, o, where, "exporter_address", &r->exporter_address)) < 0)
			return ret;
		if (i && r->ordinal <= m->imports[i - 1].ordinal)
			return fail(c, "%s.ordinal %" PRIu64 " does not follow %" PRIu64
				    ": the imports are listed in the order of the opens, each once",
				    where, r->ordinal, m->imports[i - 1].ordinal);
		if (!r->address || !r->size || !r->exporter_address ||
		    r->address + r->size < r->address)
			return fail(c, "%s: address 0x%" PRIx64 " and size %" PRIu64
				    " are not a block of memory",
				    where, r->address, r->size);
	}
	return 0;
}

struct span {
	uint64_t sequence;
	const char *file;
	uint64_t offset, size;
	size_t index;
	int region;
};

static int same_file(const struct span *a, const struct span *b)
{
	return a->sequence == b->sequence && strcmp(a->file, b->file) == 0;
}

static int span_cmp(const void *pa, const void *pb)
{
	const struct span *a = pa, *b = pb;
	int r = strcmp(a->file, b->file);

	if (a->sequence != b->sequence)
		return a->sequence < b->sequence ? -1 : 1;
	if (r)
		return r;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

static void span_name(const struct gk_manifest *m, const struct span *s, char *buf, size_t n)
{
	if (s->region)
		snprintf(buf, n, "host region '%s'", m->regions[s->index].name);
	else
		snprintf(buf, n, "allocation %zu", s->index);
}

/* Two objects whose bytes share a file range cannot both be restored right. */
static int check_spans(struct pctx *c, const struct gk_manifest *m)
{
	size_t n = 0, total = m->nregions;
	struct span *s;
	int ret = 0;

	for (size_t i = 0; i < m->nallocs; i++)
		total += m->allocs[i].nparts;
	if (total < 2)
		return 0;
	s = calloc(total, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < m->nallocs; i++)
		for (uint32_t k = 0; k < m->allocs[i].nparts; k++) {
			const struct gk_part *p = &m->allocs[i].parts[k];

			if (!p->zero)
				s[n++] =
				    (struct span){p->sequence, p->file, p->offset, p->size, i, 0};
		}
	for (size_t i = 0; i < m->nregions; i++)
		if (m->regions[i].size)
			s[n++] = (struct span){0, m->regions[i].file, m->regions[i].offset,
					       m->regions[i].size, i, 1};
	qsort(s, n, sizeof(*s), span_cmp);
	for (size_t i = 1, far = 0; i < n; i++) {
		if (same_file(&s[i], &s[far]) && s[i].offset < s[far].offset + s[far].size) {
			char a[96], b[96];

			span_name(m, &s[i], a, sizeof(a));
			span_name(m, &s[far], b, sizeof(b));
			ret = fail(c, "the data of %s overlaps the data of %s in '%s'", a, b,
				   s[i].file);
			break;
		}
		if (!same_file(&s[i], &s[far]) ||
		    s[i].offset + s[i].size > s[far].offset + s[far].size)
			far = i;
	}
	free(s);
	return ret;
}

struct order_key {
	int device;
	uint64_t order;
	size_t index;
};

static int order_cmp(const void *pa, const void *pb)
{
	const struct order_key *a = pa, *b = pb;

	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	if (a->order != b->order)
		return a->order < b->order ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* Restore replays allocations in their order; two with one number is ambiguous. */
static int check_orders(struct pctx *c, const struct gk_manifest *m)
{
	struct order_key *k;
	size_t n = 0;
	int ret = 0;

	if (m->nallocs < 2)
		return 0;
	k = calloc(m->nallocs, sizeof(*k));
	if (!k)
		return -ENOMEM;
	/* Mappings in one reservation share its number (kind vmm): not replayed
	 * by order, they are left out. */
	for (size_t i = 0; i < m->nallocs; i++)
		if (strcmp(m->allocs[i].kind, GK_KIND_VMM))
			k[n++] = (struct order_key){m->allocs[i].device, m->allocs[i].order, i};
	qsort(k, n, sizeof(*k), order_cmp);
	for (size_t i = 1; i < n; i++) {
		if (k[i].device == k[i - 1].device && k[i].order == k[i - 1].order) {
			ret = fail(c,
				   "allocation %zu has order %" PRIu64
				   ", like allocation %zu on device %d",
				   k[i].index, k[i].order, k[i - 1].index, k[i].device);
			break;
		}
	}
	free(k);
	return ret;
}

static int is_id(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return 0;
	return n == GK_ID_LEN;
}

/* At most this many references: far above any chain the runtime writes. */
#define MAX_REFS 4096

static int parse_ref(struct pctx *c, json_object *o, const char *where, const struct gk_manifest *m,
		     struct gk_ref *r)
{
	json_object *arr;
	size_t n;
	int ret;

	if (!json_object_is_type(o, json_type_object))
		return fail(c, "%s must be an object", where);
	if ((ret = get_size(c, o, where, "sequence", &r->sequence)) < 0 ||
	    (ret = get_string(c, o, where, "id", r->id, sizeof(r->id))) < 0 ||
	    (ret = get_typed(c, o, where, "files", json_type_array, &arr)) < 0)
		return ret;
	if (r->sequence == 0 || r->sequence >= m->sequence)
		return fail(c,
			    "%s names checkpoint %" PRIu64 ": a reference is to an older "
			    "checkpoint than this one (%" PRIu64 ")",
			    where, r->sequence, m->sequence);
	if (!is_id(r->id))
		return fail(c, "field '%s.id' must be %d lowercase hex digits", where, GK_ID_LEN);
	n = json_object_array_length(arr);
	if (n == 0)
		return fail(c, "%s lists no files", where);
	r->files = calloc(n, sizeof(*r->files));
	if (!r->files)
		return -ENOMEM;
	r->nfiles = n;
	for (size_t i = 0; i < n; i++) {
		struct gk_file_rec *f = &r->files[i];
		json_object *fo = json_object_array_get_idx(arr, i);
		char fwhere[64];

		snprintf(fwhere, sizeof(fwhere), "%s.files[%zu]", where, i);
		if (!json_object_is_type(fo, json_type_object))
			return fail(c, "%s must be an object", fwhere);
		if ((ret = get_string(c, fo, fwhere, "name", f->name, sizeof(f->name))) < 0 ||
		    (ret = get_size(c, fo, fwhere, "size", &f->size)) < 0)
			return ret;
		if (!data_file_name_ok(f->name))
			return fail(c, "file name '%s' is not allowed (%s.name)", f->name, fwhere);
		for (size_t j = 0; j < i; j++)
			if (strcmp(r->files[j].name, f->name) == 0)
				return fail(c, "%s lists file '%s' twice", where, f->name);
	}
	return 0;
}

/* Format 3: the checkpoint's id, its place in a chain of increments, and the
 * checkpoints it refers to. */
static int parse_identity(struct pctx *c, json_object *top, struct gk_manifest *m)
{
	json_object *arr;
	int64_t v;
	size_t n;
	int ret;

	if ((ret = get_string(c, top, "", "id", m->id, sizeof(m->id))) < 0)
		return ret;
	if (!is_id(m->id))
		return fail(c, "field 'id' must be %d lowercase hex digits", GK_ID_LEN);
	if ((ret = get_int(c, top, "", "increment", 0, UINT32_MAX, &v)) < 0)
		return ret;
	m->increment = (uint32_t)v;
	if ((ret = get_typed(c, top, "", "references", json_type_array, &arr)) < 0)
		return ret;
	n = json_object_array_length(arr);
	if (n > MAX_REFS)
		return fail(c, "%zu references: at most %d", n, MAX_REFS);
	if (n && m->increment == 0)
		return fail(c, "the checkpoint refers to %zu others but is not an increment "
			    "(field 'increment' is 0)", n);
	if (n && !(m->refs = calloc(n, sizeof(*m->refs))))
		return -ENOMEM;
	m->nrefs = n;
	for (size_t i = 0; i < n; i++) {
		char where[32];

		snprintf(where, sizeof(where), "references[%zu]", i);
		if ((ret = parse_ref(c, json_object_array_get_idx(arr, i), where, m, &m->refs[i])) <
		    0)
			return ret;
		for (size_t j = 0; j < i; j++)
			if (m->refs[j].sequence == m->refs[i].sequence)
				return fail(c, "checkpoint %" PRIu64 " is referenced twice",
					    m->refs[i].sequence);
	}
	return 0;
}

static int parse_top(struct pctx *c, json_object *top, struct gk_manifest *m)
{
	json_object *v;
	char format[64];
	int64_t version;
	int ret;

	if (!json_object_is_type(top, json_type_object))
		return fail(c, "the manifest is not a JSON object");
	if ((ret = get_field(c, top, "", "format", &v)) < 0)
		return ret;
	if (!json_object_is_type(v, json_type_string) ||
	    json_object_get_string_len(v) >= (int)sizeof(format))
		return fail(c, "not a gpuckpt manifest (field 'format' is not \"%s\")",
			    GK_FORMAT_NAME);
	strcpy(format, json_object_get_string(v));
	if (strcmp(format, GK_FORMAT_NAME) != 0)
		return fail(c, "not a gpuckpt manifest (format is \"%s\", not \"%s\")", format,
			    GK_FORMAT_NAME);
	/* The version comes before everything else: a newer writer may have
	 * changed any other field, and "too new" is the useful message then. */
	if ((ret = get_int(c, top, "", "version", INT64_MIN, INT64_MAX, &version)) < 0)
		return ret;
	if (version < 1 || version > GK_FORMAT_VERSION) {
		fail(c,
		     "format version %" PRId64
		     " is not supported (this gpuckpt reads versions 1 to %d)",
		     version, GK_FORMAT_VERSION);
		return -EPROTO;
	}
	m->version = (int)version;
	c->version = m->version;
	if ((ret = parse_header(c, top, m)) < 0 ||
	    (m->version >= 3 && (ret = parse_identity(c, top, m)) < 0) ||
	    (ret = parse_devices(c, top, m)) < 0 ||
	    (ret = parse_files(c, top, m)) < 0 || (ret = parse_allocs(c, top, m)) < 0 ||
	    (ret = parse_regions(c, top, m)) < 0 || (ret = parse_imports(c, top, m)) < 0 ||
	    (ret = check_spans(c, m)) < 0 ||
	    (ret = check_orders(c, m)) < 0)
		return ret;
	return 0;
}

int gk_manifest_parse(const char *text, size_t len, struct gk_manifest **out, gk_error_t *err)
{
	struct pctx c = {.err = err};
	enum json_tokener_error jerr;
	struct gk_manifest *m = NULL;
	json_object *top = NULL;
	json_tokener *tok;
	const char *nul;
	size_t end;
	int ret;

	*out = NULL;
	gk_errclear(err);
	nul = memchr(text, 0, len);
	if (nul)
		return fail(&c, "the manifest contains a NUL byte at offset %zu",
			    (size_t)(nul - text));
	if (len > INT_MAX)
		return fail(&c, "the manifest is too large (%zu bytes)", len);
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	top = json_tokener_parse_ex(tok, text, (int)len);
	jerr = json_tokener_get_error(tok);
	if (jerr == json_tokener_continue) {
		ret =
		    fail(&c, "truncated or malformed JSON at offset %zu: the text ends early", len);
		goto out_tok;
	}
	if (jerr != json_tokener_success) {
		ret = fail(&c, "truncated or malformed JSON at offset %zu: %s",
			   json_tokener_get_parse_end(tok), json_tokener_error_desc(jerr));
		goto out_tok;
	}
	end = json_tokener_get_parse_end(tok);
	while (end < len &&
	       (text[end] == ' ' || text[end] == '\n' || text[end] == '\t' || text[end] == '\r'))
		end++;
	if (end < len) {
		ret = fail(&c, "unexpected text after the manifest at offset %zu", end);
		goto out_tok;
	}
	m = gk_manifest_new();
	if (!m) {
		ret = -ENOMEM;
		goto out_tok;
	}
	ret = parse_top(&c, top, m);
	if (ret == -ENOMEM)
		fail(&c, "out of memory reading the manifest");
	if (ret < 0) {
		gk_manifest_free(m);
		goto out_tok;
	}
	*out = m;
out_tok:
	json_object_put(top);
	json_tokener_free(tok);
	return ret;
}
