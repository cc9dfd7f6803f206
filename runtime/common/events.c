/*
 * events.c - the event line (events.h): writing it, and reading it back
 * strictly, since root reads lines a job's user could have written.
 */
#include "config.h"

#include "common/events.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[GK_EV_KINDS] = {"start", "checkpoint", "restore", "stage-in",
						    "stage-out"};
static const char *const result_names[GK_EV_RESULTS] = {"ok", "failed", "refused"};

const char *gk_event_kind_name(enum gk_event_kind k)
{
	return (unsigned)k < GK_EV_KINDS ? kind_names[k] : "?";
}

const char *gk_event_result_name(enum gk_event_result r)
{
	return (unsigned)r < GK_EV_RESULTS ? result_names[r] : "?";
}

static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

int gk_event_name_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!name_char(s[n]) || n >= GK_EVENT_NAME_MAX - 1)
			return 0;
	return n > 0;
}

/* Largest value a seconds field may hold: about 31,000 years. */
#define SECONDS_MAX 1e12

/* ---- writing ---- */

struct out {
	char *buf;
	size_t len, n;
	int overflow;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int k;

	if (o->overflow)
		return;
	va_start(ap, fmt);
	k = vsnprintf(o->buf + o->n, o->len - o->n, fmt, ap);
	va_end(ap);
	if (k < 0 || (size_t)k >= o->len - o->n) {
		o->overflow = 1;
		return;
	}
	o->n += (size_t)k;
}

static int seconds_ok(double v)
{
	return isfinite(v) && v >= 0 && v < SECONDS_MAX;
}

int gk_event_format(const struct gk_event *e, char *buf, size_t len)
{
	struct out o = {buf, len < GK_EVENT_LINE_MAX + 1 ? len : GK_EVENT_LINE_MAX + 1, 0, 0};

	if ((unsigned)e->kind >= GK_EV_KINDS || (unsigned)e->result >= GK_EV_RESULTS ||
	    !seconds_ok(e->time))
		return -EINVAL;
	if (((e->have & GK_EVF_SECONDS) && !seconds_ok(e->seconds)) ||
	    ((e->have & GK_EVF_ELAPSED) && !seconds_ok(e->elapsed)) ||
	    ((e->have & GK_EVF_NODE) && !gk_event_name_ok(e->node)) ||
	    ((e->have & GK_EVF_STEP) && !gk_event_name_ok(e->step)))
		return -EINVAL;
	if (len == 0)
		return -ENOSPC;
	put(&o, "%s kind=%s result=%s time=%.3f", GK_EVENT_MAGIC, kind_names[e->kind],
	    result_names[e->result], e->time);
	if (e->have & GK_EVF_NODE)
		put(&o, " node=%s", e->node);
	if (e->have & GK_EVF_STEP)
		put(&o, " step=%s", e->step);
	if (e->have & GK_EVF_TASK)
		put(&o, " task=%u", e->task);
	if (e->have & GK_EVF_PID)
		put(&o, " pid=%llu", (unsigned long long)e->pid);
	if (e->have & GK_EVF_PSTART)
		put(&o, " pstart=%llu", (unsigned long long)e->pstart);
	if (e->have & GK_EVF_RESTART)
		put(&o, " restart=%u", e->restart);
	if (e->have & GK_EVF_CKPT)
		put(&o, " ckpt=%llu", (unsigned long long)e->ckpt);
	if (e->have & GK_EVF_BYTES)
		put(&o, " bytes=%llu", (unsigned long long)e->bytes);
	if (e->have & GK_EVF_SECONDS)
		put(&o, " seconds=%.3f", e->seconds);
	if (e->have & GK_EVF_ELAPSED)
		put(&o, " elapsed=%.3f", e->elapsed);
	if (e->have & GK_EVF_GPUS)
		put(&o, " gpus=%u", e->gpus);
	if (e->have & GK_EVF_ERRNO)
		put(&o, " errno=%u", e->err);
	put(&o, "\n");
	if (o.overflow)
		return -ENOSPC;
	return (int)o.n;
}

/* ---- reading ---- */

/* A decimal number of at most 19 digits (no sign, no blanks, no leading '+'). */
static int parse_u64(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || n > 19)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* "123" or "123.456": at most 13 digits before the point, 9 after. */
static int parse_seconds(const char *s, size_t n, double *out)
{
	const char *dot = memchr(s, '.', n);
	size_t whole = dot ? (size_t)(dot - s) : n, frac = dot ? n - whole - 1 : 0;
	uint64_t w, f = 0;
	double scale = 1;

	if (whole > 13 || frac > 9 || (dot && frac == 0))
		return -EINVAL;
	if (parse_u64(s, whole, UINT64_MAX, &w) < 0)
		return -EINVAL;
	if (frac && parse_u64(dot + 1, frac, UINT64_MAX, &f) < 0)
		return -EINVAL;
	for (size_t i = 0; i < frac; i++)
		scale *= 10;
	*out = (double)w + (double)f / scale;
	return *out < SECONDS_MAX ? 0 : -EINVAL;
}

static int parse_name(const char *s, size_t n, char *out, size_t outlen)
{
	if (n == 0 || n >= outlen)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!name_char(s[i]))
			return -EINVAL;
	memcpy(out, s, n);
	out[n] = '\0';
	return 0;
}

