/*
 * setfile.c - set records and restore plans as text (setfile.h). Strict on
 * input: these files travel through folders a user can write, so everything
 * unexpected is refused rather than guessed at.
 */
#include "config.h"

#include "image/setfile.h"
#include "common/error.h"
#include "common/jobdir.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gk_set_name(uint64_t sequence, char *buf, size_t len)
{
	int n = snprintf(buf, len, GK_SET_PREFIX "%06" PRIu64, sequence);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int gk_set_name_parse(const char *name, uint64_t *sequence)
{
	const char *p = name + sizeof(GK_SET_PREFIX) - 1;
	char canon[40];
	uint64_t v = 0;
	size_t n = 0;

	if (strncmp(name, GK_SET_PREFIX, sizeof(GK_SET_PREFIX) - 1) != 0)
		return -EINVAL;
	for (; p[n] >= '0' && p[n] <= '9'; n++) {
		if (n >= 19)
			return -EINVAL;
		v = v * 10 + (uint64_t)(p[n] - '0');
	}
	if (n == 0 || p[n] != 0)
		return -EINVAL;
	/* One spelling only, so that set.7 and set.000007 never both count. */
	snprintf(canon, sizeof(canon), "%06" PRIu64, v);
	if (strcmp(canon, p) != 0)
		return -EINVAL;
	*sequence = v;
	return 0;
}

/* Digits (at least one, at most 19, no sign); the end of them, or NULL. */
static const char *digits(const char *p)
{
	size_t n = 0;

	while (p[n] >= '0' && p[n] <= '9' && n < 20)
		n++;
	return n >= 1 && n <= 19 ? p + n : NULL;
}

int gk_nccl_rendezvous_name_is(const char *name)
{
	const char *p = name + sizeof(GK_NCCL_RENDEZVOUS_PREFIX) - 1;

	if (strncmp(name, GK_NCCL_RENDEZVOUS_PREFIX, sizeof(GK_NCCL_RENDEZVOUS_PREFIX) - 1))
		return 0;
	for (int i = 0; i < 16; i++, p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return 0;
	if (strncmp(p, ".g", 2) || !(p = digits(p + 2)) || *p++ != '.')
		return 0;
	if (!strncmp(p, "count", 5))
		p += 5;
	else if (!strncmp(p, "id", 2))
		p += 2;
	else
		return 0;
	if (!(p = digits(p)) || strncmp(p, ".r", 2) || !(p = digits(p + 2)))
		return 0;
	return *p == 0;
}

int gk_set_record_format(const struct gk_set_record *r, char *buf, size_t len)
{
	int n = snprintf(buf, len,
			 GK_SET_MAGIC " sequence=%" PRIu64 " id=%016" PRIx64 " members=%" PRIu32
				      " step=%" PRId64 " agreement=%s created=%" PRId64 "\n",
			 r->sequence, r->id, r->members, r->step, r->agreement, r->created);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

static int parse_u64(const char *s, size_t n, int hex, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > (hex ? 16u : 19u))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (hex && c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			return -EINVAL;
		v = v * (hex ? 16u : 10u) + d;
	}
	*out = v;
	return 0;
}

static int parse_i64(const char *s, size_t n, int64_t *out)
{
	uint64_t v;

	if (n > 0 && s[0] == '-') {
		if (parse_u64(s + 1, n - 1, 0, &v) < 0 || v > (uint64_t)INT64_MAX)
			return -EINVAL;
		*out = -(int64_t)v;
		return 0;
	}
	if (parse_u64(s, n, 0, &v) < 0 || v > (uint64_t)INT64_MAX)
		return -EINVAL;
	*out = (int64_t)v;
	return 0;
}

static int word_ok(const char *s, size_t n, size_t max)
{
	if (n == 0 || n >= max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      c == '.'))
			return 0;
	}
	return 1;
}

/* The text up to its first newline, which must be the last character. */
static int one_line(const char *text, size_t len, size_t *linelen)
{
	const char *nl = memchr(text, '\n', len);

	if (len > GK_SETFILE_MAX || !nl || (size_t)(nl - text) + 1 != len)
		return -EINVAL;
	*linelen = (size_t)(nl - text);
	return 0;
}

