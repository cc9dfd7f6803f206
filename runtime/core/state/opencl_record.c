/*
 * opencl_record.c - the record of a process's OpenCL objects and its text
 * form (opencl_record.h). The caller locks.
 *
 * The text, one object a line, in creation order (FORMAT.md, "OpenCL state"):
 *   gpuckpt-opencl 1
 *   context IDX
 *   queue IDX ctx C props HEX
 *   mem IDX ctx C parent P flags HEX origin N size N
 *   program IDX ctx C fp64 0|1 binary 0|1 exts NAME,NAME|- options TEXT
 *   kernel IDX program P name NAME
 *   arg KERNEL I value SIZE HEX | mem SIZE M | local SIZE
 *   end
 */
#include "config.h"

#include "core/state/opencl_record.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gk_clo *gk_clrec_add(struct gk_clrec *r, enum gk_clo_kind kind, void *h)
{
	struct gk_clo *o;

	if (r->n == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 64;
		struct gk_clo **p = realloc(r->o, ncap * sizeof(*p));

		if (!p)
			return NULL;
		r->o = p;
		r->cap = ncap;
	}
	o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->kind = kind;
	o->h = h;
	o->refs = 1;
	o->parent = -1;
	o->idx = r->next[kind]++;
	r->o[r->n++] = o;
	return o;
}

struct gk_clo *gk_clrec_find(const struct gk_clrec *r, int kind, const void *h)
{
	if (!h)
		return NULL;
	for (size_t i = r->n; i-- > 0;)
		if (r->o[i]->h == h && (kind < 0 || (int)r->o[i]->kind == kind))
			return r->o[i];
	return NULL;
}

struct gk_clo *gk_clrec_at(const struct gk_clrec *r, enum gk_clo_kind kind, long idx)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->o[i]->kind == kind && r->o[i]->idx == idx)
			return r->o[i];
	return NULL;
}

void gk_clrec_remove(struct gk_clrec *r, struct gk_clo *o)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->o[i] == o) {
			memmove(&r->o[i], &r->o[i + 1], (r->n - i - 1) * sizeof(r->o[0]));
			r->n--;
			break;
		}
	free(o->src);
	free(o);
}

void gk_clrec_free(struct gk_clrec *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->o[i]->src);
		free(r->o[i]);
	}
	free(r->o);
	memset(r, 0, sizeof(*r));
}

static int ident_char(int c)
{
	return isalnum(c) || c == '_';
}

static int has_word(const char *list, const char *name, size_t n);

static void add_ext(struct gk_clo *p, const char *name, size_t n)
{
	size_t have = strlen(p->exts);

	if (n == 0 || n > 100 || has_word(p->exts, name, n) || have + n + 2 > sizeof(p->exts))
		return;
	if (have)
		p->exts[have++] = ' ';
	memcpy(p->exts + have, name, n);
	p->exts[have + n] = 0;
}

void gk_clrec_merge_exts(struct gk_clo *p, const char *exts)
{
	while (*exts) {
		size_t n;

		while (*exts == ' ')
			exts++;
		n = strcspn(exts, " ");
		add_ext(p, exts, n);
		exts += n;
	}
}

