/*
 * throughput - checkpoint throughput of the gpuckpt runtime beside the limits
 * of the machine (benchmarks/README.md). For each size of device state:
 *	copy     pinned and pageable device<->host bandwidth (a worker)
 *	storage  write+fsync and cold read of files of that size, on tmpfs and disk,
 *	         by one writer and by several (the storage's parallel ceiling)
 *	gpuckpt  a checkpoint through the API in one worker (runtime preloaded),
 *	         written the blocking way (as after SIGTERM), restored and checked
 *	         word by word in a second; the check of its data with XXH64 and
 *	         with XXH3 (the image formats' checksums)
 *	tables   a mostly static state in one worker: checkpointed whole, then
 *	         every chunk changed (in the background: the pause), then 10 % of
 *	         the chunks changed (an increment: the pause, the bytes written);
 *	         both restored and checked word by word
 *	driver   cuCheckpointProcessLock/Checkpoint/Restore/Unlock on a worker,
 *	         driven from this process; the worker then checks its memory
 *	start    a worker that only starts CUDA and makes the state's allocations,
 *	         natively and under the runtime: what a restart cannot go below
 *	variants the gpuckpt measurement again with other settings (--variants),
 *	         side by side in the same run
 *	direct   a probe: the device's copies straight into the pages of tmpfs
 *	         files, mapped and pinned (no copy by the CPU), phase by phase
 * and writes <out>/throughput-<machine>-<date>.{csv,md}.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "throughput.h"
#include "common/settings_env.h"

#ifndef TP_RUNTIME_DEFAULT
#define TP_RUNTIME_DEFAULT "libgpuckpt.so"
#endif

#define MAX_SIZES 16
#define GIB (1ull << 30)
#define MAX_VARIANTS 8
#define MAX_VARIANT_ENV 8
/* A variant's name ends its rows' names: "gpuckpt_restart_context:NAME" must
 * fit a result's metric. */
#define VARIANT_NAME_MAX 8

/* The gpuckpt measurement again with other settings, e.g. w16:GPUCKPT_WRITERS=16. */
struct variant {
	char name[VARIANT_NAME_MAX + 1];
	char *env[MAX_VARIANT_ENV + 1];
};

struct opts {
	uint64_t sizes[MAX_SIZES];
	int nsizes;
	uint64_t disk_sizes[MAX_SIZES]; /* the sizes measured on disk */
	int ndisk_sizes;
	const char *tmpfs, *disk, *out, *machine, *runtime;
	char worker[PATH_MAX];
	int copy, storage, gpuckpt, driver, on_disk, tables, single, start, direct;
	int dry, timeout, writers, wide_writers, repeat;
	struct variant variants[MAX_VARIANTS];
	int nvariants;
};

static const char usage[] =
    "usage: throughput [options]\n"
    "  --sizes LIST     device state sizes, GiB unless suffixed M or G (default 1,4,16)\n"
    "  --tmpfs DIR      tmpfs folder (default /dev/shm)\n"
    "  --disk DIR       disk folder (default /var/tmp)\n"
    "  --out DIR        where the CSV and markdown go (default .)\n"
    "  --machine NAME   first part of the file names (default: the host name)\n"
    "  --runtime PATH   libgpuckpt.so to preload in the gpuckpt workers\n"
    "                   (default $" GK_ENV(RUNTIME) ", else the build tree's)\n"
    "  --worker PATH    throughput-worker (default: beside this program)\n"
    "  --writers N      threads of the parallel storage measurement (default\n"
    "                   $" GK_ENV(WRITERS) ", else 8: the ceiling issue 16's goal names;\n"
    "                   the runtime's own default is the task's processors, 4 to 16)\n"
    "  --wide-writers N the parallel tmpfs measurement again with N threads\n"
    "                   (default 16; 0: not)\n"
    "  --disk-sizes LIST  the sizes measured on --disk (default: all of --sizes)\n"
    "  --variants LIST  the gpuckpt measurement again for each NAME:VAR=VALUE[:VAR=VALUE]\n"
    "                   of a comma-separated list, its rows named <row>:NAME, e.g.\n"
    "                   w16:" GK_ENV(WRITERS) "=16,p256:" GK_ENV(COPY_PIECE) "=256K\n"
    "  --repeat N       run the storage, gpuckpt and driver measurements N times\n"
    "                   each, interleaved, and report the median (default 3)\n"
    "  --skip LIST      leave out some of copy,storage,single,gpuckpt,tables,driver,\n"
    "                   start,direct,disk (single: the one-stream storage rows;\n"
    "                   disk: every measurement on --disk)\n"
    "  --timeout S      longest wait for a worker's next line (default 900)\n"
    "  --dry-run        print the plan; run nothing\n";

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "throughput: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t parse_size(const char *text)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || end == text || !v)
		die("--sizes: '%s' is not a positive size", text);
	if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g' || !*end)
		v <<= 30, end += *end != 0;
	if (*end || v > (1ull << 46))
		die("--sizes: '%s': expected a number of GiB, or <n>M / <n>G up to 64 TiB", text);
	return v;
}