enum { K_SEQUENCE, K_ID, K_MEMBERS, K_STEP, K_AGREEMENT, K_CREATED, K_COUNT };
static const char *const record_keys[K_COUNT] = {"sequence", "id",	  "members",
						 "step",     "agreement", "created"};

int gk_set_record_parse(const char *text, size_t len, struct gk_set_record *r, gk_error_t *err)
{
	size_t linelen, pos, magic = sizeof(GK_SET_MAGIC) - 1;
	unsigned seen = 0;

	memset(r, 0, sizeof(*r));
	if (one_line(text, len, &linelen) < 0) {
		gk_errprintf(err, "not one line of at most %d bytes", GK_SETFILE_MAX);
		return -EINVAL;
	}
	if (linelen < magic || memcmp(text, GK_SET_MAGIC, magic) != 0 ||
	    (linelen > magic && text[magic] != ' ')) {
		gk_errprintf(err, "does not start with '%s'", GK_SET_MAGIC);
		return -EINVAL;
	}
	for (pos = magic; pos < linelen;) {
		const char *w = text + pos + 1, *eq;
		size_t n = 0, klen, vlen;
		uint64_t u;
		int k;

		while (pos + 1 + n < linelen && w[n] != ' ')
			n++;
		eq = memchr(w, '=', n);
		if (!eq) {
			gk_errprintf(err, "'%.*s' is not key=value", (int)(n < 64 ? n : 64), w);
			return -EINVAL;
		}
		klen = (size_t)(eq - w);
		vlen = n - klen - 1;
		for (k = 0; k < K_COUNT; k++)
			if (strlen(record_keys[k]) == klen && !memcmp(w, record_keys[k], klen))
				break;
		if (k == K_COUNT || (seen & (1u << k))) {
			gk_errprintf(err, "%s key '%.*s'", k == K_COUNT ? "unknown" : "repeated",
				     (int)(klen < 32 ? klen : 32), w);
			return -EINVAL;
		}
		seen |= 1u << k;
		switch (k) {
		case K_SEQUENCE:
			if (parse_u64(eq + 1, vlen, 0, &r->sequence) < 0 || r->sequence == 0)
				goto bad_value;
			break;
		case K_ID:
			if (vlen != 16 || parse_u64(eq + 1, vlen, 1, &r->id) < 0)
				goto bad_value;
			break;
		case K_MEMBERS:
			if (parse_u64(eq + 1, vlen, 0, &u) < 0 || u < 1 || u > (1u << 24))
				goto bad_value;
			r->members = (uint32_t)u;
			break;
		case K_STEP:
			if (parse_i64(eq + 1, vlen, &r->step) < 0)
				goto bad_value;
			break;
		case K_AGREEMENT:
			if (!word_ok(eq + 1, vlen, sizeof(r->agreement)))
				goto bad_value;
			memcpy(r->agreement, eq + 1, vlen);
			r->agreement[vlen] = 0;
			break;
		case K_CREATED:
			if (parse_i64(eq + 1, vlen, &r->created) < 0 || r->created < 0)
				goto bad_value;
			break;
		}
		pos += 1 + n;
		continue;
bad_value:
	gk_errprintf(err, "bad value for %s: '%.*s'", record_keys[k], (int)(vlen < 32 ? vlen : 32),
		     eq + 1);
	return -EINVAL;
	}
	if (seen != (1u << K_COUNT) - 1) {
		for (int k = 0; k < K_COUNT; k++)
			if (!(seen & (1u << k))) {
				gk_errprintf(err, "no %s", record_keys[k]);
				break;
			}
		return -EINVAL;
	}
	return 0;
}

static const char *kind_name(enum gk_plan_kind k)
{
	return k == GK_PLAN_SET ? "set" : k == GK_PLAN_FRESH ? "fresh" : "bad";
}

