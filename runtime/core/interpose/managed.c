/*
 * managed.c - managed (unified) memory: the interposed entry points that
 * allocate it and say where it should live, its part in a checkpoint and in
 * a restore (phase hooks), the reservation the driver made for each
 * (steer.c), placed again on a restart (managed.h says how).
 */
#include "config.h"

#include "core/interpose/managed.h"
#include "common/clock.h"
#include "core/driver/driver.h"
#include "core/interpose/gate.h"
#include "core/interpose/handlers.h"
#include "core/interpose/steer.h"
#include "core/interpose/vmm.h"
#include "image/image.h"
#include "common/log.h"
#include "core/state/phase.h"
#include "core/state/regions.h"
#include "core/state/runtime.h"
#include "core/state/track.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <unistd.h>

#define PREFIX "gpuckpt.managed."
#define MAX_HINTS 16

/* One cuMemAdvise the program made, applied again in the same order. */
struct hint {
	uint64_t off, len;
	CUmem_advise advice;
	CUmemLocation loc;
};

struct managed {
	CUdeviceptr ptr;
	size_t size;
	unsigned flags;
	uint64_t order; /* this process's managed allocation counter at the request */
	CUcontext ctx;
	char name[GK_NAME_MAX];
	struct hint hints[MAX_HINTS];
	unsigned nhints;
	int has_prefetch; /* the last cuMemPrefetchAsync over it */
	CUmemLocation prefetch;
	int attached; /* cuStreamAttachMemAsync */
	CUstream stream;
	unsigned attach_flags;
	void *parked; /* transparent: where its contents wait while it is given back */
	/* The driver's reservation it came from (steer.h): ptr - res_off, res_len
	 * bytes; res_len 0 when none was seen (the driver placed it in one it
	 * had already). */
	uint64_t res_off, res_len;
	/* The parts of that reservation the driver gave back, held by the
	 * runtime (inaccessible, no memory) so that nothing else takes them
	 * and the reservation can be made there again: the head [res, ptr)
	 * and the tail [tail_at, res + res_len) (tail_at: the first page above
	 * what the driver mapped); while the allocation is given back
	 * (transparent mode), its own place too. own: all of the reservation
	 * is the runtime's. */
	uint64_t tail_at;
	int head_held, tail_held, own;
};

static struct managed *list;
static size_t n, cap;
static uint64_t next_order;
static int regions_off; /* transparent: the regions are not registered */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* One managed allocation at a time: the order is the allocation's identity
 * and the steering window is the allocating thread's. */
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct gk_vmm_restorer *restorer;

void gk_managed_set_restorer(const struct gk_vmm_restorer *r)
{
	restorer = r;
}

size_t gk_managed_live(void)
{
	size_t k;

	pthread_mutex_lock(&lock);
	k = n;
	pthread_mutex_unlock(&lock);
	return k;
}

/* The allocation holding [p, p + len) (lock held), or NULL. */
static struct managed *find(CUdeviceptr p, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (p >= list[i].ptr && p - list[i].ptr < list[i].size &&
		    len <= list[i].size - (p - list[i].ptr))
			return &list[i];
	return NULL;
}

static void push(CUcontext ctx)
{
	gk_real.cuCtxPushCurrent_v2(ctx);
}

static void pop(void)
{
	gk_real.cuCtxPopCurrent_v2(NULL);
}

/* ---- restart: the same addresses, or no restore ---- */

/* What the checkpoint had of managed allocation `order`. */
struct rec {
	uint64_t addr, size, res_off, res_len;
};

/* Where the checkpoint being restored had managed allocation `order`: 1 with
 * *r filled, 0 when it has none of that order. */
