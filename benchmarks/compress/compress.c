/*
 * compress - what a fast compressor would give a checkpoint: ratio, and
 * compression and decompression rates with as many threads as the copy
 * threads that would run it, per chunk (the checkpoint's checksum unit, so
 * that a restore still reads and checks chunks in parallel). No number here
 * is about a GPU: the data is a checkpoint's, already on storage.
 *
 *	compress [--threads N] [--chunk SIZE] [--limit SIZE] [--label NAME]
 *	         [--md FILE] PATH...
 *
 * PATH: a checkpoint folder (its *.data files) or a file. At most --limit
 * bytes (default 1G) are measured, chunks taken evenly from all of them.
 * Codecs: lz4 (accel 1), zstd at levels -1, 1 and 3. libzstd and liblz4 are
 * reached through dlopen, so that the tool builds where only their run-time
 * libraries are installed (the GPU machine has no headers); a codec whose
 * library is missing is reported as such. A chunk that does not shrink
 * would be stored as it is: the ratio counts it at its own size.
 *
 * Output: one markdown table row per codec on stdout (and appended to --md):
 * | data | codec | GiB measured | ratio | chunks that shrank | compression GB/s
 * | decompression GB/s | note |  (rates: input bytes per second, all threads)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_FILES 4096

/* ---- the libraries, through dlopen (their documented C interfaces) ---- */

static struct {
	void *zstd, *lz4;
	size_t (*zstd_bound)(size_t);
	void *(*zstd_cctx)(void);
	size_t (*zstd_free_cctx)(void *);
	size_t (*zstd_compress)(void *, void *, size_t, const void *, size_t, int);
	void *(*zstd_dctx)(void);
	size_t (*zstd_free_dctx)(void *);
	size_t (*zstd_decompress)(void *, void *, size_t, const void *, size_t);
	unsigned (*zstd_is_error)(size_t);
	int (*lz4_bound)(int);
	int (*lz4_compress)(const char *, char *, int, int, int);
	int (*lz4_decompress)(const char *, char *, int, int);
} L;

static void load_libraries(void)
{
	L.zstd = dlopen("libzstd.so.1", RTLD_NOW);
	if (L.zstd) {
		L.zstd_bound = (size_t(*)(size_t))dlsym(L.zstd, "ZSTD_compressBound");
		L.zstd_cctx = (void *(*)(void))dlsym(L.zstd, "ZSTD_createCCtx");
		L.zstd_free_cctx = (size_t(*)(void *))dlsym(L.zstd, "ZSTD_freeCCtx");
		L.zstd_compress = (size_t(*)(void *, void *, size_t, const void *, size_t, int))dlsym(
		    L.zstd, "ZSTD_compressCCtx");
		L.zstd_dctx = (void *(*)(void))dlsym(L.zstd, "ZSTD_createDCtx");
		L.zstd_free_dctx = (size_t(*)(void *))dlsym(L.zstd, "ZSTD_freeDCtx");
		L.zstd_decompress = (size_t(*)(void *, void *, size_t, const void *, size_t))dlsym(
		    L.zstd, "ZSTD_decompressDCtx");
		L.zstd_is_error = (unsigned (*)(size_t))dlsym(L.zstd, "ZSTD_isError");
		if (!L.zstd_bound || !L.zstd_cctx || !L.zstd_free_cctx || !L.zstd_compress ||
		    !L.zstd_dctx || !L.zstd_free_dctx || !L.zstd_decompress || !L.zstd_is_error)
			L.zstd = NULL;
	}
	L.lz4 = dlopen("liblz4.so.1", RTLD_NOW);
	if (L.lz4) {
		L.lz4_bound = (int (*)(int))dlsym(L.lz4, "LZ4_compressBound");
		L.lz4_compress =
		    (int (*)(const char *, char *, int, int, int))dlsym(L.lz4, "LZ4_compress_fast");
		L.lz4_decompress =
		    (int (*)(const char *, char *, int, int))dlsym(L.lz4, "LZ4_decompress_safe");
		if (!L.lz4_bound || !L.lz4_compress || !L.lz4_decompress)
			L.lz4 = NULL;
	}
}

