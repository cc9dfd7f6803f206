/*
 * test-spread - how a checkpoint spreads a device's changed chunks over its
 * data files (runtime/core/placement/spread.h): every changed chunk in exactly one
 * piece and nothing else; pieces of a file one after the other at aligned
 * offsets, the file's size where its last piece ends; no more files than
 * writers, GK_FILES_PER_DEVICE or changed chunks; shares to the nearest
 * chunk, so that no file is left empty.
 */
#include "config.h"

#include "core/placement/spread.h"
#include "tap.h"

#include <stdlib.h>
#include <string.h>

#define MiB (1024ull * 1024)
#define ALIGN 4096ull
#define ROOM 4096

static struct gk_spread_piece pc[ROOM];
static uint64_t fsize[GK_FILES_PER_DEVICE];

/* Every changed chunk lies in exactly one piece, every piece covers only
 * changed chunks, starts at a chunk and ends at a chunk or the allocation. */
static int covers_changed(const struct gk_spread_alloc *a, size_t n, uint64_t cs,
			  const struct gk_spread_piece *p, size_t np)
{
	for (size_t i = 0; i < n; i++)
		for (uint32_t c = 0; c < a[i].nchunks; c++) {
			size_t hits = 0;

			for (size_t k = 0; k < np; k++)
				if (p[k].alloc == i && p[k].start <= (uint64_t)c * cs &&
				    (uint64_t)c * cs < p[k].start + p[k].size)
					hits++;
			if (hits != (a[i].changed[c] ? 1u : 0u))
				return 0;
		}
	for (size_t k = 0; k < np; k++) {
		const struct gk_spread_alloc *r = &a[p[k].alloc];
		uint64_t end = p[k].start + p[k].size;

		if (p[k].alloc >= n || p[k].size == 0 || p[k].start % cs ||
		    (end % cs && end != r->size) || end > r->size)
			return 0;
	}
	return 1;
}

/* In each file the pieces follow each other at aligned offsets without
 * overlap, files are filled in turn, and file_size is where the last ends. */
static int files_consistent(const struct gk_spread_piece *p, size_t np, size_t nf,
			    const uint64_t *size)
{
	for (size_t f = 0; f < nf; f++) {
		uint64_t next = 0, end = 0;

		for (size_t k = 0; k < np; k++) {
			if (p[k].file != f)
				continue;
			if (p[k].file_offset % ALIGN || p[k].file_offset != next)
				return 0;
			end = p[k].file_offset + p[k].size;
			next = (end + ALIGN - 1) / ALIGN * ALIGN;
		}
		if (size[f] != end)
			return 0;
	}
	for (size_t k = 0; k < np; k++)
		if (p[k].file >= nf || (k && p[k].file < p[k - 1].file))
			return 0;
	for (size_t f = nf; f < GK_FILES_PER_DEVICE; f++)
		if (size[f])
			return 0;
	return 1;
}

static size_t empty_files(size_t nf, const uint64_t *size)
{
	size_t e = 0;

	for (size_t f = 0; f < nf; f++)
		e += size[f] == 0;
	return e;
}

static uint8_t *all(uint32_t n, uint8_t v)
{
	uint8_t *c = malloc(n ? n : 1);

	memset(c, v, n);
	return c;
}