static int recorded(const struct gk_manifest *m, uint64_t order, struct rec *r)
{
	char want[64];
	size_t w = (size_t)snprintf(want, sizeof(want), PREFIX "%" PRIu64 ".", order);

	for (size_t i = 0; i < m->nregions; i++) {
		const char *name = m->regions[i].name;
		char *end;

		if (strncmp(name, want, w))
			continue;
		memset(r, 0, sizeof(*r));
		r->addr = strtoull(name + w, &end, 16);
		r->size = m->regions[i].size;
		if (*end == '.') {
			r->res_off = strtoull(end + 1, &end, 16);
			if (*end == '.')
				r->res_len = strtoull(end + 1, &end, 16);
			if (*end || r->res_off > r->addr)
				r->res_off = r->res_len = 0;
		}
		return 1;
	}
	return 0;
}

/* The free hole of the address space around [a, a + 1): *lo, *hi; -1 when
 * a is mapped, or /proc/self/maps cannot be read. */
static int hole_around(uintptr_t a, uintptr_t *lo, uintptr_t *hi)
{
	unsigned long long s, e;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	int ret = 0;

	if (!f)
		return -1;
	*lo = 0;
	*hi = UINTPTR_MAX;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx", &s, &e) != 2)
			continue;
		if (s <= a && a < e) {
			ret = -1;
			break;
		}
		if (e <= a && e > *lo)
			*lo = (uintptr_t)e;
		if (s > a && s < *hi)
			*hi = (uintptr_t)s;
		/* A line longer than the buffer: skip its rest. */
		while (!strchr(line, '\n') && fgets(line, sizeof(line), f))
			;
	}
	fclose(f);
	return ret;
}

/*
 * The window of one allocation: its reservation placed where the driver
 * computes the recorded address from it, or only noted when there is nothing
 * to place. Any reservation between the recorded one's address and the
 * allocation's rounds up to the same address (the recorded one did), so the
 * one chosen is the lowest of those that fit in the free hole around the
 * allocation now (something may have taken the rest of the checkpointed
 * run's reservation since: the driver gave it back once the memory was
 * mapped); the recorded one itself is the second try.
 */
static void window_for(struct gk_steer *s, const struct rec *r)
{
	uintptr_t lo, hi, first;

	memset(s, 0, sizeof(*s));
	if (!r || !r->res_len)
		return;
	first = (uintptr_t)(r->addr - r->res_off);
	s->want_len = r->res_len;
	s->want[0] = first;
	if (hole_around((uintptr_t)r->addr, &lo, &hi) == 0) {
		uintptr_t at = lo > first ? lo : first;

		if (at <= r->addr && hi >= at && hi - at >= r->res_len && at != first) {
			s->want[0] = at;
			s->want[1] = first;
		}
	}
}

/* Why an allocation came back elsewhere, for the messages. */
static void steer_why(const struct gk_steer *s, const struct rec *r, char *buf, size_t len)
{
	if (!r->res_len)
		snprintf(buf, len, "; the checkpointed run saw no reservation of the driver for it");
	else if (s->steered)
		snprintf(buf, len, "; its reservation (%#" PRIx64 " bytes) was placed at %#llx, "
			 "but the driver did not take the address from it",
			 r->res_len, (unsigned long long)s->seen);
	else if (s->failed)
		snprintf(buf, len, "; its reservation (%#" PRIx64 " bytes at %#" PRIx64 ") could "
			 "not be placed there again: %s",
			 r->res_len, r->addr - r->res_off, strerror(s->failed));
	else
		snprintf(buf, len, "; the driver made no reservation of %#" PRIx64 " bytes for it "
			 "this time (its pattern differs)",
			 r->res_len);
}

static void check_restart(uint64_t order, CUdeviceptr p, size_t size, const struct rec *r,
			  const struct gk_steer *s)
{
	char why[900], how[300];
	int aslr;

	if (r->addr == p && r->size == size)
		return;
	steer_why(s, r, how, sizeof(how));
	aslr = !(personality(0xffffffff) & ADDR_NO_RANDOMIZE);
	snprintf(why, sizeof(why),
		 "managed allocation %" PRIu64 " (cuMemAllocManaged, %zu bytes) is at %#llx in this "
		 "run; the checkpoint has it at %#" PRIx64 " (%" PRIu64 " bytes): the driver did not "
		 "give the same address back%s, and the pointers to it in host and device memory "
		 "would be wrong%s",
		 order, size, (unsigned long long)p, r->addr, r->size, how,
		 aslr ? " (address space randomisation is on in this process)" : "");
	if (restorer && restorer->abandon)
		restorer->abandon(why);
}