void gk_clrec_scan_source(struct gk_clo *p, const char *src, size_t len)
{
	size_t i = 0;

	while (i < len) {
		/* Comments and strings say nothing of what the code uses. */
		if (src[i] == '/' && i + 1 < len && src[i + 1] == '/') {
			while (i < len && src[i] != '\n')
				i++;
			continue;
		}
		if (src[i] == '/' && i + 1 < len && src[i + 1] == '*') {
			i += 2;
			while (i + 1 < len && !(src[i] == '*' && src[i + 1] == '/'))
				i++;
			i += 2;
			continue;
		}
		if (src[i] == '"') {
			for (i++; i < len && src[i] != '"'; i++)
				if (src[i] == '\\')
					i++;
			i++;
			continue;
		}
		if (src[i] == '#') {
			/* #pragma OPENCL EXTENSION name : enable */
			size_t j = i + 1, k;

			while (j < len && (src[j] == ' ' || src[j] == '\t'))
				j++;
			if (len - j > 6 && !strncmp(src + j, "pragma", 6)) {
				j += 6;
				while (j < len && (src[j] == ' ' || src[j] == '\t'))
					j++;
				if (len - j > 6 && !strncmp(src + j, "OPENCL", 6)) {
					j += 6;
					while (j < len && (src[j] == ' ' || src[j] == '\t'))
						j++;
					if (len - j > 9 && !strncmp(src + j, "EXTENSION", 9)) {
						j += 9;
						while (j < len && (src[j] == ' ' || src[j] == '\t'))
							j++;
						for (k = j;
						     k < len && ident_char((unsigned char)src[k]);
						     k++)
							;
						/* "all" names no extension. */
						if (k - j == 11 &&
						    !strncmp(src + j, "cl_khr_fp64", 11))
							p->fp64 = 1;
						else if (k > j && !(k - j == 3 &&
								    !strncmp(src + j, "all", 3)))
							add_ext(p, src + j, k - j);
					}
				}
			}
			while (i < len && src[i] != '\n')
				i++;
			continue;
		}
		if (ident_char((unsigned char)src[i])) {
			size_t k = i;

			while (k < len && ident_char((unsigned char)src[k]))
				k++;
			/* double, double2 ... double16 */
			if (k - i >= 6 && !strncmp(src + i, "double", 6) &&
			    (k - i == 6 || isdigit((unsigned char)src[i + 6])))
				p->fp64 = 1;
			i = k;
			continue;
		}
		i++;
	}
}

struct out {
	char *buf;
	size_t len, used;
	int full;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->full)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= o->len - o->used) {
		o->full = 1;
		return;
	}
	o->used += (size_t)n;
}

/* Names and options go on one line: a newline or NUL would end it early. */
static void put_text(struct out *o, const char *s)
{
	for (; *s; s++)
		put(o, "%c", *s == '\n' || *s == '\r' ? ' ' : *s);
}

long gk_clrec_write(const struct gk_clrec *r, char *buf, size_t len)
{
	struct out o = {buf, len, 0, 0};

	put(&o, "gpuckpt-opencl 1\n");
	for (size_t i = 0; i < r->n; i++) {
		const struct gk_clo *c = r->o[i];

		switch (c->kind) {
		case GK_CLO_CONTEXT:
			put(&o, "context %ld\n", c->idx);
			break;
		case GK_CLO_QUEUE:
			put(&o, "queue %ld ctx %ld props 0x%" PRIx64 "\n", c->idx, c->parent,
			    c->props);
			break;
		case GK_CLO_MEM:
			put(&o,
			    "mem %ld sub %d parent %ld flags 0x%" PRIx64 " origin %" PRIu64
			    " size %" PRIu64 "\n",
			    c->idx, c->sub, c->parent, c->flags, c->origin, c->size);
			break;
		case GK_CLO_PROGRAM:
			put(&o, "program %ld ctx %ld fp64 %d binary %d exts ", c->idx, c->parent,
			    c->fp64, c->binary);
			if (!c->exts[0])
				put(&o, "-");
			for (const char *s = c->exts; *s; s++)
				put(&o, "%c", *s == ' ' ? ',' : *s);
			put(&o, " options ");
			put_text(&o, c->options);
			put(&o, "\n");
			break;
		case GK_CLO_KERNEL:
			put(&o, "kernel %ld program %ld name ", c->idx, c->parent);
			put_text(&o, c->name);
			put(&o, "\n");
			for (int a = 0; a < GK_CL_ARGS_MAX; a++) {
				const struct gk_cl_arg *g = &c->args[a];

				switch (g->kind) {
				case GK_CLA_UNSET:
					break;
				case GK_CLA_VALUE:
					put(&o, "arg %ld %d value %zu ", c->idx, a, g->size);
					for (size_t b = 0; b < g->size; b++)
						put(&o, "%02x", g->value[b]);
					put(&o, "\n");
					break;
				case GK_CLA_MEM:
					put(&o, "arg %ld %d mem %zu %ld\n", c->idx, a, g->size,
					    g->mem);
					break;
				case GK_CLA_LOCAL:
					put(&o, "arg %ld %d local %zu\n", c->idx, a, g->size);
					break;
				}
			}
			break;
		}
	}
	put(&o, "end\n");
	if (o.full)
		return -ENOSPC;
	memset(buf + o.used, 0, len - o.used);
	return (long)o.used;
}

