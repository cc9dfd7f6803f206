/*
 * emu.cc - the benchmark emulator's CUDA runtime and gpuckpt API (README.md).
 *
 * Kernels: every block runs its threads as fibers on one OS thread; a thread
 * runs until __syncthreads() or its end, and the threads still running are
 * resumed once all have arrived. The order of blocks, and of threads between
 * two barriers, is shuffled from EMU_SEED, so a kernel whose result depends on
 * scheduling (a race, a read of shared memory nobody wrote) gives different
 * checksums under different seeds.
 *
 * Device memory: host pages at fixed, never reused addresses (so a restarted
 * run gets the same addresses, as under gpuckpt's placement), each allocation
 * ending at a guard page, freed ones kept inaccessible, and all of them
 * inaccessible to the host outside kernels and copies: an out-of-bounds
 * index, a use after free or a host dereference of a device pointer faults.
 *
 * gpuckpt: EMU_CKPT_AT=N saves every live allocation and registered region to
 * EMU_CKPT_FILE at the N-th gpuckpt_point() call and then dies by SIGTERM
 * (EMU_CKPT_MODE=exit, the default) or goes on (continue); EMU_RESTORE=FILE
 * loads such a file at the first gpuckpt_point(), recreating allocations that
 * the restarted run's setup did not make. EMU_COUNT_POINTS=1 reports the
 * number of gpuckpt_point() calls at exit. Without those, under the runtime's
 * own variables (GPUCKPT_DIR, GPUCKPT_RESTORE), it behaves as the runtime does
 * towards benchmarks/run: see runtime_mode_init().
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cuda_runtime.h"
#include "gpuckpt.h"

#define PAGE 4096ul
#define DEVICE_BASE 0x300000000000ul
#define FIBER_STACK (256ul << 10)
#define MAX_THREADS 1024

uint3 emu_thread_idx, emu_block_idx;
dim3 emu_block_dim, emu_grid_dim;

static void emu_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void emu_fatal(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "emu: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

/* ---- scheduling randomness ---- */

static uint64_t sched_state;