/* ---- the driver's reservations, held ---- */

static size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static int is_mapped(uintptr_t a)
{
	unsigned char v;

	return mincore((void *)a, page_size(), &v) == 0 || errno != ENOMEM;
}

/* An inaccessible placeholder over [a, a + len), only where nothing is: 0 or
 * -errno. */
static int hold(uintptr_t a, size_t len)
{
	void *p;

	if (!len)
		return 0;
	p = mmap((void *)a, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		 MAP_FIXED_NOREPLACE, -1, 0);
	if (p == (void *)a)
		return 0;
	if (p != MAP_FAILED) { /* a kernel before 4.17: a hint */
		munmap(p, len);
		return -EEXIST;
	}
	return -errno;
}

/* After the driver made m (or made it again) in window st: hold what it gave
 * back of the reservation. What it gave back in the window is held already
 * (st's kept ranges: steer.h); otherwise it is held now, and the first page
 * above the driver's mapping is found by bisection (mincore): mapped below
 * it, given back from it on. */
static void hold_excess(struct managed *m, const struct gk_steer *st)
{
	size_t pg = page_size();
	uintptr_t res = (uintptr_t)(m->ptr - m->res_off), end = res + m->res_len;
	uintptr_t lo = ((uintptr_t)m->ptr + m->size + pg - 1) & ~(uintptr_t)(pg - 1), hi = end;

	m->head_held = m->tail_held = 0;
	m->tail_at = end;
	if (!m->res_len)
		return;
	m->head_held = !m->res_off || gk_steer_kept(st, res, m->res_off) ||
		       hold(res, m->res_off) == 0;
	/* The tail kept in the window: from the lowest kept page above the
	 * allocation, if the kept ranges reach the reservation's end from it. */
	for (unsigned i = 0; i < st->nkept; i++)
		if (st->kept[i].at >= lo && st->kept[i].at < hi)
			hi = st->kept[i].at;
	if (hi < end && gk_steer_kept(st, hi, end - hi)) {
		m->tail_at = hi;
		m->tail_held = 1;
		return;
	}
	hi = end;
	if (lo < end && is_mapped(lo)) {
		/* is_mapped(lo) holds; find the first page that is not, if any. */
		if (is_mapped(end - pg)) {
			lo = end;
		} else {
			while (hi - lo > pg) {
				uintptr_t mid = lo + ((hi - lo) / 2 & ~(uintptr_t)(pg - 1));

				if (is_mapped(mid))
					lo = mid;
				else
					hi = mid;
			}
			lo = hi;
		}
	}
	m->tail_at = lo < end ? lo : end;
	m->tail_held = hold(m->tail_at, end - m->tail_at) == 0;
}

/* The program freed m: its held parts go too. */
static void release_excess(struct managed *m)
{
	uintptr_t res = (uintptr_t)(m->ptr - m->res_off);

	if (m->head_held && m->res_off)
		munmap((void *)res, m->res_off);
	if (m->tail_held && m->tail_at < res + m->res_len)
		munmap((void *)(uintptr_t)m->tail_at, res + m->res_len - m->tail_at);
	m->head_held = m->tail_held = m->own = 0;
}

/* ---- the entry points ---- */

static void name_of(const struct managed *m, char *buf, size_t len)
{
	if (m->res_len)
		snprintf(buf, len, PREFIX "%" PRIu64 ".%llx.%" PRIx64 ".%" PRIx64, m->order,
			 (unsigned long long)m->ptr, m->res_off, m->res_len);
	else
		snprintf(buf, len, PREFIX "%" PRIu64 ".%llx", m->order, (unsigned long long)m->ptr);
}

