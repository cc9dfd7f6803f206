/*
 * test-steer - the runtime's mmap (runtime/core/interpose/steer.c), built
 * into this program so that its own mmap calls reach it: outside a window
 * it is the kernel's mmap (errno included); inside one, only an anonymous
 * private PROT_NONE reservation of the wanted length is placed at the wanted
 * address (the second candidate when the first is taken, MAP_FIXED over the
 * caller's own placeholders), every other mapping passes untouched, a failed
 * attempt leaves errno as it was, and a window is its thread's alone. Its
 * munmap, in a window with a keep range, leaves an inaccessible placeholder
 * where the range is given back (noted), and unmaps as asked elsewhere.
 */
#include "core/interpose/steer.c"

#include "tap.h"

#include <pthread.h>
#include <string.h>

#define L (3u << 20)

static void *reserve(size_t len)
{
	return mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

/* An address with len free bytes there now. */
static uintptr_t free_place(size_t len)
{
	void *p = mmap(NULL, len * 4, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	munmap(p, len * 4);
	return (uintptr_t)p + len;
}

/* 1 if [a, a + len) is mapped, each page of it (mincore). */
static int mapped(uintptr_t a, size_t len)
{
	unsigned char v;

	for (size_t o = 0; o < len; o += 4096)
		if (mincore((void *)(a + o), 4096, &v) < 0)
			return 0;
	return 1;
}

/* 1 if [a, a + len) is mapped inaccessible (/proc/self/maps: "---p"). */
static int inaccessible(uintptr_t a, size_t len)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int yes = 0;

	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[5];

		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && lo <= a && a + len <= hi)
			yes = !strcmp(perms, "---p");
	}
	if (f)
		fclose(f);
	return yes;
}

static pthread_barrier_t go;

/* Started before the window (its stack is mapped then), reserves in it. */
static void *other_thread(void *arg)
{
	pthread_barrier_wait(&go);
	return reserve(*(size_t *)arg);
}

