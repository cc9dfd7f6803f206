#include "config.h"

#include "core/placement/spread.h"

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static uint64_t chunk_len(const struct gk_spread_alloc *r, uint32_t c, uint64_t chunk_size)
{
	uint64_t start = (uint64_t)c * chunk_size;

	return r->size - start < chunk_size ? r->size - start : chunk_size;
}

/* The share is rounded to the nearest chunk: rounded up, it would leave the
 * last files empty whenever the total is a little above a multiple of nf
 * chunks (128 MiB and a few small allocations in 8 files of 8 MiB chunks: 5
 * files of 24 MiB, 2 empty), and then two threads write one file. */
size_t gk_spread_device(const struct gk_spread_alloc *allocs, size_t n, uint64_t chunk_size,
			uint64_t align, unsigned writers, struct gk_spread_piece *out,
			size_t *nfiles, uint64_t file_size[GK_FILES_PER_DEVICE])
{
	uint64_t cs = chunk_size, total = 0, chunks = 0, quota, used = 0;
	uint64_t off[GK_FILES_PER_DEVICE] = {0};
	size_t nf = writers, j = 0, npieces = 0;

	for (size_t f = 0; f < GK_FILES_PER_DEVICE; f++)
		file_size[f] = 0;
	*nfiles = 0;
	for (size_t i = 0; i < n; i++)
		for (uint32_t c = 0; c < allocs[i].nchunks; c++)
			if (allocs[i].changed[c]) {
				total += chunk_len(&allocs[i], c, cs);
				chunks++;
			}
	if (!chunks)
		return 0;
	/* No more files than threads, nor than chunks to put in them. */
	if (nf > GK_FILES_PER_DEVICE)
		nf = GK_FILES_PER_DEVICE;
	if (nf > chunks)
		nf = chunks;
	/* At least a chunk: a state of less than a chunk per thread goes to the
	 * first files, whole. */
	quota = (total / nf + cs / 2) / cs * cs;
	if (quota < cs)
		quota = cs;
	*nfiles = nf;
	for (size_t i = 0; i < n; i++) {
		const struct gk_spread_alloc *r = &allocs[i];

		for (uint32_t c = 0; c < r->nchunks;) {
			uint64_t start, run_end;
			uint32_t e = c;

			if (!r->changed[c]) {
				c++;
				continue;
			}
			while (e < r->nchunks && r->changed[e])
				e++;
			start = (uint64_t)c * cs;
			run_end = e == r->nchunks ? r->size : (uint64_t)e * cs;
			while (start < run_end) {
				uint64_t left = run_end - start, room = quota > used ? quota - used : 0;
				uint64_t take = (room + cs / 2) / cs * cs;

				/* The last file, or the rest of the run where it fits. */
				if (j == nf - 1 || left <= room || left <= take)
					take = left;

				if (take == 0) {
					j++;
					used = 0;
					continue;
				}
				out[npieces++] = (struct gk_spread_piece){
				    .alloc = i,
				    .start = start,
				    .size = take,
				    .file = j,
				    .file_offset = off[j],
				};
				file_size[j] = off[j] + take;
				off[j] = align_up(off[j] + take, align);
				used += take;
				start += take;
			}
			c = e;
		}
	}
	return npieces;
}