/* src into dst, cut to fit. */
static void copy_text(char *dst, size_t len, const char *src)
{
	size_t n = strnlen(src, len - 1);

	memcpy(dst, src, n);
	dst[n] = 0;
}

static int bad(char *why, size_t wlen, long line, const char *what)
{
	snprintf(why, wlen, "OpenCL state, line %ld: %s", line, what);
	return -EBADMSG;
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int gk_clrec_parse(const char *text, size_t len, struct gk_clrec *out, char *why, size_t wlen)
{
	char line[2048];
	size_t pos = 0;
	long ln = 0;
	int ended = 0;

	memset(out, 0, sizeof(*out));
	while (pos < len && text[pos] && !ended) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
		struct gk_clo *o;
		long idx, parent;
		int sub, fp64, bin, a, off;
		uint64_t flags, origin, size;
		char kw[16], name[1100];

		ln++;
		if (!nl || n >= sizeof(line))
			goto fail_line;
		memcpy(line, text + pos, n);
		line[n] = 0;
		pos += n + 1;
		if (ln == 1) {
			if (strcmp(line, "gpuckpt-opencl 1"))
				goto fail_line;
			continue;
		}
		if (!strcmp(line, "end")) {
			ended = 1;
			break;
		}
		if (sscanf(line, "context %ld%n", &idx, &off) == 1 && !line[off]) {
			o = gk_clrec_add(out, GK_CLO_CONTEXT, NULL);
		} else if (sscanf(line, "queue %ld ctx %ld props 0x%" SCNx64 "%n", &idx, &parent,
				  &flags, &off) == 3 &&
			   !line[off]) {
			o = gk_clrec_add(out, GK_CLO_QUEUE, NULL);
			if (o) {
				o->parent = parent;
				o->props = flags;
			}
		} else if (sscanf(line,
				  "mem %ld sub %d parent %ld flags 0x%" SCNx64 " origin %" SCNu64
				  " size %" SCNu64 "%n",
				  &idx, &sub, &parent, &flags, &origin, &size, &off) == 6 &&
			   !line[off]) {
			o = gk_clrec_add(out, GK_CLO_MEM, NULL);
			if (o) {
				o->sub = sub;
				o->parent = parent;
				o->flags = flags;
				o->origin = origin;
				o->size = size;
			}
		} else if (sscanf(line,
				  "program %ld ctx %ld fp64 %d binary %d exts %1023s options%n",
				  &idx, &parent, &fp64, &bin, name, &off) == 5) {
			o = gk_clrec_add(out, GK_CLO_PROGRAM, NULL);
			if (o) {
				o->parent = parent;
				o->fp64 = fp64;
				o->binary = bin;
				if (strcmp(name, "-")) {
					for (char *s = name; *s; s++)
						if (*s == ',')
							*s = ' ';
					copy_text(o->exts, sizeof(o->exts), name);
				}
				copy_text(o->options, sizeof(o->options),
					  line[off] == ' ' ? line + off + 1 : line + off);
			}
		} else if (sscanf(line, "kernel %ld program %ld name %127s%n", &idx, &parent, name,
				  &off) == 3 &&
			   !line[off]) {
			o = gk_clrec_add(out, GK_CLO_KERNEL, NULL);
			if (o) {
				o->parent = parent;
				copy_text(o->name, sizeof(o->name), name);
			}
		} else if (sscanf(line, "arg %ld %d %15s %zu%n", &idx, &a, kw, &size, &off) == 4) {
			struct gk_clo *k = gk_clrec_at(out, GK_CLO_KERNEL, idx);
			struct gk_cl_arg *g;

			if (!k || a < 0 || a >= GK_CL_ARGS_MAX)
				goto fail_line;
			g = &k->args[a];
			g->size = size;
			if (!strcmp(kw, "value") && size <= GK_CL_ARG_VALUE_MAX &&
			    strlen(line + off) == 1 + 2 * size && line[off] == ' ') {
				for (size_t b = 0; b < size; b++) {
					int hi = hexval(line[off + 1 + 2 * b]),
					    lo = hexval(line[off + 2 + 2 * b]);

					if (hi < 0 || lo < 0)
						goto fail_line;
					g->value[b] = (unsigned char)(hi << 4 | lo);
				}
				g->kind = GK_CLA_VALUE;
			} else if (!strcmp(kw, "mem") &&
				   sscanf(line + off, " %ld%n", &g->mem, &sub) == 1 &&
				   !line[off + sub]) {
				g->kind = GK_CLA_MEM;
			} else if (!strcmp(kw, "local") && !line[off]) {
				g->kind = GK_CLA_LOCAL;
			} else {
				goto fail_line;
			}
			continue;
		} else {
			goto fail_line;
		}
		if (!o) {
			gk_clrec_free(out);
			snprintf(why, wlen, "OpenCL state: out of memory");
			return -ENOMEM;
		}
		/* Indexes are as written: the checkpointed run's, with gaps
		 * where it released objects. */
		o->idx = idx;
		o->h = NULL;
		continue;
	fail_line:
		gk_clrec_free(out);
		return bad(why, wlen, ln, "not understood");
	}
	if (!ended) {
		gk_clrec_free(out);
		return bad(why, wlen, ln, "no end line");
	}
	return 0;
}