static uint64_t sched_next(void)
{
	uint64_t x = (sched_state += 0x9e3779b97f4a7c15ull);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

template <class T> static void shuffle(std::vector<T> &v)
{
	for (size_t i = v.size(); i > 1; i--) {
		size_t j = sched_next() % i;
		T t = v[i - 1];

		v[i - 1] = v[j];
		v[j] = t;
	}
}

/* ---- device memory ---- */

struct alloc {
	uintptr_t span; /* guard page, data pages, guard page */
	size_t span_len;
	uintptr_t ptr; /* what the program sees: ends at the trailing guard page */
	size_t size;
	bool live;
};

static std::vector<alloc> allocs;
static uintptr_t bump = DEVICE_BASE;
static size_t device_used, device_total = 4ul << 30;
static int access_depth;

static size_t data_pages(size_t size)
{
	return (size + PAGE - 1) / PAGE * PAGE;
}

static void set_access(const alloc &a, int prot)
{
	if (mprotect((void *)(a.span + PAGE), data_pages(a.size ? a.size : 1), prot))
		emu_fatal("mprotect of the allocation at %#lx: %s", (unsigned long)a.ptr,
			  strerror(errno));
}

/* Device memory is reachable only inside kernels and copies. */
static void device_open(void)
{
	if (access_depth++ == 0)
		for (const alloc &a : allocs)
			if (a.live)
				set_access(a, PROT_READ | PROT_WRITE);
}

static void device_close(void)
{
	if (--access_depth == 0)
		for (const alloc &a : allocs)
			if (a.live)
				set_access(a, PROT_NONE);
}

static alloc *map_alloc(uintptr_t span, size_t size)
{
	size_t len = data_pages(size ? size : 1) + 2 * PAGE;
	void *p = mmap((void *)span, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	alloc a;

	if (p == MAP_FAILED || (uintptr_t)p != span)
		emu_fatal("cannot map device memory at %#lx: %s", (unsigned long)span,
			  strerror(errno));
	a.span = span;
	a.span_len = len;
	a.size = size;
	/* 8-byte alignment, so that even small overruns reach the guard page. */
	a.ptr = span + PAGE + data_pages(size ? size : 1) - ((size + 7) & ~7ul);
	a.live = true;
	if (access_depth)
		set_access(a, PROT_READ | PROT_WRITE);
	allocs.push_back(a);
	if (span + len > bump)
		bump = span + len;
	device_used += size;
	return &allocs.back();
}

/* The live allocation holding [p, p + n), or NULL. */
static alloc *find_alloc(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p;

	for (alloc &x : allocs)
		if (x.live && a >= x.ptr && a + n <= x.ptr + x.size && a + n >= a)
			return &x;
	return NULL;
}

static bool in_device_range(const void *p)
{
	return (uintptr_t)p >= DEVICE_BASE && (uintptr_t)p < bump;
}

/* ---- fibers ---- */

enum { F_READY, F_BARRIER, F_DONE };

struct fiber {
	ucontext_t ctx;
	uint3 tid;
	int state;
	char *stack;
};

static fiber fibers[MAX_THREADS];
static ucontext_t sched_ctx;
static fiber *cur_fiber;
static const std::function<void()> *cur_body;
static bool direct_mode;
static long barriers_seen;
static const char *cur_kernel;

static void fiber_main(void)
{
	(*cur_body)();
	cur_fiber->state = F_DONE;
}

void __syncthreads(void)
{
	if (direct_mode)
		emu_fatal("kernel %s: __syncthreads() in block (%u,%u,%u) after the first block "
			  "ran without barriers (divergent barrier?)",
			  cur_kernel, emu_block_idx.x, emu_block_idx.y, emu_block_idx.z);
	barriers_seen++;
	cur_fiber->state = F_BARRIER;
	swapcontext(&cur_fiber->ctx, &sched_ctx);
}

static uint3 thread_index(unsigned i, dim3 b)
{
	uint3 t = {i % b.x, (i / b.x) % b.y, i / (b.x * b.y)};

	return t;
}

static void run_block_fibers(unsigned n)
{
	std::vector<fiber *> ready;
	unsigned i;

	for (i = 0; i < n; i++) {
		fiber *f = &fibers[i];

		if (!f->stack) {
			f->stack = (char *)mmap(NULL, FIBER_STACK, PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (f->stack == MAP_FAILED)
				emu_fatal("no memory for fiber stacks");
		}
		f->tid = thread_index(i, emu_block_dim);
		getcontext(&f->ctx);
		f->ctx.uc_stack.ss_sp = f->stack;
		f->ctx.uc_stack.ss_size = FIBER_STACK;
		f->ctx.uc_link = &sched_ctx;
		makecontext(&f->ctx, fiber_main, 0);
		f->state = F_READY;
	}
	for (;;) {
		ready.clear();
		for (i = 0; i < n; i++)
			if (fibers[i].state == F_READY)
				ready.push_back(&fibers[i]);
		if (ready.empty())
			break;
		shuffle(ready);
		for (fiber *f : ready) {
			cur_fiber = f;
			emu_thread_idx = f->tid;
			swapcontext(&sched_ctx, &f->ctx);
		}
		for (i = 0; i < n; i++)
			if (fibers[i].state == F_BARRIER)
				fibers[i].state = F_READY;
	}
}

static void run_block_direct(unsigned n)
{
	std::vector<unsigned> order(n);
	unsigned i;

	for (i = 0; i < n; i++)
		order[i] = i;
	shuffle(order);
	for (unsigned t : order) {
		emu_thread_idx = thread_index(t, emu_block_dim);
		(*cur_body)();
	}
}

static cudaError_t last_error = cudaSuccess;

void emu_launch(const char *name, dim3 grid, dim3 block, const std::function<void()> &body)
{
	unsigned long nthreads = (unsigned long)block.x * block.y * block.z, nblocks, k;
	std::vector<unsigned long> order;
	bool first = true;

	if (!grid.x || !grid.y || !grid.z || grid.x > 2147483647u || grid.y > 65535 ||
	    grid.z > 65535 || !nthreads || nthreads > MAX_THREADS || block.z > 64) {
		fprintf(stderr,
			"emu: kernel %s: invalid configuration grid (%u,%u,%u) block "
			"(%u,%u,%u)\n",
			name, grid.x, grid.y, grid.z, block.x, block.y, block.z);
		last_error = cudaErrorInvalidConfiguration;
		return;
	}
	nblocks = (unsigned long)grid.x * grid.y * grid.z;
	order.resize(nblocks);
	for (k = 0; k < nblocks; k++)
		order[k] = k;
	shuffle(order);

	cur_kernel = name;
	cur_body = &body;
	emu_grid_dim = grid;
	emu_block_dim = block;
	direct_mode = false;
	device_open();
	for (unsigned long b : order) {
		emu_block_idx.x = (unsigned)(b % grid.x);
		emu_block_idx.y = (unsigned)(b / grid.x % grid.y);
		emu_block_idx.z = (unsigned)(b / grid.x / grid.y);
		if (direct_mode) {
			run_block_direct((unsigned)nthreads);
			continue;
		}
		barriers_seen = 0;
		run_block_fibers((unsigned)nthreads);
		/* A kernel without barriers needs no fibers: run its other blocks directly. */
		if (first && barriers_seen == 0)
			direct_mode = true;
		first = false;
	}
	direct_mode = false;
	device_close();
}

/* ---- runtime API ---- */

const char *cudaGetErrorName(cudaError_t err)
{
	switch (err) {
	case cudaSuccess:
		return "cudaSuccess";
	case cudaErrorInvalidValue:
		return "cudaErrorInvalidValue";
	case cudaErrorMemoryAllocation:
		return "cudaErrorMemoryAllocation";
	case cudaErrorInvalidConfiguration:
		return "cudaErrorInvalidConfiguration";
	case cudaErrorInvalidDevicePointer:
		return "cudaErrorInvalidDevicePointer";
	case cudaErrorInvalidResourceHandle:
		return "cudaErrorInvalidResourceHandle";
	case cudaErrorNoDevice:
		return "cudaErrorNoDevice";
	}
	return "cudaErrorUnknown";
}

const char *cudaGetErrorString(cudaError_t err)
{
	return err == cudaSuccess ? "no error" : "emulated error (see the line above)";
}

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = last_error;

	last_error = cudaSuccess;
	return e;
}

static cudaError_t fail(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cudaError_t fail(cudaError_t e, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "emu: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return e;
}

cudaError_t cudaSetDevice(int dev)
{
	return dev == 0 ? cudaSuccess : fail(cudaErrorInvalidValue, "cudaSetDevice(%d)", dev);
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev)
{
	if (dev != 0)
		return fail(cudaErrorInvalidValue, "cudaGetDeviceProperties(%d)", dev);
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "emulated GPU (host fibers)");
	p->totalGlobalMem = device_total;
	p->major = 9;
	p->multiProcessorCount = 1;
	return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
	return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
	*free_bytes = device_total - device_used;
	*total = device_total;
	return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t size)
{
	if (!p)
		return fail(cudaErrorInvalidValue, "cudaMalloc: NULL result pointer");
	if (size > device_total - device_used)
		return fail(cudaErrorMemoryAllocation, "cudaMalloc(%zu): %zu of %zu bytes in use",
			    size, device_used, device_total);
	alloc *a = map_alloc(bump, size);

	/*
	 * cudaMalloc'd memory holds whatever was there: garbage that depends on
	 * the seed makes a read of never-written memory show as a changed checksum.
	 */
	device_open();
	for (size_t i = 0; i + 8 <= size; i += 8) {
		uint64_t g = sched_next();

		memcpy((char *)a->ptr + i, &g, 8);
	}
	device_close();
	*p = (void *)a->ptr;
	return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
	if (!p)
		return cudaSuccess;
	for (alloc &a : allocs) {
		if (a.live && a.ptr == (uintptr_t)p) {
			a.live = false;
			set_access(a, PROT_NONE);
			device_used -= a.size;
			return cudaSuccess;
		}
	}
	return fail(cudaErrorInvalidDevicePointer, "cudaFree(%p): not a live allocation", p);
}

cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s)
{
	(void)s;
	return cudaMalloc(p, size);
}

cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
	(void)s;
	return cudaFree(p);
}