static int parse_sizes(const char *text, uint64_t *sizes, const char *opt)
{
	char *list = strdup(text), *tok, *save;
	int n = 0;

	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_SIZES)
			die("%s: at most %d sizes", opt, MAX_SIZES);
		sizes[n++] = parse_size(tok);
	}
	free(list);
	if (!n)
		die("%s: empty list", opt);
	return n;
}

/* NAME:VAR=VALUE[:VAR=VALUE...][,...] */
static void parse_variants(const char *text, struct opts *o)
{
	char *list = strdup(text), *tok, *save;

	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct variant *v;
		char *part, *save2;
		int k = 0;

		if (o->nvariants == MAX_VARIANTS)
			die("--variants: at most %d", MAX_VARIANTS);
		v = &o->variants[o->nvariants++];
		part = strtok_r(tok, ":", &save2);
		if (!part || !*part || strlen(part) > VARIANT_NAME_MAX || strchr(part, '='))
			die("--variants: '%s': a name of 1 to %d characters first, then :VAR=VALUE",
			    tok, VARIANT_NAME_MAX);
		snprintf(v->name, sizeof(v->name), "%s", part);
		while ((part = strtok_r(NULL, ":", &save2))) {
			if (!strchr(part, '=') || part[0] == '=')
				die("--variants: %s: '%s' is not VAR=VALUE", v->name, part);
			if (k == MAX_VARIANT_ENV)
				die("--variants: %s: at most %d settings", v->name, MAX_VARIANT_ENV);
			v->env[k++] = strdup(part);
		}
		if (!k)
			die("--variants: %s: no VAR=VALUE", v->name);
	}
	free(list);
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	const char *runtime = gk_getenv(RUNTIME), *writers = gk_getenv(WRITERS);
	const char *skip = "";
	char self[PATH_MAX], *slash, *list, *tok, *save;
	ssize_t n;
	int i;

	memset(o, 0, sizeof(*o));
	o->tmpfs = "/dev/shm";
	o->disk = "/var/tmp";
	o->out = ".";
	o->runtime = runtime && *runtime ? runtime : TP_RUNTIME_DEFAULT;
	o->timeout = 900;
	o->repeat = 3;
	o->writers = writers && atoi(writers) > 0 ? atoi(writers) : 8;
	o->wide_writers = 16;
	o->sizes[0] = 1 * GIB;
	o->sizes[1] = 4 * GIB;
	o->sizes[2] = 16 * GIB;
	o->nsizes = 3;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0)
		die("cannot find my own executable: %s", strerror(errno));
	self[n] = 0;
	slash = strrchr(self, '/');
	*slash = 0;
	if (snprintf(o->worker, sizeof(o->worker), "%s/throughput-worker", self) >=
	    (int)sizeof(o->worker))
		die("the path of my executable is too long");

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			exit(0);
		} else if (!strcmp(a, "--dry-run")) {
			o->dry = 1;
			continue;
		}
		if (!v)
			die("'%s': unknown option or missing value (see --help)", a);
		i++;
		if (!strcmp(a, "--sizes")) {
			o->nsizes = parse_sizes(v, o->sizes, a);
		} else if (!strcmp(a, "--disk-sizes")) {
			o->ndisk_sizes = parse_sizes(v, o->disk_sizes, a);
		} else if (!strcmp(a, "--variants")) {
			parse_variants(v, o);
		} else if (!strcmp(a, "--wide-writers")) {
			o->wide_writers = atoi(v);
			if (o->wide_writers < 0 || o->wide_writers > 256 || (!o->wide_writers && strcmp(v, "0")))
				die("--wide-writers '%s': expected 0 to 256", v);
		} else if (!strcmp(a, "--tmpfs")) {
			o->tmpfs = v;
		} else if (!strcmp(a, "--disk")) {
			o->disk = v;
		} else if (!strcmp(a, "--out")) {
			o->out = v;
		} else if (!strcmp(a, "--machine")) {
			o->machine = v;
		} else if (!strcmp(a, "--runtime")) {
			o->runtime = v;
		} else if (!strcmp(a, "--worker")) {
			snprintf(o->worker, sizeof(o->worker), "%s", v);
		} else if (!strcmp(a, "--skip")) {
			skip = v;
		} else if (!strcmp(a, "--writers")) {
			o->writers = atoi(v);
			if (o->writers < 1 || o->writers > 256)
				die("--writers '%s': expected 1 to 256", v);
		} else if (!strcmp(a, "--repeat")) {
			o->repeat = atoi(v);
			if (o->repeat < 1 || o->repeat > 64)
				die("--repeat '%s': expected 1 to 64", v);
		} else if (!strcmp(a, "--timeout")) {
			o->timeout = atoi(v);
			if (o->timeout < 1)
				die("--timeout '%s': expected seconds >= 1", v);
		} else {
			die("unknown option '%s' (see --help)", a);
		}
	}
	o->copy = o->storage = o->gpuckpt = o->driver = o->on_disk = o->tables = 1;
	o->single = o->start = o->direct = 1;
	list = strdup(skip);
	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "copy"))
			o->copy = 0;
		else if (!strcmp(tok, "storage"))
			o->storage = 0;
		else if (!strcmp(tok, "gpuckpt"))
			o->gpuckpt = 0;
		else if (!strcmp(tok, "driver"))
			o->driver = 0;
		else if (!strcmp(tok, "disk"))
			o->on_disk = 0;
		else if (!strcmp(tok, "tables"))
			o->tables = 0;
		else if (!strcmp(tok, "single"))
			o->single = 0;
		else if (!strcmp(tok, "start"))
			o->start = 0;
		else if (!strcmp(tok, "direct"))
			o->direct = 0;
		else
			die("--skip: unknown part '%s' (copy, storage, single, gpuckpt, tables, driver, "
			    "start, direct, disk)",
			    tok);
	}
	free(list);
}

