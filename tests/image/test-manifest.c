/*
 * test-manifest - the manifest survives a round trip through JSON, and every
 * validation rule refuses what it should, with a message naming the problem.
 * Bad manifests are made by editing a good one's JSON at a path, so that
 * each case differs from a valid manifest in exactly one way.
 */
#include "config.h"
#include "image/image.h"
#include "tap.h"
#include "common/error.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

static void set_chunks(struct gk_chunk **c, uint32_t *n, uint32_t count, uint64_t base)
{
	*n = count;
	*c = calloc(count, sizeof(**c));
	for (uint32_t i = 0; i < count; i++)
		(*c)[i].sum = base + i * 0x0101010101010101ull;
}

/* Two devices, three allocations, one host region, three files. */
static void set_part(struct gk_alloc_rec *a, const char *file, uint64_t offset, uint64_t start,
		     uint64_t size)
{
	struct gk_part *p;

	a->parts = realloc(a->parts, (a->nparts + 1) * sizeof(*a->parts));
	p = &a->parts[a->nparts++];
	memset(p, 0, sizeof(*p));
	snprintf(p->file, sizeof(p->file), "%s", file);
	p->offset = offset;
	p->start = start;
	p->size = size;
}

static int same_parts(const struct gk_alloc_rec *x, const struct gk_alloc_rec *y)
{
	if (x->nparts != y->nparts)
		return 0;
	for (uint32_t k = 0; k < x->nparts; k++)
		if (strcmp(x->parts[k].file, y->parts[k].file) ||
		    x->parts[k].sequence != y->parts[k].sequence ||
		    x->parts[k].offset != y->parts[k].offset ||
		    x->parts[k].start != y->parts[k].start || x->parts[k].size != y->parts[k].size)
			return 0;
	return 1;
}

static struct gk_manifest *good_manifest(void)
{
	struct gk_manifest *m = gk_manifest_new();

	strcpy(m->created, "2026-11-22T10:00:00Z");
	m->created_unix = 1795341600;
	m->write_seconds = 1.25;
	strcpy(m->hostname, "node17");
	m->uid = 1000;
	m->pid = 4242;
	m->slurm = 1;
	strcpy(m->job_id, "123");
	strcpy(m->step_id, "0");
	m->task = 3;
	m->restart_count = 2;
	strcpy(m->label, "step 500");
	m->step = 500;
	m->sequence = 7;
	strcpy(m->id, "0123456789abcdef0123456789abcdef");
	m->chunk_size = 4096;
	m->va_base = 0x200000000000ull;
	m->va_size = 2ull << 40;

	m->ndevices = 2;
	m->devices = calloc(2, sizeof(*m->devices));
	for (int d = 0; d < 2; d++) {
		struct gk_device_rec *dev = &m->devices[d];

		dev->ordinal = d;
		snprintf(dev->name, sizeof(dev->name), "NVIDIA H100 80GB HBM3");
		snprintf(dev->uuid, sizeof(dev->uuid), "GPU-1234567%d-89ab-cdef-0123-456789abcdef",
			 d);
		dev->cc_major = 9;
		dev->cc_minor = 0;
		dev->total_memory = 85028896768ull;
		dev->va_base = 0x200000000000ull + ((uint64_t)d << 40);
		dev->va_size = 1ull << 40;
		dev->next_order = d == 0 ? 3 : 1;
		dev->mapped_bytes = d == 0 ? (4ull << 20) : (2ull << 20);
	}

	m->nallocs = 3;
	m->allocs = calloc(3, sizeof(*m->allocs));
	m->allocs[0] = (struct gk_alloc_rec){
	    .device = 0, .address = 0x200000000000ull, .size = 8192, .order = 0};
	m->allocs[1] = (struct gk_alloc_rec){
	    .device = 0, .address = 0x200000200000ull, .size = 4096, .order = 2};
	m->allocs[2] = (struct gk_alloc_rec){
	    .device = 1, .address = 0x210000000000ull, .size = 100, .order = 0};
	strcpy(m->allocs[0].kind, "alloc");
	strcpy(m->allocs[1].kind, "pitch");
	strcpy(m->allocs[2].kind, "async");
	/* Allocation 0 in two parts, in two files: a chunk each. */
	set_part(&m->allocs[0], "device0.data", 0, 0, 4096);
	set_part(&m->allocs[0], "device1.data", 4096, 4096, 4096);
	set_part(&m->allocs[1], "device0.data", 8192, 0, 4096);
	set_part(&m->allocs[2], "device1.data", 0, 0, 100);
	set_chunks(&m->allocs[0].chunks, &m->allocs[0].nchunks, 2, 0xfedcba9876543210ull);
	set_chunks(&m->allocs[1].chunks, &m->allocs[1].nchunks, 1, 0x1ull);
	set_chunks(&m->allocs[2].chunks, &m->allocs[2].nchunks, 1, 0xffffffffffffffffull);
	/* Change keys on allocation 0 only: they are optional. */
	m->allocs[0].has_keys = 1;
	m->allocs[0].chunks[0].key = 0x1111111111111111ull;
	m->allocs[0].chunks[1].key = 0x2222222222222222ull;

	m->nregions = 1;
	m->regions = calloc(1, sizeof(*m->regions));
	strcpy(m->regions[0].name, "params");
	m->regions[0].size = 5000;
	strcpy(m->regions[0].file, "host.data");
	set_chunks(&m->regions[0].chunks, &m->regions[0].nchunks, 2, 0x42ull);

