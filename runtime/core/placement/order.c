#include "config.h"

#include "core/placement/order.h"

#define MAX_FILES 64 /* interleaved per device; files beyond follow in order */

/* The next chunk of file `file` at or after item *i, chunk *c: 0 when none. */
static int next_of_file(const struct gk_order_item *items, size_t end, int file,
			uint64_t chunk_size, size_t *i, uint32_t *c)
{
	for (; *i < end; (*i)++, *c = 0)
		if (items[*i].file == file && (uint64_t)*c * chunk_size < items[*i].size)
			return 1;
	return 0;
}

static size_t file_slot(const int *files, size_t nf, int file)
{
	size_t f = 0;

	while (f < nf && files[f] != file)
		f++;
	return f;
}

size_t gk_order_chunks(const struct gk_order_item *items, size_t n, uint64_t chunk_size,
		       struct gk_order_unit *out)
{
	size_t u = 0, begin = 0;

	while (begin < n) {
		size_t end = begin, nf = 0, at[MAX_FILES];
		uint32_t ch[MAX_FILES];
		int files[MAX_FILES], left = 1;

		while (end < n && items[end].device == items[begin].device)
			end++;
		for (size_t i = begin; i < end; i++)
			if (file_slot(files, nf, items[i].file) == nf && nf < MAX_FILES) {
				files[nf] = items[i].file;
				at[nf] = i;
				ch[nf++] = 0;
			}
		while (left) {
			left = 0;
			for (size_t f = 0; f < nf; f++) {
				if (!next_of_file(items, end, files[f], chunk_size, &at[f], &ch[f]))
					continue;
				out[u++] = (struct gk_order_unit){at[f], ch[f]++};
				left = 1;
			}
		}
		for (size_t i = begin; i < end; i++)
			if (file_slot(files, nf, items[i].file) == nf)
				for (uint32_t c = 0; (uint64_t)c * chunk_size < items[i].size; c++)
					out[u++] = (struct gk_order_unit){i, c};
		begin = end;
	}
	return u;
}
