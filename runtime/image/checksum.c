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