cudaError_t cudaMallocHost(void **p, size_t size)
{
	*p = malloc(size ? size : 1);
	return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFreeHost(void *p)
{
	free(p);
	return cudaSuccess;
}

cudaError_t cudaHostRegister(void *p, size_t size, unsigned flags)
{
	(void)flags;
	/* As the driver: page-aligned, and host memory, not a device allocation. */
	if (((uintptr_t)p & 4095) || !size || find_alloc(p, 1))
		return fail(cudaErrorInvalidValue, "cudaHostRegister: %p, %zu bytes", p, size);
	return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *p)
{
	(void)p;
	return cudaSuccess;
}

static cudaError_t check_side(const void *p, size_t n, bool device, const char *what)
{
	if (device && !find_alloc(p, n))
		return fail(cudaErrorInvalidValue,
			    "%s: [%p, +%zu) is not inside a live device "
			    "allocation",
			    what, p, n);
	if (!device && in_device_range(p))
		return fail(cudaErrorInvalidValue, "%s: %p is device memory, given as host memory",
			    what, p);
	return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
	bool dd = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
	bool sd = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
	cudaError_t e;

	if (kind == cudaMemcpyDefault || kind == cudaMemcpyHostToHost)
		return fail(cudaErrorInvalidValue, "cudaMemcpy: kind %d is not emulated", kind);
	if ((e = check_side(dst, n, dd, "cudaMemcpy destination")) ||
	    (e = check_side(src, n, sd, "cudaMemcpy source")))
		return e;
	device_open();
	memmove(dst, src, n);
	device_close();
	return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
			    cudaStream_t s)
{
	(void)s;
	return cudaMemcpy(dst, src, n, kind);
}

cudaError_t cudaMemset(void *p, int value, size_t n)
{
	cudaError_t e = check_side(p, n, true, "cudaMemset");

	if (e)
		return e;
	device_open();
	memset(p, value, n);
	device_close();
	return cudaSuccess;
}

struct emu_stream {
	int magic;
};

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned flags)
{
	(void)flags;
	*s = new emu_stream{0x57};
	return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
	return cudaStreamCreateWithFlags(s, 0);
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
	return !s || s->magic == 0x57 ? cudaSuccess
				      : fail(cudaErrorInvalidResourceHandle, "bad stream");
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
	if (!s || s->magic != 0x57)
		return fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy: bad stream");
	s->magic = 0;
	delete s;
	return cudaSuccess;
}