/* ---- codecs ---- */

struct codec {
	const char *name;
	int zstd; /* else lz4 */
	int level; /* zstd: level; lz4: acceleration */
};

static const struct codec codecs[] = {
    {"lz4", 0, 1},
    {"zstd -1", 1, -1},
    {"zstd 1", 1, 1},
    {"zstd 3", 1, 3},
};

static size_t bound(const struct codec *c, size_t n)
{
	return c->zstd ? L.zstd_bound(n) : (size_t)L.lz4_bound((int)n);
}

/* Compressed size, or 0 on failure. */
static size_t squeeze(const struct codec *c, void *ctx, char *dst, size_t cap, const char *src,
		      size_t n)
{
	if (c->zstd) {
		size_t r = L.zstd_compress(ctx, dst, cap, src, n, c->level);

		return L.zstd_is_error(r) ? 0 : r;
	}
	{
		int r = L.lz4_compress(src, dst, (int)n, (int)cap, c->level);

		return r > 0 ? (size_t)r : 0;
	}
}

/* Decompressed size, or 0 on failure. */
static size_t expand(const struct codec *c, void *ctx, char *dst, size_t cap, const char *src,
		     size_t n)
{
	if (c->zstd) {
		size_t r = L.zstd_decompress(ctx, dst, cap, src, n);

		return L.zstd_is_error(r) ? 0 : r;
	}
	{
		int r = L.lz4_decompress(src, dst, (int)n, (int)cap);

		return r > 0 ? (size_t)r : 0;
	}
}

/* ---- the data ---- */

struct chunk {
	const char *data;
	size_t len;
	char *packed; /* compressed */
	size_t packed_len;
};

static struct {
	char *buf;
	struct chunk *chunks;
	size_t n;
	size_t longest;
	uint64_t bytes;
} D;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "compress: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t parse_size(const char *text, const char *opt)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || end == text || !v)
		die("%s '%s': expected a positive size", opt, text);
	switch (*end) {
	case 'K': case 'k': v <<= 10; end++; break;
	case 'M': case 'm': v <<= 20; end++; break;
	case 'G': case 'g': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		die("%s '%s': expected a number with K, M or G", opt, text);
	return v;
}

static int name_order(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files to read: a folder's *.data (sorted), or the file itself. */
static size_t list_files(char **paths, size_t n, char **out, uint64_t *sizes)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		struct stat st;
		DIR *d;
		struct dirent *e;
		size_t first = k;

		if (stat(paths[i], &st))
			die("%s: %s", paths[i], strerror(errno));
		if (!S_ISDIR(st.st_mode)) {
			if (k == MAX_FILES)
				die("more than %d files", MAX_FILES);
			out[k] = strdup(paths[i]);
			sizes[k++] = (uint64_t)st.st_size;
			continue;
		}
		d = opendir(paths[i]);
		if (!d)
			die("%s: %s", paths[i], strerror(errno));
		while ((e = readdir(d))) {
			size_t len = strlen(e->d_name);
			char *p;

			if (len < 6 || strcmp(e->d_name + len - 5, ".data"))
				continue;
			if (k == MAX_FILES)
				die("more than %d files", MAX_FILES);
			if (asprintf(&p, "%s/%s", paths[i], e->d_name) < 0)
				die("out of memory");
			out[k++] = p;
		}
		closedir(d);
		qsort(out + first, k - first, sizeof(*out), name_order);
		for (size_t f = first; f < k; f++) {
			if (stat(out[f], &st) || !S_ISREG(st.st_mode))
				die("%s: not a regular file", out[f]);
			sizes[f] = (uint64_t)st.st_size;
		}
	}
	return k;
}

