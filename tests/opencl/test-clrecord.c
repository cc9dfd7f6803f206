/*
 * test-clrecord - the record of OpenCL objects (state/opencl_record.h) on its
 * own: what a program's source needs of a device; the text a checkpoint
 * carries, written and read back object for object; a restoring run that made
 * other objects refused, naming the object; a device without the double type
 * or an extension the program enabled refused, naming it (pocl's devices all
 * have both, so only this test shows the refusal).
 */
#include "config.h"

#include "core/state/opencl_record.h"
#include "tap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *src_fp64 = "// double in a comment says nothing\n"
			      "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
			      "#pragma OPENCL EXTENSION all : enable\n"
			      "__kernel void k(__global double2 *d) { d[0] = (double2)(1.0); }\n";
static const char *src_plain = "/* double */ __kernel void k(__global float *f)\n"
			       "{ const char *s = \"double\"; f[0] = doubled(1.0f); }\n";

static struct gk_clrec build(int fp64_src)
{
	struct gk_clrec r;
	struct gk_clo *c, *q, *m, *s, *p, *k;
	unsigned v = 0xdeadbeef;

	memset(&r, 0, sizeof(r));
	c = gk_clrec_add(&r, GK_CLO_CONTEXT, (void *)0x10);
	q = gk_clrec_add(&r, GK_CLO_QUEUE, (void *)0x20);
	q->parent = c->idx;
	q->props = 2;
	m = gk_clrec_add(&r, GK_CLO_MEM, (void *)0x30);
	m->parent = c->idx;
	m->flags = 1 | 8;
	m->size = 65536;
	s = gk_clrec_add(&r, GK_CLO_MEM, (void *)0x31);
	s->sub = 1;
	s->parent = m->idx;
	s->origin = 4096;
	s->size = 4096;
	p = gk_clrec_add(&r, GK_CLO_PROGRAM, (void *)0x40);
	p->parent = c->idx;
	gk_clrec_scan_source(p, fp64_src ? src_fp64 : src_plain,
			     strlen(fp64_src ? src_fp64 : src_plain));
	strcpy(p->options, "-cl-std=CL1.2 -DX=1");
	k = gk_clrec_add(&r, GK_CLO_KERNEL, (void *)0x50);
	k->parent = p->idx;
	strcpy(k->name, "stepk");
	k->args[0].kind = GK_CLA_MEM;
	k->args[0].size = 8;
	k->args[0].mem = s->idx;
	k->args[1].kind = GK_CLA_VALUE;
	k->args[1].size = sizeof(v);
	memcpy(k->args[1].value, &v, sizeof(v));
	k->args[2].kind = GK_CLA_LOCAL;
	k->args[2].size = 256;
	return r;
}