/*
 * Run a worker to its end. Its "RESULT name bytes seconds" lines become
 * results; "verify_mismatches" becomes the note of every result it gave.
 */
static int run_worker(const struct opts *o, const char *mode, uint64_t size, char *const env[],
		      const char *target, struct tp_report *rep, gk_error_t *err)
{
	char bytes[32], line[512], name[64], *argv[4];
	int first = rep->n;
	unsigned long long b;
	struct tp_worker w;
	double secs;
	int rc, status;

	snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)size);
	argv[0] = (char *)o->worker;
	argv[1] = (char *)mode;
	argv[2] = bytes;
	argv[3] = NULL;
	rc = tp_worker_start(&w, o->worker, argv, env, err);
	if (rc)
		return rc;
	while ((rc = tp_worker_line(&w, line, sizeof(line), o->timeout)) == 0) {
		if (sscanf(line, "RESULT %63s %llu %lf", name, &b, &secs) != 3)
			continue;
		if (!strcmp(name, "verify_mismatches")) {
			for (int i = first; i < rep->n; i++) {
				if (b)
					snprintf(rep->r[i].note, sizeof(rep->r[i].note),
						 "%llu words differ", b);
				else
					snprintf(rep->r[i].note, sizeof(rep->r[i].note), "verified");
			}
			continue;
		}
		tp_add(rep, size, name, target, b, secs, NULL);
	}
	status = tp_worker_wait(&w, rc == -ETIMEDOUT ? 0 : 60);
	if (rc == -ETIMEDOUT) {
		gk_errprintf(err, "worker %s: no output for %d s: killed", mode, o->timeout);
		return -ETIMEDOUT;
	}
	if (status) {
		gk_errprintf(err, "worker %s exited with status %d (its message is above)", mode,
			     status);
		return -EIO;
	}
	return 0;
}

static void phase_copy(const struct opts *o, uint64_t size, struct tp_report *rep)
{
	gk_error_t err;
	char *env[] = {GK_ENV(ENABLE) "=0", NULL};

	printf("throughput: %g GiB: device<->host copies\n", (double)size / GIB);
	fflush(stdout);
	if (run_worker(o, "copy", size, env, "", rep, &err))
		tp_add(rep, size, "d2h_pinned", "", size, -1, err.text);
}

/* Room for `size` bytes plus a margin in dir, or a note saying why not. */
static int room_for(const char *dir, uint64_t size, gk_error_t *why)
{
	uint64_t free_b;
	int rc = tp_free_space(dir, &free_b);

	if (rc) {
		gk_errprintf(why, "skipped: %s: %s", dir, strerror(-rc));
		return 0;
	}
	if (free_b < size + GIB) {
		gk_errprintf(why, "skipped: %s has %.1f GiB free", dir, (double)free_b / GIB);
		return 0;
	}
	return 1;
}

/*
 * The parallel write again, each writer from its share of `size` bytes of host
 * memory written once, as a checkpoint's data is, rather than from a buffer
 * that stays in the cache: on tmpfs that copy, not the storage, is what any
 * design staging through host memory pays. The buffer comes from (and goes
 * back to) the kernel outside the timing.
 */
static void storage_from_memory(const struct opts *o, uint64_t size, const char *target,
				const char *path, struct tp_report *rep)
{
	gk_error_t err;
	char note[96];
	double secs;
	char *from = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (from == MAP_FAILED) {
		gk_errprintf(&err, "skipped: %llu bytes of host memory: %s",
			     (unsigned long long)size, strerror(errno));
		tp_add(rep, size, "write_parallel_from_memory", target, size, -1, err.text);
		return;
	}
	for (uint64_t i = 0; i < size; i += 4096)
		from[i] = (char)(i >> 12) | 1;
	snprintf(note, sizeof(note), "%d writers, a file each, from %g GiB of host memory",
		 o->writers, (double)size / GIB);
	if (tp_storage_write_parallel_from(path, from, size, o->writers, &secs, &err))
		tp_add(rep, size, "write_parallel_from_memory", target, size, -1, err.text);
	else
		tp_add(rep, size, "write_parallel_from_memory", target, size, secs, note);
	munmap(from, size);
}

/* write_parallel and read_parallel (or their _wide twins) with n threads. */
static void storage_parallel(uint64_t size, const char *target, const char *path, int n,
			     const char *suffix, struct tp_report *rep)
{
	gk_error_t err;
	char note[64], metric[32];
	double secs;

	snprintf(note, sizeof(note), "%d writers, a file each", n);
	snprintf(metric, sizeof(metric), "write_parallel%s", suffix);
	if (tp_storage_write_parallel(path, size, n, &secs, &err)) {
		tp_add(rep, size, metric, target, size, -1, err.text);
		return;
	}
	tp_add(rep, size, metric, target, size, secs, note);
	snprintf(note, sizeof(note), "%d readers, a file each", n);
	snprintf(metric, sizeof(metric), "read_parallel%s", suffix);
	if (tp_storage_read_parallel(path, size, n, &secs, &err))
		tp_add(rep, size, metric, target, size, -1, err.text);
	else
		tp_add(rep, size, metric, target, size, secs, note);
}