	m->nfiles = 3;
	m->files = calloc(3, sizeof(*m->files));
	strcpy(m->files[0].name, "device0.data");
	m->files[0].size = 12288;
	strcpy(m->files[1].name, "device1.data");
	m->files[1].size = 8192;
	strcpy(m->files[2].name, "host.data");
	m->files[2].size = 8192;
	return m;
}

static int same_manifest(const struct gk_manifest *a, const struct gk_manifest *b)
{
	if (a->version != b->version || strcmp(a->created, b->created) ||
	    a->created_unix != b->created_unix || a->write_seconds != b->write_seconds ||
	    strcmp(a->hostname, b->hostname) || a->uid != b->uid || a->pid != b->pid ||
	    a->slurm != b->slurm || strcmp(a->job_id, b->job_id) ||
	    strcmp(a->step_id, b->step_id) || a->task != b->task ||
	    a->restart_count != b->restart_count || strcmp(a->label, b->label) ||
	    a->step != b->step || a->sequence != b->sequence || a->chunk_size != b->chunk_size ||
	    a->va_base != b->va_base || a->va_size != b->va_size || a->ndevices != b->ndevices ||
	    a->nallocs != b->nallocs || a->nregions != b->nregions || a->nfiles != b->nfiles ||
	    strcmp(a->id, b->id) || a->increment != b->increment || a->nrefs != b->nrefs)
		return 0;
	for (size_t i = 0; i < a->nrefs; i++) {
		const struct gk_ref *x = &a->refs[i], *y = &b->refs[i];

		if (x->sequence != y->sequence || strcmp(x->id, y->id) || x->nfiles != y->nfiles)
			return 0;
		for (size_t f = 0; f < x->nfiles; f++)
			if (strcmp(x->files[f].name, y->files[f].name) ||
			    x->files[f].size != y->files[f].size)
				return 0;
	}
	for (size_t i = 0; i < a->ndevices; i++) {
		const struct gk_device_rec *x = &a->devices[i], *y = &b->devices[i];

		if (x->ordinal != y->ordinal || strcmp(x->name, y->name) ||
		    strcmp(x->uuid, y->uuid) || x->cc_major != y->cc_major ||
		    x->cc_minor != y->cc_minor || x->total_memory != y->total_memory ||
		    x->va_base != y->va_base || x->va_size != y->va_size ||
		    x->next_order != y->next_order || x->mapped_bytes != y->mapped_bytes)
			return 0;
	}
	for (size_t i = 0; i < a->nallocs; i++) {
		const struct gk_alloc_rec *x = &a->allocs[i], *y = &b->allocs[i];

		if (x->device != y->device || x->address != y->address || x->size != y->size ||
		    x->order != y->order || strcmp(x->kind, y->kind) || !same_parts(x, y) ||
		    x->nchunks != y->nchunks || x->has_keys != y->has_keys ||
		    memcmp(x->chunks, y->chunks, x->nchunks * sizeof(*x->chunks)))
			return 0;
	}
	for (size_t i = 0; i < a->nregions; i++) {
		const struct gk_region_rec *x = &a->regions[i], *y = &b->regions[i];

		if (strcmp(x->name, y->name) || x->size != y->size || strcmp(x->file, y->file) ||
		    x->offset != y->offset || x->nchunks != y->nchunks ||
		    memcmp(x->chunks, y->chunks, x->nchunks * sizeof(*x->chunks)))
			return 0;
	}
	for (size_t i = 0; i < a->nfiles; i++)
		if (strcmp(a->files[i].name, b->files[i].name) ||
		    a->files[i].size != b->files[i].size)
			return 0;
	return 1;
}

/* ---- editing JSON at a path like "allocations[1].address" ---- */

static json_object *step_into(json_object *o, const char *tok, size_t len)
{
	const char *br = memchr(tok, '[', len);
	char key[64];
	json_object *v;

	snprintf(key, sizeof(key), "%.*s", (int)(br ? (size_t)(br - tok) : len), tok);
	if (!json_object_object_get_ex(o, key, &v))
		return NULL;
	if (br)
		v = json_object_array_get_idx(v, (size_t)atoi(br + 1));
	return v;
}

/* Set (or, with value NULL, delete) the field at `path`. */
static int edit(json_object *top, const char *path, const char *value)
{
	const char *tok = path, *dot;
	json_object *o = top, *v = value ? json_tokener_parse(value) : NULL;
	char key[64];
	const char *br;

	if (value && !v && strcmp(value, "null") != 0)
		return -1;
	while ((dot = strchr(tok, '.'))) {
		o = step_into(o, tok, (size_t)(dot - tok));
		if (!o)
			return -1;
		tok = dot + 1;
	}
	br = strchr(tok, '[');
	snprintf(key, sizeof(key), "%.*s", (int)(br ? (size_t)(br - tok) : strlen(tok)), tok);
	if (br) {
		json_object *arr;

		if (!json_object_object_get_ex(o, key, &arr))
			return -1;
		if (!value) {
			return json_object_array_del_idx(arr, (size_t)atoi(br + 1), 1);
		}
		return json_object_array_put_idx(arr, (size_t)atoi(br + 1), v);
	}
	if (!value) {
		json_object_object_del(o, key);
		return 0;
	}
	return json_object_object_add(o, key, v);
}

struct edit {
	const char *path, *value;
};