CUresult gk_on_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	const struct gk_manifest *pending;
	struct managed m = {0};
	struct gk_steer st;
	struct rec rec;
	int ok = 0, have_rec = 0;
	CUresult r;

	GK_NEED_REAL(cuMemAllocManaged);
	if (!gk_enabled())
		return gk_real.cuMemAllocManaged(dptr, bytesize, flags);
	/* Before the gate: the restore's lookup may start the runtime. */
	pending = restorer && restorer->pending ? restorer->pending() : NULL;
	pthread_mutex_lock(&alloc_lock);
	m.order = next_order;
	if (pending)
		have_rec = recorded(pending, m.order, &rec);
	gk_gate_enter();
	window_for(&st, have_rec ? &rec : NULL);
	st.keep_seen = 1;
	gk_steer_begin(&st);
	r = gk_real.cuMemAllocManaged(dptr, bytesize, flags);
	gk_steer_end();
	if (r == CUDA_SUCCESS) {
		m.ptr = *dptr;
		m.size = bytesize;
		m.flags = flags;
		if (st.seen_len && m.ptr >= st.seen && m.ptr - st.seen < st.seen_len) {
			m.res_off = m.ptr - st.seen;
			m.res_len = st.seen_len;
			gk_steer_unkeep_outside(&st, st.seen, st.seen + st.seen_len);
			hold_excess(&m, &st);
		} else {
			gk_steer_unkeep(&st);
		}
		gk_real.cuCtxGetCurrent(&m.ctx);
		pthread_mutex_lock(&lock);
		next_order++;
		name_of(&m, m.name, sizeof(m.name));
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct managed *l = realloc(list, ncap * sizeof(*l));

			if (l) {
				list = l;
				cap = ncap;
			}
		}
		if (n < cap && gk_regions_set(m.name, (void *)(uintptr_t)m.ptr, m.size) == 0) {
			list[n++] = m;
			ok = 1;
		}
		pthread_mutex_unlock(&lock);
		/* Not recorded (out of memory): counted, so that checkpoints are
		 * refused rather than written without it. */
		if (!ok)
			gk_track_ptr_add(GK_UNSUP_MANAGED, *dptr);
		else if (st.steered)
			gk_info("managed: allocation %" PRIu64 ": the driver's reservation placed at "
				 "%#llx; the allocation is at %#llx",
				 m.order, (unsigned long long)st.seen, (unsigned long long)m.ptr);
	} else {
		gk_steer_unkeep(&st);
	}
	gk_gate_leave();
	pthread_mutex_unlock(&alloc_lock);
	if (ok && have_rec)
		check_restart(m.order, m.ptr, m.size, &rec, &st);
	return r;
}

int gk_managed_free(CUdeviceptr dptr, CUresult *r)
{
	char name[GK_NAME_MAX];
	struct managed *m, held;

	gk_gate_enter();
	pthread_mutex_lock(&lock);
	m = dptr ? find(dptr, 1) : NULL;
	if (!m || m->ptr != dptr) {
		pthread_mutex_unlock(&lock);
		gk_gate_leave();
		return 0;
	}
	memcpy(name, m->name, sizeof(name));
	held = *m;
	*m = list[--n];
	pthread_mutex_unlock(&lock);
	gk_regions_remove(name);
	*r = gk_real.cuMemFree_v2(dptr);
	if (*r == CUDA_SUCCESS)
		release_excess(&held);
	gk_gate_leave();
	return 1;
}

CUresult gk_on_cuMemAdvise_v2(CUdeviceptr p, size_t count, CUmem_advise advice, CUmemLocation loc)
{
	CUresult r;
	struct managed *m;

	GK_NEED_REAL(cuMemAdvise_v2);
	r = gk_real.cuMemAdvise_v2(p, count, advice, loc);
	if (r != CUDA_SUCCESS || !gk_enabled())
		return r;
	pthread_mutex_lock(&lock);
	m = find(p, count);
	if (m) {
		/* The oldest goes when there are too many: hints place memory,
		 * they do not make it correct. */
		if (m->nhints == MAX_HINTS)
			memmove(m->hints, m->hints + 1, (MAX_HINTS - 1) * sizeof(*m->hints));
		else
			m->nhints++;
		m->hints[m->nhints - 1] = (struct hint){p - m->ptr, count, advice, loc};
	}
	pthread_mutex_unlock(&lock);
	return r;
}