static void phase_storage(const struct opts *o, uint64_t size, const char *target, const char *dir,
			  struct tp_report *rep)
{
	gk_error_t err;
	char path[PATH_MAX];
	double secs;

	printf("throughput: %g GiB: %s (%s) write and read, %s%d writers%s\n", (double)size / GIB,
	       target, dir, o->single ? "one writer and " : "", o->writers,
	       o->wide_writers && !strcmp(target, "tmpfs") ? " and more" : "");
	fflush(stdout);
	if (!room_for(dir, size, &err)) {
		tp_add(rep, size, "write_parallel", target, size, -1, err.text);
		return;
	}
	snprintf(path, sizeof(path), "%s/gpuckpt-throughput.%d.dat", dir, (int)getpid());
	if (o->single) {
		if (tp_storage_write(path, size, &secs, &err)) {
			tp_add(rep, size, "write", target, size, -1, err.text);
			unlink(path);
			return;
		}
		tp_add(rep, size, "write", target, size, secs, "one writer");
		if (tp_storage_read(path, size, &secs, &err))
			tp_add(rep, size, "read", target, size, -1, err.text);
		else
			tp_add(rep, size, "read", target, size, secs, "one reader");
		unlink(path);
	}
	if (o->writers >= 2) {
		storage_parallel(size, target, path, o->writers, "", rep);
		tp_storage_remove_parallel(path, o->writers);
	}
	/* What tmpfs takes from more threads than the runtime's default: it is
	 * bound by each writer's processor time. */
	if (o->wide_writers >= 2 && !strcmp(target, "tmpfs")) {
		storage_parallel(size, target, path, o->wide_writers, "_wide", rep);
		tp_storage_remove_parallel(path, o->wide_writers);
	}
	if (!strcmp(target, "tmpfs") && o->writers >= 2) {
		storage_from_memory(o, size, target, path, rep);
		tp_storage_remove_parallel(path, o->writers);
	}
}

/*
 * The check a restore makes of every checksum, by each of the image formats'
 * algorithms, over the checkpoint just written: as many threads as the
 * runtime's check uses (runtime/image/verify.c: up to 16, one per CPU).
 */
static void phase_check(const struct opts *o, uint64_t size, const char *target,
			const char *ckdir, struct tp_report *rep)
{
	gk_error_t err;
	char dir[PATH_MAX + 16], note[96];
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int threads = cpus > 16 ? 16 : cpus < 1 ? 1 : (int)cpus;
	uint64_t bytes;
	double secs;

	(void)o;
	snprintf(dir, sizeof(dir), "%s/ckpt.000001", ckdir);
	snprintf(note, sizeof(note), "%d threads, 8 MiB chunks, the data files of the checkpoint",
		 threads);
	for (int xxh3 = 0; xxh3 <= 1; xxh3++) {
		const char *metric = xxh3 ? "check_xxh3" : "check_xxh64";

		if (tp_check_files(dir, xxh3, threads, &bytes, &secs, &err))
			tp_add(rep, size, metric, target, size, -1, err.text);
		else
			tp_add(rep, size, metric, target, bytes, secs, note);
	}
}

/* Rename the results added since index `first` from `from` to `to`. */
static void rename_since(struct tp_report *rep, int first, const char *from, const char *to)
{
	for (int i = first; i < rep->n; i++)
		if (!strcmp(rep->r[i].metric, from))
			snprintf(rep->r[i].metric, sizeof(rep->r[i].metric), "%s", to);
}

/*
 * The mostly static state (worker gpuckpt-tables): three checkpoints, the
 * second in the background, the third an increment with 10 % of the chunks
 * changed; then restores of the increment (a chain: its unchanged chunks
 * are read from the second) and of the second, each checked word by word.
 * The snapshot memory is the runtime's default (half the memory available).
 */
static void phase_tables(const struct opts *o, uint64_t size, const char *target, const char *dir,
			 struct tp_report *rep)
{
	gk_error_t err;
	char ckdir[PATH_MAX], preload[PATH_MAX + 16], gdir[PATH_MAX + 16];
	char sub[PATH_MAX + 32], restore[PATH_MAX + 48];
	char *env[] = {preload,		  GK_ENV(ENABLE) "=1",	  gdir, GK_ENV(LOG_LEVEL) "=info",
		       GK_ENV(INTERVAL) "=0", GK_ENV(INCREMENTS) "=4", GK_ENV(KEEP) "=10",
		       NULL,		  NULL};
	uint64_t image;
	int rc, first;

