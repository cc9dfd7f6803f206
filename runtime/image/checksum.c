/*
 * checksum.c - XXH64 (per-chunk checksums of checkpoint data) and SHA-256
 * (what the Munge signature covers), written from the published algorithm
 * descriptions: the xxHash specification (XXH64) and FIPS 180-4 (SHA-256).
 */
#include "config.h"
#include "image.h"

#include <string.h>

/* ---- XXH64 ---- */

#define P64_1 0x9E3779B185EBCA87ull
#define P64_2 0xC2B2AE3D27D4EB4Full
#define P64_3 0x165667B19E3779F9ull
#define P64_4 0x85EBCA77C2B2AE63ull
#define P64_5 0x27D4EB2F165667C5ull

static inline uint64_t rotl64(uint64_t x, unsigned r)
{
	return (x << r) | (x >> (64 - r));
}

/* The format is little-endian; memcpy keeps unaligned loads legal and
 * compiles to a single mov on x86-64 and aarch64. */
static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

static inline uint32_t load32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

static inline uint64_t xxh_round(uint64_t acc, uint64_t input)
{
	acc += input * P64_2;
	acc = rotl64(acc, 31);
	return acc * P64_1;
}

static inline uint64_t xxh_merge(uint64_t acc, uint64_t lane)
{
	acc ^= xxh_round(0, lane);
	return acc * P64_1 + P64_4;
}

/* The four lanes are independent so that the multiplies of one 32-byte stripe
 * overlap in the pipeline; this loop is where all the time goes. */
static const uint8_t *xxh_stripes(uint64_t v[4], const uint8_t *p, const uint8_t *end)
{
	uint64_t v1 = v[0], v2 = v[1], v3 = v[2], v4 = v[3];

	while (end - p >= 32) {
		v1 = xxh_round(v1, load64(p));
		v2 = xxh_round(v2, load64(p + 8));
		v3 = xxh_round(v3, load64(p + 16));
		v4 = xxh_round(v4, load64(p + 24));
		p += 32;
	}
	v[0] = v1;
	v[1] = v2;
	v[2] = v3;
	v[3] = v4;
	return p;
}

static uint64_t xxh_converge(const uint64_t v[4])
{
	uint64_t h = rotl64(v[0], 1) + rotl64(v[1], 7) + rotl64(v[2], 12) + rotl64(v[3], 18);

	h = xxh_merge(h, v[0]);
	h = xxh_merge(h, v[1]);
	h = xxh_merge(h, v[2]);
	return xxh_merge(h, v[3]);
}

static uint64_t xxh_finish(uint64_t h, const uint8_t *p, size_t len)
{
	while (len >= 8) {
		h ^= xxh_round(0, load64(p));
		h = rotl64(h, 27) * P64_1 + P64_4;
		p += 8;
		len -= 8;
	}
	if (len >= 4) {
		h ^= (uint64_t)load32(p) * P64_1;
		h = rotl64(h, 23) * P64_2 + P64_3;
		p += 4;
		len -= 4;
	}
	while (len > 0) {
		h ^= (uint64_t)*p * P64_5;
		h = rotl64(h, 11) * P64_1;
		p++;
		len--;
	}
	h ^= h >> 33;
	h *= P64_2;
	h ^= h >> 29;
	h *= P64_3;
	h ^= h >> 32;
	return h;
}

static void xxh_lanes_init(uint64_t v[4], uint64_t seed)
{
	v[0] = seed + P64_1 + P64_2;
	v[1] = seed + P64_2;
	v[2] = seed;
	v[3] = seed - P64_1;
}

uint64_t gk_xxh64(const void *data, size_t len, uint64_t seed)
{
	const uint8_t *p = data, *end = p + len;
	uint64_t h;

	if (len >= 32) {
		uint64_t v[4];

		xxh_lanes_init(v, seed);
		p = xxh_stripes(v, p, end);
		h = xxh_converge(v);
	} else {
		h = seed + P64_5;
	}
	h += (uint64_t)len;
	return xxh_finish(h, p, (size_t)(end - p));
}

void gk_xxh64_init(struct gk_xxh64_state *s, uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->seed = seed;
	xxh_lanes_init(s->v, seed);
}

void gk_xxh64_update(struct gk_xxh64_state *s, const void *data, size_t len)
{
	const uint8_t *p = data, *end = p + len;

	s->total += len;
	if (s->buflen) {
		size_t take = 32 - s->buflen;

		if (take > len)
			take = len;
		memcpy(s->buf + s->buflen, p, take);
		s->buflen += (uint32_t)take;
		p += take;
		if (s->buflen < 32)
			return;
		xxh_stripes(s->v, s->buf, s->buf + 32);
		s->buflen = 0;
	}
	p = xxh_stripes(s->v, p, end);
	if (p < end) {
		memcpy(s->buf, p, (size_t)(end - p));
		s->buflen = (uint32_t)(end - p);
	}
}