static void note_prefetch(CUdeviceptr p, size_t count, CUmemLocation loc)
{
	struct managed *m;

	pthread_mutex_lock(&lock);
	m = find(p, count);
	if (m) {
		m->has_prefetch = 1;
		m->prefetch = loc;
	}
	pthread_mutex_unlock(&lock);
}

CUresult gk_on_cuMemPrefetchAsync_v2(CUdeviceptr p, size_t count, CUmemLocation loc,
				     unsigned int flags, CUstream s)
{
	CUresult r;

	GK_NEED_REAL(cuMemPrefetchAsync_v2);
	r = gk_real.cuMemPrefetchAsync_v2(p, count, loc, flags, s);
	if (r == CUDA_SUCCESS && gk_enabled())
		note_prefetch(p, count, loc);
	return r;
}

CUresult gk_on_cuMemPrefetchAsync_v2_ptsz(CUdeviceptr p, size_t count, CUmemLocation loc,
					  unsigned int flags, CUstream s)
{
	CUresult r;

	GK_NEED_REAL(cuMemPrefetchAsync_v2_ptsz);
	r = gk_real.cuMemPrefetchAsync_v2_ptsz(p, count, loc, flags, s);
	if (r == CUDA_SUCCESS && gk_enabled())
		note_prefetch(p, count, loc);
	return r;
}

static void note_attach(CUstream s, CUdeviceptr p, unsigned flags)
{
	struct managed *m;

	pthread_mutex_lock(&lock);
	m = find(p, 1);
	if (m) {
		m->attached = 1;
		m->stream = s;
		m->attach_flags = flags;
	}
	pthread_mutex_unlock(&lock);
}

CUresult gk_on_cuStreamAttachMemAsync(CUstream s, CUdeviceptr p, size_t len, unsigned int flags)
{
	CUresult r;

	GK_NEED_REAL(cuStreamAttachMemAsync);
	r = gk_real.cuStreamAttachMemAsync(s, p, len, flags);
	if (r == CUDA_SUCCESS && gk_enabled())
		note_attach(s, p, flags);
	return r;
}

CUresult gk_on_cuStreamAttachMemAsync_ptsz(CUstream s, CUdeviceptr p, size_t len,
					   unsigned int flags)
{
	CUresult r;

	GK_NEED_REAL(cuStreamAttachMemAsync_ptsz);
	r = gk_real.cuStreamAttachMemAsync_ptsz(s, p, len, flags);
	if (r == CUDA_SUCCESS && gk_enabled())
		note_attach(s ? s : CU_STREAM_PER_THREAD, p, flags);
	return r;
}

/* ---- managed variables: refused ---- */

/* A module's __managed__ variable is managed memory the driver allocated at
 * the module's load: not recorded, so not saved; counted once per address,
 * and checkpoints are refused while the process has one. */
static void note_managed_var(CUdeviceptr p)
{
	gk_track_ptr_remove(GK_UNSUP_MANAGED_VAR, p);
	gk_track_ptr_add(GK_UNSUP_MANAGED_VAR, p);
}

/* What the CUDA runtime (12 and later) asks for every __managed__ variable. */
CUresult gk_on_cuLibraryGetManaged(CUdeviceptr *dptr, size_t *bytes, CUlibrary library,
				   const char *name)
{
	CUresult r;

	GK_NEED_REAL(cuLibraryGetManaged);
	r = gk_real.cuLibraryGetManaged(dptr, bytes, library, name);
	if (r == CUDA_SUCCESS && dptr && *dptr && gk_enabled())
		note_managed_var(*dptr);
	return r;
}

CUresult gk_on_cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod,
				    const char *name)
{
	unsigned int is_managed = 0;
	CUresult r;

	GK_NEED_REAL(cuModuleGetGlobal_v2);
	r = gk_real.cuModuleGetGlobal_v2(dptr, bytes, hmod, name);
	/* The attribute is a boolean the driver may write as one byte: zeroed
	 * first, any byte set means managed. */
	if (r == CUDA_SUCCESS && dptr && *dptr && gk_enabled() &&
	    gk_real.cuPointerGetAttribute(&is_managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, *dptr) ==
		CUDA_SUCCESS &&
	    is_managed)
		note_managed_var(*dptr);
	return r;
}