struct bad_case {
	const char *what;
	struct edit edits[3];
	int ret;
	const char *message;
};

#define DEL NULL

static const struct bad_case bad_cases[] = {
    {"wrong format name",
     {{"format", "\"other\""}},
     -EINVAL,
     "not a gpuckpt manifest (format is \"other\", not \"gpuckpt-image\")"},
    {"format missing", {{"format", DEL}}, -EINVAL, "missing field 'format'"},
    {"newer format version",
     {{"version", "7"}},
     -EPROTO,
     "format version 7 is not supported (this gpuckpt reads versions 1 to 6)"},
    {"a zero part in a version 3 manifest",
     {{"allocations[0].parts[1]", "{\"zero\": true, \"size\": 4096}"}},
     -EINVAL,
     "field 'allocations[0].parts[1].zero' needs format version 5 (this is 3)"},
    {"a zero part that names a file",
     {{"version", "5"},
      {"allocations[0].parts[1]", "{\"zero\": true, \"file\": \"device1.data\", \"size\": 4096}"}},
     -EINVAL,
     "allocations[0].parts[1] is a zero part, held by no file: it has no 'file'"},
    {"a zero part that is not",
     {{"version", "5"}, {"allocations[0].parts[1]", "{\"zero\": false, \"size\": 4096}"}},
     -EINVAL,
     "field 'allocations[0].parts[1].zero' is false"},
    {"a zero flag that is not a boolean",
     {{"version", "5"}, {"allocations[0].parts[1]", "{\"zero\": 1, \"size\": 4096}"}},
     -EINVAL,
     "field 'allocations[0].parts[1].zero' must be true or false"},
    {"version as a string", {{"version", "\"1\""}}, -EINVAL, "field 'version' must be an integer"},
    {"created missing", {{"created", DEL}}, -EINVAL, "missing field 'created'"},
    {"created not UTC",
     {{"created", "\"2026-11-22 10:00:00+01:00\""}},
     -EINVAL,
     "field 'created' must be a UTC time"},
    {"negative uid", {{"uid", "-5"}}, -EINVAL, "field 'uid' must not be negative (-5)"},
    {"pid 0", {{"pid", "0"}}, -EINVAL, "field 'pid' is out of range"},
    {"write_seconds negative",
     {{"write_seconds", "-1.5"}},
     -EINVAL,
     "field 'write_seconds' must be a non-negative number"},
    {"slurm task not a number",
     {{"slurm.task", "\"3\""}},
     -EINVAL,
     "field 'slurm.task' must be an integer"},
    {"slurm without job id", {{"slurm.job_id", DEL}}, -EINVAL, "missing field 'slurm.job_id'"},
    {"label not a string", {{"label", "5"}}, -EINVAL, "field 'label' must be a string"},
    {"chunk size not a multiple of 4096",
     {{"chunk_size", "1000"}},
     -EINVAL,
     "chunk_size 1000 is not allowed"},
    {"va base not hex",
     {{"va.base", "\"12345\""}},
     -EINVAL,
     "field 'va.base' must be a hex string like \"0x200000000000\""},
    {"address with 17 hex digits",
     {{"allocations[0].address", "\"0x10000000000000000\""}},
     -EINVAL,
     "field 'allocations[0].address' must be a hex string"},
    {"devices not an array", {{"devices", "{}"}}, -EINVAL, "field 'devices' must be an array"},
    {"compute capability without minor",
     {{"devices[0].compute_capability", "\"9\""}},
     -EINVAL,
     "field 'devices[0].compute_capability' must look like \"9.0\" (got \"9\")"},
    {"device listed twice",
     {{"devices[1].ordinal", "0"}},
     -EINVAL,
     "device 0 is listed twice (devices[0] and devices[1])"},
    {"device ranges overlap",
     {{"devices[1].va_base", "\"0x200000100000\""}},
     -EINVAL,
     "device 1's range overlaps device 0's"},
    {"file name climbing out",
     {{"files[0].name", "\"../../etc/passwd\""}},
     -EINVAL,
     "file name '../../etc/passwd' is not allowed (files[0].name)"},
    {"file name with a slash",
     {{"files[0].name", "\"sub/device0.data\""}},
     -EINVAL,
     "file name 'sub/device0.data' is not allowed (files[0].name)"},
    {"data file named like the manifest",
     {{"files[2].name", "\"manifest.json\""}},
     -EINVAL,
     "file name 'manifest.json' is not allowed (files[2].name)"},
    {"file listed twice",
     {{"files[1].name", "\"device0.data\""}},
     -EINVAL,
     "file 'device0.data' is listed twice (files[0] and files[1])"},
    {"allocation in a file climbing out",
     {{"allocations[0].parts[1].file", "\"../../etc/passwd\""}},
     -EINVAL,
     "file name '../../etc/passwd' is not allowed (allocations[0].parts[1].file)"},
    {"allocation in an unlisted file",
     {{"allocations[2].parts[0].file", "\"other.data\""}},
     -EINVAL,
     "allocation 2 is in file 'other.data', which is not listed in 'files'"},
    {"allocations overlap",
     {{"allocations[1].address", "\"0x200000001000\""}},
     -EINVAL,
     "allocation 1 (0x200000001000, 4096 bytes) overlaps allocation 0"},
    {"allocations out of order",
     {{"allocations[0].address", "\"0x200000400000\""}},
     -EINVAL,
     "allocation 1 (device 0, 0x200000200000) is out of order"},
    {"allocation outside its device's range",
     {{"allocations[2].address", "\"0x220000000000\""}},
     -EINVAL,
     "allocation 2 (0x220000000000, 100 bytes) lies outside device 1's range "
     "0x210000000000-0x220000000000"},
    {"allocation on an unknown device",
     {{"allocations[2].device", "5"}},
     -EINVAL,
     "allocation 2 is on device 5, which is not listed in 'devices'"},
    {"allocation order past next_order",
     {{"allocations[1].order", "3"}},
     -EINVAL,
     "allocation 1 has order 3, not below device 0's next_order 3"},
    {"two allocations with one order",
     {{"allocations[1].order", "0"}},
     -EINVAL,
     "allocation 1 has order 0, like allocation 0 on device 0"},
    {"empty kind",
     {{"allocations[0].kind", "\"\""}},
     -EINVAL,
     "field 'allocations[0].kind' is empty"},
    {"negative size",
     {{"allocations[0].size", "-1"}},
     -EINVAL,
     "field 'allocations[0].size' must not be negative"},
    {"a checksum missing",
     {{"allocations[0].xxh3[1]", DEL}},
     -EINVAL,
     "allocation 0 has 1 checksums, expected 2 (8192 bytes in chunks of 4096 bytes)"},
    {"a checksum not hex",
     {{"allocations[0].xxh3[1]", "\"xyz\""}},
     -EINVAL,
     "field 'allocations[0].xxh3[1]' must be 16 hex digits"},
    {"checksums under the older format's name",
     {{"allocations[2].xxh64", "[\"0000000000000000\"]"}, {"allocations[2].xxh3", DEL}},
     -EINVAL,
     "missing field 'allocations[2].xxh3'"},
    {"a change key missing",
     {{"allocations[0].keys[1]", DEL}},
     -EINVAL,
     "allocation 0 has 1 change keys, expected 2"},
    {"a change key not hex",
     {{"allocations[0].keys[0]", "\"1234\""}},
     -EINVAL,
     "field 'allocations[0].keys[0]' must be 16 hex digits"},
    {"id missing", {{"id", DEL}}, -EINVAL, "missing field 'id'"},
    {"id not 32 hex digits",
     {{"id", "\"0123456789ABCDEF0123456789abcdef\""}},
     -EINVAL,
     "field 'id' must be 32 lowercase hex digits"},
    {"increment missing", {{"increment", DEL}}, -EINVAL, "missing field 'increment'"},
    {"references missing", {{"references", DEL}}, -EINVAL, "missing field 'references'"},
    {"a part in another checkpoint that is not referenced",
     {{"allocations[1].parts[0].sequence", "5"}},
     -EINVAL,
     "allocation 1 lies in checkpoint 5, which is not listed in 'references'"},
    {"a part whose sequence is the checkpoint's own",
     {{"allocations[1].parts[0].sequence", "7"}},
     -EINVAL,
     "field 'allocations[1].parts[0].sequence' is 7: name another checkpoint"},
    {"data past the end of its file",
     {{"files[0].size", "10000"}},
     -EINVAL,
     "allocation 1's data (offset 8192, 4096 bytes) runs past the end of 'device0.data' "
     "(10000 bytes)"},
    {"unaligned data offset",
     {{"allocations[1].parts[0].offset", "8200"}},
     -EINVAL,
     "allocation 1's data offset 8200 in 'device0.data' is not a multiple of 4096"},
    {"two objects share bytes",
     {{"allocations[1].parts[0].offset", "0"}},
     -EINVAL,
     "the data of allocation 1 overlaps the data of allocation 0 in 'device0.data'"},
    {"two objects share bytes in another file",
     {{"allocations[2].parts[0].offset", "4096"}},
     -EINVAL,
     "the data of allocation 2 overlaps the data of allocation 0 in 'device1.data'"},
    {"parts that leave bytes out",
     {{"allocations[0].parts[1].size", "2048"}},
     -EINVAL,
     "the parts of allocation 0 hold 6144 of its 8192 bytes"},
    {"parts that hold too much",
     {{"allocations[0].parts[1].size", "8192"}},
     -EINVAL,
     "the parts of allocation 0 hold more than its 8192 bytes"},
    {"a part that splits a chunk",
     {{"allocations[0].parts[0].size", "2048"}, {"allocations[0].parts[1].size", "6144"}},
     -EINVAL,
     "part 0 of allocation 0 (2048 bytes) is not a whole number of chunks of 4096 bytes"},
    {"an empty part",
     {{"allocations[0].parts[1].size", "0"}},
     -EINVAL,
     "field 'allocations[0].parts[1].size' is 0: a part holds at least one byte"},
    {"no parts",
     {{"allocations[0].parts", "[]"}},
     -EINVAL,
     "allocation 0 has no parts: its 8192 bytes are nowhere"},
    {"parts missing", {{"allocations[1].parts", DEL}}, -EINVAL, "allocations[1].parts"},
    {"version 2: checksums named xxh64",
     {{"version", "2"}},
     -EINVAL,
     "missing field 'allocations[0].xxh64'"},
    {"version 1: one file and offset per allocation",
     {{"version", "1"}},
     -EINVAL,
     "allocations[0].file"},
    {"region name with a slash",
     {{"host_regions[0].name", "\"a/b\""}},
     -EINVAL,
     "region name 'a/b' is not allowed (host_regions[0].name)"},
    {"region checksum count",
     {{"host_regions[0].size", "4000"}},
     -EINVAL,
     "host region 'params' has 2 checksums, expected 1"},
    {"host_regions missing", {{"host_regions", DEL}}, -EINVAL, "missing field 'host_regions'"},
    {"allocation not an object",
     {{"allocations[0]", "5"}},
     -EINVAL,
     "allocations[0] must be an object"},
};