	printf("throughput: %g GiB: mostly static state: background and incremental checkpoints "
	       "on %s (%s)\n",
	       (double)size / GIB, target, dir);
	fflush(stdout);
	if (!room_for(dir, 2 * size, &err)) {
		tp_add(rep, size, "gpuckpt_async_pause", target, size, -1, err.text);
		return;
	}
	snprintf(ckdir, sizeof(ckdir), "%s/gpuckpt-tables.%d", dir, (int)getpid());
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", o->runtime);
	snprintf(gdir, sizeof(gdir), GK_ENV(DIR) "=%s", ckdir);
	if (mkdir(ckdir, 0700) && errno != EEXIST) {
		gk_errprintf(&err, "skipped: mkdir %s: %s", ckdir, strerror(errno));
		tp_add(rep, size, "gpuckpt_async_pause", target, size, -1, err.text);
		return;
	}
	rc = run_worker(o, "gpuckpt-tables", size, env, target, rep, &err);
	if (rc) {
		tp_add(rep, size, "gpuckpt_async_pause", target, size, -1, err.text);
		goto out_remove;
	}
	snprintf(sub, sizeof(sub), "%s/ckpt.000003", ckdir);
	if (!tp_dir_bytes(sub, &image))
		tp_add(rep, size, "gpuckpt_incr_image", target, image, -1,
		       "what the increment wrote (10 % of the chunks changed)");
	rc = tp_dir_evict(ckdir);
	if (rc)
		fprintf(stderr, "throughput: %s: dropping cached pages: %s\n", ckdir,
			strerror(-rc));
	env[7] = GK_ENV(RESTORE) "=auto";
	first = rep->n;
	if (run_worker(o, "gpuckpt-restore", size, env, target, rep, &err))
		tp_add(rep, size, "gpuckpt_incr_restore", target, size, -1, err.text);
	rename_since(rep, first, "gpuckpt_restore", "gpuckpt_incr_restore");
	rename_since(rep, first, "gpuckpt_restart", "gpuckpt_incr_restart");
	rename_since(rep, first, "gpuckpt_restart_context", "gpuckpt_incr_restart_context");
	rename_since(rep, first, "gpuckpt_restart_setup", "gpuckpt_incr_restart_setup");
	snprintf(restore, sizeof(restore), GK_ENV(RESTORE) "=%s/ckpt.000002", ckdir);
	env[7] = restore;
	first = rep->n;
	if (run_worker(o, "gpuckpt-restore", size, env, target, rep, &err))
		tp_add(rep, size, "gpuckpt_async_restore", target, size, -1, err.text);
	rename_since(rep, first, "gpuckpt_restore", "gpuckpt_async_restore");
	rename_since(rep, first, "gpuckpt_restart", "gpuckpt_async_restart");
	rename_since(rep, first, "gpuckpt_restart_context", "gpuckpt_async_restart_context");
	rename_since(rep, first, "gpuckpt_restart_setup", "gpuckpt_async_restart_setup");
out_remove:
	rc = tp_dir_remove(ckdir);
	if (rc)
		fprintf(stderr, "throughput: removing %s: %s\n", ckdir, strerror(-rc));
}

/* Append ":name" to the rows added since index `first`. */
static void suffix_since(struct tp_report *rep, int first, const char *name)
{
	for (int i = first; i < rep->n; i++) {
		char *metric = rep->r[i].metric;
		size_t len = strlen(metric);

		snprintf(metric + len, sizeof(rep->r[i].metric) - len, ":%s", name);
	}
}

/*
 * One checkpoint written the blocking way (as the exit checkpoint after
 * SIGTERM always is) and restored; with a variant, under its settings, its
 * rows named <row>:<variant>.
 */
static void phase_gpuckpt(const struct opts *o, uint64_t size, const char *target, const char *dir,
			  const struct variant *var, struct tp_report *rep)
{
	gk_error_t err;
	char ckdir[PATH_MAX], preload[PATH_MAX + 16], gdir[PATH_MAX + 16];
	/* GPUCKPT_SNAPSHOT_MEMORY=off: written the blocking way, as the exit
	 * checkpoint after SIGTERM always is. */
	char *env[8 + MAX_VARIANT_ENV] = {preload,
					  GK_ENV(ENABLE) "=1",
					  gdir,
					  GK_ENV(LOG_LEVEL) "=info",
					  GK_ENV(INTERVAL) "=0",
					  GK_ENV(SNAPSHOT_MEMORY) "=off"};
	int rc, first = rep->n, k = 6;
	uint64_t image;

	for (int i = 0; var && var->env[i]; i++)
		env[k++] = var->env[i];
	printf("throughput: %g GiB: gpuckpt checkpoint and restore on %s (%s)%s%s\n",
	       (double)size / GIB, target, dir, var ? ", variant " : "", var ? var->name : "");
	fflush(stdout);
	if (access(o->runtime, R_OK)) {
		gk_errprintf(&err, "skipped: runtime %s: %s", o->runtime, strerror(errno));
		tp_add(rep, size, "gpuckpt_checkpoint", target, size, -1, err.text);
		goto out_name;
	}
	if (!room_for(dir, size, &err)) {
		tp_add(rep, size, "gpuckpt_checkpoint", target, size, -1, err.text);
		goto out_name;
	}
	snprintf(ckdir, sizeof(ckdir), "%s/gpuckpt-throughput.%d", dir, (int)getpid());
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", o->runtime);
	snprintf(gdir, sizeof(gdir), GK_ENV(DIR) "=%s", ckdir);
	if (mkdir(ckdir, 0700) && errno != EEXIST) {
		gk_errprintf(&err, "skipped: mkdir %s: %s", ckdir, strerror(errno));
		tp_add(rep, size, "gpuckpt_checkpoint", target, size, -1, err.text);
		goto out_name;
	}
	rc = run_worker(o, "gpuckpt-save", size, env, target, rep, &err);
	if (rc) {
		tp_add(rep, size, "gpuckpt_checkpoint", target, size, -1, err.text);
		goto out_remove;
	}
	if (!tp_dir_bytes(ckdir, &image))
		tp_add(rep, size, "gpuckpt_image", target, image, -1, "checkpoint size on storage");
	if (!strcmp(target, "tmpfs") && !var)
		phase_check(o, size, target, ckdir, rep);
	/* The restore must read the storage, not the pages the checkpoint left in memory. */
	rc = tp_dir_evict(ckdir);
	if (rc)
		fprintf(stderr, "throughput: %s: dropping cached pages: %s\n", ckdir,
			strerror(-rc));
	env[k] = GK_ENV(RESTORE) "=auto";
	if (run_worker(o, "gpuckpt-restore", size, env, target, rep, &err))
		tp_add(rep, size, "gpuckpt_restore", target, size, -1, err.text);
out_remove:
	rc = tp_dir_remove(ckdir);
	if (rc)
		fprintf(stderr, "throughput: removing %s: %s\n", ckdir, strerror(-rc));
out_name:
	if (var)
		suffix_since(rep, first, var->name);
}