/* ---- placement in bulk ---- */

/* Every managed allocation to host memory in one prefetch each, waited for:
 * what reads it next (the write, a memcpy) then finds it there instead of
 * faulting it over page by page. Without the entry point (an old driver) or
 * where it fails, the reads fault it over: slower, not wrong. */
static void to_host(const char *why)
{
	CUmemLocation host = {.type = CU_MEM_LOCATION_TYPE_HOST, .id = 0};
	uint64_t bytes = 0;
	double t0 = gk_now();
	size_t done = 0;

	if (!gk_real.cuMemPrefetchAsync_v2)
		return;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n; i++) {
		CUresult r;

		push(list[i].ctx);
		r = gk_real.cuMemPrefetchAsync_v2(list[i].ptr, list[i].size, host, 0, NULL);
		if (r == CUDA_SUCCESS)
			r = gk_real.cuCtxSynchronize();
		pop();
		if (r == CUDA_SUCCESS) {
			done++;
			bytes += list[i].size;
		} else {
			gk_debug("managed: %#llx: prefetch to host memory: %s",
				 (unsigned long long)list[i].ptr, gk_cu_name(r));
		}
	}
	pthread_mutex_unlock(&lock);
	if (done)
		gk_info("managed: %zu allocations (%llu bytes) prefetched to host memory in %.3f s, "
			"%s",
			done, (unsigned long long)bytes, gk_now() - t0, why);
}

/* Where the program wanted m (lock held): its last prefetch, else the
 * preferred location it advised. No wait: the program's own work orders
 * after it on the same device. */
static void place_again(struct managed *m)
{
	CUmemLocation loc;
	int have = 0;

	if (m->has_prefetch) {
		loc = m->prefetch;
		have = 1;
	}
	for (unsigned h = 0; h < m->nhints && !have; h++)
		if (m->hints[h].advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION) {
			loc = m->hints[h].loc;
			have = 1;
		}
	if (!have || !gk_real.cuMemPrefetchAsync_v2)
		return;
	push(m->ctx);
	gk_real.cuMemPrefetchAsync_v2(m->ptr, m->size, loc, 0, NULL);
	pop();
}

static void place_all(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < n; i++)
		place_again(&list[i]);
	pthread_mutex_unlock(&lock);
}

/* The restore loaded the checkpoint: the managed memory goes where the
 * program last asked for it. */
static int managed_restored(char *why, size_t len)
{
	(void)why;
	(void)len;
	place_all();
	return 0;
}

/* Register every allocation's region again (after a transparent checkpoint
 * took them out). */
static void regions_on(void)
{
	pthread_mutex_lock(&lock);
	if (regions_off)
		for (size_t i = 0; i < n; i++)
			gk_regions_set(list[i].name, (void *)(uintptr_t)list[i].ptr, list[i].size);
	regions_off = 0;
	pthread_mutex_unlock(&lock);
}

/*
 * The checkpoint's phases. Admit: the regions are registered (a transparent
 * checkpoint that stopped half-way may have left them out). Describe (the
 * gate closed, the streams drained): managed memory to the host in bulk; a
 * transparent checkpoint keeps it out of the runtime's image, since CRIU
 * saves it (gk_managed_release). Commit: back where the program had it.
 */
static int managed_before(enum gk_phase phase, enum gk_ckpt_kind kind, struct gk_phase_verdict *v)
{
	(void)v;
	if (phase == GK_PHASE_ADMIT) {
		regions_on();
	} else if (phase == GK_PHASE_DESCRIBE && gk_managed_live()) {
		to_host("for the checkpoint");
		if (kind == GK_CKPT_TRANSPARENT) {
			pthread_mutex_lock(&lock);
			for (size_t i = 0; i < n; i++)
				gk_regions_remove(list[i].name);
			regions_off = 1;
			pthread_mutex_unlock(&lock);
		}
	} else if (phase == GK_PHASE_COMMIT && kind != GK_CKPT_TRANSPARENT) {
		place_all();
	}
	return 0;
}