int main(void)
{
	static char text[GK_CL_STATE_SIZE];
	struct gk_clrec r = build(1), plain = build(0), back, other;
	struct gk_clo *p, *k;
	char why[512];
	long n;

	plan(20);

	p = gk_clrec_at(&r, GK_CLO_PROGRAM, 0);
	ok(p->fp64, "a double2 in the code: the program needs the double type");
	is_str(p->exts, "cl_khr_int64_base_atomics", "the extension its pragma enables, not 'all'");
	p = gk_clrec_at(&plain, GK_CLO_PROGRAM, 0);
	ok(!p->fp64, "double in comments, strings and other names is no use of the type");
	is_str(p->exts, "", "no pragma, no extension");

	n = gk_clrec_write(&r, text, sizeof(text));
	ok(n > 0 && strstr(text, "gpuckpt-opencl 1\n") == text, "the record is written (%ld bytes)",
	   n);
	is_int(gk_clrec_write(&r, text, 40), -ENOSPC, "a record larger than its region: -ENOSPC");
	n = gk_clrec_write(&r, text, sizeof(text));
	is_int(gk_clrec_parse(text, sizeof(text), &back, why, sizeof(why)), 0, "and read back");
	is_int(back.n, r.n, "object for object");
	is_int(gk_clrec_match(&r, &back, why, sizeof(why)), 0, "it matches the run that wrote it");
	k = gk_clrec_at(&back, GK_CLO_KERNEL, 0);
	ok(k && !strcmp(k->name, "stepk") && k->args[0].kind == GK_CLA_MEM && k->args[0].mem == 1 &&
	       k->args[1].kind == GK_CLA_VALUE &&
	       !memcmp(k->args[1].value, "\xef\xbe\xad\xde", 4) &&
	       k->args[2].kind == GK_CLA_LOCAL && k->args[2].size == 256,
	   "kernel arguments: a buffer by number, a value's bytes, a local size");
	p = gk_clrec_at(&back, GK_CLO_PROGRAM, 0);
	ok(p && p->fp64 && !strcmp(p->options, "-cl-std=CL1.2 -DX=1") &&
	       !strcmp(p->exts, "cl_khr_int64_base_atomics"),
	   "a program's build options and needs");
	text[3] = 'X';
	ok(gk_clrec_parse(text, sizeof(text), &other, why, sizeof(why)) == -EBADMSG &&
	       strstr(why, "line 1"),
	   "a damaged record is refused, naming the line (%s)", why);

	/* A restoring run whose sub-buffer lies elsewhere. */
	other = build(1);
	gk_clrec_at(&other, GK_CLO_MEM, 1)->origin = 0;
	ok(gk_clrec_match(&other, &back, why, sizeof(why)) == -EINVAL && strstr(why, "buffer 1"),
	   "a sub-buffer at another origin: refused (%s)", why);
	gk_clrec_free(&other);
	other = build(1);
	strcpy(gk_clrec_at(&other, GK_CLO_KERNEL, 0)->name, "other");
	ok(gk_clrec_match(&other, &back, why, sizeof(why)) == -EINVAL && strstr(why, "'stepk'"),
	   "a kernel of another name: refused (%s)", why);
	gk_clrec_remove(&other, gk_clrec_at(&other, GK_CLO_KERNEL, 0));
	ok(gk_clrec_match(&other, &back, why, sizeof(why)) == -EINVAL &&
	       strstr(why, "kernel 0 is in the checkpoint"),
	   "a kernel this run has not made: refused (%s)", why);
	gk_clrec_free(&other);

	p = gk_clrec_at(&back, GK_CLO_PROGRAM, 0);
	is_int(gk_clrec_device_offers(p, "cpu", "cl_khr_fp64 cl_khr_int64_base_atomics", 1, why,
				      sizeof(why)),
	       0, "a device with the double type and the extension offers what it needs");
	ok(gk_clrec_device_offers(p, "gpu0", "cl_khr_int64_base_atomics", 0, why, sizeof(why)) ==
		   -ENODEV &&
	       strstr(why, "'gpu0'") && strstr(why, "double type"),
	   "a device without the double type: refused, naming both (%s)", why);
	ok(gk_clrec_device_offers(p, "gpu1", "cl_khr_fp64 cl_khr_int64_base_atomics_x", 1, why,
				  sizeof(why)) == -ENODEV &&
	       strstr(why, "extension cl_khr_int64_base_atomics,"),
	   "a device without the extension (a longer name does not count): refused (%s)", why);
	p = gk_clrec_at(&plain, GK_CLO_PROGRAM, 0);
	is_int(gk_clrec_device_offers(p, "gpu0", "", 0, why, sizeof(why)), 0,
	       "a program without needs runs anywhere");
	gk_clrec_remove(&r, gk_clrec_at(&r, GK_CLO_MEM, 1));
	ok(gk_clrec_at(&r, GK_CLO_MEM, 1) == NULL &&
	       gk_clrec_find(&r, GK_CLO_MEM, (void *)0x31) == NULL,
	   "a released object leaves the record");
	gk_clrec_free(&r);
	gk_clrec_free(&plain);
	gk_clrec_free(&back);
	return done_testing();
}