/*
 * What a restart cannot go below: a worker that only starts CUDA, makes the
 * state's allocations and clears them (what the restarted worker does before
 * its first point), natively; then the same with the runtime preloaded and
 * nothing to restore (its own start: the address reservation, placement).
 */
static void phase_start(const struct opts *o, uint64_t size, struct tp_report *rep)
{
	gk_error_t err;
	char preload[PATH_MAX + 16];
	char *native[] = {NULL};
	char *env[] = {preload, GK_ENV(ENABLE) "=1", GK_ENV(LOG_LEVEL) "=info", NULL};
	int first;

	printf("throughput: %g GiB: the start of CUDA and of the allocations, natively and under "
	       "the runtime\n",
	       (double)size / GIB);
	fflush(stdout);
	if (run_worker(o, "start", size, native, "", rep, &err))
		tp_add(rep, size, "cuda_start", "", size, -1, err.text);
	snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", o->runtime);
	first = rep->n;
	if (run_worker(o, "start", size, env, "", rep, &err))
		tp_add(rep, size, "runtime_start", "", size, -1, err.text);
	rename_since(rep, first, "cuda_start_context", "runtime_start_context");
	rename_since(rep, first, "cuda_start", "runtime_start");
}

/*
 * The probe of copies from the device straight into the pages of files
 * (worker mode direct), with as many threads as the runtime's writers.
 */
static void phase_direct(const struct opts *o, uint64_t size, const char *target, const char *dir,
			 struct tp_report *rep)
{
	gk_error_t err;
	char ddir[PATH_MAX], denv[PATH_MAX + 16], tenv[32];
	char *env[] = {denv, tenv, NULL};
	int rc;

	printf("throughput: %g GiB: probe: copies from the device into mapped, pinned pages of %s "
	       "files (%s)\n",
	       (double)size / GIB, target, dir);
	fflush(stdout);
	if (!room_for(dir, size, &err)) {
		tp_add(rep, size, "direct_dma", target, size, -1, err.text);
		return;
	}
	snprintf(ddir, sizeof(ddir), "%s/gpuckpt-direct.%d", dir, (int)getpid());
	snprintf(denv, sizeof(denv), "TP_DIRECT_DIR=%s", ddir);
	snprintf(tenv, sizeof(tenv), "TP_DIRECT_THREADS=%d", o->writers);
	if (mkdir(ddir, 0700) && errno != EEXIST) {
		gk_errprintf(&err, "skipped: mkdir %s: %s", ddir, strerror(errno));
		tp_add(rep, size, "direct_dma", target, size, -1, err.text);
		return;
	}
	if (run_worker(o, "direct", size, env, target, rep, &err))
		tp_add(rep, size, "direct_dma", target, size, -1, err.text);
	rc = tp_dir_remove(ddir);
	if (rc)
		fprintf(stderr, "throughput: removing %s: %s\n", ddir, strerror(-rc));
}

