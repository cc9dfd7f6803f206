/*
 * opencl_record.h - the record of a process's OpenCL objects: what re-creates
 * each one and what it holds (contexts, queues, buffers and sub-buffers,
 * programs with their build options and what their source needs of a device,
 * kernels with their arguments), in the order the program made them, and its
 * text form, which a checkpoint carries as the host region "opencl.state"
 * (runtime/image/FORMAT.md, "OpenCL state"). No OpenCL call here: handles are
 * opaque, so that the record and its checks are tested on their own
 * (tests/opencl/test-record.c); interpose/opencl.c fills it.
 */
#ifndef GK_OPENCL_RECORD_H
#define GK_OPENCL_RECORD_H

#include <stddef.h>
#include <stdint.h>

enum gk_clo_kind { GK_CLO_CONTEXT, GK_CLO_QUEUE, GK_CLO_MEM, GK_CLO_PROGRAM, GK_CLO_KERNEL };

#define GK_CL_ARG_VALUE_MAX 128	      /* bytes of a by-value kernel argument kept */
#define GK_CL_ARGS_MAX 64	      /* kernel arguments kept */
#define GK_CL_STATE_SIZE (256 * 1024) /* the "opencl.state" region */

/* How an argument was set: a value's bytes, a buffer (found by its handle in
 * the value), or a NULL value (__local memory of that size). */
enum gk_cl_arg_kind { GK_CLA_UNSET, GK_CLA_VALUE, GK_CLA_MEM, GK_CLA_LOCAL };

struct gk_cl_arg {
	enum gk_cl_arg_kind kind;
	size_t size;
	long mem; /* GK_CLA_MEM: the buffer's index */
	unsigned char value[GK_CL_ARG_VALUE_MAX];
};

struct gk_clo {
	enum gk_clo_kind kind;
	long idx;    /* among the objects of its kind, in creation order */
	void *h;     /* the OpenCL handle the program holds */
	long refs;   /* the program's references */
	long parent; /* queue, buffer, program: context; kernel: program; sub-buffer: buffer; -1 */
	int own;     /* h is a handle of the runtime's own (interpose/opencl.c) */
	/* buffers */
	uint64_t flags, origin, size;
	int sub;
	void *shadow;	/* a top-level buffer's bytes at a checkpoint */
	void *host_ptr; /* CL_MEM_USE_HOST_PTR: the program's memory (not written out) */
	long mapped;
	/* programs */
	int fp64, binary;
	char exts[512];	   /* extensions its source enables, separated by spaces */
	char options[512]; /* the last build's options */
	char *src;	   /* a program's source, for a move (not written out; freed here) */
	size_t src_len;
	int built, linked; /* built by clBuildProgram; made by clLinkProgram or compiled */
	/* kernels */
	char name[128];
	struct gk_cl_arg args[GK_CL_ARGS_MAX];
	int arg_too_big; /* the first argument not kept, + 1 */
	/* queues */
	uint64_t props;
};

struct gk_clrec {
	struct gk_clo **o;
	size_t n, cap;
	long next[GK_CLO_KERNEL + 1];
};

/* A new object of kind with handle h (one reference), its index the next of
 * its kind: the object, or NULL (out of memory). */
struct gk_clo *gk_clrec_add(struct gk_clrec *r, enum gk_clo_kind kind, void *h);
/* The live object with handle h (any kind when kind < 0), or NULL. */
struct gk_clo *gk_clrec_find(const struct gk_clrec *r, int kind, const void *h);
/* The object of kind with index idx, or NULL. */
struct gk_clo *gk_clrec_at(const struct gk_clrec *r, enum gk_clo_kind kind, long idx);
/* Take o out (the program released it) and free it. */
void gk_clrec_remove(struct gk_clrec *r, struct gk_clo *o);
void gk_clrec_free(struct gk_clrec *r);

/* What a program's source needs of a device: the double type (a `double`
 * token, or cl_khr_fp64 enabled) and the extensions its pragmas enable. */
void gk_clrec_scan_source(struct gk_clo *p, const char *src, size_t len);

/* Add the space-separated extensions in exts to program p's. */
void gk_clrec_merge_exts(struct gk_clo *p, const char *exts);

/* The record as text into buf (NUL-terminated, the rest zeroed): bytes
 * used, or -ENOSPC. */
long gk_clrec_write(const struct gk_clrec *r, char *buf, size_t len);
/* Parse text written by gk_clrec_write into out (empty): 0, or -EBADMSG
 * with why. */
int gk_clrec_parse(const char *text, size_t len, struct gk_clrec *out, char *why, size_t wlen);

/* Does this run hold what the checkpoint's record ck holds, object for
 * object (same kinds, indexes, sizes, flags, names)? 0, or -EINVAL with why. */
int gk_clrec_match(const struct gk_clrec *now, const struct gk_clrec *ck, char *why, size_t len);

/* Does a device (its name, CL_DEVICE_EXTENSIONS, whether it has the double
 * type) offer what program p needed? 0, or -ENODEV with why naming what it
 * lacks. */
int gk_clrec_device_offers(const struct gk_clo *p, const char *dev_name, const char *dev_exts,
			   int dev_fp64, char *why, size_t len);

#endif