/* Edits of the increment (the good manifest with allocation 1 in
 * checkpoint 5, see main). */
static const struct bad_case bad_incr_cases[] = {
    {"an increment that says it is not one",
     {{"increment", "0"}},
     -EINVAL,
     "the checkpoint refers to 1 others but is not an increment"},
    {"a reference to a newer checkpoint",
     {{"references[0].sequence", "9"}},
     -EINVAL,
     "references[0] names checkpoint 9: a reference is to an older checkpoint than this one"},
    {"a reference to itself",
     {{"references[0].sequence", "7"}},
     -EINVAL,
     "a reference is to an older checkpoint than this one (7)"},
    {"a reference with a bad id",
     {{"references[0].id", "\"abc\""}},
     -EINVAL,
     "field 'references[0].id' must be 32 lowercase hex digits"},
    {"a reference without files",
     {{"references[0].files", "[]"}},
     -EINVAL,
     "references[0] lists no files"},
    {"a referenced file climbing out",
     {{"references[0].files[0].name", "\"../ckpt.000001/x\""}},
     -EINVAL,
     "file name '../ckpt.000001/x' is not allowed (references[0].files[0].name)"},
    {"a part in a file the reference does not list",
     {{"allocations[1].parts[0].file", "\"device1.data\""}},
     -EINVAL,
     "allocation 1 is in file 'device1.data' of checkpoint 5, which its reference does not list"},
    {"a part past the end of the referenced file",
     {{"references[0].files[0].size", "8192"}},
     -EINVAL,
     "allocation 1's data (offset 12288, 4096 bytes) runs past the end of 'device0.data' "
     "(8192 bytes)"},
    {"one checkpoint referenced twice",
     {{"references[1]", "{\"sequence\": 5, \"id\": \"00000000000000000000000000000005\", "
		       "\"files\": [{\"name\": \"x.data\", \"size\": 1}]}"}},
     -EINVAL,
     "checkpoint 5 is referenced twice"},
};