static void phase_driver(const struct opts *o, uint64_t size, struct tp_report *rep)
{
	gk_error_t err;
	char bytes[32], line[512], name[64], *argv[4];
	char *env[] = {GK_ENV(ENABLE) "=0", NULL};
	struct tp_result *restored = NULL;
	int rc, pid = -1, locked = 0, status;
	unsigned long long b;
	struct tp_worker w;
	double t0, secs;

	printf("throughput: %g GiB: driver checkpoint and restore\n", (double)size / GIB);
	fflush(stdout);
	if (tp_driver_open(&err)) {
		tp_add(rep, size, "driver_checkpoint", "", size, -1, err.text);
		return;
	}
	snprintf(bytes, sizeof(bytes), "%llu", (unsigned long long)size);
	argv[0] = (char *)o->worker;
	argv[1] = "hold";
	argv[2] = bytes;
	argv[3] = NULL;
	if (tp_worker_start(&w, o->worker, argv, env, &err)) {
		tp_add(rep, size, "driver_checkpoint", "", size, -1, err.text);
		return;
	}
	while ((rc = tp_worker_line(&w, line, sizeof(line), o->timeout)) == 0)
		if (sscanf(line, "READY %d", &pid) == 1)
			break;
	if (rc) {
		gk_errprintf(&err, "worker hold: %s before READY",
			     rc == -ETIMEDOUT ? "timed out" : "ended");
		tp_add(rep, size, "driver_checkpoint", "", size, -1, err.text);
		goto out_wait;
	}

	t0 = tp_now();
	if (tp_driver_lock(pid, 60000, &err)) {
		tp_add(rep, size, "driver_lock", "", 0, -1, err.text);
		goto out_wait;
	}
	locked = 1;
	tp_add(rep, size, "driver_lock", "", 0, tp_now() - t0, NULL);
	t0 = tp_now();
	if (tp_driver_checkpoint(pid, &err)) {
		tp_add(rep, size, "driver_checkpoint", "", size, -1, err.text);
		goto out_unlock;
	}
	tp_add(rep, size, "driver_checkpoint", "", size, tp_now() - t0, NULL);
	t0 = tp_now();
	if (tp_driver_restore(pid, &err)) {
		/* Its memory is gone: the worker cannot go on. */
		tp_add(rep, size, "driver_restore", "", size, -1, err.text);
		kill(w.pid, SIGKILL);
		locked = 0;
		goto out_wait;
	}
	restored = tp_add(rep, size, "driver_restore", "", size, tp_now() - t0, NULL);
out_unlock:
	if (locked) {
		t0 = tp_now();
		if (tp_driver_unlock(pid, &err))
			tp_add(rep, size, "driver_unlock", "", 0, -1, err.text);
		else
			tp_add(rep, size, "driver_unlock", "", 0, tp_now() - t0, NULL);
	}
	if (tp_worker_send(&w, "VERIFY\n") == 0) {
		while (tp_worker_line(&w, line, sizeof(line), o->timeout) == 0) {
			if (sscanf(line, "RESULT %63s %llu %lf", name, &b, &secs) == 3 &&
			    !strcmp(name, "verify_mismatches") && restored)
				snprintf(restored->note, sizeof(restored->note), "%s",
					 b ? "worker memory differs after restore" : "verified");
		}
	}
out_wait:
	status = tp_worker_wait(&w, 60);
	if (status && restored)
		snprintf(restored->note, sizeof(restored->note), "worker exited with status %d",
			 status);
}

/* Whether size is measured on the disk folder. */
static int on_disk(const struct opts *o, uint64_t size)
{
	if (!o->on_disk)
		return 0;
	if (!o->ndisk_sizes)
		return 1;
	for (int i = 0; i < o->ndisk_sizes; i++)
		if (o->disk_sizes[i] == size)
			return 1;
	return 0;
}

static void print_plan(const struct opts *o)
{
	int i;

	printf("throughput: dry run: nothing is executed\n");
	printf("worker: %s\nruntime: %s\n", o->worker, o->runtime);
	for (i = 0; i < o->nsizes; i++) {
		uint64_t s = o->sizes[i];

		printf("== %g GiB (%llu bytes) of device state in 1 GiB allocations\n",
		       (double)s / GIB, (unsigned long long)s);
		if (o->copy)
			printf(
			    "  copy:    " GK_ENV(ENABLE) "=0 %s copy %llu   (pinned/pageable D2H, H2D; "
			    "median of 3)\n",
			    o->worker, (unsigned long long)s);
		if (o->storage)
			printf(
			    "  storage: write+fsync, then cold read, of %llu bytes in %s%s%s,\n"
			    "           %sby %d threads with a file each%s\n",
			    (unsigned long long)s, o->tmpfs, on_disk(o, s) ? " and " : "",
			    on_disk(o, s) ? o->disk : "", o->single ? "by one writer, then " : "",
			    o->writers, o->wide_writers ? ", then (tmpfs) by more" : "");
		if (o->start)
			printf("  start:   %s start %llu, natively, then under the runtime (CUDA's "
			       "start and the allocations)\n",
			       o->worker, (unsigned long long)s);
		if (o->tables)
			printf("  tables:  " GK_ENV(DIR) "=%s/gpuckpt-tables.PID " GK_ENV(INCREMENTS) "=4 %s "
			       "gpuckpt-tables %llu\n"
			       "           (whole; all changed, in the background: pause; 10%% "
			       "changed: pause and bytes);\n"
			       "           " GK_ENV(RESTORE) "=auto (the increment), then =ckpt.000002: "
			       "gpuckpt-restore, every word checked\n",
			       o->tmpfs, o->worker, (unsigned long long)s);
		if (o->gpuckpt)
			printf(
			    "  gpuckpt: LD_PRELOAD=%s " GK_ENV(DIR) "=<%s%s%s>/gpuckpt-throughput.PID\n"
			    "           " GK_ENV(SNAPSHOT_MEMORY) "=off %s gpuckpt-save %llu (blocking);\n"
			    "           check its data with XXH64 and XXH3 (tmpfs); drop its pages;\n"
			    "           " GK_ENV(RESTORE) "=auto %s gpuckpt-restore %llu (checks every "
			    "word)\n",
			    o->runtime, o->tmpfs, on_disk(o, s) ? "|" : "", on_disk(o, s) ? o->disk : "",
			    o->worker, (unsigned long long)s, o->worker, (unsigned long long)s);
		for (int v = 0; o->gpuckpt && v < o->nvariants; v++) {
			printf("  variant %s: the gpuckpt measurement on %s again with", o->variants[v].name,
			       o->tmpfs);
			for (int k = 0; o->variants[v].env[k]; k++)
				printf(" %s", o->variants[v].env[k]);
			printf("\n");
		}
		if (o->direct)
			printf("  direct:  TP_DIRECT_DIR=%s/gpuckpt-direct.PID %s direct %llu (first pass "
			       "only)\n",
			       o->tmpfs, o->worker, (unsigned long long)s);
		if (o->driver)
			printf(
			    "  driver:  %s hold %llu; from here: cuCheckpointProcessLock, "
			    "Checkpoint, Restore, Unlock on its pid; then it checks every word\n",
			    o->worker, (unsigned long long)s);
	}
	printf("results: %s/throughput-<machine>-<date>.csv and .md\n", o->out);
}