static const char *kind_name(enum gk_clo_kind k)
{
	static const char *const n[] = {"context", "command queue", "buffer", "program", "kernel"};

	return n[k];
}

int gk_clrec_match(const struct gk_clrec *now, const struct gk_clrec *ck, char *why, size_t len)
{
	for (size_t i = 0; i < ck->n; i++) {
		const struct gk_clo *c = ck->o[i];
		const struct gk_clo *m = gk_clrec_at(now, c->kind, c->idx);

		if (!m) {
			snprintf(why, len,
				 "OpenCL %s %ld is in the checkpoint but this run has not made it "
				 "before its first checkpoint point",
				 kind_name(c->kind), c->idx);
			return -EINVAL;
		}
		if (m->parent != c->parent) {
			snprintf(
			    why, len,
			    "OpenCL %s %ld belongs to %ld in the checkpoint and to %ld in this run",
			    kind_name(c->kind), c->idx, c->parent, m->parent);
			return -EINVAL;
		}
		if (c->kind == GK_CLO_MEM && (m->size != c->size || m->origin != c->origin ||
					      m->sub != c->sub || m->flags != c->flags)) {
			snprintf(why, len,
				 "OpenCL buffer %ld is %" PRIu64 " bytes at %" PRIu64
				 " (flags 0x%" PRIx64 ") in this run and %" PRIu64
				 " bytes at %" PRIu64 " (flags 0x%" PRIx64 ") in the checkpoint",
				 c->idx, m->size, m->origin, m->flags, c->size, c->origin,
				 c->flags);
			return -EINVAL;
		}
		if (c->kind == GK_CLO_KERNEL && strcmp(m->name, c->name)) {
			snprintf(why, len,
				 "OpenCL kernel %ld is '%s' in this run and '%s' in the checkpoint",
				 c->idx, m->name, c->name);
			return -EINVAL;
		}
	}
	return 0;
}

/* Is the word name[0..n) one of the space-separated words of list? */
static int has_word(const char *list, const char *name, size_t n)
{
	while (*list) {
		size_t w;

		while (isspace((unsigned char)*list))
			list++;
		w = strcspn(list, " \t\n");
		if (w == n && !strncmp(list, name, n))
			return 1;
		list += w;
	}
	return 0;
}

int gk_clrec_device_offers(const struct gk_clo *p, const char *dev_name, const char *dev_exts,
			   int dev_fp64, char *why, size_t len)
{
	if (p->fp64 && !dev_fp64) {
		snprintf(
		    why, len,
		    "OpenCL device '%s' lacks the double type (cl_khr_fp64), which program %ld "
		    "of the checkpoint uses",
		    dev_name, p->idx);
		return -ENODEV;
	}
	for (const char *s = p->exts; *s;) {
		size_t n = strcspn(s, " ");

		if (n && !has_word(dev_exts, s, n)) {
			snprintf(
			    why, len,
			    "OpenCL device '%s' lacks the extension %.*s, which program %ld of "
			    "the checkpoint enables",
			    dev_name, (int)n, s, p->idx);
			return -ENODEV;
		}
		s += n;
		while (*s == ' ')
			s++;
	}
	return 0;
}