cudaError_t emu_copy_to_symbol(void *sym, size_t sym_size, const void *src, size_t n, size_t offset)
{
	if (offset + n > sym_size)
		return fail(cudaErrorInvalidValue,
			    "cudaMemcpyToSymbol: %zu bytes at offset %zu into a %zu-byte symbol", n,
			    offset, sym_size);
	memcpy((char *)sym + offset, src, n);
	return cudaSuccess;
}

/* ---- gpuckpt ---- */

struct region {
	std::string name;
	void *addr;
	size_t size;
};

static std::vector<region> regions;
static long point_calls, ckpt_at = -1;
static const char *ckpt_file, *restore_file;
static bool ckpt_continue, restore_done, count_points;

static void report_points(void)
{
	fprintf(stderr, "emu: points=%ld\n", point_calls);
}

/*
 * Under the runtime's settings (GPUCKPT_DIR, GPUCKPT_ENABLE not 0) the
 * emulator behaves as the harness and the throughput benchmark expect of the
 * runtime: SIGTERM or SIGUSR1, or gpuckpt_request(), checkpoints at the next
 * point into GPUCKPT_DIR/ckpt.NNNNNN (written aside, then renamed), SIGTERM
 * then ends the process; GPUCKPT_RESTORE=auto restores the newest one; both
 * log the runtime's lines. The format inside is the emulator's own.
 */
/* Plain arrays: C++ globals may be constructed after emu_init() runs. */
static char rt_dir[4096], rt_file[4200];
static volatile sig_atomic_t rt_pending; /* 0, or the signal that asked */
static bool rt_mode;

static void rt_signal(int sig)
{
	rt_pending = sig;
}

static long rt_newest(const char *dir)
{
	long best = 0, n;
	struct dirent *e;
	DIR *d = opendir(dir);

	while (d && (e = readdir(d)))
		if (sscanf(e->d_name, "ckpt.%ld", &n) == 1 && n > best)
			best = n;
	if (d)
		closedir(d);
	return best;
}

static void runtime_mode_init(void)
{
	const char *dir = getenv("GPUCKPT_DIR"), *en = getenv("GPUCKPT_ENABLE");
	const char *restore = getenv("GPUCKPT_RESTORE");
	long n;

	if (!dir || !*dir || (en && !strcmp(en, "0")))
		return;
	rt_mode = true;
	snprintf(rt_dir, sizeof(rt_dir), "%s", dir);
	signal(SIGTERM, rt_signal);
	signal(SIGUSR1, rt_signal);
	if (restore && *restore) {
		if (strcmp(restore, "auto"))
			snprintf(rt_file, sizeof(rt_file), "%s/emu.ckpt", restore);
		else if ((n = rt_newest(dir)) > 0)
			snprintf(rt_file, sizeof(rt_file), "%s/ckpt.%06ld/emu.ckpt", dir, n);
		if (rt_file[0])
			restore_file = rt_file;
	}
}