static void print_file(const char *path)
{
	FILE *f = fopen(path, "r");
	int c;

	if (!f)
		return;
	while ((c = fgetc(f)) != EOF)
		putchar(c);
	fclose(f);
}

int main(int argc, char **argv)
{
	gk_error_t err;
	char host[256], base[PATH_MAX], header[3 * PATH_MAX + 512], stamp[32];
	struct tp_report *rep, *passes;
	struct opts o;
	time_t now = time(NULL);
	int i;

	parse_args(argc, argv, &o);
	if (o.dry) {
		print_plan(&o);
		return 0;
	}
	if (access(o.worker, X_OK))
		die("worker %s: %s (build with make, or give --worker)", o.worker, strerror(errno));
	/* A worker that dies must not take this process with it when we write to it. */
	signal(SIGPIPE, SIG_IGN);
	rep = calloc(1, sizeof(*rep));
	passes = calloc((size_t)o.repeat, sizeof(*passes));
	if (!rep || !passes)
		die("out of memory");
	if (!o.machine) {
		if (gethostname(host, sizeof(host)))
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = 0;
		o.machine = host;
	}
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", localtime(&now));
	if (snprintf(base, sizeof(base), "%s/throughput-%s-%s", o.out, o.machine, stamp) >=
	    (int)sizeof(base))
		die("--out %s: the path is too long", o.out);

	for (i = 0; i < o.nsizes; i++) {
		uint64_t s = o.sizes[i];

		/* The copy phase takes its own median of three passes. The others run
		 * in turn, pass after pass, so that a slow spell of the machine
		 * spreads over all of them instead of landing on one. */
		if (o.copy)
			phase_copy(&o, s, &passes[0]);
		for (int p = 0; p < o.repeat; p++) {
			if (o.repeat > 1)
				printf("throughput: %g GiB: pass %d of %d\n", (double)s / GIB, p + 1,
				       o.repeat);
			if (o.storage) {
				phase_storage(&o, s, "tmpfs", o.tmpfs, &passes[p]);
				if (on_disk(&o, s))
					phase_storage(&o, s, "disk", o.disk, &passes[p]);
			}
			if (o.start)
				phase_start(&o, s, &passes[p]);
			if (o.gpuckpt) {
				phase_gpuckpt(&o, s, "tmpfs", o.tmpfs, NULL, &passes[p]);
				for (int v = 0; v < o.nvariants; v++)
					phase_gpuckpt(&o, s, "tmpfs", o.tmpfs, &o.variants[v],
						      &passes[p]);
				if (on_disk(&o, s))
					phase_gpuckpt(&o, s, "disk", o.disk, NULL, &passes[p]);
			}
			/* A probe: once. */
			if (o.direct && p == 0)
				phase_direct(&o, s, "tmpfs", o.tmpfs, &passes[p]);
			if (o.tables)
				phase_tables(&o, s, "tmpfs", o.tmpfs, &passes[p]);
			if (o.driver)
				phase_driver(&o, s, &passes[p]);
		}
		tp_median_of(passes, o.repeat, rep);
		/* Written after every size, so an interrupted run keeps what it measured. */
		snprintf(header, sizeof(header),
			 "# gpuckpt checkpoint throughput: %s, %s\n\n- tmpfs: %s, disk: %s\n"
			 "- runtime: %s\n- worker: %s\n- parallel storage: %d writers\n"
			 "- storage, gpuckpt and driver: median of %d passes (range in the note)",
			 o.machine, stamp, o.tmpfs, o.disk, o.runtime, o.worker, o.writers,
			 o.repeat);
		if (tp_write_reports(rep, base, header, &err))
			die("%s", err.text);
	}
	printf("throughput: results in %s.csv and %s.md\n\n", base, base);
	if (snprintf(header, sizeof(header), "%s.md", base) < (int)sizeof(header))
		print_file(header);
	free(passes);
	free(rep);
	return 0;
}
