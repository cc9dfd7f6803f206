/*
 * test-steer - the runtime's mmap (runtime/core/interpose/steer.c), built
 * into this program so that its own mmap calls reach it: outside a window
 * it is the kernel's mmap (errno included); inside one, only an anonymous
 * private PROT_NONE reservation of the wanted length is placed at the wanted
 * address (the second candidate when the first is taken, MAP_FIXED over the
 * caller's own placeholders), every other mapping passes untouched, a failed
 * attempt leaves errno as it was, and a window is its thread's alone.
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
	int e;

	plan(13);
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
	return done_testing();
}