/* Every `stride`-th chunk of all the files, up to `limit` bytes, into memory. */
static void load(char **paths, size_t npaths, uint64_t chunk, uint64_t limit)
{
	char *files[MAX_FILES];
	uint64_t sizes[MAX_FILES], total = 0, stride, at = 0, index = 0;
	size_t nfiles = list_files(paths, npaths, files, sizes), cap;

	for (size_t f = 0; f < nfiles; f++)
		total += (sizes[f] + chunk - 1) / chunk;
	if (!total)
		die("no data in the paths given");
	stride = (total * chunk + limit - 1) / limit;
	if (!stride)
		stride = 1;
	cap = (size_t)((total + stride - 1) / stride + 1);
	D.chunks = calloc(cap, sizeof(*D.chunks));
	D.buf = malloc((size_t)(cap * chunk));
	if (!D.chunks || !D.buf)
		die("out of memory for %zu chunks", cap);
	for (size_t f = 0; f < nfiles; f++) {
		int fd = open(files[f], O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			die("%s: %s", files[f], strerror(errno));
		for (uint64_t off = 0; off < sizes[f]; off += chunk, index++) {
			size_t len = (size_t)(sizes[f] - off < chunk ? sizes[f] - off : chunk);
			ssize_t r;

			if (index % stride || D.n == cap)
				continue;
			r = pread(fd, D.buf + at, len, (off_t)off);
			if (r != (ssize_t)len)
				die("%s: short read at %llu", files[f], (unsigned long long)off);
			D.chunks[D.n++] = (struct chunk){D.buf + at, len, NULL, 0};
			if (len > D.longest)
				D.longest = len;
			at += len;
		}
		close(fd);
		free(files[f]);
	}
	D.bytes = at;
}

/* ---- one codec over all chunks, in threads ---- */

struct run {
	const struct codec *c;
	size_t next; /* atomic */
	int decompress, verify;
	int failed;  /* atomic */
};

static void *work(void *arg)
{
	struct run *r = arg;
	const struct codec *c = r->c;
	void *ctx = NULL;
	char *out = malloc(D.longest);

	if (c->zstd)
		ctx = r->decompress ? L.zstd_dctx() : L.zstd_cctx();
	if (!out || (c->zstd && !ctx)) {
		__atomic_store_n(&r->failed, 1, __ATOMIC_RELAXED);
		goto out;
	}
	for (;;) {
		size_t i = __atomic_fetch_add(&r->next, 1, __ATOMIC_RELAXED);
		struct chunk *k;

		if (i >= D.n)
			break;
		k = &D.chunks[i];
		if (!r->decompress) {
			size_t cap = bound(c, k->len), n = squeeze(c, ctx, k->packed, cap, k->data, k->len);

			if (!n) {
				__atomic_store_n(&r->failed, 1, __ATOMIC_RELAXED);
				break;
			}
			k->packed_len = n;
			continue;
		}
		if (expand(c, ctx, out, k->len, k->packed, k->packed_len) != k->len ||
		    (r->verify && memcmp(out, k->data, k->len))) {
			__atomic_store_n(&r->failed, 1, __ATOMIC_RELAXED);
			break;
		}
	}
out:
	if (ctx)
		r->decompress ? L.zstd_free_dctx(ctx) : L.zstd_free_cctx(ctx);
	free(out);
	return NULL;
}

/* Wall time of one pass with n threads; < 0 if a chunk failed. */
static double pass(const struct codec *c, int decompress, int verify, int n)
{
	struct run r = {c, 0, decompress, verify, 0};
	pthread_t tid[256];
	int started = 0;
	double t0 = now();

	for (int t = 0; t < n; t++)
		if (pthread_create(&tid[t], NULL, work, &r) == 0)
			started++;
	if (!started)
		work(&r);
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	return r.failed ? -1.0 : now() - t0;
}

int main(int argc, char **argv)
{
	const char *label = "data", *md_path = NULL;
	uint64_t chunk = 8ull << 20, limit = 1ull << 30;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int threads = cpus > 16 ? 16 : cpus > 0 ? (int)cpus : 1, i;
	FILE *md = NULL;
	char *packed;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("usage: compress [--threads N] [--chunk SIZE] [--limit SIZE] [--label NAME] "
			       "[--md FILE] PATH...\n"
			       "Ratio and rates of lz4 and zstd (-1, 1, 3) over the *.data files of "
			       "checkpoint folders\n(or files), a chunk at a time, in N threads "
			       "(default: the CPUs, at most 16).\n"
			       "At most --limit bytes (default 1G), chunks (default 8M) taken evenly.\n");
			return 0;
		}
		if (!v)
			die("%s: missing value (see --help)", a);
		i++;
		if (!strcmp(a, "--threads")) {
			threads = atoi(v);
			if (threads < 1 || threads > 256)
				die("--threads '%s': expected 1 to 256", v);
		} else if (!strcmp(a, "--chunk")) {
			chunk = parse_size(v, a);
			if (chunk > (1u << 30))
				die("--chunk: at most 1G");
		} else if (!strcmp(a, "--limit")) {
			limit = parse_size(v, a);
		} else if (!strcmp(a, "--label")) {
			label = v;
		} else if (!strcmp(a, "--md")) {
			md_path = v;
		} else {
			die("unknown option '%s' (see --help)", a);
		}
	}
	if (i == argc)
		die("no PATH (see --help)");
	if (limit < chunk)
		limit = chunk;
	load_libraries();
	load(argv + i, (size_t)(argc - i), chunk, limit);
	if (md_path && !(md = fopen(md_path, "a")))
		die("%s: %s", md_path, strerror(errno));
	for (size_t c = 0; c < sizeof(codecs) / sizeof(codecs[0]); c++) {
		const struct codec *k = &codecs[c];
		uint64_t stored = 0;
		size_t shrank = 0, room = 0;
		double tc, td;
		char line[512];

		if ((k->zstd && !L.zstd) || (!k->zstd && !L.lz4)) {
			snprintf(line, sizeof(line), "| %s | %s | | | | | | %s not found |\n", label,
				 k->name, k->zstd ? "libzstd.so.1" : "liblz4.so.1");
			fputs(line, stdout);
			if (md)
				fputs(line, md);
			continue;
		}
		for (size_t j = 0; j < D.n; j++)
			room += bound(k, D.chunks[j].len);
		packed = malloc(room);
		if (!packed)
			die("out of memory for the compressed chunks");
		room = 0;
		for (size_t j = 0; j < D.n; j++) {
			D.chunks[j].packed = packed + room;
			room += bound(k, D.chunks[j].len);
		}
		tc = pass(k, 0, 0, threads);
		td = tc > 0 ? pass(k, 1, 0, threads) : -1;
		/* Untimed: every chunk comes back as it was. */
		if (td > 0 && pass(k, 1, 1, threads) < 0)
			td = -1;
		for (size_t j = 0; j < D.n; j++) {
			size_t n = D.chunks[j].packed_len < D.chunks[j].len ? D.chunks[j].packed_len
									    : D.chunks[j].len;

			shrank += D.chunks[j].packed_len < D.chunks[j].len;
			stored += n;
		}
		if (tc < 0 || td < 0)
			snprintf(line, sizeof(line), "| %s | %s | %.2f | | | | | failed |\n", label,
				 k->name, D.bytes / 1073741824.0);
		else
			snprintf(line, sizeof(line),
				 "| %s | %s | %.2f | %.3f | %.0f %% | %.2f | %.2f | %d threads, %zu "
				 "chunks of %llu KiB |\n",
				 label, k->name, D.bytes / 1073741824.0, (double)D.bytes / stored,
				 100.0 * shrank / D.n, D.bytes / tc / 1e9, D.bytes / td / 1e9, threads,
				 D.n, (unsigned long long)(chunk >> 10));
		fputs(line, stdout);
		fflush(stdout);
		if (md)
			fputs(line, md);
		free(packed);
	}
	if (md)
		fclose(md);
	return 0;
}