/* Format 3 JSON as formats 1 and 2 name checksums: "xxh64" for "xxh3". */
static void rename_sums(json_object *top)
{
	static const char *const lists[] = {"allocations", "host_regions"};

	for (int l = 0; l < 2; l++) {
		json_object *arr = json_object_object_get(top, lists[l]);

		for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
			json_object *o = json_object_array_get_idx(arr, i);
			json_object *sums = json_object_get(json_object_object_get(o, "xxh3"));

			json_object_object_del(o, "xxh3");
			json_object_object_add(o, "xxh64", sums);
		}
	}
}

static void check_bad(const char *good_text, const struct bad_case *c)
{
	json_object *top = json_tokener_parse(good_text);
	struct gk_manifest *m = NULL;
	gk_error_t err = {""};
	const char *text;
	int ret = -1;

	for (int i = 0; i < 3 && c->edits[i].path; i++)
		if (edit(top, c->edits[i].path, c->edits[i].value) < 0) {
			ok(0, "%s: cannot apply the edit of %s", c->what, c->edits[i].path);
			json_object_put(top);
			return;
		}
	text = json_object_to_json_string(top);
	ret = gk_manifest_parse(text, strlen(text), &m, &err);
	if (!ok(ret == c->ret && m == NULL && strstr(err.text, c->message), "refused: %s", c->what))
		printf("#   ret %d (expected %d), message: %s\n#   expected it to contain: %s\n",
		       ret, c->ret, err.text, c->message);
	gk_manifest_free(m);
	json_object_put(top);
}

static void check_text(const char *text, size_t len, const char *what, const char *message)
{
	struct gk_manifest *m = NULL;
	gk_error_t err = {""};
	int ret = gk_manifest_parse(text, len, &m, &err);

	if (!ok(ret == -EINVAL && !m && strstr(err.text, message), "refused: %s", what))
		printf("#   ret %d, message: %s\n#   expected it to contain: %s\n", ret, err.text,
		       message);
	gk_manifest_free(m);
}

/* One manifest text changed at one path each time: each must be refused
 * with its message. */
struct text_edit {
	const char *what, *path, *value, *message;
};

static void check_edits(const char *text, const struct text_edit *bad, size_t n)
{
	for (size_t i = 0; text && i < n; i++) {
		json_object *top = json_tokener_parse(text);
		const char *t;

		edit(top, bad[i].path, bad[i].value);
		t = json_object_to_json_string(top);
		check_text(t, strlen(t), bad[i].what, bad[i].message);
		json_object_put(top);
	}
}