static const struct gk_phase_hooks managed_hooks = {
	.name = "managed",
	.order = 40,
	.before = managed_before,
	.restored = managed_restored,
};
GK_PHASE_HOOKS(managed_hooks)

/* ---- transparent mode ---- */

static size_t map_len(size_t size)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (size + pg - 1) & ~(pg - 1);
}

size_t gk_managed_release(void)
{
	uint64_t bytes = 0;
	double t0 = gk_now();
	size_t k = 0;

	if (!gk_managed_live())
		return 0;
	to_host("to move it");
	pthread_mutex_lock(&lock);
	/* Last first, so that the driver's own range is free again from the
	 * top, as it was before the first of them. */
	for (size_t i = n; i-- > 0;) {
		struct managed *m = &list[i];
		size_t len = map_len(m->size);
		void *tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct gk_steer st;
		size_t place;
		CUresult r;

		if (tmp == MAP_FAILED) {
			gk_error("transparent: managed memory at %#llx (%zu bytes): no host memory to "
				 "move it to: %s; the driver's checkpoint will fail on it",
				 (unsigned long long)m->ptr, m->size, strerror(errno));
			continue;
		}
		memcpy(tmp, (void *)(uintptr_t)m->ptr, m->size);
		/* What the driver unmaps of the reservation stays the runtime's. */
		memset(&st, 0, sizeof(st));
		st.keep_lo = (uintptr_t)(m->ptr - m->res_off);
		st.keep_hi = st.keep_lo + (m->res_len ? m->res_len : len);
		push(m->ctx);
		gk_steer_begin(&st);
		r = gk_real.cuMemFree_v2(m->ptr);
		gk_steer_end();
		pop();
		if (r != CUDA_SUCCESS) {
			gk_error("transparent: managed memory at %#llx: cuMemFree: %s; the driver's "
				 "checkpoint will fail on it",
				 (unsigned long long)m->ptr, gk_cu_name(r));
			gk_steer_unkeep(&st);
			munmap(tmp, len);
			continue;
		}
		/* The same address, now ordinary memory: host code that reads it
		 * until the process is frozen finds its data there. The place is
		 * held first (with what the driver mapped beyond the size), so
		 * that nothing else has taken it when the contents move in: kept
		 * at the driver's munmap in the window, else held now. */
		m->own = 0;
		place = m->res_len ? m->tail_at - m->ptr : len;
		if (gk_steer_kept(&st, (uintptr_t)m->ptr, place) ||
		    hold((uintptr_t)m->ptr, place) == 0) {
			m->own = m->res_len && (!m->res_off || m->head_held) && m->tail_held;
			if (mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
				   (void *)(uintptr_t)m->ptr) != MAP_FAILED)
				tmp = (void *)(uintptr_t)m->ptr;
		}
		m->parked = tmp;
		bytes += m->size;
		k++;
	}
	pthread_mutex_unlock(&lock);
	gk_info("managed: %zu allocations (%llu bytes) moved to host memory and given back to the "
		"driver in %.3f s",
		k, (unsigned long long)bytes, gk_now() - t0);
	return k;
}

/* Move the contents parked at m's address aside, without a copy, so that
 * the driver can have the address again: 0, or -errno. */
