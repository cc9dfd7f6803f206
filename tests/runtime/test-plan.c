/*
 * test-plan.c - what a checkpoint writes, at the unit: the plan
 * (runtime/core/capture/plan.c), the change keys (changes.c), the baseline
 * increments build on (baseline.c) and restore's plan of what is loaded
 * where (restore.c: gk_restore_items), with the runtime linked in
 * (libgkcore) and the CUDA stand-in as the driver (plan.sh).
 *
 * - describe: one record per live allocation, at its address, with its size
 *   and chunk count, in a .tmp folder;
 * - changes without a baseline: every chunk is written;
 * - commit: a committed folder the image library opens and checks, the
 *   baseline set to it;
 * - changes against the baseline: only the chunks whose bytes changed are
 *   written, the others lie in the baseline's files; the commit is an
 *   increment that refers to it;
 * - a baseline of another chunk size, or whose folder is gone, is not built on;
 * - a plan freed uncommitted leaves nothing;
 * - restore's plan: each part of each allocation is loaded from the file of
 *   the checkpoint that holds it, to its address; a listed file that is
 *   missing is an error naming it;
 * - restore's refusals: a checkpoint of another member of the step's set, or
 *   none; host regions this run did not register, or registered at another
 *   size; memory of a device this run has not allocated on.
 */
#include "config.h"

#include "tap.h"

#include "core/capture/baseline.h"
#include "image/image.h"
#include "core/capture/plan.h"
#include "core/state/regions.h"
#include "core/restore/restore.h"
#include "core/state/runtime.h"

#include <cuda.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MiB (1ull << 20)

static CUdeviceptr A, B; /* 3 MiB (3 chunks), 1000 bytes (1 chunk) */