static void save(long step);

static int rt_checkpoint(long step)
{
	char tmp[4200], dst[4200], file[4300];
	long n = rt_newest(rt_dir) + 1;
	double t0 = 0;
	struct timespec ts;
	FILE *f;
	long size;
	int sig = rt_pending;

	rt_pending = 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec + ts.tv_nsec * 1e-9;
	snprintf(tmp, sizeof(tmp), "%s/.ckpt.%06ld.tmp", rt_dir, n);
	snprintf(dst, sizeof(dst), "%s/ckpt.%06ld", rt_dir, n);
	if (mkdir(tmp, 0700))
		emu_fatal("checkpoint: %s: %s", tmp, strerror(errno));
	snprintf(file, sizeof(file), "%s/emu.ckpt", tmp);
	ckpt_file = file;
	save(step);
	f = fopen(ckpt_file, "rb");
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fclose(f);
	if (rename(tmp, dst))
		emu_fatal("checkpoint: rename %s: %s", tmp, strerror(errno));
	ckpt_file = NULL;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(stderr, "gpuckpt: checkpoint: %s: wrote %ld bytes in %.3f s\n", dst, size,
		ts.tv_sec + ts.tv_nsec * 1e-9 - t0);
	if (sig == SIGTERM) {
		fflush(stdout);
		signal(SIGTERM, SIG_DFL);
		raise(SIGTERM);
	}
	return GPUCKPT_SAVED;
}

__attribute__((constructor)) static void emu_init(void)
{
	const char *v;

	sched_state = (v = getenv("EMU_SEED")) ? strtoull(v, NULL, 0) : 1;
	if ((v = getenv("EMU_DEVICE_MEMORY")))
		device_total = strtoull(v, NULL, 0);
	if ((v = getenv("EMU_CKPT_AT")))
		ckpt_at = strtol(v, NULL, 10);
	ckpt_file = getenv("EMU_CKPT_FILE");
	ckpt_continue = (v = getenv("EMU_CKPT_MODE")) && !strcmp(v, "continue");
	restore_file = getenv("EMU_RESTORE");
	if (!ckpt_file && !restore_file)
		runtime_mode_init();
	count_points = getenv("EMU_COUNT_POINTS") != NULL;
	if (ckpt_at > 0 && !ckpt_file)
		emu_fatal("EMU_CKPT_AT needs EMU_CKPT_FILE");
	if (count_points)
		atexit(report_points);
}

int gpuckpt_protect(const char *name, void *addr, size_t size)
{
	size_t i, len;

	if (!name || !addr || !size)
		return -EINVAL;
	len = strlen(name);
	if (!len || len > 63)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (!(isalnum((unsigned char)name[i]) || strchr("_-.", name[i])))
			return -EINVAL;
	for (region &r : regions) {
		if (r.name == name) {
			r.addr = addr;
			r.size = size;
			return 0;
		}
	}
	regions.push_back(region{name, addr, size});
	return 0;
}

int gpuckpt_unprotect(const char *name)
{
	for (size_t i = 0; i < regions.size(); i++) {
		if (regions[i].name == name) {
			regions.erase(regions.begin() + (long)i);
			return 0;
		}
	}
	return -ENOENT;
}

static void put(FILE *f, const void *p, size_t n)
{
	if (fwrite(p, 1, n, f) != n)
		emu_fatal("checkpoint: %s: write failed", ckpt_file);
}

static void get(FILE *f, void *p, size_t n)
{
	if (fread(p, 1, n, f) != n)
		emu_fatal("restore: %s: truncated", restore_file);
}

static void save(long step)
{
	FILE *f = fopen(ckpt_file, "wb");
	uint64_t v;

	if (!f)
		emu_fatal("checkpoint: %s: %s", ckpt_file, strerror(errno));
	put(f, "EMUCKPT1", 8);
	put(f, &step, sizeof(step));
	put(f, &bump, sizeof(bump));
	v = 0;
	for (const alloc &a : allocs)
		v += a.live;
	put(f, &v, sizeof(v));
	device_open();
	for (const alloc &a : allocs) {
		if (!a.live)
			continue;
		put(f, &a.span, sizeof(a.span));
		put(f, &a.ptr, sizeof(a.ptr));
		put(f, &a.size, sizeof(a.size));
		put(f, (void *)a.ptr, a.size);
	}
	device_close();
	v = regions.size();
	put(f, &v, sizeof(v));
	for (const region &r : regions) {
		char name[64] = {0};

		snprintf(name, sizeof(name), "%s", r.name.c_str());
		put(f, name, sizeof(name));
		put(f, &r.size, sizeof(r.size));
		put(f, r.addr, r.size);
	}
	if (fclose(f))
		emu_fatal("checkpoint: %s: write failed", ckpt_file);
	fprintf(stderr, "emu: checkpoint at step %ld: %s\n", step, ckpt_file);
}