int gk_plan_format(const struct gk_plan_entry *e, char *buf, size_t len)
{
	char reason[sizeof(e->reason)];
	size_t i;
	int n;

	if (e->kind == GK_PLAN_SET) {
		n = snprintf(buf, len,
			     "%s set sequence=%" PRIu64 " id=%016" PRIx64 " members=%" PRIu32 "\n",
			     e->step, e->sequence, e->id, e->members);
	} else {
		for (i = 0; e->reason[i] && i < sizeof(reason) - 1; i++)
			reason[i] = (unsigned char)e->reason[i] < 0x20 || e->reason[i] == 0x7f
					? ' '
					: e->reason[i];
		reason[i] = 0;
		n = snprintf(buf, len, "%s %s %s\n", e->step, kind_name(e->kind),
			     reason[0] ? reason : "-");
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : n;
}

/* "step.0 set sequence=7 id=... members=4" (without the newline). */
static int parse_plan_line(const char *line, size_t n, struct gk_plan_entry *e)
{
	const char *sp = memchr(line, ' ', n), *rest;
	size_t slen, rlen;

	memset(e, 0, sizeof(*e));
	if (!sp)
		return -EINVAL;
	slen = (size_t)(sp - line);
	if (slen <= GK_STEP_PREFIX_LEN || memcmp(line, GK_STEP_PREFIX, GK_STEP_PREFIX_LEN) != 0 ||
	    !word_ok(line, slen, sizeof(e->step)))
		return -EINVAL;
	memcpy(e->step, line, slen);
	e->step[slen] = 0;
	rest = sp + 1;
	rlen = n - slen - 1;
	if (rlen > 4 && !memcmp(rest, "set ", 4)) {
		char rec[GK_SETFILE_MAX + 64];
		struct gk_set_record r;
		int len;

		/* The same keys as a record, and nothing else: parse it as one. */
		len = snprintf(rec, sizeof(rec), GK_SET_MAGIC " %.*s step=0 agreement=plan created=0\n",
			       (int)(rlen - 4), rest + 4);
		if (len < 0 || (size_t)len >= sizeof(rec) ||
		    gk_set_record_parse(rec, (size_t)len, &r, NULL) < 0)
			return -EINVAL;
		e->kind = GK_PLAN_SET;
		e->sequence = r.sequence;
		e->id = r.id;
		e->members = r.members;
		return 0;
	}
	if (rlen > 6 && !memcmp(rest, "fresh ", 6)) {
		e->kind = GK_PLAN_FRESH;
		rest += 6;
		rlen -= 6;
	} else if (rlen > 4 && !memcmp(rest, "bad ", 4)) {
		e->kind = GK_PLAN_BAD;
		rest += 4;
		rlen -= 4;
	} else {
		return -EINVAL;
	}
	if (rlen >= sizeof(e->reason))
		rlen = sizeof(e->reason) - 1;
	for (size_t i = 0; i < rlen; i++)
		e->reason[i] = (unsigned char)rest[i] < 0x20 ? ' ' : rest[i];
	e->reason[rlen] = 0;
	return 0;
}

int gk_plan_find(const char *text, size_t len, const char *step, struct gk_plan_entry *e,
		 gk_error_t *err)
{
	size_t magic = sizeof(GK_PLAN_MAGIC) - 1, pos, lineno = 1;
	int found = 0;

	if (len > GK_PLAN_MAX || len < magic + 1 || memcmp(text, GK_PLAN_MAGIC, magic) != 0 ||
	    text[magic] != '\n') {
		gk_errprintf(err, "does not start with '%s'", GK_PLAN_MAGIC);
		return -EINVAL;
	}
	if (text[len - 1] != '\n') {
		gk_errprintf(err, "does not end with a newline (cut short?)");
		return -EINVAL;
	}
	/* Every line is checked, not just up to the one wanted: a plan that is
	 * damaged anywhere is not trusted anywhere. */
	for (pos = magic + 1; pos < len;) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = (size_t)(nl - line);
		struct gk_plan_entry tmp;

		lineno++;
		if (n > GK_SETFILE_MAX || parse_plan_line(line, n, &tmp) < 0) {
			gk_errprintf(err, "line %zu is malformed", lineno);
			return -EINVAL;
		}
		if (!strcmp(tmp.step, step)) {
			if (found) {
				gk_errprintf(err, "%s appears twice", step);
				return -EINVAL;
			}
			*e = tmp;
			found = 1;
		}
		pos += n + 1;
	}
	return found;
}