/* Names in the checkpoint folder that contain `what`. */
static int count_names(const char *what)
{
	DIR *d = opendir(gk_rt.settings.dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		if (strstr(e->d_name, what))
			n++;
	if (d)
		closedir(d);
	return n;
}

static const struct gk_alloc_rec *rec_at(const struct gk_manifest *m, uint64_t addr, size_t *idx)
{
	for (size_t i = 0; i < m->nallocs; i++)
		if (m->allocs[i].address == addr) {
			if (idx)
				*idx = i;
			return &m->allocs[i];
		}
	return NULL;
}

static char changed_str[64];

/* "A:101 B:0": which chunks of A and B the plan writes. */
static const char *changed(const struct gk_plan *p)
{
	size_t ia = 0, ib = 0, n = 0;

	if (!rec_at(p->m, A, &ia) || !rec_at(p->m, B, &ib))
		return "A or B missing";
	n += (size_t)snprintf(changed_str + n, sizeof(changed_str) - n, "A:");
	for (uint32_t c = 0; c < p->m->allocs[ia].nchunks; c++)
		changed_str[n++] = p->a[ia].changed[c] ? '1' : '0';
	n += (size_t)snprintf(changed_str + n, sizeof(changed_str) - n, " B:");
	for (uint32_t c = 0; c < p->m->allocs[ib].nchunks; c++)
		changed_str[n++] = p->a[ib].changed[c] ? '1' : '0';
	changed_str[n] = 0;
	return changed_str;
}

/* What the last checkpoint() planned, before its commit handed the manifest
 * to the baseline. */
static char last_changed[64];
static uint64_t last_changed_bytes, last_locs[3];

/* A whole checkpoint through the plan's steps; its sequence, or 0. */
static uint64_t checkpoint(struct gk_plan *p, const struct gk_manifest *base,
			   struct gk_plan_result *res)
{
	gk_error_t err = {""};
	int ret;

	memset(res, 0, sizeof(*res));
	ret = gk_plan_describe(p, 1, 1, &err);
	if (ret == 0) {
		size_t ia = 0;

		gk_plan_changes(p, base, 1, 1);
		snprintf(last_changed, sizeof(last_changed), "%s", changed(p));
		last_changed_bytes = p->changed_bytes;
		if (rec_at(p->m, A, &ia))
			for (int c = 0; c < 3; c++)
				last_locs[c] = p->a[ia].locs[c].sequence;
		ret = gk_plan_layout(p, 1, &err);
	}
	if (ret == 0)
		ret = gk_plan_write(p, 1, &err);
	if (ret == 0)
		ret = gk_plan_commit(p, 0, res, &err);
	if (ret < 0)
		printf("# checkpoint failed: %d %s\n", ret, err.text);
	return ret < 0 ? 0 : res->sequence;
}

static struct gk_manifest *open_ckpt(uint64_t seq, gk_error_t *err)
{
	struct gk_load_opts lo = {.uid = getuid(), .check_data = 1};
	struct gk_manifest *m = NULL;
	char dir[8200];
	int is_signed = 0;

	snprintf(dir, sizeof(dir), "%s/" GK_CKPT_FMT, gk_rt.settings.dir, seq);
	if (gk_image_open(dir, &lo, &m, &is_signed, err) < 0)
		return NULL;
	return m;
}

static uint64_t seq1, seq2;

static void test_describe_and_full(void)
{
	struct gk_plan p;
	struct gk_plan_result res;
	gk_error_t err = {""};
	const struct gk_alloc_rec *ra, *rb;
	int tmp_before = count_names(".tmp"), ret;

	ret = gk_plan_describe(&p, 1, 1, &err);
	ok(ret == 0 && p.m->nallocs == 2 && p.na == 2,
	   "describe: one record per live allocation (%d, %zu records)", ret,
	   ret == 0 ? p.m->nallocs : 0);
	ra = rec_at(p.m, A, NULL);
	rb = rec_at(p.m, B, NULL);
	ok(ra && rb && ra->size == 3 * MiB && ra->nchunks == 3 && rb->size == 1000 &&
	       rb->nchunks == 1 && p.m->chunk_size == MiB && ra->device == 0,
	   "describe: each at its address, with its size and its chunks of 1 MiB");
	ok(count_names(".tmp") == tmp_before + 1, "describe: the checkpoint's .tmp folder is made");
	gk_plan_changes(&p, NULL, 1, 1);
	ok(!strcmp(changed(&p), "A:111 B:1") && p.changed_bytes == 3 * MiB + 1000 && !p.base &&
	       p.keys != GK_KEYS_NONE,
	   "changes without a baseline: every chunk written, keys found (%s, %llu bytes, keys "
	   "%d)",
	   changed_str, (unsigned long long)p.changed_bytes, (int)p.keys);
	ok(ra && ra->has_keys && ra->chunks[0].key == ra->chunks[2].key &&
	       ra->chunks[0].key != ra->chunks[1].key,
	   "chunks of equal bytes have equal keys, a chunk of other bytes another");
	ret = gk_plan_layout(&p, 1, &err);
	if (ret == 0)
		ret = gk_plan_write(&p, 1, &err);
	if (ret == 0)
		ret = gk_plan_commit(&p, 0, &res, &err);
	seq1 = ret == 0 ? res.sequence : 0;
	ok(ret == 0 && seq1 && res.nallocs == 2 && res.increment == 0 &&
	       count_names(".tmp") == tmp_before,
	   "layout, write, commit: checkpoint %llu, 2 allocations, whole (%d %s)",
	   (unsigned long long)seq1, ret, err.text);
	gk_plan_free(&p);
}

static void test_opened(void)
{
	gk_error_t err = {""};
	struct gk_manifest *m = open_ckpt(seq1, &err);
	const struct gk_manifest *b = gk_baseline_get();

	ok(m && m->sequence == seq1 && m->nallocs == 2 && rec_at(m, A, NULL) &&
	       rec_at(m, B, NULL) && m->increment == 0 && m->nrefs == 0,
	   "the committed checkpoint opens with its data checked: 2 allocations, no references "
	   "(%s)",
	   err.text);
	ok(b && b->sequence == seq1, "the baseline is the committed checkpoint (%llu)",
	   b ? (unsigned long long)b->sequence : 0ull);
	gk_manifest_free(m);
}

static void test_increment(void)
{
	struct gk_plan p;
	struct gk_plan_result res;
	gk_error_t err = {""};
	const struct gk_manifest *base = gk_baseline_get();
	struct gk_manifest fake;
	char moved[8300], dir1[8300];
	int ret;

	/* Nothing changed. */
	ret = gk_plan_describe(&p, 2, 1, &err);
	gk_plan_changes(&p, base, 1, 1);
	ok(ret == 0 && !strcmp(changed(&p), "A:000 B:0") && p.changed_bytes == 0 && p.base == base,
	   "nothing changed since the baseline: nothing to write (%s)", changed_str);
	gk_plan_free(&p);
	ok(count_names(".tmp") == 0, "a plan freed uncommitted leaves no .tmp folder");

	/* A chunk size other than the baseline's: not built on. */
	fake = *base;
	fake.chunk_size = 2 * MiB;
	ret = gk_plan_describe(&p, 2, 1, &err);
	gk_plan_changes(&p, &fake, 1, 1);
	ok(ret == 0 && !strcmp(changed(&p), "A:111 B:1") && !p.base,
	   "a baseline of another chunk size is not built on (%s)", changed_str);
	gk_plan_free(&p);

	/* A baseline whose folder is gone: not built on. */
	snprintf(dir1, sizeof(dir1), "%s/" GK_CKPT_FMT, gk_rt.settings.dir, seq1);
	snprintf(moved, sizeof(moved), "%s/moved", gk_rt.settings.dir);
	rename(dir1, moved);
	ret = gk_plan_describe(&p, 2, 1, &err);
	gk_plan_changes(&p, base, 1, 1);
	ok(ret == 0 && !strcmp(changed(&p), "A:111 B:1") && !p.base,
	   "a baseline whose folder is gone is not built on (%s)", changed_str);
	gk_plan_free(&p);
	rename(moved, dir1);

	/* One byte of A's middle chunk changed. */
	cuMemsetD8(A + MiB + 12345, 0x77, 1);
	seq2 = checkpoint(&p, base, &res);
	ok(seq2 > seq1 && res.increment == 1 && res.base_sequence == seq1,
	   "a changed byte: the next checkpoint (%llu) is increment 1 on %llu",
	   (unsigned long long)seq2, (unsigned long long)res.base_sequence);
	ok(seq2 && !strcmp(last_changed, "A:010 B:0") && last_changed_bytes == MiB,
	   "only the changed chunk is written (%s, %llu bytes)", last_changed,
	   (unsigned long long)last_changed_bytes);
	ok(last_locs[0] == seq1 && last_locs[2] == seq1 && last_locs[1] == 0,
	   "the unchanged chunks lie in the baseline's files, the changed one in the "
	   "increment's own (%llu %llu %llu)",
	   (unsigned long long)last_locs[0], (unsigned long long)last_locs[1],
	   (unsigned long long)last_locs[2]);
	base = gk_baseline_get();
	ok(base && base->sequence == seq2 && base->increment == 1,
	   "the baseline moves to the increment (%llu)",
	   base ? (unsigned long long)base->sequence : 0ull);
	gk_plan_free(&p);
}

/* Restore's plan: what is loaded from where, to where. */
static void test_restore_items(void)
{
	gk_error_t err = {""};
	struct gk_manifest *m = open_ckpt(seq2, &err);
	struct gk_xfer_item *items = NULL;
	size_t n = 0, ia = 0;
	int *fds = NULL, right = 1, ret;
	uint64_t bytes = 0, covered = 0;
	char dir[8300], file[8400] = "", moved[8500];

	ok(m && m->increment == 1 && m->nrefs == 1 && m->refs[0].sequence == seq1,
	   "the increment opens, its data checked through its reference to %llu (%s)",
	   (unsigned long long)seq1, err.text);
	if (!m)
		return;
	snprintf(dir, sizeof(dir), "%s/" GK_CKPT_FMT, gk_rt.settings.dir, seq2);
	ret = gk_restore_items(dir, m, &items, &n, &fds, &bytes, &err);
	ok(ret == 0 && bytes == 3 * MiB + 1000,
	   "restore's plan: every allocation's bytes (%d, %llu bytes, %zu items; %s)", ret,
	   (unsigned long long)bytes, n, err.text);
	for (size_t k = 0; ret == 0 && k < n; k++) {
		const struct gk_alloc_rec *r = &m->allocs[items[k].index];
		const struct gk_part *part = NULL;

		for (uint32_t j = 0; j < r->nparts; j++)
			if (r->address + r->parts[j].start == items[k].dev_addr)
				part = &r->parts[j];
		if (!part || items[k].size != part->size || items[k].file_offset != part->offset ||
		    strcmp(items[k].file, part->file) || items[k].fd < 0)
			right = 0;
		covered += items[k].size;
	}
	ok(ret == 0 && right && covered == bytes,
	   "restore's plan: each part to its address, from its file and offset, the parts "
	   "covering every byte once");
	if (ret == 0 && rec_at(m, A, &ia)) {
		const struct gk_alloc_rec *r = &m->allocs[ia];
		int seqs_right = r->nparts == 3 && r->parts[0].sequence == seq1 &&
				 r->parts[1].sequence == 0 && r->parts[2].sequence == seq1;

		ok(seqs_right,
		   "A's chunks: the first and last from checkpoint %llu, the middle "
		   "one from the increment's own file (%u parts)",
		   (unsigned long long)seq1, r->nparts);
	} else {
		ok(0, "A is in the increment");
	}
	gk_restore_items_free(m, items, fds);

	/* The referenced checkpoint's data file gone: refused, naming it. */
	for (size_t r = 0; r < m->nrefs; r++)
		if (m->refs[r].nfiles) {
			snprintf(file, sizeof(file), "%s/" GK_CKPT_FMT "/%s", gk_rt.settings.dir,
				 seq1, m->refs[r].files[0].name);
			break;
		}
	snprintf(moved, sizeof(moved), "%s.away", file);
	rename(file, moved);
	err.text[0] = 0;
	ret = gk_restore_items(dir, m, &items, &n, &fds, &bytes, &err);
	ok(ret == -ENOENT && strstr(err.text, file) && items == NULL,
	   "restore's plan: a referenced file that is gone is an error naming it (%d: %s)", ret,
	   err.text);
	rename(moved, file);
	gk_manifest_free(m);
}

/* Restore's refusals (gk_restore_check_set, gk_restore_check_ready). */
static void test_restore_refusals(void)
{
	struct gk_settings saved = gk_rt.settings;
	struct gk_settings *st = &gk_rt.settings;
	gk_error_t err = {""};
	struct gk_manifest *m = open_ckpt(seq2, &err), f;
	struct gk_region_rec regs[1];
	struct gk_device_rec devs[1];
	struct gk_alloc_rec allocs[1];
	static char region[100];
	char why[512] = "";
	int ret;

	if (!m) {
		ok(0, "the increment opens for the refusals (%s)", err.text);
		return;
	}
	ok(gk_restore_check_set(m, &err) == 0, "no set asked for: any checkpoint will do");
	st->restore_set_given = 1;
	st->restore_set = 0xfeedull;
	st->step_tasks = 4;
	st->task = 2;
	ret = gk_restore_check_set(m, &err);
	ok(ret == -EINVAL && strstr(err.text, "not a member of a checkpoint set") &&
	       strstr(err.text, "000000000000feed"),
	   "a set asked for, a checkpoint of none: refused, naming the set (%s)", err.text);
	f = *m;
	f.set_id = 0xfeedull;
	f.set_members = 4;
	f.set_member = 1;
	ret = gk_restore_check_set(&f, &err);
	ok(ret == -EINVAL && strstr(err.text, "as task 1 of 4; this is task 2 of 4"),
	   "another member's checkpoint: refused, naming both tasks (%s)", err.text);
	f.set_member = 2;
	ok(gk_restore_check_set(&f, &err) == 0, "this member's checkpoint of the set: accepted");
	f.set_id = 0xbeefull;
	ok(gk_restore_check_set(&f, &err) == -EINVAL, "another set's: refused");
	gk_rt.settings = saved;

	ret = gk_restore_check_ready(m, why, sizeof(why));
	ok(ret == 0, "the checkpoint of this run: ready (%d, %s)", ret, why);
	f = *m;
	memset(regs, 0, sizeof(regs));
	snprintf(regs[0].name, sizeof(regs[0].name), "state");
	regs[0].size = 200;
	f.regions = regs;
	f.nregions = 1;
	ret = gk_restore_check_ready(&f, why, sizeof(why));
	ok(ret == -EINVAL && strstr(why, "host region 'state' is in the checkpoint but not "
					 "registered"),
	   "a host region this run did not register: refused, named (%s)", why);
	gk_regions_set("state", region, sizeof(region));
	ret = gk_restore_check_ready(&f, why, sizeof(why));
	ok(ret == -EINVAL &&
	       strstr(why, "'state' is 100 bytes now and 200 bytes in the checkpoint"),
	   "a host region of another size: refused, both sizes named (%s)", why);
	regs[0].size = sizeof(region);
	ok(gk_restore_check_ready(&f, why, sizeof(why)) == 0, "at its size: ready");
	gk_regions_remove("state");
	f = *m;
	memset(devs, 0, sizeof(devs));
	devs[0].ordinal = GK_MAX_DEVICES + 3;
	f.devices = devs;
	f.ndevices = 1;
	ret = gk_restore_check_ready(&f, why, sizeof(why));
	ok(ret == -EINVAL && strstr(why, "names device"),
	   "a device beyond what gpuckpt handles: refused (%s)", why);
	f = *m;
	allocs[0] = m->allocs[0];
	allocs[0].device = 1;
	f.allocs = allocs;
	f.nallocs = 1;
	ret = gk_restore_check_ready(&f, why, sizeof(why));
	ok(ret == -EINVAL && strstr(why, "holds memory of device 1, which this run has not "
					 "allocated on"),
	   "memory of a device this run has not allocated on: refused, named (%s)", why);
	gk_manifest_free(m);
}

int main(void)
{
	CUdevice dev;
	CUcontext ctx;

	if (!gk_rt.settings_ok || !gk_rt.settings.dir[0] || gk_rt.settings.chunk_size != MiB) {
		printf("Bail out! the runtime's settings (GPUCKPT_DIR, GPUCKPT_CHUNK_SIZE=1M) are "
		       "not set: run plan.sh\n");
		return 1;
	}
	if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
	    cuCtxSetCurrent(ctx) || cuMemAlloc(&A, 3 * MiB) || cuMemAlloc(&B, 1000) ||
	    cuMemsetD8(A, 0x11, 3 * MiB) || cuMemsetD8(A + MiB, 0x12, MiB) ||
	    cuMemsetD8(B, 0x22, 1000)) {
		printf("Bail out! CUDA setup on the stand-in failed\n");
		return 1;
	}
	test_describe_and_full();
	test_opened();
	test_increment();
	test_restore_items();
	test_restore_refusals();
	cuMemFree(A);
	cuMemFree(B);
	return done_testing_plan_last();
}