int main(void)
{
	struct gk_manifest *m = good_manifest(), *back = NULL;
	char *text = NULL, *again = NULL, *buf, expect[64];
	gk_error_t err = {""};
	size_t len = 0, len2 = 0, pos, nbad = sizeof(bad_cases) / sizeof(bad_cases[0]);
	int ret;

	plan((int)(44 + nbad + sizeof(bad_incr_cases) / sizeof(bad_incr_cases[0])));

	is_int(gk_manifest_to_json(m, &text, &len), 0, "a manifest serialises");
	ret = gk_manifest_parse(text, len, &back, &err);
	if (!ok(ret == 0 && back, "and parses back"))
		printf("#   %s\n", err.text);
	ok(back && same_manifest(m, back), "every field survives the round trip");
	if (back)
		gk_manifest_to_json(back, &again, &len2);
	ok(again && len == len2 && memcmp(text, again, len) == 0,
	   "serialising the parsed manifest gives the same text");
	ok(strstr(text, "\"address\": \"0x200000200000\"") != NULL,
	   "addresses are written as hex strings");
	ok(strstr(text, "\"fedcba9876543210\"") != NULL, "checksums are 16 hex digits");
	gk_manifest_free(back);
	free(again);
	again = NULL;
	back = NULL;

	/* Without Slurm, the slurm object is left out and parses as such. */
	m->slurm = 0;
	gk_manifest_to_json(m, &again, &len2);
	ret = gk_manifest_parse(again, len2, &back, &err);
	ok(ret == 0 && back && !back->slurm && !strstr(again, "\"slurm\""),
	   "a manifest without Slurm fields round-trips without them");
	gk_manifest_free(back);
	free(again);
	back = NULL;

	/* Forward compatibility within a version: unknown fields are ignored. */
	{
		json_object *top = json_tokener_parse(text);
		const char *t;

		edit(top, "future_field", "{\"x\": [1, 2]}");
		edit(top, "allocations[0].numa_node", "1");
		t = json_object_to_json_string(top);
		ret = gk_manifest_parse(t, strlen(t), &back, &err);
		if (!ok(ret == 0 && back, "unknown extra fields are ignored"))
			printf("#   %s\n", err.text);
		gk_manifest_free(back);
		back = NULL;
		json_object_put(top);
	}

	/* Peer access (format 4): written only by a checkpoint that holds it,
	 * so that one without stays readable by a gpuckpt that reads up to 3. */
	ok(strstr(text, "\"version\": 3,") && !strstr(text, "peer_access"),
	   "a manifest without peer access is written as format 3");
	m->devices[0].peer_access = 1ull << 1;
	m->devices[1].peer_access = 1ull << 0 | 1ull << 5;
	gk_manifest_to_json(m, &again, &len2);
	ok(again && strstr(again, "\"version\": 4,") && strstr(again, "\"peer_access\": ["),
	   "one with peer access is format 4 and lists the ordinals granted");
	ret = again ? gk_manifest_parse(again, len2, &back, &err) : -1;
	if (!ok(ret == 0 && back && back->version == 4 && back->devices[0].peer_access == 2 &&
		    back->devices[1].peer_access == 0x21,
		"and parses back with the same grants"))
		printf("#   %d: %s\n", ret, err.text);
	gk_manifest_free(back);
	back = NULL;
	{
		static const struct text_edit bad[] = {
		    {"its own ordinal", "devices[0].peer_access", "[0]",
		     "field 'devices[0].peer_access[0]' must be another device's ordinal below 64"},
		    {"an ordinal of 64", "devices[0].peer_access", "[1, 64]",
		     "field 'devices[0].peer_access[1]' must be another device's ordinal below 64"},
		    {"an ordinal twice", "devices[1].peer_access", "[0, 0]",
		     "field 'devices[1].peer_access' lists device 0 twice"},
		    {"peer access in format 3", "version", "3",
		     "field 'devices[0].peer_access' needs format version 4 (this is 3)"},
		};

		check_edits(again, bad, sizeof(bad) / sizeof(bad[0]));
	}
	free(again);
	again = NULL;
	m->devices[0].peer_access = m->devices[1].peer_access = 0;

	/* CUDA IPC imports (format 6): written only by a checkpoint that has
	 * them, in the order of the opens. */
	{
		struct gk_import_rec imp[2] = {{0, 0x180100000000ull, 1 << 20, 0x200000200000ull},
					       {3, 0x180400100000ull, 65536, 0x200000300000ull}};
		static const struct text_edit bad[] = {
		    {"imports out of the order of the opens", "ipc_imports[1].ordinal", "0",
		     "ipc_imports[1].ordinal 0 does not follow 0"},
		    {"an import of no bytes", "ipc_imports[0].size", "0",
		     "ipc_imports[0]: address 0x180100000000 and size 0 are not a block of memory"},
		    {"imports in format 5", "version", "5",
		     "field 'ipc_imports' needs format version 6 (this is 5)"},
		};

		m->imports = imp;
		m->nimports = 2;
		gk_manifest_to_json(m, &again, &len2);
		m->imports = NULL;
		m->nimports = 0;
		ok(again && strstr(again, "\"version\": 6,") && strstr(again, "\"ipc_imports\": ["),
		   "one with CUDA IPC imports is format 6 and lists them");
		ret = again ? gk_manifest_parse(again, len2, &back, &err) : -1;
		if (!ok(ret == 0 && back && back->version == 6 && back->nimports == 2 &&
			    !memcmp(back->imports, imp, sizeof(imp)),
			"and parses back with the same opens, in order"))
			printf("#   %d: %s\n", ret, err.text);
		gk_manifest_free(back);
		back = NULL;
		check_edits(again, bad, sizeof(bad) / sizeof(bad[0]));
		free(again);
		again = NULL;
	}

	/* A version 1 manifest (gpuckpt before parts) is still read: each
	 * allocation's "file" and "offset" become its one part. */
	{
		json_object *top = json_tokener_parse(text);
		const struct gk_part *p;
		const char *t;

		edit(top, "version", "1");
		rename_sums(top);
		edit(top, "allocations[0]", DEL);
		edit(top, "allocations[0].parts", DEL);
		edit(top, "allocations[0].file", "\"device0.data\"");
		edit(top, "allocations[0].offset", "8192");
		edit(top, "allocations[1].parts", DEL);
		edit(top, "allocations[1].file", "\"device1.data\"");
		edit(top, "allocations[1].offset", "0");
		t = json_object_to_json_string(top);
		ret = gk_manifest_parse(t, strlen(t), &back, &err);
		p = ret == 0 && back && back->nallocs == 2 && back->allocs[0].nparts == 1
			? &back->allocs[0].parts[0]
			: NULL;
		if (!ok(p && !strcmp(p->file, "device0.data") && p->offset == 8192 &&
			    p->start == 0 && p->size == 4096 && back->version == 1,
			"a version 1 manifest is read, each allocation one part"))
			printf("#   ret %d: %s\n", ret, err.text);
		gk_manifest_free(back);
		back = NULL;
		json_object_put(top);
	}

	for (size_t i = 0; i < nbad; i++)
		check_bad(text, &bad_cases[i]);

	/* Format 3: an increment whose allocation 1 lies in checkpoint 5. */
	{
		struct gk_manifest *inc = good_manifest();
		struct gk_ref *r;
		char *itext = NULL, *iagain = NULL;
		size_t ilen = 0, ilen2 = 0;

		inc->increment = 2;
		inc->nrefs = 1;
		inc->refs = calloc(1, sizeof(*inc->refs));
		r = &inc->refs[0];
		r->sequence = 5;
		strcpy(r->id, "00000000000000000000000000000005");
		r->nfiles = 1;
		r->files = calloc(1, sizeof(*r->files));
		strcpy(r->files[0].name, "device0.data");
		r->files[0].size = 16384;
		inc->allocs[1].parts[0].sequence = 5;
		inc->allocs[1].parts[0].offset = 12288;
		is_int(gk_manifest_to_json(inc, &itext, &ilen), 0, "an increment serialises");
		ret = gk_manifest_parse(itext, ilen, &back, &err);
		if (!ok(ret == 0 && back && same_manifest(inc, back),
			"and parses back with its reference and the part that lies there"))
			printf("#   %d: %s\n", ret, err.text);
		if (back)
			gk_manifest_to_json(back, &iagain, &ilen2);
		ok(iagain && ilen == ilen2 && !memcmp(itext, iagain, ilen),
		   "serialising it again gives the same text");
		ok(strstr(itext, "\"sequence\": 5") && strstr(itext, "\"references\""),
		   "the part names the checkpoint it lies in");
		{
			struct gk_chunk_loc loc;

			ok(back && gk_chunk_where(back, &back->allocs[1], 0, &loc) == 0 &&
				   loc.sequence == 5 && !strcmp(loc.file, "device0.data") &&
				   loc.offset == 12288,
			   "gk_chunk_where finds a chunk in the referenced checkpoint");
			ok(back && gk_chunk_where(back, &back->allocs[0], 1, &loc) == 0 &&
				   loc.sequence == 7 && !strcmp(loc.file, "device1.data") &&
				   loc.offset == 4096,
			   "... and one of the checkpoint's own under its own sequence");
		}
		gk_manifest_free(back);
		back = NULL;
		free(iagain);
		for (size_t i = 0; i < sizeof(bad_incr_cases) / sizeof(bad_incr_cases[0]); i++)
			check_bad(itext, &bad_incr_cases[i]);
		free(itext);
		gk_manifest_free(inc);
	}

	/* gk_parts_from_chunks: consecutive chunks that follow each other in a
	 * file make one part. */
	{
		struct gk_alloc_rec a = {.size = 5 * 4096 - 100, .nchunks = 5};
		struct gk_chunk_loc locs[5] = {
		    {0, "device0.data", 0, 0},	 {0, "device0.data", 4096, 0},
		    {3, "device0.data", 0, 0},	 {3, "device0.data", 4096, 0},
		    {0, "device0.1.data", 0, 0},
		};

		ok(gk_parts_from_chunks(&a, 4096, 7, locs) == 0 && a.nparts == 3 &&
			   a.parts[0].sequence == 0 && a.parts[0].size == 8192 &&
			   a.parts[1].sequence == 3 && a.parts[1].start == 8192 &&
			   a.parts[1].size == 8192 && a.parts[2].start == 16384 &&
			   a.parts[2].size == 4096 - 100 && !strcmp(a.parts[2].file, "device0.1.data"),
		   "parts from chunk locations: runs merged, a new part where the file changes");
		free(a.parts);
	}

	/* Zero chunks (format 5): consecutive ones make one zero part, held by
	 * no file; a manifest with one is written as version 5 and read back;
	 * gk_chunk_where says the chunk is zero. */
	{
		struct gk_alloc_rec a = {.size = 4 * 4096, .nchunks = 4};
		struct gk_chunk_loc locs[4] = {
		    {0, "device0.data", 0, 0},
		    {0, "", 0, 1},
		    {0, "", 0, 1},
		    {0, "device0.data", 4096, 0},
		};

		ok(gk_parts_from_chunks(&a, 4096, 7, locs) == 0 && a.nparts == 3 &&
		       !a.parts[0].zero && a.parts[1].zero && a.parts[1].start == 4096 &&
		       a.parts[1].size == 8192 && !a.parts[1].file[0] && !a.parts[2].zero &&
		       a.parts[2].offset == 4096,
		   "parts from chunk locations: consecutive zero chunks make one zero part");
		free(a.parts);
	}
	{
		struct gk_manifest *z = good_manifest();
		struct gk_manifest *zb = NULL;
		struct gk_chunk_loc loc = {0};
		char *zt = NULL;
		size_t zl = 0;

		/* Allocation 0's second chunk: zero, out of device1.data. */
		z->allocs[0].parts[1] = (struct gk_part){.zero = 1, .start = 4096, .size = 4096};
		ok(gk_manifest_to_json(z, &zt, &zl) == 0 && strstr(zt, "\"version\": 5") &&
		       strstr(zt, "\"zero\": true"),
		   "a manifest with a zero part is written as version 5");
		ret = zt ? gk_manifest_parse(zt, zl, &zb, &err) : -1;
		if (!ok(ret == 0 && zb && zb->version == 5 && zb->allocs[0].nparts == 2 &&
			    zb->allocs[0].parts[1].zero && zb->allocs[0].parts[1].size == 4096 &&
			    gk_chunk_where(zb, &zb->allocs[0], 1, &loc) == 0 && loc.zero,
			"... and read back: the part is zero, and so is its chunk's location"))
			printf("#   ret %d: %s\n", ret, err.text);
		gk_manifest_free(zb);
		free(zt);
		gk_manifest_free(z);
	}
	{
		static unsigned char zbuf[3 * 4096 + 7];

		ok(gk_sum_zeros(GK_SUM_XXH3, sizeof(zbuf)) ==
			   gk_sum(GK_SUM_XXH3, zbuf, sizeof(zbuf)) &&
		       gk_sum_zeros(GK_SUM_XXH64, 100) == gk_sum(GK_SUM_XXH64, zbuf, 100) &&
		       gk_sum_zeros(GK_SUM_XXH3, sizeof(zbuf)) ==
			   gk_sum(GK_SUM_XXH3, zbuf, sizeof(zbuf)),
		   "gk_sum_zeros is the checksum of zeros, kept or not");
		ok(gk_is_zero(zbuf + 1, sizeof(zbuf) - 1),
		   "gk_is_zero: zeros, from an odd address");
		zbuf[sizeof(zbuf) - 1] = 1;
		ok(!gk_is_zero(zbuf + 1, sizeof(zbuf) - 1) && gk_is_zero(zbuf, sizeof(zbuf) - 1),
		   "gk_is_zero: a non-zero last byte is seen, and only in range");
		zbuf[sizeof(zbuf) - 1] = 0;
		zbuf[100] = 0x80;
		ok(!gk_is_zero(zbuf, sizeof(zbuf)),
		   "gk_is_zero: a non-zero byte inside a block is seen");
	}

	/* A version 2 manifest (XXH64 checksums) is still read. */
	{
		json_object *top = json_tokener_parse(text);
		const char *t;

		edit(top, "version", "2");
		rename_sums(top);
		t = json_object_to_json_string(top);
		ret = gk_manifest_parse(t, strlen(t), &back, &err);
		if (!ok(ret == 0 && back && back->version == 2 && !back->allocs[0].has_keys &&
			    back->allocs[0].chunks[0].sum == 0xfedcba9876543210ull,
			"a version 2 manifest is read, its checksums under 'xxh64'"))
			printf("#   ret %d: %s\n", ret, err.text);
		gk_manifest_free(back);
		back = NULL;
		json_object_put(top);
	}

	/* Damage to the text itself. */
	check_text(text, len / 2, "manifest cut in half", "truncated or malformed JSON at offset");
	buf = strdup(text);
	pos = (size_t)(strstr(buf, "\"version\"") - buf);
	buf[pos] = '@';
	snprintf(expect, sizeof(expect), "malformed JSON at offset %zu:", pos);
	check_text(buf, len, "a stray character where a field name belongs", expect);
	free(buf);
	buf = malloc(len + 8);
	memcpy(buf, text, len);
	memcpy(buf + len, "{}", 2);
	check_text(buf, len + 2, "text after the manifest", "unexpected text after the manifest");
	memcpy(buf, text, len);
	buf[50] = 0;
	check_text(buf, len, "a NUL byte inside", "NUL byte at offset 50");
	free(buf);
	check_text("[1, 2]", 6, "a JSON array", "the manifest is not a JSON object");
	check_text("", 0, "an empty file", "truncated or malformed JSON at offset 0");

	ok(gk_name_valid("device0.data") && gk_name_valid("a-b_c.1") && !gk_name_valid("") &&
	       !gk_name_valid(".") && !gk_name_valid("..") && !gk_name_valid("a..b") &&
	       !gk_name_valid("a/b") && !gk_name_valid("a b") &&
	       !gk_name_valid("0123456789012345678901234567890123456789012345678901234567890123"),
	   "name rule: [A-Za-z0-9_.-], no '..', not empty, under 64 bytes");
	ok(gk_chunk_count(0, 4096) == 0 && gk_chunk_count(1, 4096) == 1 &&
	       gk_chunk_count(4096, 4096) == 1 && gk_chunk_count(4097, 4096) == 2,
	   "chunk count is ceil(size / chunk_size)");

	free(text);
	gk_manifest_free(m);
	return done_testing();
}