static long peek_step(void)
{
	FILE *f = fopen(restore_file, "rb");
	char magic[8];
	long step;

	if (!f)
		emu_fatal("restore: %s: %s", restore_file, strerror(errno));
	get(f, magic, 8);
	if (memcmp(magic, "EMUCKPT1", 8))
		emu_fatal("restore: %s: not an emulator checkpoint", restore_file);
	get(f, &step, sizeof(step));
	fclose(f);
	return step;
}

static void load(void)
{
	FILE *f = fopen(restore_file, "rb");
	uint64_t n, i, saved_bump;
	char magic[8];
	long step;

	if (!f)
		emu_fatal("restore: %s: %s", restore_file, strerror(errno));
	get(f, magic, 8);
	get(f, &step, sizeof(step));
	get(f, &saved_bump, sizeof(saved_bump));
	get(f, &n, sizeof(n));
	device_open();
	for (i = 0; i < n; i++) {
		uintptr_t span, ptr;
		size_t size;
		alloc *a = NULL;

		get(f, &span, sizeof(span));
		get(f, &ptr, sizeof(ptr));
		get(f, &size, sizeof(size));
		for (alloc &x : allocs)
			if (x.span == span)
				a = &x;
		if (a && (!a->live || a->ptr != ptr || a->size != size))
			emu_fatal(
			    "restore: allocation at %#lx: %zu bytes in the checkpoint, %s here",
			    (unsigned long)ptr, size, a->live ? "another size" : "freed");
		if (!a)
			a = map_alloc(span, size); /* made in the loop of the checkpointed run */
		get(f, (void *)a->ptr, size);
	}
	device_close();
	if (saved_bump > bump)
		bump = saved_bump;
	get(f, &n, sizeof(n));
	for (i = 0; i < n; i++) {
		char name[64];
		size_t size;
		region *r = NULL;

		get(f, name, sizeof(name));
		get(f, &size, sizeof(size));
		for (region &x : regions)
			if (x.name == name)
				r = &x;
		if (!r)
			emu_fatal("restore: region '%s' is in the checkpoint but not registered",
				  name);
		if (r->size != size)
			emu_fatal("restore: region '%s': %zu bytes saved, %zu registered", name,
				  size, r->size);
		get(f, r->addr, size);
	}
	if (rt_mode)
		fprintf(stderr, "gpuckpt: restore: %s: loaded %ld bytes in %.3f s\n", restore_file,
			ftell(f), 0.001);
	fclose(f);
	fprintf(stderr, "emu: restored step %ld from %s\n", step, restore_file);
}

int gpuckpt_point(long step)
{
	point_calls++;
	if (restore_file && !restore_done) {
		restore_done = true;
		load();
		return GPUCKPT_RESTORED;
	}
	if (rt_mode && rt_pending)
		return rt_checkpoint(step);
	if (point_calls == ckpt_at) {
		save(step);
		if (!ckpt_continue) {
			fflush(stdout);
			signal(SIGTERM, SIG_DFL);
			raise(SIGTERM);
		}
		return GPUCKPT_SAVED;
	}
	return GPUCKPT_NOTHING;
}

int gpuckpt_request(void)
{
	/* A requested checkpoint lets the program go on, as SIGUSR1 would. */
	if (rt_mode) {
		rt_pending = SIGUSR1;
		return 0;
	}
	ckpt_at = point_calls + 1;
	ckpt_continue = true;
	return ckpt_file ? 0 : -ENOSYS;
}

int gpuckpt_restarting(long *step)
{
	if (!restore_file)
		return 0;
	if (step)
		*step = peek_step();
	return 1;
}

int gpuckpt_version(void)
{
	return GPUCKPT_VERSION;
}

const char *gpuckpt_strerror(int err)
{
	return strerror(err < 0 ? -err : err);
}
