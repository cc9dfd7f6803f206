/*
 * registry.c - every range of memory that the emulated devices can address
 * (allocations, registered host memory, VMM mappings), sorted by address.
 * Copies are checked against it the way the real driver checks device
 * pointers, so that a bad pointer gets CUDA_ERROR_INVALID_VALUE instead of
 * crashing the stand-in; pointer attributes are answered from it.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "standin.h"

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct si_range **ranges;
static size_t nranges, cap;
static atomic_ullong next_id = 1;

void si_reg_rdlock(void)
{
	pthread_rwlock_rdlock(&reg_lock);
}

void si_reg_wrlock(void)
{
	pthread_rwlock_wrlock(&reg_lock);
}

void si_reg_unlock(void)
{
	pthread_rwlock_unlock(&reg_lock);
}

unsigned long long si_reg_new_id(void)
{
	return atomic_fetch_add(&next_id, 1);
}

/* Index of the first range whose base is above p. */
static size_t upper_bound(uintptr_t p)
{
	size_t lo = 0, hi = nranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ranges[mid]->base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct si_range *si_reg_find_locked(uintptr_t p)
{
	size_t i = upper_bound(p);

	if (i == 0)
		return NULL;
	if (p - ranges[i - 1]->base < ranges[i - 1]->size)
		return ranges[i - 1];
	return NULL;
}

struct si_range *si_reg_next_locked(uintptr_t p)
{
	struct si_range *r = si_reg_find_locked(p);
	size_t i;

	if (r)
		return r;
	i = upper_bound(p);
	return i < nranges ? ranges[i] : NULL;
}

CUresult si_reg_insert(struct si_range *r)
{
	CUresult rc = CUDA_SUCCESS;
	size_t i;

	if (!r->size || r->base + r->size < r->base)
		return CUDA_ERROR_INVALID_VALUE;
	si_reg_wrlock();
	i = upper_bound(r->base);
	if ((i > 0 && r->base - ranges[i - 1]->base < ranges[i - 1]->size) ||
	    (i < nranges && ranges[i]->base - r->base < r->size)) {
		rc = CUDA_ERROR_INVALID_VALUE;
		goto out_unlock;
	}
	if (nranges == cap) {
		size_t ncap = cap ? cap * 2 : 64;
		struct si_range **n = realloc(ranges, ncap * sizeof(*n));

		if (!n) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
			goto out_unlock;
		}
		ranges = n;
		cap = ncap;
	}
	memmove(&ranges[i + 1], &ranges[i], (nranges - i) * sizeof(*ranges));
	ranges[i] = r;
	nranges++;
	if (!r->id)
		r->id = si_reg_new_id();
out_unlock:
	si_reg_unlock();
	return rc;
}

static void remove_at(size_t i)
{
	memmove(&ranges[i], &ranges[i + 1], (nranges - i - 1) * sizeof(*ranges));
	nranges--;
}

struct si_range *si_reg_remove(uintptr_t base, unsigned kinds)
{
	struct si_range *r = NULL;
	size_t i;

	si_reg_wrlock();
	i = upper_bound(base);
	if (i > 0 && ranges[i - 1]->base == base && (kinds & SI_KIND(ranges[i - 1]->kind))) {
		r = ranges[i - 1];
		remove_at(i - 1);
	}
	si_reg_unlock();
	return r;
}

size_t si_reg_take_ctx(struct CUctx_st *ctx, unsigned kinds, struct si_range ***out)
{
	struct si_range **list;
	size_t n = 0;

	si_reg_wrlock();
	list = malloc((nranges ? nranges : 1) * sizeof(*list));
	for (size_t i = 0; list && i < nranges;) {
		if (ranges[i]->ctx == ctx && (kinds & SI_KIND(ranges[i]->kind))) {
			list[n++] = ranges[i];
			remove_at(i);
		} else {
			i++;
		}
	}
	si_reg_unlock();
	*out = list;
	return n;
}

bool si_reg_lookup(uintptr_t p, struct si_range *out)
{
	struct si_range *r;

	si_reg_rdlock();
	r = si_reg_find_locked(p);
	if (r)
		*out = *r;
	si_reg_unlock();
	return r != NULL;
}

static bool accessible(const struct si_range *r, bool write)
{
	if (r->kind != SI_MEM_VMM)
		return true;
	for (int d = 0; d < si.ndev; d++)
		if (r->access[d] == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ||
		    (!write && r->access[d] == CU_MEM_ACCESS_FLAGS_PROT_READ))
			return true;
	return false;
}

/*
 * Adjacent VMM mappings form one usable span, as on the GPU, so a copy may
 * cross from one mapping into the next; other allocations that merely happen
 * to be adjacent do not.
 */
CUresult si_reg_check(uintptr_t p, size_t n, bool write)
{
	CUresult rc = CUDA_SUCCESS;
	uintptr_t end = p + n;

	if (end < p)
		return CUDA_ERROR_INVALID_VALUE;
	si_reg_rdlock();
	for (struct si_range *prev = NULL; p < end;) {
		struct si_range *r = si_reg_find_locked(p);

		if (!r || !accessible(r, write) ||
		    (prev && (prev->kind != SI_MEM_VMM || r->kind != SI_MEM_VMM))) {
			rc = CUDA_ERROR_INVALID_VALUE;
			break;
		}
		prev = r;
		p = r->base + r->size;
	}
	si_reg_unlock();
	return rc;
}

bool si_reg_is_pinned(const void *p, size_t n)
{
	struct si_range *r;
	bool pinned;

	si_reg_rdlock();
	r = si_reg_find_locked((uintptr_t)p);
	pinned =
	    r && (uintptr_t)p + n <= r->base + r->size &&
	    (r->kind == SI_MEM_HOST || r->kind == SI_MEM_REGISTERED || r->kind == SI_MEM_MANAGED);
	si_reg_unlock();
	return pinned;
}

void *si_map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void si_intrude(uintptr_t p, size_t len)
{
	const char *v = getenv("GPUCKPT_STANDIN_INTRUDER");
	void *m;

	if (!v || !*v || !len)
		return;
	/* A hint, as the kernel's top-down search would find the hole: the
	 * page stays (leaked on purpose) only where it landed in it. */
	m = mmap((void *)p, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m != MAP_FAILED && m != (void *)p)
		munmap(m, 4096);
}

void si_range_free(struct si_range *r)
{
	if (r->map_len)
		munmap((void *)r->base, r->map_len);
	if (r->map_len && r->kind == SI_MEM_MANAGED)
		si_intrude(r->base, r->map_len);
	if (r->has_fd)
		close(r->fd);
	if (r->charged)
		si_uncharge(r->dev, r->charged);
	free(r);
}