int main(void)
{
	const uint64_t cs = 8 * MiB;
	size_t np, nf;

	plan(28);

	/* Nothing changed: no file, no piece. */
	{
		uint8_t *none = all(4, 0);
		struct gk_spread_alloc a[] = {{32 * MiB, 4, none}};

		fsize[0] = 7;
		np = gk_spread_device(a, 1, cs, ALIGN, 8, pc, &nf, fsize);
		ok(np == 0 && nf == 0 && fsize[0] == 0, "nothing changed: no file, no piece");
		np = gk_spread_device(a, 0, cs, ALIGN, 8, pc, &nf, fsize);
		ok(np == 0 && nf == 0, "no allocation: no file, no piece");
		free(none);
	}
	/* 8 chunks in 4 files: two chunks each, one piece per file. */
	{
		uint8_t *yes = all(8, 1);
		struct gk_spread_alloc a[] = {{64 * MiB, 8, yes}};
		int even = 1;

		np = gk_spread_device(a, 1, cs, ALIGN, 4, pc, &nf, fsize);
		ok(nf == 4 && np == 4, "64 MiB in 4 writers: 4 files, 4 pieces (%zu, %zu)", nf, np);
		for (size_t k = 0; k < np; k++)
			even &= pc[k].file == k && pc[k].start == k * 16 * MiB &&
				pc[k].size == 16 * MiB && pc[k].file_offset == 0 &&
				fsize[k] == 16 * MiB;
		ok(even, "each file holds 16 MiB from offset 0, in allocation order");
		ok(covers_changed(a, 1, cs, pc, np) && files_consistent(pc, np, nf, fsize),
		   "every chunk once, files consistent");
		free(yes);
	}
	/* One writer: one file, the runs one after the other. */
	{
		uint8_t *yes = all(3, 1);
		struct gk_spread_alloc a[] = {{3 * MiB, 3, yes}, {5 * MiB + 10, 6, yes}};
		uint8_t ch[6] = {1, 1, 1, 1, 1, 1};

		a[1].changed = ch;
		np = gk_spread_device(a, 2, MiB, ALIGN, 1, pc, &nf, fsize);
		ok(nf == 1 && np == 2 && pc[0].size == 3 * MiB && pc[1].file_offset == 3 * MiB &&
		       pc[1].size == 5 * MiB + 10 && fsize[0] == 8 * MiB + 10,
		   "one writer: one file, each allocation whole, in order");
		ok(covers_changed(a, 2, MiB, pc, np) && files_consistent(pc, np, nf, fsize),
		   "one writer: every chunk once, files consistent");
		free(yes);
	}
	/* More writers than chunks: a file per chunk. */
	{
		uint8_t *yes = all(3, 1);
		struct gk_spread_alloc a[] = {{3 * cs, 3, yes}};

		np = gk_spread_device(a, 1, cs, ALIGN, 16, pc, &nf, fsize);
		ok(nf == 3 && np == 3 && empty_files(nf, fsize) == 0,
		   "16 writers, 3 chunks: 3 files, one chunk each");
		free(yes);
	}
	/* More writers than GK_FILES_PER_DEVICE. */
	{
		uint8_t *yes = all(200, 1);
		struct gk_spread_alloc a[] = {{200 * MiB, 200, yes}};

		np = gk_spread_device(a, 1, MiB, ALIGN, 1000, pc, &nf, fsize);
		ok(nf == GK_FILES_PER_DEVICE, "1000 writers: at most %d files (%zu)",
		   GK_FILES_PER_DEVICE, nf);
		ok(covers_changed(a, 1, MiB, pc, np) && files_consistent(pc, np, nf, fsize) &&
		       empty_files(nf, fsize) == 0,
		   "200 chunks in 64 files: every chunk once, no empty file");
		/* 200 / 64 rounds to 3 chunks a file: 63 files of 3, the last 11. */
		ok(fsize[0] == 3 * MiB && fsize[62] == 3 * MiB && fsize[63] == 11 * MiB,
		   "shares to the nearest chunk, the last file takes the rest");
		free(yes);
	}
	/* The case the rounding is for: 128 MiB and a few small allocations in
	 * 8 files of 8 MiB chunks; rounded up, 2 files would stay empty. */
	{
		uint8_t *yes = all(16, 1);
		struct gk_spread_alloc a[] = {
		    {128 * MiB, 16, yes}, {MiB, 1, yes}, {MiB, 1, yes}, {MiB, 1, yes}};

		np = gk_spread_device(a, 4, cs, ALIGN, 8, pc, &nf, fsize);
		ok(nf == 8 && empty_files(nf, fsize) == 0,
		   "128 MiB + 3 MiB in 8 files: none empty");
		ok(fsize[0] == 16 * MiB && fsize[6] == 16 * MiB,
		   "the share is 16 MiB (to the nearest chunk, not 24)");
		ok(covers_changed(a, 4, cs, pc, np) && files_consistent(pc, np, nf, fsize),
		   "every chunk once, files consistent");
		/* The small allocations all go to the last file, aligned. */
		ok(pc[np - 1].file == 7 && pc[np - 1].alloc == 3 && pc[np - 1].size == MiB &&
		       pc[np - 1].file_offset % ALIGN == 0 && fsize[7] == 16 * MiB + 3 * MiB,
		   "the small allocations follow in the last file");
		free(yes);
	}
	/* Unchanged chunks cut runs, and a run is cut where a file is full. */
	{
		uint8_t ch[10] = {1, 1, 0, 1, 1, 1, 0, 0, 1, 1};
		struct gk_spread_alloc a[] = {{10 * MiB, 10, ch}};
		int in_order = 1;

		np = gk_spread_device(a, 1, MiB, ALIGN, 2, pc, &nf, fsize);
		ok(nf == 2 && covers_changed(a, 1, MiB, pc, np),
		   "gaps: 7 changed chunks in 2 files, unchanged ones left out");
		ok(files_consistent(pc, np, nf, fsize), "gaps: files consistent");
		/* Share: 7/2 = 3.5 MiB, to the nearest chunk 4 (3.5 + 0.5 = 4). */
		ok(fsize[0] == 4 * MiB && fsize[1] == 3 * MiB, "gaps: 4 chunks, then 3 (%llu, %llu)",
		   (unsigned long long)fsize[0], (unsigned long long)fsize[1]);
		ok(np == 4 && pc[1].start == 3 * MiB && pc[1].size == 2 * MiB && pc[2].file == 1 &&
		       pc[2].start == 5 * MiB && pc[2].size == MiB,
		   "the run at chunk 3 is cut where file 0 is full, the rest in file 1");
		for (size_t k = 1; k < np; k++)
			in_order &= pc[k].start > pc[k - 1].start;
		ok(in_order, "pieces in allocation order");
	}
	/* A last chunk shorter than chunk_size, then another allocation in the
	 * same file: it starts at the next aligned offset. */
	{
		uint8_t *yes = all(2, 1);
		struct gk_spread_alloc a[] = {{MiB + 100, 2, yes}, {MiB, 1, yes}};

		np = gk_spread_device(a, 2, MiB, ALIGN, 1, pc, &nf, fsize);
		ok(np == 2 && pc[0].size == MiB + 100 && pc[1].file_offset == MiB + ALIGN &&
		       fsize[0] == MiB + ALIGN + MiB,
		   "after a short last chunk, the next piece starts aligned");
		ok(files_consistent(pc, np, nf, fsize), "short chunk: files consistent");
		free(yes);
	}
	/* Less than a chunk per writer: the share is one chunk, and the state
	 * goes to the first files whole (here all of it to the first). */
	{
		uint8_t *yes = all(1, 1);
		struct gk_spread_alloc a[] = {{100, 1, yes}, {200, 1, yes}, {300, 1, yes}};

		np = gk_spread_device(a, 3, cs, ALIGN, 2, pc, &nf, fsize);
		ok(nf == 2 && np == 3, "three tiny allocations, 2 writers: 2 files, 3 pieces");
		ok(pc[0].file == 0 && pc[1].file == 0 && pc[2].file == 0 &&
		       pc[1].file_offset == ALIGN && pc[2].file_offset == 2 * ALIGN &&
		       fsize[0] == 2 * ALIGN + 300 && fsize[1] == 0,
		   "less than a chunk in all: the first file takes it whole, the second stays empty");
		ok(covers_changed(a, 3, cs, pc, np) && files_consistent(pc, np, nf, fsize),
		   "tiny: every chunk once, files consistent");
		free(yes);
	}
	/* Zero-size allocation among others: no piece for it. */
	{
		uint8_t *yes = all(2, 1);
		struct gk_spread_alloc a[] = {{0, 0, yes}, {2 * MiB, 2, yes}};

		np = gk_spread_device(a, 2, MiB, ALIGN, 4, pc, &nf, fsize);
		ok(nf == 2 && np == 2 && pc[0].alloc == 1 && pc[1].alloc == 1,
		   "an empty allocation gives no piece");
		ok(covers_changed(a, 2, MiB, pc, np) && files_consistent(pc, np, nf, fsize),
		   "empty allocation: every chunk once, files consistent");
		free(yes);
	}
	/* One writer and runs cut by unchanged chunks: one file, runs packed. */
	{
		uint8_t ch[6] = {1, 0, 1, 0, 1, 0};
		struct gk_spread_alloc a[] = {{6 * MiB, 6, ch}};

		np = gk_spread_device(a, 1, MiB, ALIGN, 1, pc, &nf, fsize);
		ok(nf == 1 && np == 3 && pc[1].start == 2 * MiB && pc[1].file_offset == MiB &&
		       pc[2].start == 4 * MiB && pc[2].file_offset == 2 * MiB && fsize[0] == 3 * MiB,
		   "one file: three runs, one after the other");
	}
	return done_testing();
}