int main(void)
{
	struct gk_steer s;
	uintptr_t want, want2;
	void *p, *q, *block;
	pthread_t t;
	size_t len = L;
	int e, r;

	plan(21);
	p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ok(p != MAP_FAILED && (memset(p, 7, 1 << 20), ((char *)p)[12345] == 7),
	   "outside a window: an ordinary mapping, usable");
	munmap(p, 1 << 20);
	errno = 0;
	p = mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ok(p == MAP_FAILED && errno == EINVAL, "outside a window: errors as the kernel says (%s)",
	   strerror(errno));

	want = free_place(L);
	memset(&s, 0, sizeof(s));
	s.want[0] = want;
	s.want_len = L;
	gk_steer_begin(&s);
	errno = 1234;
	p = reserve(L);
	e = errno;
	gk_steer_end();
	ok(p == (void *)want && s.steered && s.seen == want && s.seen_len == L,
	   "in a window: the reservation of the wanted length is placed at the wanted address");
	ok(e == 1234, "... and errno is left as it was");
	munmap(p, L);

	want = free_place(L);
	s.want[0] = want;
	gk_steer_begin(&s);
	p = mmap(NULL, L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	q = reserve(L + 4096);
	gk_steer_end();
	ok(p != (void *)want && q != (void *)want && !s.steered,
	   "in a window: an accessible mapping, or a reservation of another length, is not moved");
	ok(s.seen == (uintptr_t)q && s.seen_len == L + 4096,
	   "... the last reservation is noted all the same (where, how long)");
	munmap(p, L);
	munmap(q, L + 4096);

	want = free_place(L);
	want2 = free_place(L * 8);
	block = mmap((void *)want, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
		     -1, 0);
	s.want[0] = want;
	s.want[1] = 0;
	gk_steer_begin(&s);
	errno = 77;
	p = reserve(L);
	e = errno;
	gk_steer_end();
	ok(block == (void *)want && p != MAP_FAILED && p != (void *)want && !s.steered &&
	       s.failed == EEXIST,
	   "the wanted place taken: the kernel's choice, the failure noted (%s)", strerror(s.failed));
	ok(e == 77, "... errno left as it was");
	munmap(p, L);
	s.want[1] = want2;
	gk_steer_begin(&s);
	p = reserve(L);
	gk_steer_end();
	ok(p == (void *)want2 && s.steered, "the first place taken: the second one");
	munmap(p, L);

	/* The caller's own placeholders: replaced, not refused. */
	p = mmap((void *)want2, L, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		 0);
	s.want[0] = want2;
	s.want[1] = 0;
	s.own = 1;
	gk_steer_begin(&s);
	q = reserve(L);
	gk_steer_end();
	s.own = 0;
	ok(p == (void *)want2 && q == (void *)want2 && s.steered,
	   "own placeholders at the wanted place: the reservation replaces them");
	munmap(q, L);
	munmap(block, 4096);

	pthread_barrier_init(&go, NULL, 2);
	pthread_create(&t, NULL, other_thread, &len);
	want = free_place(L);
	s.want[0] = want;
	gk_steer_begin(&s);
	pthread_barrier_wait(&go);
	pthread_join(t, &q);
	p = mmap64(NULL, L, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gk_steer_end();
	ok(q != (void *)want, "another thread's reservation during the window is not moved");
	ok(p == (void *)want && s.steered, "mmap64 is steered as mmap is");
	munmap(p, L);
	munmap(q, L);
	p = reserve(L);
	ok(p != MAP_FAILED && !__atomic_load_n(&open_windows, __ATOMIC_RELAXED),
	   "the window closed: nothing is open, reservations go where the kernel likes");
	munmap(p, L);

	/* munmap in a window with a keep range. */
	memset(&s, 0, sizeof(s));
	p = mmap(NULL, L, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	memset(p, 9, L);
	s.keep_lo = (uintptr_t)p + 4096;
	s.keep_hi = (uintptr_t)p + L;
	gk_steer_begin(&s);
	r = munmap((char *)p + (1 << 20), 1 << 20);
	e = munmap((char *)p + (2 << 20), 5000); /* rounded up to pages */
	q = (void *)(uintptr_t)munmap(p, 4096); /* below the keep range */
	gk_steer_end();
	ok(r == 0 && e == 0 && q == NULL, "in a window, munmap says 0 as the kernel's would");
	ok(inaccessible((uintptr_t)p + (1 << 20), 1 << 20) &&
	   inaccessible((uintptr_t)p + (2 << 20), 8192),
	   "... a range given back inside the keep range is an inaccessible placeholder at once");
	ok(s.nkept == 2 && s.kept[0].at == (uintptr_t)p + (1 << 20) && s.kept[0].len == 1 << 20 &&
	   s.kept[1].len == 8192,
	   "... each noted, the length rounded up to pages (%u kept)", s.nkept);
	ok(!mapped((uintptr_t)p, 4096), "... one outside the keep range is unmapped as asked");
	ok(gk_steer_kept(&s, (uintptr_t)p + (1 << 20), (1 << 20) + 8192) &&
	   !gk_steer_kept(&s, (uintptr_t)p + (1 << 20), (1 << 20) + 8193) &&
	   !gk_steer_kept(&s, (uintptr_t)p, 4096),
	   "gk_steer_kept: ranges that touch cover their union, and nothing more");
	gk_steer_unkeep_outside(&s, (uintptr_t)p + (2 << 20), (uintptr_t)p + L);
	ok(s.nkept == 1 && s.kept[0].at == (uintptr_t)p + (2 << 20) &&
	   !mapped((uintptr_t)p + (1 << 20), 1 << 20) && mapped((uintptr_t)p + (2 << 20), 8192),
	   "gk_steer_unkeep_outside gives back the kept ranges outside the range, keeps the others");
	gk_steer_unkeep(&s);
	ok(s.nkept == 0 && !mapped((uintptr_t)p + (2 << 20), 8192) &&
	   mapped((uintptr_t)p + 4096, 4096),
	   "gk_steer_unkeep gives the kept ranges back, and only them");
	munmap(p, L);
	ok(!mapped((uintptr_t)p + 4096, 4096),
	   "outside a window, munmap is the kernel's (the window's placeholders are not kept)");
	return done_testing();
}