uint64_t gk_xxh64_digest(const struct gk_xxh64_state *s)
{
	uint64_t h;

	if (s->total >= 32)
		h = xxh_converge(s->v);
	else
		h = s->seed + P64_5;
	h += s->total;
	return xxh_finish(h, s->buf, s->buflen);
}

/* ---- SHA-256 ---- */

static const uint32_t sha256_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t rotr32(uint32_t x, unsigned r)
{
	return (x >> r) | (x << (32 - r));
}

static void sha256_block(uint32_t h[8], const uint8_t *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = rotr32(w[i - 15], 7) ^ rotr32(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = rotr32(w[i - 2], 17) ^ rotr32(w[i - 2], 19) ^ (w[i - 2] >> 10);

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h[0];
	b = h[1];
	c = h[2];
	d = h[3];
	e = h[4];
	f = h[5];
	g = h[6];
	hh = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t s1 = rotr32(e, 6) ^ rotr32(e, 11) ^ rotr32(e, 25);
		uint32_t ch = (e & f) ^ (~e & g);
		uint32_t t1 = hh + s1 + ch + sha256_k[i] + w[i];
		uint32_t s0 = rotr32(a, 2) ^ rotr32(a, 13) ^ rotr32(a, 22);
		uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
		uint32_t t2 = s0 + maj;

		hh = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
	h[5] += f;
	h[6] += g;
	h[7] += hh;
}

void gk_sha256(const void *data, size_t len, uint8_t digest[32])
{
	uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
			 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
	const uint8_t *p = data;
	uint8_t tail[128];
	size_t rest = len % 64, tail_len;
	uint64_t bits = (uint64_t)len * 8;

	for (size_t n = len / 64; n > 0; n--, p += 64)
		sha256_block(h, p);
	/* Padding: 0x80, zeros, then the message length in bits, big-endian,
	 * filling one block or two when fewer than 9 bytes are left. */
	memset(tail, 0, sizeof(tail));
	memcpy(tail, p, rest);
	tail[rest] = 0x80;
	tail_len = rest + 9 <= 64 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		tail[tail_len - 1 - i] = (uint8_t)(bits >> (8 * i));
	sha256_block(h, tail);
	if (tail_len == 128)
		sha256_block(h, tail + 64);
	for (int i = 0; i < 8; i++) {
		digest[4 * i] = (uint8_t)(h[i] >> 24);
		digest[4 * i + 1] = (uint8_t)(h[i] >> 16);
		digest[4 * i + 2] = (uint8_t)(h[i] >> 8);
		digest[4 * i + 3] = (uint8_t)h[i];
	}
}

void gk_sha256_init(struct gk_sha256_state *s)
{
	static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

	memcpy(s->h, iv, sizeof(iv));
	s->total = 0;
	s->buflen = 0;
}

void gk_sha256_update(struct gk_sha256_state *s, const void *data, size_t len)
{
	const uint8_t *p = data;

	s->total += len;
	if (s->buflen) {
		size_t take = 64 - s->buflen < len ? 64 - s->buflen : len;

		memcpy(s->buf + s->buflen, p, take);
		s->buflen += (uint32_t)take;
		p += take;
		len -= take;
		if (s->buflen < 64)
			return;
		sha256_block(s->h, s->buf);
		s->buflen = 0;
	}
	for (; len >= 64; len -= 64, p += 64)
		sha256_block(s->h, p);
	memcpy(s->buf, p, len);
	s->buflen = (uint32_t)len;
}

void gk_sha256_final(struct gk_sha256_state *s, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	uint64_t bits = s->total * 8;
	uint8_t tail[128];
	size_t tail_len;

	memset(tail, 0, sizeof(tail));
	memcpy(tail, s->buf, s->buflen);
	tail[s->buflen] = 0x80;
	tail_len = s->buflen + 9 <= 64 ? 64 : 128;
	for (int i = 0; i < 8; i++)
		tail[tail_len - 1 - i] = (uint8_t)(bits >> (8 * i));
	sha256_block(s->h, tail);
	if (tail_len == 128)
		sha256_block(s->h, tail + 64);
	for (int i = 0; i < 32; i++) {
		uint8_t b = (uint8_t)(s->h[i / 4] >> (24 - 8 * (i % 4)));

		hex[2 * i] = digits[b >> 4];
		hex[2 * i + 1] = digits[b & 15];
	}
	hex[64] = 0;
}

void gk_sha256_hex(const void *data, size_t len, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	uint8_t d[32];

	gk_sha256(data, len, d);
	for (int i = 0; i < 32; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[64] = 0;
}