static int park_aside(struct managed *m)
{
	size_t len = map_len(m->size);
	void *to, *p;

	if (m->parked != (void *)(uintptr_t)m->ptr)
		return 0;
	/* A place of its own first: mremap to the same size never moves. */
	/* Away from where managed memory goes (the top of the layout, where
	 * the kernel would put it otherwise), if the kernel can. */
	to = mmap((void *)(uintptr_t)0x100000000000ULL, len, PROT_NONE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (to == MAP_FAILED)
		return -errno;
	p = mremap(m->parked, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (p == MAP_FAILED) {
		int e = errno;

		munmap(to, len);
		return -e;
	}
	m->parked = p;
	/* Its place held again: the whole reservation stays the runtime's. */
	if (hold((uintptr_t)m->ptr, len) < 0)
		m->own = 0;
	return 0;
}

static int by_order(const void *a, const void *b)
{
	const struct managed *x = a, *y = b;

	return x->order < y->order ? -1 : x->order > y->order;
}

void gk_managed_reload(void)
{
	uint64_t bytes = 0;
	double t0 = gk_now();
	size_t k = 0;
	int ret;

	pthread_mutex_lock(&lock);
	/* Every address free first, then the allocations in their order, as
	 * the checkpointed run made them (a free moved the last into its
	 * place). */
	if (n > 1)
		qsort(list, n, sizeof(*list), by_order);
	for (size_t i = 0; i < n; i++) {
		if (list[i].parked && (ret = park_aside(&list[i])) < 0) {
			gk_error("transparent: managed memory at %#llx: cannot move its contents "
				 "aside: %s; stopping the program",
				 (unsigned long long)list[i].ptr, strerror(-ret));
			goto fatal;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct managed *m = &list[i];
		CUdeviceptr p = 0;
		CUresult r;

		if (!m->parked)
			continue;
		struct rec rec = {m->ptr, m->size, m->res_off, m->res_len};
		struct gk_steer st;
		char how[300];

		push(m->ctx);
		window_for(&st, &rec);
		if (m->own) {
			/* All of it held by the runtime: the reservation replaces
			 * the placeholders (nothing else can be there). */
			st.want[0] = (uintptr_t)(m->ptr - m->res_off);
			st.want[1] = 0;
			st.own = 1;
		}
		st.keep_seen = 1;
		gk_steer_begin(&st);
		r = gk_real.cuMemAllocManaged(&p, m->size, m->flags);
		gk_steer_end();
		if (st.steered && m->own)
			m->head_held = m->tail_held = m->own = 0;
		if (r == CUDA_SUCCESS && p != m->ptr) {
			gk_real.cuMemFree_v2(p);
			pop();
			steer_why(&st, &rec, how, sizeof(how));
			gk_error("transparent: managed allocation %" PRIu64 " (%zu bytes) came back at "
				 "%#llx instead of %#llx%s: the program's pointers to it would be wrong; "
				 "stopping the program rather than letting it run on them",
				 m->order, m->size, (unsigned long long)p, (unsigned long long)m->ptr,
				 how);
			goto fatal;
		}
		if (r != CUDA_SUCCESS) {
			pop();
			gk_error("transparent: managed allocation %" PRIu64 " at %#llx (%zu bytes): "
				 "cuMemAllocManaged: %s; stopping the program",
				 m->order, (unsigned long long)m->ptr, m->size, gk_cu_name(r));
			goto fatal;
		}
		memcpy((void *)(uintptr_t)p, m->parked, m->size);
		munmap(m->parked, map_len(m->size));
		m->parked = NULL;
		if (m->res_len) {
			gk_steer_unkeep_outside(&st, (uintptr_t)(m->ptr - m->res_off),
						(uintptr_t)(m->ptr - m->res_off + m->res_len));
			hold_excess(m, &st);
		} else {
			gk_steer_unkeep(&st);
		}
		if (m->attached && gk_real.cuStreamAttachMemAsync)
			gk_real.cuStreamAttachMemAsync(m->stream, m->ptr, 0, m->attach_flags);
		for (unsigned h = 0; h < m->nhints && gk_real.cuMemAdvise_v2; h++)
			gk_real.cuMemAdvise_v2(m->ptr + m->hints[h].off, m->hints[h].len,
					       m->hints[h].advice, m->hints[h].loc);
		pop();
		place_again(m);
		bytes += m->size;
		k++;
	}
	pthread_mutex_unlock(&lock);
	regions_on();
	if (k)
		gk_notice("managed: %zu allocations back at their addresses (%llu bytes) in %.3f s",
			  k, (unsigned long long)bytes, gk_now() - t0);
	return;
fatal:
	fflush(NULL);
	_exit(EXIT_FAILURE);
}
