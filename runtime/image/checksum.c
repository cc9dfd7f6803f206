/*
 * checksum.c - the image's checksums, from maintained libraries:
 *  - per-chunk checksums of checkpoint data: XXH3-64 from format 3 on, XXH64
 *    (seed 0) in formats 1 and 2, both from libxxhash. XXH3 goes through the
 *    library's x86 dispatcher where it has one (AVX2 or AVX-512, chosen at run
 *    time): the checksums are on the critical path of every checkpoint and of
 *    the check before a restore.
 *  - SHA-256 (what the Munge signature covers) from OpenSSL's libcrypto,
 *    whose EVP interface uses the CPU's SHA instructions.
 */
#include "config.h"
#include "image/image.h"

#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY /* the state structs, so that they live on the stack */
#include <xxhash.h>
#ifdef HAVE_XXH3_DISPATCH
#include <xxh_x86dispatch.h>
#endif
#include <openssl/evp.h>

_Static_assert(sizeof(XXH3_state_t) <= sizeof(((struct gk_sum_state *)0)->opaque),
	       "struct gk_sum_state is too small for libxxhash's XXH3 state");
_Static_assert(sizeof(XXH64_state_t) <= sizeof(((struct gk_sum_state *)0)->opaque),
	       "struct gk_sum_state is too small for libxxhash's XXH64 state");
_Static_assert(alignof(XXH3_state_t) <= 64, "XXH3 state alignment");

/* ---- chunk checksums ---- */

enum gk_sum_algo gk_sum_algo_of(int version)
{
	return version >= 3 ? GK_SUM_XXH3 : GK_SUM_XXH64;
}

const char *gk_sum_name(enum gk_sum_algo algo)
{
	return algo == GK_SUM_XXH3 ? "XXH3-64" : "XXH64";
}

uint64_t gk_sum(enum gk_sum_algo algo, const void *data, size_t len)
{
	if (algo == GK_SUM_XXH3)
		return XXH3_64bits(data, len);
	return XXH64(data, len, 0);
}

/* Zeros to hash from: a chunk of zeros is hashed a page at a time. */
static const unsigned char zero_page[65536];

struct zero_sum {
	enum gk_sum_algo algo;
	uint64_t len, sum;
};

/* A checkpoint has one chunk size and a few shorter last chunks: a handful of
 * lengths covers it. */
#define ZERO_SUMS 8
static struct zero_sum zero_sums[ZERO_SUMS];
static unsigned zero_next;
static pthread_mutex_t zero_lock = PTHREAD_MUTEX_INITIALIZER;

uint64_t gk_sum_zeros(enum gk_sum_algo algo, uint64_t len)
{
	struct gk_sum_state st;
	uint64_t sum;

	pthread_mutex_lock(&zero_lock);
	for (unsigned i = 0; i < ZERO_SUMS; i++)
		if (zero_sums[i].algo == algo && zero_sums[i].len == len && zero_sums[i].algo) {
			sum = zero_sums[i].sum;
			pthread_mutex_unlock(&zero_lock);
			return sum;
		}
	pthread_mutex_unlock(&zero_lock);
	gk_sum_init(&st, algo);
	for (uint64_t o = 0; o < len; o += sizeof(zero_page))
		gk_sum_update(&st, zero_page,
			      len - o < sizeof(zero_page) ? (size_t)(len - o) : sizeof(zero_page));
	sum = gk_sum_digest(&st);
	pthread_mutex_lock(&zero_lock);
	zero_sums[zero_next] = (struct zero_sum){algo, len, sum};
	zero_next = (zero_next + 1) % ZERO_SUMS;
	pthread_mutex_unlock(&zero_lock);
	return sum;
}

int gk_is_zero(const void *p, size_t len)
{
	const unsigned char *b = p;
	size_t i = 0;

	/* Bytes up to a word boundary, then blocks of 64 bytes folded with OR
	 * (which the compiler turns into vector ORs), then the tail. */
	for (; i < len && ((uintptr_t)(b + i) & 7); i++)
		if (b[i])
			return 0;
	for (; i + 64 <= len; i += 64) {
		uint64_t w[8], acc = 0;

		memcpy(w, b + i, sizeof(w));
		for (int k = 0; k < 8; k++)
			acc |= w[k];
		if (acc)
			return 0;
	}
	for (; i < len; i++)
		if (b[i])
			return 0;
	return 1;
}

void gk_sum_init(struct gk_sum_state *s, enum gk_sum_algo algo)
{
	s->algo = algo;
	if (algo == GK_SUM_XXH3)
		XXH3_64bits_reset((XXH3_state_t *)s->opaque);
	else
		XXH64_reset((XXH64_state_t *)s->opaque, 0);
}

void gk_sum_update(struct gk_sum_state *s, const void *data, size_t len)
{
	if (s->algo == GK_SUM_XXH3)
		XXH3_64bits_update((XXH3_state_t *)s->opaque, data, len);
	else
		XXH64_update((XXH64_state_t *)s->opaque, data, len);
}

uint64_t gk_sum_digest(const struct gk_sum_state *s)
{
	if (s->algo == GK_SUM_XXH3)
		return XXH3_64bits_digest((const XXH3_state_t *)s->opaque);
	return XXH64_digest((const XXH64_state_t *)s->opaque);
}

uint64_t gk_xxh64(const void *data, size_t len, uint64_t seed)
{
	return XXH64(data, len, seed);
}

/* ---- SHA-256 ---- */

static void to_hex(const uint8_t *d, char hex[65])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[64] = 0;
}

int gk_sha256(const void *data, size_t len, uint8_t digest[32])
{
	unsigned int n = 0;

	if (!EVP_Digest(data, len, digest, &n, EVP_sha256(), NULL) || n != 32) {
		memset(digest, 0, 32);
		return -ENOMEM;
	}
	return 0;
}

int gk_sha256_hex(const void *data, size_t len, char hex[65])
{
	uint8_t d[32];

	if (gk_sha256(data, len, d) < 0) {
		hex[0] = 0;
		return -ENOMEM;
	}
	to_hex(d, hex);
	return 0;
}

void gk_sha256_init(struct gk_sha256_state *s)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (ctx && !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		EVP_MD_CTX_free(ctx);
		ctx = NULL;
	}
	s->ctx = ctx;
}

void gk_sha256_update(struct gk_sha256_state *s, const void *data, size_t len)
{
	if (s->ctx && !EVP_DigestUpdate(s->ctx, data, len)) {
		EVP_MD_CTX_free(s->ctx);
		s->ctx = NULL;
	}
}

int gk_sha256_final(struct gk_sha256_state *s, char hex[65])
{
	uint8_t d[32];
	unsigned int n = 0;
	int ok = s->ctx && EVP_DigestFinal_ex(s->ctx, d, &n) && n == 32;

	EVP_MD_CTX_free(s->ctx);
	s->ctx = NULL;
	if (!ok) {
		hex[0] = 0;
		return -ENOMEM;
	}
	to_hex(d, hex);
	return 0;
}