static int parse_enum(const char *s, size_t n, const char *const *names, unsigned count)
{
	for (unsigned i = 0; i < count; i++)
		if (strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
			return (int)i;
	return -EINVAL;
}

/* Seen-bits for the required keys, beside GK_EVF_*. */
#define SEEN_KIND (1u << 24)
#define SEEN_RESULT (1u << 25)
#define SEEN_TIME (1u << 26)

static int field(struct gk_event *e, uint32_t *seen, const char *k, size_t kn, const char *v,
		 size_t vn)
{
	uint64_t u;
	int r;

#define KEY(name) (kn == sizeof(name) - 1 && memcmp(k, name, kn) == 0)
#define ONCE(bit)                                                                                  \
	do {                                                                                       \
		if (*seen & (bit))                                                                 \
			return -EINVAL;                                                            \
		*seen |= (bit);                                                                    \
	} while (0)
	if (KEY("kind")) {
		ONCE(SEEN_KIND);
		if ((r = parse_enum(v, vn, kind_names, GK_EV_KINDS)) < 0)
			return r;
		e->kind = (enum gk_event_kind)r;
	} else if (KEY("result")) {
		ONCE(SEEN_RESULT);
		if ((r = parse_enum(v, vn, result_names, GK_EV_RESULTS)) < 0)
			return r;
		e->result = (enum gk_event_result)r;
	} else if (KEY("time")) {
		ONCE(SEEN_TIME);
		return parse_seconds(v, vn, &e->time);
	} else if (KEY("pid")) {
		ONCE(GK_EVF_PID);
		return parse_u64(v, vn, UINT32_MAX, &e->pid);
	} else if (KEY("pstart")) {
		ONCE(GK_EVF_PSTART);
		return parse_u64(v, vn, UINT64_MAX, &e->pstart);
	} else if (KEY("ckpt")) {
		ONCE(GK_EVF_CKPT);
		return parse_u64(v, vn, UINT64_MAX, &e->ckpt);
	} else if (KEY("bytes")) {
		ONCE(GK_EVF_BYTES);
		return parse_u64(v, vn, UINT64_MAX, &e->bytes);
	} else if (KEY("seconds")) {
		ONCE(GK_EVF_SECONDS);
		return parse_seconds(v, vn, &e->seconds);
	} else if (KEY("elapsed")) {
		ONCE(GK_EVF_ELAPSED);
		return parse_seconds(v, vn, &e->elapsed);
	} else if (KEY("gpus")) {
		ONCE(GK_EVF_GPUS);
		if (parse_u64(v, vn, 65536, &u) < 0)
			return -EINVAL;
		e->gpus = (uint32_t)u;
	} else if (KEY("restart")) {
		ONCE(GK_EVF_RESTART);
		if (parse_u64(v, vn, UINT32_MAX, &u) < 0)
			return -EINVAL;
		e->restart = (uint32_t)u;
	} else if (KEY("errno")) {
		ONCE(GK_EVF_ERRNO);
		if (parse_u64(v, vn, 4095, &u) < 0)
			return -EINVAL;
		e->err = (uint32_t)u;
	} else if (KEY("task")) {
		ONCE(GK_EVF_TASK);
		if (parse_u64(v, vn, UINT32_MAX, &u) < 0)
			return -EINVAL;
		e->task = (uint32_t)u;
	} else if (KEY("node")) {
		ONCE(GK_EVF_NODE);
		return parse_name(v, vn, e->node, sizeof(e->node));
	} else if (KEY("step")) {
		ONCE(GK_EVF_STEP);
		return parse_name(v, vn, e->step, sizeof(e->step));
	}
	/* Anything else: a field of a newer writer, skipped. */
	return 0;
#undef KEY
#undef ONCE
}

int gk_event_parse(const char *line, size_t len, struct gk_event *e)
{
	const size_t mlen = sizeof(GK_EVENT_MAGIC) - 1;
	uint32_t seen = 0;
	size_t i;

	memset(e, 0, sizeof(*e));
	if (len >= GK_EVENT_LINE_MAX || len < mlen || memcmp(line, GK_EVENT_MAGIC, mlen) != 0)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (line[i] < 0x20 || line[i] > 0x7e)
			return -EINVAL;
	i = mlen;
	while (i < len) {
		const char *k, *v, *eq;
		size_t kn, vn, end;

		/* Exactly one blank before each field. */
		if (line[i] != ' ' || i + 1 >= len || line[i + 1] == ' ')
			return -EINVAL;
		i++;
		for (end = i; end < len && line[end] != ' '; end++)
			;
		k = line + i;
		eq = memchr(k, '=', end - i);
		if (!eq || eq == k)
			return -EINVAL;
		kn = (size_t)(eq - k);
		v = eq + 1;
		vn = end - i - kn - 1;
		if (field(e, &seen, k, kn, v, vn) < 0)
			return -EINVAL;
		i = end;
	}
	if ((seen & (SEEN_KIND | SEEN_RESULT | SEEN_TIME)) != (SEEN_KIND | SEEN_RESULT | SEEN_TIME))
		return -EINVAL;
	e->have = seen & ~(SEEN_KIND | SEEN_RESULT | SEEN_TIME);
	return 0;
}

int gk_events_each(const char *buf, size_t len, int (*fn)(void *arg, const struct gk_event *e),
		   void *arg)
{
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(buf + i, '\n', len - i);
		struct gk_event e;
		int r;

		if (!nl)
			return fn(arg, NULL); /* cut off */
		if (gk_event_parse(buf + i, (size_t)(nl - buf - i), &e) == 0)
			r = fn(arg, &e);
		else
			r = fn(arg, NULL);
		if (r)
			return r;
		i = (size_t)(nl - buf) + 1;
	}
	return 0;
}
