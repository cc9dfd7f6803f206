/*
 * opencl.c - the OpenCL API as the program calls it: the exported cl*
 * functions (those of driver/opencl.def marked GK_CL_OWN) pass each call to
 * the ICD loader and note what it made or changed in the record
 * (state/opencl_record.h); the program keeps the handles the OpenCL
 * implementation gave it, or with GPUCKPT_OPENCL_MOVABLE=1 handles of the
 * runtime's own, which a move re-points at objects made anew on another
 * device (below, "a move"; opencl_move.h). A checkpoint (the phase hooks at the end) drains
 * every queue, copies every buffer into its host copy, a host region named
 * "opencl.mem.N" that the pipeline writes like any other, and writes the
 * record into the region "opencl.state". A restart in application mode makes
 * its objects again in its setup, on whatever device it has now; the restore
 * checks them against the checkpoint's record and that the device offers what
 * the programs used, then loads the buffers and sets every kernel argument
 * the checkpointed run had set (a buffer argument as this run's buffer of the
 * same number).
 *
 * Calls that change what a buffer holds pass the gate, so no other thread
 * enqueues while a checkpoint copies buffers.
 */
#include "config.h"

#include "core/driver/opencl.h"
#include "common/shepherd_protocol.h"
#include "core/state/opencl_record.h"
#include "core/state/phase.h"
#include "core/state/regions.h"
#include "core/state/runtime.h"
#include "core/control/start.h"
#include "core/interpose/gate.h"
#include "common/export.h"
#include "common/settings_env.h"
#include "common/io.h"
#include "common/log.h"
#include "image/image.h"
#include "core/interpose/opencl_move.h"

#include <CL/cl_icd.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define STATE_REGION "opencl.state"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct gk_clrec rec;
/* The record's text at a checkpoint; untouched pages cost nothing. */
static char state_text[GK_CL_STATE_SIZE];
static int state_registered;
/* An object the record could not hold: no checkpoint may claim to be whole. */
static int record_lost;

/* What a checkpoint cannot hold (images, pipes, SVM, samplers), by handle. */
#define UNSAVED_MAX 256
static struct {
	const void *h;
	const char *what;
} unsaved[UNSAVED_MAX];
static size_t nunsaved, unsaved_lost;

/* User events not yet set: a queue waiting on one cannot be drained. */
#define USER_EVENTS_MAX 256
static const void *user_events[USER_EVENTS_MAX];
static size_t nuser_events;

/* The checkpoint's record, between the restore's check and its load. */
static struct gk_clrec restoring;
static int have_restoring;

/*
 * Handles of the runtime's own (GPUCKPT_OPENCL_MOVABLE=1): each object the
 * program makes is handed out as a gk_clh, laid out as the ICD loader needs
 * (a dispatch table first), holding the real object. Every exported entry
 * point translates its handle arguments with one load and one compare (no
 * lock, no search): a handle whose table is not the runtime's is a real one,
 * passed as it is. A move (gk_cl_move) makes the objects anew on another
 * device and re-points each handle. The table holds the runtime's exports, so
 * a call that reaches the ICD loader some other way is translated too; the
 * entry points the runtime does not translate end the process, saying so,
 * rather than give the implementation a handle it does not know.
 */
struct gk_clh {
	const struct _cl_icd_dispatch *dispatch; /* first: the ICD's layout */
	void *real;
};

static struct _cl_icd_dispatch own_dispatch;
static int movable;
/* The handles live in one reserved range of their own, so that telling one
 * from any other pointer (or from a kernel argument's bytes) reads only the
 * runtime's memory: untouched pages cost nothing. */
#define OWN_MAX (1u << 20)
static struct gk_clh *own_base;
static uintptr_t own_bytes; /* 0 until the range is there: nothing is a handle */
static struct gk_clh *own_free;
static size_t own_used;
static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t movable_once = PTHREAD_ONCE_INIT;
/* After a move: the devices left and the ones that replace them. */
#define MOVED_MAX 16
static cl_device_id moved_from[MOVED_MAX], moved_to[MOVED_MAX];
static int nmoved;

static void untranslated(void)
{
	gk_error("opencl: an OpenCL function gpuckpt does not translate was called through the "
		 "ICD loader with one of the runtime's handles (" GK_ENV(OPENCL_MOVABLE) "=1; "
		 "docs/opencl.md, Limits)");
	abort();
}

static void movable_init(void)
{
	const char *v = gk_getenv(OPENCL_MOVABLE);
	void (**slot)(void) = (void (**)(void))&own_dispatch;

	for (size_t i = 0; i < sizeof(own_dispatch) / sizeof(*slot); i++)
		slot[i] = untranslated;
#define GK_CL_OWN(name) own_dispatch.name = name;
#define GK_CL_REAL(name)
#include "core/driver/opencl.def"
#undef GK_CL_OWN
#undef GK_CL_REAL
	movable = v && !strcmp(v, "1");
	if (movable) {
		void *b = mmap(NULL, OWN_MAX * sizeof(struct gk_clh), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (b != MAP_FAILED) {
			own_base = b;
			__atomic_store_n(&own_bytes, OWN_MAX * sizeof(struct gk_clh),
					 __ATOMIC_RELEASE);
		}
	}
}

int gk_cl_movable(void)
{
	pthread_once(&movable_once, movable_init);
	return movable;
}

static inline int is_own(const void *h)
{
	return (uintptr_t)h - (uintptr_t)own_base < __atomic_load_n(&own_bytes, __ATOMIC_RELAXED) &&
	       ((const struct gk_clh *)h)->dispatch == &own_dispatch;
}

/* The real object behind a handle the program gave. */
static inline void *real_of(const void *h)
{
	return is_own(h) ? __atomic_load_n(&((struct gk_clh *)h)->real, __ATOMIC_ACQUIRE)
			 : (void *)h;
}
#define R(h) ((__typeof__(h))real_of(h))

/* A device the program names, as it is after a move. */
static cl_device_id dev_of(cl_device_id d)
{
	int n = __atomic_load_n(&nmoved, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++)
		if (moved_from[i] == d)
			return moved_to[i];
	return d;
}

/* A list of devices, translated into buf (MOVED_MAX) where a move happened. */
static const cl_device_id *devs_of(cl_uint n, const cl_device_id *list, cl_device_id *buf)
{
	if (!list || !__atomic_load_n(&nmoved, __ATOMIC_ACQUIRE) || n > MOVED_MAX)
		return list;
	for (cl_uint i = 0; i < n; i++)
		buf[i] = dev_of(list[i]);
	return buf;
}

/* A new real object as the program will hold it: a handle of the runtime's
 * own when objects are movable (and the runtime is on), else itself. */
static void *wrap(void *real)
{
	struct gk_clh *x;

	if (!real || !gk_cl_movable() || !gk_enabled() || !own_base)
		return real;
	pthread_mutex_lock(&own_lock);
	x = own_free;
	if (x)
		own_free = x->real;
	else if (own_used < OWN_MAX)
		x = &own_base[own_used++];
	pthread_mutex_unlock(&own_lock);
	if (!x)
		return real; /* not movable: a move refuses it, naming it */
	x->real = real;
	__atomic_store_n(&x->dispatch, &own_dispatch, __ATOMIC_RELEASE);
	return x;
}

static void unwrap_free(struct gk_clh *x)
{
	pthread_mutex_lock(&own_lock);
	x->dispatch = NULL;
	x->real = own_free;
	own_free = x;
	pthread_mutex_unlock(&own_lock);
}
#define W(h) ((__typeof__(h))wrap(h))

/* The program's handle for a real object an info query answered. */
static void *own_of(void *real)
{
	void *h = real;

	if (!real || !gk_cl_movable())
		return real;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < rec.n; i++)
		if (rec.o[i]->own && real_of(rec.o[i]->h) == real) {
			h = rec.o[i]->h;
			break;
		}
	pthread_mutex_unlock(&lock);
	return h;
}

/* An info answer that is an object: the program's handle for it. */
static void fix_answer(cl_int r, void *value, size_t size)
{
	if (r == CL_SUCCESS && value && size >= sizeof(void *)) {
		void *h;

		memcpy(&h, value, sizeof(h));
		h = own_of(h);
		memcpy(value, &h, sizeof(h));
	}
}

/* Objects are recorded where the runtime is enabled; the first one starts
 * it (outside the record's lock: the start takes the restore's). */
static int tracking(void)
{
	if (!gk_enabled())
		return 0;
	gk_runtime_start();
	return 1;
}

#define LOAD_OR(name, fail)                                                                        \
	do {                                                                                       \
		if (gk_cl_load() < 0 || !gk_cl.name)                                               \
			return fail;                                                               \
	} while (0)

static void set_err(cl_int *errcode_ret, cl_int e)
{
	if (errcode_ret)
		*errcode_ret = e;
}

/* ---- the record ---- */

static void note_unsaved(const void *h, const char *what)
{
	pthread_mutex_lock(&lock);
	if (nunsaved < UNSAVED_MAX) {
		unsaved[nunsaved].h = h;
		unsaved[nunsaved].what = what;
		nunsaved++;
	} else {
		unsaved_lost++;
	}
	pthread_mutex_unlock(&lock);
}

static void forget_unsaved(const void *h)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < nunsaved; i++)
		if (unsaved[i].h == h) {
			unsaved[i] = unsaved[--nunsaved];
			break;
		}
	pthread_mutex_unlock(&lock);
}

static long idx_of(int kind, const void *h)
{
	struct gk_clo *o = gk_clrec_find(&rec, kind, h);

	return o ? o->idx : -1;
}

/* The first object: the record's region is registered before the
 * program's first checkpoint point. */
static void first_use_locked(void)
{
	if (!state_registered && gk_regions_set(STATE_REGION, state_text, sizeof(state_text)) == 0)
		state_registered = 1;
}

static struct gk_clo *add_locked(enum gk_clo_kind kind, void *h)
{
	struct gk_clo *o;

	first_use_locked();
	o = gk_clrec_add(&rec, kind, h);
	if (o)
		o->own = is_own(h);
	if (!o && !record_lost++)
		gk_warn("opencl: out of memory recording an OpenCL object; no checkpoint can "
			"hold this process's OpenCL state");
	return o;
}

static void add(enum gk_clo_kind kind, void *h, long parent)
{
	struct gk_clo *o;

	if (!tracking() || !h)
		return;
	pthread_mutex_lock(&lock);
	o = add_locked(kind, h);
	if (o)
		o->parent = parent;
	pthread_mutex_unlock(&lock);
}

static void mem_region_name(char *name, size_t len, long idx)
{
	snprintf(name, len, "opencl.mem.%ld", idx);
}

/* o out of the record, and the runtime's handle for it freed. */
static void remove_locked(struct gk_clo *o)
{
	if (o->own)
		unwrap_free(o->h);
	gk_clrec_remove(&rec, o);
}

/* Does child c keep p in the record after the program let go of p? A
 * sub-buffer its buffer (the bytes stay needed); with movable handles also
 * a kernel its program and a queue, buffer or program its context (a move
 * makes them again for it). */
static int keeps(const struct gk_clo *p, const struct gk_clo *c)
{
	if (c == p || c->parent != p->idx)
		return 0;
	if (c->kind == GK_CLO_MEM && c->sub)
		return p->kind == GK_CLO_MEM;
	if (!gk_cl_movable())
		return 0;
	if (c->kind == GK_CLO_KERNEL)
		return p->kind == GK_CLO_PROGRAM;
	return (c->kind == GK_CLO_QUEUE || c->kind == GK_CLO_MEM || c->kind == GK_CLO_PROGRAM) &&
	       p->kind == GK_CLO_CONTEXT;
}

static void drop_locked(struct gk_clo *o)
{
	struct gk_clo *p = NULL;

	for (size_t i = 0; i < rec.n; i++)
		if (keeps(o, rec.o[i]))
			return;
	if (o->kind == GK_CLO_MEM && !o->sub) {
		char name[GK_NAME_MAX];

		mem_region_name(name, sizeof(name), o->idx);
		gk_regions_remove(name);
		if (o->shadow)
			munmap(o->shadow, o->size ? o->size : 1);
	}
	for (size_t i = 0; i < rec.n && !p; i++)
		if (keeps(rec.o[i], o))
			p = rec.o[i];
	remove_locked(o);
	if (p && p->refs <= 0)
		drop_locked(p);
}

static void retain(int kind, const void *h)
{
	struct gk_clo *o;

	pthread_mutex_lock(&lock);
	o = gk_clrec_find(&rec, kind, h);
	if (o)
		o->refs++;
	pthread_mutex_unlock(&lock);
}

static void release(int kind, const void *h)
{
	struct gk_clo *o;

	pthread_mutex_lock(&lock);
	o = gk_clrec_find(&rec, kind, h);
	if (o && --o->refs <= 0)
		drop_locked(o);
	pthread_mutex_unlock(&lock);
}

/* ---- contexts ---- */

GK_EXPORT cl_context clCreateContext(const cl_context_properties *properties, cl_uint num_devices,
				     const cl_device_id *devices,
				     void(CL_CALLBACK *pfn_notify)(const char *, const void *,
								   size_t, void *),
				     void *user_data, cl_int *errcode_ret)
{
	cl_context c;

	if (gk_cl_load() < 0 || !gk_cl.clCreateContext) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	cl_device_id buf[MOVED_MAX];

	c = W(gk_cl.clCreateContext(properties, num_devices, devs_of(num_devices, devices, buf),
				    pfn_notify, user_data, errcode_ret));
	add(GK_CLO_CONTEXT, c, -1);
	return c;
}

GK_EXPORT cl_context
clCreateContextFromType(const cl_context_properties *properties, cl_device_type device_type,
			void(CL_CALLBACK *pfn_notify)(const char *, const void *, size_t, void *),
			void *user_data, cl_int *errcode_ret)
{
	cl_context c;

	if (gk_cl_load() < 0 || !gk_cl.clCreateContextFromType) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	c = W(gk_cl.clCreateContextFromType(properties, device_type, pfn_notify, user_data,
					    errcode_ret));
	add(GK_CLO_CONTEXT, c, -1);
	return c;
}

GK_EXPORT cl_int clRetainContext(cl_context c)
{
	cl_int r;

	LOAD_OR(clRetainContext, CL_OUT_OF_RESOURCES);
	r = gk_cl.clRetainContext(R(c));
	if (r == CL_SUCCESS)
		retain(GK_CLO_CONTEXT, c);
	return r;
}

GK_EXPORT cl_int clReleaseContext(cl_context c)
{
	cl_int r;

	LOAD_OR(clReleaseContext, CL_OUT_OF_RESOURCES);
	r = gk_cl.clReleaseContext(R(c));
	if (r == CL_SUCCESS)
		release(GK_CLO_CONTEXT, c);
	return r;
}

/* ---- command queues ---- */

static void add_queue(cl_command_queue q, cl_context c, uint64_t props)
{
	struct gk_clo *o;

	if (!tracking() || !q)
		return;
	pthread_mutex_lock(&lock);
	o = add_locked(GK_CLO_QUEUE, q);
	if (o) {
		o->parent = idx_of(GK_CLO_CONTEXT, c);
		o->props = props;
	}
	pthread_mutex_unlock(&lock);
}

GK_EXPORT cl_command_queue clCreateCommandQueue(cl_context context, cl_device_id device,
						cl_command_queue_properties properties,
						cl_int *errcode_ret)
{
	cl_command_queue q;

	if (gk_cl_load() < 0 || !gk_cl.clCreateCommandQueue) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	q = W(gk_cl.clCreateCommandQueue(R(context), dev_of(device), properties, errcode_ret));
	add_queue(q, context, properties);
	return q;
}

GK_EXPORT cl_command_queue clCreateCommandQueueWithProperties(cl_context context,
							      cl_device_id device,
							      const cl_queue_properties *properties,
							      cl_int *errcode_ret)
{
	cl_command_queue q;
	uint64_t props = 0;

	if (gk_cl_load() < 0 || !gk_cl.clCreateCommandQueueWithProperties) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	q = W(gk_cl.clCreateCommandQueueWithProperties(R(context), dev_of(device), properties,
						       errcode_ret));
	for (const cl_queue_properties *p = properties; p && p[0]; p += 2)
		if (p[0] == CL_QUEUE_PROPERTIES)
			props = p[1];
	add_queue(q, context, props);
	return q;
}

GK_EXPORT cl_int clRetainCommandQueue(cl_command_queue q)
{
	cl_int r;

	LOAD_OR(clRetainCommandQueue, CL_OUT_OF_RESOURCES);
	r = gk_cl.clRetainCommandQueue(R(q));
	if (r == CL_SUCCESS)
		retain(GK_CLO_QUEUE, q);
	return r;
}

GK_EXPORT cl_int clReleaseCommandQueue(cl_command_queue q)
{
	cl_int r;

	LOAD_OR(clReleaseCommandQueue, CL_OUT_OF_RESOURCES);
	r = gk_cl.clReleaseCommandQueue(R(q));
	if (r == CL_SUCCESS)
		release(GK_CLO_QUEUE, q);
	return r;
}

/* ---- buffers ---- */

static void add_buffer(cl_mem m, cl_context context, cl_mem_flags flags, size_t size,
		       void *host_ptr)
{
	struct gk_clo *o;

	if (!m || !tracking())
		return;
	pthread_mutex_lock(&lock);
	o = add_locked(GK_CLO_MEM, m);
	if (o) {
		char name[GK_NAME_MAX];
		void *s;

		o->parent = idx_of(GK_CLO_CONTEXT, context);
		o->flags = flags;
		o->size = size;
		if (flags & CL_MEM_USE_HOST_PTR)
			o->host_ptr = host_ptr;
		/* The host copy a checkpoint fills: reserved, not touched, so it
		 * costs memory only while a checkpoint holds it. */
		s = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (s != MAP_FAILED) {
			mem_region_name(name, sizeof(name), o->idx);
			if (gk_regions_set(name, s, size) == 0)
				o->shadow = s;
			else
				munmap(s, size ? size : 1);
		}
	}
	pthread_mutex_unlock(&lock);
}

GK_EXPORT cl_mem clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size, void *host_ptr,
				cl_int *errcode_ret)
{
	cl_mem m;

	if (gk_cl_load() < 0 || !gk_cl.clCreateBuffer) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	gk_gate_enter();
	m = W(gk_cl.clCreateBuffer(R(context), flags, size, host_ptr, errcode_ret));
	gk_gate_leave();
	add_buffer(m, context, flags, size, host_ptr);
	return m;
}

GK_EXPORT cl_mem clCreateBufferWithProperties(cl_context context,
					      const cl_mem_properties *properties,
					      cl_mem_flags flags, size_t size, void *host_ptr,
					      cl_int *errcode_ret)
{
	cl_mem m;

	if (gk_cl_load() < 0 || !gk_cl.clCreateBufferWithProperties) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	gk_gate_enter();
	m = gk_cl.clCreateBufferWithProperties(R(context), properties, flags, size, host_ptr,
					       errcode_ret);
	if (!(properties && properties[0]))
		m = W(m);
	gk_gate_leave();
	/* Properties other than none are extensions' (cl_mem_properties has no
	 * core one in OpenCL 3.0): such a buffer is not one a restore can make. */
	if (m && tracking() && properties && properties[0])
		note_unsaved(m, "a buffer with properties (clCreateBufferWithProperties)");
	else
		add_buffer(m, context, flags, size, host_ptr);
	return m;
}

GK_EXPORT cl_mem clCreateSubBuffer(cl_mem buffer, cl_mem_flags flags,
				   cl_buffer_create_type buffer_create_type,
				   const void *buffer_create_info, cl_int *errcode_ret)
{
	struct gk_clo *o, *p;
	cl_mem m;

	if (gk_cl_load() < 0 || !gk_cl.clCreateSubBuffer) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	m = W(gk_cl.clCreateSubBuffer(R(buffer), flags, buffer_create_type, buffer_create_info,
				      errcode_ret));
	if (!m || !tracking())
		return m;
	pthread_mutex_lock(&lock);
	p = gk_clrec_find(&rec, GK_CLO_MEM, buffer);
	o = add_locked(GK_CLO_MEM, m);
	if (o) {
		const cl_buffer_region *r = buffer_create_info;

		o->sub = 1;
		o->parent = p ? p->idx : -1;
		o->flags = flags;
		if (buffer_create_type == CL_BUFFER_CREATE_TYPE_REGION && r) {
			o->origin = r->origin;
			o->size = r->size;
		}
	}
	pthread_mutex_unlock(&lock);
	return m;
}

GK_EXPORT cl_int clRetainMemObject(cl_mem m)
{
	cl_int r;

	LOAD_OR(clRetainMemObject, CL_OUT_OF_RESOURCES);
	r = gk_cl.clRetainMemObject(R(m));
	if (r == CL_SUCCESS)
		retain(GK_CLO_MEM, m);
	return r;
}

GK_EXPORT cl_int clReleaseMemObject(cl_mem m)
{
	cl_int r;

	LOAD_OR(clReleaseMemObject, CL_OUT_OF_RESOURCES);
	r = gk_cl.clReleaseMemObject(R(m));
	if (r == CL_SUCCESS) {
		release(GK_CLO_MEM, m);
		forget_unsaved(m);
	}
	return r;
}

/* ---- what a checkpoint cannot hold yet ---- */

GK_EXPORT cl_mem clCreateImage(cl_context context, cl_mem_flags flags,
			       const cl_image_format *image_format, const cl_image_desc *image_desc,
			       void *host_ptr, cl_int *errcode_ret)
{
	cl_mem m;

	if (gk_cl_load() < 0 || !gk_cl.clCreateImage) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	m = gk_cl.clCreateImage(R(context), flags, image_format, image_desc, host_ptr, errcode_ret);
	if (m && tracking())
		note_unsaved(m, "an image (clCreateImage)");
	return m;
}

GK_EXPORT cl_mem clCreateImageWithProperties(cl_context context,
					     const cl_mem_properties *properties,
					     cl_mem_flags flags,
					     const cl_image_format *image_format,
					     const cl_image_desc *image_desc, void *host_ptr,
					     cl_int *errcode_ret)
{
	cl_mem m;

	if (gk_cl_load() < 0 || !gk_cl.clCreateImageWithProperties) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	m = gk_cl.clCreateImageWithProperties(R(context), properties, flags, image_format, image_desc,
					      host_ptr, errcode_ret);
	if (m && tracking())
		note_unsaved(m, "an image (clCreateImageWithProperties)");
	return m;
}

GK_EXPORT cl_mem clCreateImage2D(cl_context context, cl_mem_flags flags,
				 const cl_image_format *image_format, size_t w, size_t h,
				 size_t pitch, void *host_ptr, cl_int *errcode_ret)
{
	cl_mem m;

	if (gk_cl_load() < 0 || !gk_cl.clCreateImage2D) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	m = gk_cl.clCreateImage2D(R(context), flags, image_format, w, h, pitch, host_ptr, errcode_ret);
	if (m && tracking())
		note_unsaved(m, "an image (clCreateImage2D)");
	return m;
}

GK_EXPORT cl_mem clCreateImage3D(cl_context context, cl_mem_flags flags,
				 const cl_image_format *image_format, size_t w, size_t h, size_t d,
				 size_t row_pitch, size_t slice_pitch, void *host_ptr,
				 cl_int *errcode_ret)
{
	cl_mem m;

	if (gk_cl_load() < 0 || !gk_cl.clCreateImage3D) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	m = gk_cl.clCreateImage3D(R(context), flags, image_format, w, h, d, row_pitch, slice_pitch,
				  host_ptr, errcode_ret);
	if (m && tracking())
		note_unsaved(m, "an image (clCreateImage3D)");
	return m;
}

GK_EXPORT cl_mem clCreatePipe(cl_context context, cl_mem_flags flags, cl_uint packet_size,
			      cl_uint max_packets, const cl_pipe_properties *properties,
			      cl_int *errcode_ret)
{
	cl_mem m;

	if (gk_cl_load() < 0 || !gk_cl.clCreatePipe) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	m = gk_cl.clCreatePipe(R(context), flags, packet_size, max_packets, properties, errcode_ret);
	if (m && tracking())
		note_unsaved(m, "a pipe (clCreatePipe)");
	return m;
}

GK_EXPORT void *clSVMAlloc(cl_context context, cl_svm_mem_flags flags, size_t size,
			   cl_uint alignment)
{
	void *p;

	LOAD_OR(clSVMAlloc, NULL);
	p = gk_cl.clSVMAlloc(R(context), flags, size, alignment);
	if (p && tracking())
		note_unsaved(p, "shared virtual memory (clSVMAlloc)");
	return p;
}

GK_EXPORT void clSVMFree(cl_context context, void *svm_pointer)
{
	if (gk_cl_load() < 0 || !gk_cl.clSVMFree)
		return;
	gk_cl.clSVMFree(R(context), svm_pointer);
	forget_unsaved(svm_pointer);
}

GK_EXPORT cl_sampler clCreateSampler(cl_context context, cl_bool normalized,
				     cl_addressing_mode addressing, cl_filter_mode filter,
				     cl_int *errcode_ret)
{
	cl_sampler s;

	if (gk_cl_load() < 0 || !gk_cl.clCreateSampler) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	s = gk_cl.clCreateSampler(R(context), normalized, addressing, filter, errcode_ret);
	if (s && tracking())
		note_unsaved(s, "a sampler (clCreateSampler)");
	return s;
}

GK_EXPORT cl_sampler clCreateSamplerWithProperties(cl_context context,
						   const cl_sampler_properties *props,
						   cl_int *errcode_ret)
{
	cl_sampler s;

	if (gk_cl_load() < 0 || !gk_cl.clCreateSamplerWithProperties) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	s = gk_cl.clCreateSamplerWithProperties(R(context), props, errcode_ret);
	if (s && tracking())
		note_unsaved(s, "a sampler (clCreateSamplerWithProperties)");
	return s;
}

GK_EXPORT cl_int clReleaseSampler(cl_sampler s)
{
	cl_int r;

	LOAD_OR(clReleaseSampler, CL_OUT_OF_RESOURCES);
	r = gk_cl.clReleaseSampler(s);
	if (r == CL_SUCCESS)
		forget_unsaved(s);
	return r;
}

/* ---- programs ---- */

GK_EXPORT cl_program clCreateProgramWithSource(cl_context context, cl_uint count,
					       const char **strings, const size_t *lengths,
					       cl_int *errcode_ret)
{
	struct gk_clo *o;
	cl_program p;

	if (gk_cl_load() < 0 || !gk_cl.clCreateProgramWithSource) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	p = W(gk_cl.clCreateProgramWithSource(R(context), count, strings, lengths, errcode_ret));
	if (!p || !tracking())
		return p;
	pthread_mutex_lock(&lock);
	o = add_locked(GK_CLO_PROGRAM, p);
	if (o) {
		size_t total = 0;

		o->parent = idx_of(GK_CLO_CONTEXT, context);
		for (cl_uint i = 0; i < count; i++)
			if (strings[i])
				total += lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
		/* The source, whole, for a move (gk_cl_move) to build again. */
		o->src = gk_cl_movable() ? malloc(total + 1) : NULL;
		for (cl_uint i = 0; i < count; i++)
			if (strings[i]) {
				size_t n = lengths && lengths[i] ? lengths[i] : strlen(strings[i]);

				gk_clrec_scan_source(o, strings[i], n);
				if (o->src)
					memcpy(o->src + o->src_len, strings[i], n);
				o->src_len += o->src ? n : 0;
			}
		if (o->src)
			o->src[o->src_len] = 0;
	}
	pthread_mutex_unlock(&lock);
	return p;
}

static void add_binary_program(cl_program p, cl_context context)
{
	struct gk_clo *o;

	if (!p || !tracking())
		return;
	pthread_mutex_lock(&lock);
	o = add_locked(GK_CLO_PROGRAM, p);
	if (o) {
		o->parent = idx_of(GK_CLO_CONTEXT, context);
		o->binary = 1;
	}
	pthread_mutex_unlock(&lock);
}

GK_EXPORT cl_program clCreateProgramWithBinary(cl_context context, cl_uint num_devices,
					       const cl_device_id *device_list,
					       const size_t *lengths,
					       const unsigned char **binaries,
					       cl_int *binary_status, cl_int *errcode_ret)
{
	cl_program p;

	if (gk_cl_load() < 0 || !gk_cl.clCreateProgramWithBinary) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	cl_device_id buf[MOVED_MAX];

	p = W(gk_cl.clCreateProgramWithBinary(R(context), num_devices,
					      devs_of(num_devices, device_list, buf), lengths,
					      binaries, binary_status, errcode_ret));
	add_binary_program(p, context);
	return p;
}

GK_EXPORT cl_program clCreateProgramWithIL(cl_context context, const void *il, size_t length,
					   cl_int *errcode_ret)
{
	cl_program p;

	if (gk_cl_load() < 0 || !gk_cl.clCreateProgramWithIL) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	p = W(gk_cl.clCreateProgramWithIL(R(context), il, length, errcode_ret));
	add_binary_program(p, context);
	return p;
}

GK_EXPORT cl_program clCreateProgramWithBuiltInKernels(cl_context context, cl_uint num_devices,
						       const cl_device_id *device_list,
						       const char *kernel_names,
						       cl_int *errcode_ret)
{
	cl_program p;

	if (gk_cl_load() < 0 || !gk_cl.clCreateProgramWithBuiltInKernels) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	cl_device_id buf[MOVED_MAX];

	p = W(gk_cl.clCreateProgramWithBuiltInKernels(R(context), num_devices,
						      devs_of(num_devices, device_list, buf),
						      kernel_names, errcode_ret));
	add_binary_program(p, context);
	return p;
}

static void note_options(cl_program program, const char *options, int built)
{
	struct gk_clo *o;

	pthread_mutex_lock(&lock);
	o = gk_clrec_find(&rec, GK_CLO_PROGRAM, program);
	if (o) {
		snprintf(o->options, sizeof(o->options), "%s", options ? options : "");
		if (built)
			o->built = 1;
		else
			o->linked = 1;
	}
	pthread_mutex_unlock(&lock);
}

GK_EXPORT cl_int clCompileProgram(cl_program program, cl_uint num_devices,
				  const cl_device_id *device_list, const char *options,
				  cl_uint num_input_headers, const cl_program *input_headers,
				  const char **header_include_names,
				  void(CL_CALLBACK *pfn_notify)(cl_program, void *),
				  void *user_data)
{
	cl_int r;

	cl_device_id buf[MOVED_MAX];
	cl_program hdrs[64];

	LOAD_OR(clCompileProgram, CL_OUT_OF_RESOURCES);
	if (num_input_headers > 64)
		return CL_OUT_OF_RESOURCES;
	for (cl_uint i = 0; input_headers && i < num_input_headers; i++)
		hdrs[i] = R(input_headers[i]);
	r = gk_cl.clCompileProgram(R(program), num_devices, devs_of(num_devices, device_list, buf),
				   options, num_input_headers, input_headers ? hdrs : NULL,
				   header_include_names, pfn_notify, user_data);
	note_options(program, options, 0);
	return r;
}

/* A linked program needs what each of its inputs needed. */
GK_EXPORT cl_program clLinkProgram(cl_context context, cl_uint num_devices,
				   const cl_device_id *device_list, const char *options,
				   cl_uint num_input_programs, const cl_program *input_programs,
				   void(CL_CALLBACK *pfn_notify)(cl_program, void *),
				   void *user_data, cl_int *errcode_ret)
{
	struct gk_clo *o;
	cl_program p, ins[64];
	cl_device_id buf[MOVED_MAX];

	if (gk_cl_load() < 0 || !gk_cl.clLinkProgram || num_input_programs > 64) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	for (cl_uint i = 0; input_programs && i < num_input_programs; i++)
		ins[i] = R(input_programs[i]);
	p = W(gk_cl.clLinkProgram(R(context), num_devices, devs_of(num_devices, device_list, buf),
				  options, num_input_programs, input_programs ? ins : NULL,
				  pfn_notify, user_data, errcode_ret));
	if (!p || !tracking())
		return p;
	pthread_mutex_lock(&lock);
	o = add_locked(GK_CLO_PROGRAM, p);
	if (o) {
		o->parent = idx_of(GK_CLO_CONTEXT, context);
		o->linked = 1;
		snprintf(o->options, sizeof(o->options), "%s", options ? options : "");
		for (cl_uint i = 0; i < num_input_programs; i++) {
			const struct gk_clo *in =
			    gk_clrec_find(&rec, GK_CLO_PROGRAM, input_programs[i]);

			if (!in) {
				o->binary = 1;
				continue;
			}
			o->fp64 |= in->fp64;
			o->binary |= in->binary;
			gk_clrec_merge_exts(o, in->exts);
		}
	}
	pthread_mutex_unlock(&lock);
	return p;
}

GK_EXPORT cl_int clBuildProgram(cl_program program, cl_uint num_devices,
				const cl_device_id *device_list, const char *options,
				void(CL_CALLBACK *pfn_notify)(cl_program, void *), void *user_data)
{
	cl_int r;

	cl_device_id buf[MOVED_MAX];

	LOAD_OR(clBuildProgram, CL_OUT_OF_RESOURCES);
	r = gk_cl.clBuildProgram(R(program), num_devices, devs_of(num_devices, device_list, buf),
				 options, pfn_notify, user_data);
	note_options(program, options, r == CL_SUCCESS);
	return r;
}

GK_EXPORT cl_int clRetainProgram(cl_program p)
{
	cl_int r;

	LOAD_OR(clRetainProgram, CL_OUT_OF_RESOURCES);
	r = gk_cl.clRetainProgram(R(p));
	if (r == CL_SUCCESS)
		retain(GK_CLO_PROGRAM, p);
	return r;
}

GK_EXPORT cl_int clReleaseProgram(cl_program p)
{
	cl_int r;

	LOAD_OR(clReleaseProgram, CL_OUT_OF_RESOURCES);
	r = gk_cl.clReleaseProgram(R(p));
	if (r == CL_SUCCESS)
		release(GK_CLO_PROGRAM, p);
	return r;
}

/* ---- kernels ---- */

static void add_kernel(cl_kernel k, cl_program program, const char *name)
{
	struct gk_clo *o;

	if (!k || !tracking())
		return;
	pthread_mutex_lock(&lock);
	o = add_locked(GK_CLO_KERNEL, k);
	if (o) {
		o->parent = idx_of(GK_CLO_PROGRAM, program);
		snprintf(o->name, sizeof(o->name), "%s", name ? name : "");
	}
	pthread_mutex_unlock(&lock);
}

GK_EXPORT cl_kernel clCreateKernel(cl_program program, const char *kernel_name, cl_int *errcode_ret)
{
	cl_kernel k;

	if (gk_cl_load() < 0 || !gk_cl.clCreateKernel) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	k = W(gk_cl.clCreateKernel(R(program), kernel_name, errcode_ret));
	add_kernel(k, program, kernel_name);
	return k;
}

GK_EXPORT cl_int clCreateKernelsInProgram(cl_program program, cl_uint num_kernels,
					  cl_kernel *kernels, cl_uint *num_kernels_ret)
{
	cl_uint n = 0;
	cl_int r;

	LOAD_OR(clCreateKernelsInProgram, CL_OUT_OF_RESOURCES);
	r = gk_cl.clCreateKernelsInProgram(R(program), num_kernels, kernels, &n);
	if (num_kernels_ret)
		*num_kernels_ret = n;
	if (r != CL_SUCCESS || !kernels)
		return r;
	for (cl_uint i = 0; i < n && i < num_kernels; i++) {
		char name[128] = "";

		if (gk_cl.clGetKernelInfo)
			gk_cl.clGetKernelInfo(kernels[i], CL_KERNEL_FUNCTION_NAME, sizeof(name) - 1,
					      name, NULL);
		kernels[i] = W(kernels[i]);
		add_kernel(kernels[i], program, name);
	}
	return r;
}

/* A clone has its source's arguments (OpenCL 2.1). */
GK_EXPORT cl_kernel clCloneKernel(cl_kernel source_kernel, cl_int *errcode_ret)
{
	struct gk_clo *o, *src;
	cl_kernel k;

	if (gk_cl_load() < 0 || !gk_cl.clCloneKernel) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	k = W(gk_cl.clCloneKernel(R(source_kernel), errcode_ret));
	if (!k || !tracking())
		return k;
	pthread_mutex_lock(&lock);
	src = gk_clrec_find(&rec, GK_CLO_KERNEL, source_kernel);
	o = add_locked(GK_CLO_KERNEL, k);
	if (o && src) {
		o->parent = src->parent;
		memcpy(o->name, src->name, sizeof(o->name));
		memcpy(o->args, src->args, sizeof(o->args));
		o->arg_too_big = src->arg_too_big;
	} else if (o) {
		/* Its source was not seen: its arguments are unknown. */
		o->arg_too_big = GK_CL_ARGS_MAX + 1;
	}
	pthread_mutex_unlock(&lock);
	return k;
}

GK_EXPORT cl_int clRetainKernel(cl_kernel k)
{
	cl_int r;

	LOAD_OR(clRetainKernel, CL_OUT_OF_RESOURCES);
	r = gk_cl.clRetainKernel(R(k));
	if (r == CL_SUCCESS)
		retain(GK_CLO_KERNEL, k);
	return r;
}

GK_EXPORT cl_int clReleaseKernel(cl_kernel k)
{
	cl_int r;

	LOAD_OR(clReleaseKernel, CL_OUT_OF_RESOURCES);
	r = gk_cl.clReleaseKernel(R(k));
	if (r == CL_SUCCESS)
		release(GK_CLO_KERNEL, k);
	return r;
}

GK_EXPORT cl_int clSetKernelArg(cl_kernel kernel, cl_uint arg_index, size_t arg_size,
				const void *arg_value)
{
	struct gk_clo *k, *m = NULL;
	void *real = NULL;
	cl_int r;

	LOAD_OR(clSetKernelArg, CL_OUT_OF_RESOURCES);
	/* A buffer by the runtime's handle: the value's bytes are only
	 * compared with the handles' range, never followed elsewhere. */
	if (arg_size == sizeof(cl_mem) && arg_value) {
		memcpy(&real, arg_value, sizeof(real));
		real = is_own(real) ? real_of(real) : NULL;
	}
	gk_gate_enter();
	r = gk_cl.clSetKernelArg(R(kernel), arg_index, arg_size,
				 real ? (const void *)&real : arg_value);
	gk_gate_leave();
	if (r != CL_SUCCESS)
		return r;
	pthread_mutex_lock(&lock);
	k = gk_clrec_find(&rec, GK_CLO_KERNEL, kernel);
	if (k && arg_index < GK_CL_ARGS_MAX) {
		struct gk_cl_arg *g = &k->args[arg_index];

		g->size = arg_size;
		if (arg_size == sizeof(cl_mem) && arg_value)
			m = gk_clrec_find(&rec, GK_CLO_MEM, *(void *const *)arg_value);
		if (!arg_value) {
			g->kind = GK_CLA_LOCAL;
		} else if (m) {
			g->kind = GK_CLA_MEM;
			g->mem = m->idx;
		} else if (arg_size <= GK_CL_ARG_VALUE_MAX) {
			g->kind = GK_CLA_VALUE;
			memcpy(g->value, arg_value, arg_size);
		} else {
			g->kind = GK_CLA_UNSET;
			if (!k->arg_too_big)
				k->arg_too_big = (int)arg_index + 1;
		}
	} else if (k && !k->arg_too_big) {
		k->arg_too_big = (int)arg_index + 1;
	}
	pthread_mutex_unlock(&lock);
	return r;
}

/* ---- events ---- */

GK_EXPORT cl_event clCreateUserEvent(cl_context context, cl_int *errcode_ret)
{
	cl_event e;

	if (gk_cl_load() < 0 || !gk_cl.clCreateUserEvent) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	e = gk_cl.clCreateUserEvent(R(context), errcode_ret);
	if (e && tracking()) {
		pthread_mutex_lock(&lock);
		if (nuser_events < USER_EVENTS_MAX)
			user_events[nuser_events++] = e;
		pthread_mutex_unlock(&lock);
	}
	return e;
}

GK_EXPORT cl_int clSetUserEventStatus(cl_event event, cl_int execution_status)
{
	cl_int r;

	LOAD_OR(clSetUserEventStatus, CL_OUT_OF_RESOURCES);
	r = gk_cl.clSetUserEventStatus(event, execution_status);
	if (r == CL_SUCCESS) {
		pthread_mutex_lock(&lock);
		for (size_t i = 0; i < nuser_events; i++)
			if (user_events[i] == event) {
				user_events[i] = user_events[--nuser_events];
				break;
			}
		pthread_mutex_unlock(&lock);
	}
	return r;
}

/* ---- commands that change buffers: through the gate ---- */

GK_EXPORT cl_int clEnqueueNDRangeKernel(cl_command_queue q, cl_kernel kernel, cl_uint work_dim,
					const size_t *global_work_offset,
					const size_t *global_work_size,
					const size_t *local_work_size, cl_uint n,
					const cl_event *wait, cl_event *event)
{
	cl_int r;

	LOAD_OR(clEnqueueNDRangeKernel, CL_OUT_OF_RESOURCES);
	gk_gate_enter();
	r = gk_cl.clEnqueueNDRangeKernel(R(q), R(kernel), work_dim, global_work_offset, global_work_size,
					 local_work_size, n, wait, event);
	gk_gate_leave();
	return r;
}

GK_EXPORT cl_int clEnqueueTask(cl_command_queue q, cl_kernel kernel, cl_uint n,
			       const cl_event *wait, cl_event *event)
{
	cl_int r;

	LOAD_OR(clEnqueueTask, CL_OUT_OF_RESOURCES);
	gk_gate_enter();
	r = gk_cl.clEnqueueTask(R(q), R(kernel), n, wait, event);
	gk_gate_leave();
	return r;
}

GK_EXPORT cl_int clEnqueueWriteBuffer(cl_command_queue q, cl_mem buffer, cl_bool blocking,
				      size_t offset, size_t size, const void *ptr, cl_uint n,
				      const cl_event *wait, cl_event *event)
{
	cl_int r;

	LOAD_OR(clEnqueueWriteBuffer, CL_OUT_OF_RESOURCES);
	gk_gate_enter();
	r = gk_cl.clEnqueueWriteBuffer(R(q), R(buffer), blocking, offset, size, ptr, n, wait, event);
	gk_gate_leave();
	return r;
}

GK_EXPORT cl_int clEnqueueWriteBufferRect(cl_command_queue q, cl_mem buffer, cl_bool blocking,
					  const size_t *buffer_origin, const size_t *host_origin,
					  const size_t *region, size_t buffer_row_pitch,
					  size_t buffer_slice_pitch, size_t host_row_pitch,
					  size_t host_slice_pitch, const void *ptr, cl_uint n,
					  const cl_event *wait, cl_event *event)
{
	cl_int r;

	LOAD_OR(clEnqueueWriteBufferRect, CL_OUT_OF_RESOURCES);
	gk_gate_enter();
	r = gk_cl.clEnqueueWriteBufferRect(R(q), R(buffer), blocking, buffer_origin, host_origin, region,
					   buffer_row_pitch, buffer_slice_pitch, host_row_pitch,
					   host_slice_pitch, ptr, n, wait, event);
	gk_gate_leave();
	return r;
}

GK_EXPORT cl_int clEnqueueCopyBuffer(cl_command_queue q, cl_mem src, cl_mem dst, size_t src_offset,
				     size_t dst_offset, size_t size, cl_uint n,
				     const cl_event *wait, cl_event *event)
{
	cl_int r;

	LOAD_OR(clEnqueueCopyBuffer, CL_OUT_OF_RESOURCES);
	gk_gate_enter();
	r = gk_cl.clEnqueueCopyBuffer(R(q), R(src), R(dst), src_offset, dst_offset, size, n, wait, event);
	gk_gate_leave();
	return r;
}

GK_EXPORT cl_int clEnqueueFillBuffer(cl_command_queue q, cl_mem buffer, const void *pattern,
				     size_t pattern_size, size_t offset, size_t size, cl_uint n,
				     const cl_event *wait, cl_event *event)
{
	cl_int r;

	LOAD_OR(clEnqueueFillBuffer, CL_OUT_OF_RESOURCES);
	gk_gate_enter();
	r = gk_cl.clEnqueueFillBuffer(R(q), R(buffer), pattern, pattern_size, offset, size, n, wait,
				      event);
	gk_gate_leave();
	return r;
}

GK_EXPORT void *clEnqueueMapBuffer(cl_command_queue q, cl_mem buffer, cl_bool blocking,
				   cl_map_flags flags, size_t offset, size_t size, cl_uint n,
				   const cl_event *wait, cl_event *event, cl_int *errcode_ret)
{
	struct gk_clo *o;
	void *p;

	if (gk_cl_load() < 0 || !gk_cl.clEnqueueMapBuffer) {
		set_err(errcode_ret, CL_OUT_OF_RESOURCES);
		return NULL;
	}
	gk_gate_enter();
	p = gk_cl.clEnqueueMapBuffer(R(q), R(buffer), blocking, flags, offset, size, n, wait, event,
				     errcode_ret);
	gk_gate_leave();
	if (p) {
		pthread_mutex_lock(&lock);
		o = gk_clrec_find(&rec, GK_CLO_MEM, buffer);
		if (o)
			o->mapped++;
		pthread_mutex_unlock(&lock);
	}
	return p;
}

GK_EXPORT cl_int clEnqueueUnmapMemObject(cl_command_queue q, cl_mem memobj, void *mapped_ptr,
					 cl_uint n, const cl_event *wait, cl_event *event)
{
	struct gk_clo *o;
	cl_int r;

	LOAD_OR(clEnqueueUnmapMemObject, CL_OUT_OF_RESOURCES);
	gk_gate_enter();
	r = gk_cl.clEnqueueUnmapMemObject(R(q), R(memobj), mapped_ptr, n, wait, event);
	gk_gate_leave();
	if (r == CL_SUCCESS) {
		pthread_mutex_lock(&lock);
		o = gk_clrec_find(&rec, GK_CLO_MEM, memobj);
		if (o && o->mapped > 0)
			o->mapped--;
		pthread_mutex_unlock(&lock);
	}
	return r;
}

/* ---- the other entry points that take the program's handles ---- */

GK_EXPORT cl_int clFinish(cl_command_queue q)
{
	LOAD_OR(clFinish, CL_OUT_OF_RESOURCES);
	return gk_cl.clFinish(R(q));
}

GK_EXPORT cl_int clFlush(cl_command_queue q)
{
	LOAD_OR(clFlush, CL_OUT_OF_RESOURCES);
	return gk_cl.clFlush(R(q));
}

GK_EXPORT cl_int clEnqueueReadBuffer(cl_command_queue q, cl_mem buffer, cl_bool blocking,
				     size_t offset, size_t size, void *ptr, cl_uint n,
				     const cl_event *wait, cl_event *event)
{
	LOAD_OR(clEnqueueReadBuffer, CL_OUT_OF_RESOURCES);
	return gk_cl.clEnqueueReadBuffer(R(q), R(buffer), blocking, offset, size, ptr, n, wait,
					 event);
}

GK_EXPORT cl_int clEnqueueReadBufferRect(cl_command_queue q, cl_mem buffer, cl_bool blocking,
					 const size_t *buffer_origin, const size_t *host_origin,
					 const size_t *region, size_t buffer_row_pitch,
					 size_t buffer_slice_pitch, size_t host_row_pitch,
					 size_t host_slice_pitch, void *ptr, cl_uint n,
					 const cl_event *wait, cl_event *event)
{
	LOAD_OR(clEnqueueReadBufferRect, CL_OUT_OF_RESOURCES);
	return gk_cl.clEnqueueReadBufferRect(R(q), R(buffer), blocking, buffer_origin, host_origin,
					     region, buffer_row_pitch, buffer_slice_pitch,
					     host_row_pitch, host_slice_pitch, ptr, n, wait, event);
}

GK_EXPORT cl_int clEnqueueCopyBufferRect(cl_command_queue q, cl_mem src, cl_mem dst,
					 const size_t *src_origin, const size_t *dst_origin,
					 const size_t *region, size_t src_row_pitch,
					 size_t src_slice_pitch, size_t dst_row_pitch,
					 size_t dst_slice_pitch, cl_uint n, const cl_event *wait,
					 cl_event *event)
{
	cl_int r;

	LOAD_OR(clEnqueueCopyBufferRect, CL_OUT_OF_RESOURCES);
	gk_gate_enter();
	r = gk_cl.clEnqueueCopyBufferRect(R(q), R(src), R(dst), src_origin, dst_origin, region,
					  src_row_pitch, src_slice_pitch, dst_row_pitch,
					  dst_slice_pitch, n, wait, event);
	gk_gate_leave();
	return r;
}

GK_EXPORT cl_int clEnqueueMarkerWithWaitList(cl_command_queue q, cl_uint n, const cl_event *wait,
					     cl_event *event)
{
	LOAD_OR(clEnqueueMarkerWithWaitList, CL_OUT_OF_RESOURCES);
	return gk_cl.clEnqueueMarkerWithWaitList(R(q), n, wait, event);
}

GK_EXPORT cl_int clEnqueueBarrierWithWaitList(cl_command_queue q, cl_uint n, const cl_event *wait,
					      cl_event *event)
{
	LOAD_OR(clEnqueueBarrierWithWaitList, CL_OUT_OF_RESOURCES);
	return gk_cl.clEnqueueBarrierWithWaitList(R(q), n, wait, event);
}

GK_EXPORT cl_int clEnqueueMigrateMemObjects(cl_command_queue q, cl_uint num_mem_objects,
					    const cl_mem *mem_objects, cl_mem_migration_flags flags,
					    cl_uint n, const cl_event *wait, cl_event *event)
{
	cl_mem ms[64];

	LOAD_OR(clEnqueueMigrateMemObjects, CL_OUT_OF_RESOURCES);
	if (num_mem_objects > 64 || !mem_objects)
		return gk_cl.clEnqueueMigrateMemObjects(R(q), num_mem_objects, mem_objects, flags,
							n, wait, event);
	for (cl_uint i = 0; i < num_mem_objects; i++)
		ms[i] = R(mem_objects[i]);
	return gk_cl.clEnqueueMigrateMemObjects(R(q), num_mem_objects, ms, flags, n, wait, event);
}

GK_EXPORT cl_int clSetMemObjectDestructorCallback(cl_mem m,
						  void(CL_CALLBACK *pfn_notify)(cl_mem, void *),
						  void *user_data)
{
	LOAD_OR(clSetMemObjectDestructorCallback, CL_OUT_OF_RESOURCES);
	return gk_cl.clSetMemObjectDestructorCallback(R(m), pfn_notify, user_data);
}

GK_EXPORT cl_int clGetContextInfo(cl_context c, cl_context_info name, size_t size, void *value,
				  size_t *size_ret)
{
	LOAD_OR(clGetContextInfo, CL_OUT_OF_RESOURCES);
	return gk_cl.clGetContextInfo(R(c), name, size, value, size_ret);
}

GK_EXPORT cl_int clGetCommandQueueInfo(cl_command_queue q, cl_command_queue_info name, size_t size,
				       void *value, size_t *size_ret)
{
	cl_int r;

	LOAD_OR(clGetCommandQueueInfo, CL_OUT_OF_RESOURCES);
	r = gk_cl.clGetCommandQueueInfo(R(q), name, size, value, size_ret);
	if (name == CL_QUEUE_CONTEXT)
		fix_answer(r, value, size);
	return r;
}

GK_EXPORT cl_int clGetMemObjectInfo(cl_mem m, cl_mem_info name, size_t size, void *value,
				    size_t *size_ret)
{
	cl_int r;

	LOAD_OR(clGetMemObjectInfo, CL_OUT_OF_RESOURCES);
	r = gk_cl.clGetMemObjectInfo(R(m), name, size, value, size_ret);
	if (name == CL_MEM_CONTEXT || name == CL_MEM_ASSOCIATED_MEMOBJECT)
		fix_answer(r, value, size);
	return r;
}

GK_EXPORT cl_int clGetProgramInfo(cl_program p, cl_program_info name, size_t size, void *value,
				  size_t *size_ret)
{
	cl_int r;

	LOAD_OR(clGetProgramInfo, CL_OUT_OF_RESOURCES);
	r = gk_cl.clGetProgramInfo(R(p), name, size, value, size_ret);
	if (name == CL_PROGRAM_CONTEXT)
		fix_answer(r, value, size);
	return r;
}

GK_EXPORT cl_int clGetProgramBuildInfo(cl_program p, cl_device_id d, cl_program_build_info name,
				       size_t size, void *value, size_t *size_ret)
{
	LOAD_OR(clGetProgramBuildInfo, CL_OUT_OF_RESOURCES);
	return gk_cl.clGetProgramBuildInfo(R(p), dev_of(d), name, size, value, size_ret);
}

GK_EXPORT cl_int clGetKernelInfo(cl_kernel k, cl_kernel_info name, size_t size, void *value,
				 size_t *size_ret)
{
	cl_int r;

	LOAD_OR(clGetKernelInfo, CL_OUT_OF_RESOURCES);
	r = gk_cl.clGetKernelInfo(R(k), name, size, value, size_ret);
	if (name == CL_KERNEL_CONTEXT || name == CL_KERNEL_PROGRAM)
		fix_answer(r, value, size);
	return r;
}

GK_EXPORT cl_int clGetKernelWorkGroupInfo(cl_kernel k, cl_device_id d,
					  cl_kernel_work_group_info name, size_t size, void *value,
					  size_t *size_ret)
{
	LOAD_OR(clGetKernelWorkGroupInfo, CL_OUT_OF_RESOURCES);
	return gk_cl.clGetKernelWorkGroupInfo(R(k), dev_of(d), name, size, value, size_ret);
}

GK_EXPORT cl_int clGetKernelArgInfo(cl_kernel k, cl_uint arg, cl_kernel_arg_info name, size_t size,
				    void *value, size_t *size_ret)
{
	LOAD_OR(clGetKernelArgInfo, CL_OUT_OF_RESOURCES);
	return gk_cl.clGetKernelArgInfo(R(k), arg, name, size, value, size_ret);
}

GK_EXPORT cl_int clGetEventInfo(cl_event e, cl_event_info name, size_t size, void *value,
				size_t *size_ret)
{
	cl_int r;

	LOAD_OR(clGetEventInfo, CL_OUT_OF_RESOURCES);
	r = gk_cl.clGetEventInfo(e, name, size, value, size_ret);
	if (name == CL_EVENT_COMMAND_QUEUE || name == CL_EVENT_CONTEXT)
		fix_answer(r, value, size);
	return r;
}

/* ---- checkpoint ---- */

static const char *mem_label(const struct gk_clo *o)
{
	return o->sub ? "sub-buffer" : "buffer";
}

/*
 * Transparent mode: CRIU carries the process whole, OpenCL state included,
 * where that state is host memory: a CPU device's. A context with another
 * kind of device (a GPU's memory is not the process's) is refused, naming
 * the device; so is a user event not set (its queue cannot be drained).
 */
static int refuse_transparent_locked(struct gk_phase_verdict *v)
{
	v->word = GK_PROTO_REFUSE_OPENCL;
	if (nuser_events) {
		snprintf(v->why, sizeof(v->why),
			 "an OpenCL user event not set yet (clSetUserEventStatus), whose commands "
			 "cannot be drained");
		return -EBUSY;
	}
	for (size_t i = 0; i < rec.n; i++) {
		const struct gk_clo *o = rec.o[i];
		cl_device_id devs[16];
		size_t got = 0;

		if (o->kind != GK_CLO_CONTEXT)
			continue;
		if (gk_cl.clGetContextInfo(R(o->h), CL_CONTEXT_DEVICES, sizeof(devs), devs, &got) !=
		    CL_SUCCESS) {
			snprintf(
			    v->why, sizeof(v->why),
			    "OpenCL context %ld, whose devices cannot be listed (more than 16?)",
			    o->idx);
			return -ENOTSUP;
		}
		for (size_t d = 0; d < got / sizeof(devs[0]); d++) {
			cl_device_type type = 0;
			char name[128] = "";

			gk_cl.clGetDeviceInfo(devs[d], CL_DEVICE_TYPE, sizeof(type), &type, NULL);
			if (type & CL_DEVICE_TYPE_CPU)
				continue;
			gk_cl.clGetDeviceInfo(devs[d], CL_DEVICE_NAME, sizeof(name) - 1, name,
					      NULL);
			snprintf(v->why, sizeof(v->why),
				 "OpenCL context %ld on device '%s', not a CPU device: transparent "
				 "mode carries only OpenCL state in host memory (use "
				 "gpuckpt_point(): docs/opencl.md)",
				 o->idx, name);
			return -ENOTSUP;
		}
	}
	return 0;
}

/* What stops a checkpoint of this process's OpenCL state, into v. */
static int refuse_locked(enum gk_ckpt_kind kind, struct gk_phase_verdict *v)
{
	if (kind == GK_CKPT_TRANSPARENT)
		return rec.n ? refuse_transparent_locked(v) : 0;
	if (record_lost || (rec.n && !state_registered)) {
		snprintf(v->why, sizeof(v->why),
			 "the record of the process's OpenCL objects is incomplete: there was no "
			 "memory for it when the program made them");
		return -ENOMEM;
	}
	if (nunsaved || unsaved_lost) {
		snprintf(v->why, sizeof(v->why),
			 "the process holds %s, which gpuckpt does not checkpoint (docs/opencl.md)",
			 nunsaved ? unsaved[0].what : "OpenCL objects gpuckpt does not checkpoint");
		return -ENOTSUP;
	}
	if (nuser_events) {
		snprintf(v->why, sizeof(v->why),
			 "an OpenCL user event is not set yet (clSetUserEventStatus): the commands "
			 "waiting on it cannot be drained");
		return -EBUSY;
	}
	for (size_t i = 0; i < rec.n; i++) {
		const struct gk_clo *o = rec.o[i];

		if (o->kind == GK_CLO_MEM && o->mapped) {
			snprintf(
			    v->why, sizeof(v->why),
			    "OpenCL %s %ld is mapped (clEnqueueMapBuffer); unmap it before the "
			    "checkpoint point",
			    mem_label(o), o->idx);
			return -EBUSY;
		}
		if (o->kind == GK_CLO_MEM && !o->sub && !o->shadow) {
			snprintf(v->why, sizeof(v->why),
				 "OpenCL buffer %ld (%" PRIu64
				 " bytes) has no host copy: there was no "
				 "memory for it when it was made",
				 o->idx, o->size);
			return -ENOMEM;
		}
		if (o->kind == GK_CLO_KERNEL && o->arg_too_big > GK_CL_ARGS_MAX) {
			snprintf(
			    v->why, sizeof(v->why),
			    "OpenCL kernel %ld is a clone (clCloneKernel) of a kernel gpuckpt did "
			    "not see made: its arguments are unknown",
			    o->idx);
			return -ENOTSUP;
		}
		if (o->kind == GK_CLO_KERNEL && o->arg_too_big) {
			snprintf(
			    v->why, sizeof(v->why),
			    "OpenCL kernel '%s' has argument %d set by value with more than %d "
			    "bytes, or beyond argument %d, which gpuckpt does not keep",
			    o->name, o->arg_too_big - 1, GK_CL_ARG_VALUE_MAX, GK_CL_ARGS_MAX - 1);
			return -ENOTSUP;
		}
	}
	return 0;
}

/* A queue to copy through on context ctx: one of the program's (*temp 0) or
 * one made on the context's first device (*temp 1). */
static cl_command_queue queue_for(long ctx, int *temp)
{
	struct gk_clo *c = gk_clrec_at(&rec, GK_CLO_CONTEXT, ctx);
	cl_device_id dev = NULL;
	cl_int e;

	*temp = 0;
	for (size_t i = 0; i < rec.n; i++)
		if (rec.o[i]->kind == GK_CLO_QUEUE && rec.o[i]->parent == ctx)
			return real_of(rec.o[i]->h);
	if (!c ||
	    gk_cl.clGetContextInfo(R(c->h), CL_CONTEXT_DEVICES, sizeof(dev), &dev, NULL) !=
		CL_SUCCESS)
		return NULL;
	*temp = 1;
	return gk_cl.clCreateCommandQueueWithProperties(R(c->h), dev, NULL, &e);
}

/* Every queue finished, without the lock: a callback of an event that
 * completes may call the OpenCL API, and so into this file. The gate is
 * closed, so no thread makes a queue meanwhile. */
static int finish_queues(struct gk_phase_verdict *v)
{
	struct {
		cl_command_queue q;
		long idx;
	} *qs = NULL;
	size_t n = 0;
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (rec.n)
		qs = calloc(rec.n, sizeof(*qs));
	for (size_t i = 0; qs && i < rec.n; i++)
		if (rec.o[i]->kind == GK_CLO_QUEUE) {
			qs[n].q = real_of(rec.o[i]->h);
			qs[n].idx = rec.o[i]->idx;
			/* Held while it is finished. */
			if (gk_cl.clRetainCommandQueue(qs[n].q) == CL_SUCCESS)
				n++;
		}
	pthread_mutex_unlock(&lock);
	if (rec.n && !qs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		cl_int e = ret ? CL_SUCCESS : gk_cl.clFinish(qs[i].q);

		if (e != CL_SUCCESS) {
			snprintf(v->why, sizeof(v->why),
				 "OpenCL command queue %ld could not be drained: clFinish: %s",
				 qs[i].idx, gk_cl_name(e));
			ret = -EIO;
		}
		gk_cl.clReleaseCommandQueue(qs[i].q);
	}
	free(qs);
	return ret;
}

/* Every buffer copied to its host copy, the record written. */
static int copy_locked(struct gk_phase_verdict *v)
{
	long n;

	for (size_t i = 0; i < rec.n; i++) {
		const struct gk_clo *o = rec.o[i];
		cl_command_queue q;
		cl_int e;
		int temp;

		if (o->kind != GK_CLO_MEM || o->sub || !o->size)
			continue;
		q = queue_for(o->parent, &temp);
		e = q ? gk_cl.clEnqueueReadBuffer(q, R(o->h), CL_TRUE, 0, o->size, o->shadow, 0, NULL,
						  NULL)
		      : CL_INVALID_COMMAND_QUEUE;
		if (temp && q)
			gk_cl.clReleaseCommandQueue(q);
		if (e != CL_SUCCESS) {
			snprintf(v->why, sizeof(v->why),
				 "OpenCL buffer %ld (%" PRIu64 " bytes) could not be read: "
				 "clEnqueueReadBuffer: %s",
				 o->idx, o->size, gk_cl_name(e));
			return -EIO;
		}
	}
	n = gk_clrec_write(&rec, state_text, sizeof(state_text));
	if (n < 0) {
		snprintf(v->why, sizeof(v->why),
			 "the record of the process's OpenCL objects is larger than %d bytes",
			 GK_CL_STATE_SIZE);
		return -ENOSPC;
	}
	return 0;
}

static int cl_before(enum gk_phase phase, enum gk_ckpt_kind kind, struct gk_phase_verdict *v)
{
	int ret = 0;

	if (phase != GK_PHASE_REFUSE && phase != GK_PHASE_DRAIN)
		return 0;
	pthread_mutex_lock(&lock);
	if (!rec.n && !nunsaved && !unsaved_lost && !record_lost) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	if (phase == GK_PHASE_REFUSE) {
		ret = refuse_locked(kind, v);
		pthread_mutex_unlock(&lock);
		return ret;
	}
	pthread_mutex_unlock(&lock);
	if (gk_cl_load() < 0)
		return -ENOENT;
	ret = finish_queues(v);
	/* Transparent: the buffers are in the process CRIU dumps. */
	if (ret < 0 || kind == GK_CKPT_TRANSPARENT)
		return ret;
	pthread_mutex_lock(&lock);
	ret = copy_locked(v);
	pthread_mutex_unlock(&lock);
	return ret;
}

/* The host copies were written: their pages go back. */
static void cl_committed(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < rec.n; i++) {
		struct gk_clo *o = rec.o[i];

		if (o->kind == GK_CLO_MEM && o->shadow && o->size)
			madvise(o->shadow, o->size, MADV_DONTNEED);
	}
	pthread_mutex_unlock(&lock);
}

/* ---- restore ---- */

/* The checkpoint's "opencl.state", read and checked from dir's host data. */
static int read_state(const char *dir, const struct gk_manifest *m, const struct gk_region_rec *r,
		      char *buf, char *why, size_t len)
{
	char path[4200];
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", dir, r->file);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return -errno;
	}
	ret = gk_pread_all(fd, buf, r->size, r->offset);
	close(fd);
	if (ret < 0) {
		snprintf(why, len, "%s: cannot read host region '%s'", path, r->name);
		return ret;
	}
	for (uint32_t c = 0; c < r->nchunks; c++) {
		uint64_t s = (uint64_t)c * m->chunk_size;
		uint64_t l = r->size - s < m->chunk_size ? r->size - s : m->chunk_size;

		if (gk_sum(gk_sum_algo_of(m->version), buf + s, l) != r->chunks[c].sum) {
			snprintf(why, len, "%s: checksum mismatch in host region '%s'", path,
				 r->name);
			return -EBADMSG;
		}
	}
	return 0;
}

/* Does device dev (named dname, or "" to ask it) offer what program p used? */
static int device_offers(cl_device_id dev, const char *dname, const struct gk_clo *p, char *why,
			 size_t len)
{
	char name[256] = "", exts[8192] = "";
	cl_device_fp_config fp = 0;

	if (dname && dname[0])
		snprintf(name, sizeof(name), "%s", dname);
	else
		gk_cl.clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(name) - 1, name, NULL);
	gk_cl.clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, sizeof(exts) - 1, exts, NULL);
	gk_cl.clGetDeviceInfo(dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof(fp), &fp, NULL);
	return gk_clrec_device_offers(p, name, exts, fp != 0, why, len);
}

/* Do the devices of this run's context ctx offer what program p used? */
static int devices_offer(const struct gk_clo *p, long ctx, char *why, size_t len)
{
	struct gk_clo *c = gk_clrec_at(&rec, GK_CLO_CONTEXT, ctx);
	cl_device_id devs[16];
	size_t bytes = 0;

	if (!c || gk_cl.clGetContextInfo(R(c->h), CL_CONTEXT_DEVICES, sizeof(devs), devs,
					 &bytes) != CL_SUCCESS)
		return 0;
	for (size_t d = 0; d < bytes / sizeof(devs[0]); d++) {
		int ret = device_offers(devs[d], NULL, p, why, len);

		if (ret < 0)
			return ret;
	}
	return 0;
}

static int cl_restore_check(const char *dir, const struct gk_manifest *m, char *why, size_t len)
{
	const struct gk_region_rec *r = NULL;
	char *buf;
	int ret;

	for (size_t i = 0; i < m->nregions; i++)
		if (!strcmp(m->regions[i].name, STATE_REGION))
			r = &m->regions[i];
	if (!r)
		return 0;
	if (r->size != GK_CL_STATE_SIZE) {
		snprintf(why, len, "host region '%s' is %" PRIu64 " bytes; this gpuckpt writes %d",
			 STATE_REGION, r->size, GK_CL_STATE_SIZE);
		return -EINVAL;
	}
	if (gk_cl_load() < 0) {
		snprintf(why, len,
			 "the checkpoint holds OpenCL state and libOpenCL.so.1 cannot be "
			 "loaded");
		return -ENOENT;
	}
	buf = malloc(r->size);
	if (!buf)
		return -ENOMEM;
	ret = read_state(dir, m, r, buf, why, len);
	pthread_mutex_lock(&lock);
	if (have_restoring) {
		gk_clrec_free(&restoring);
		have_restoring = 0;
	}
	if (ret == 0)
		ret = gk_clrec_parse(buf, r->size, &restoring, why, len);
	if (ret == 0) {
		have_restoring = 1;
		ret = gk_clrec_match(&rec, &restoring, why, len);
	}
	for (size_t i = 0; ret == 0 && i < restoring.n; i++) {
		const struct gk_clo *p = restoring.o[i];

		if (p->kind == GK_CLO_PROGRAM)
			ret = devices_offer(p, p->parent, why, len);
	}
	if (ret < 0 && have_restoring) {
		gk_clrec_free(&restoring);
		have_restoring = 0;
	}
	pthread_mutex_unlock(&lock);
	free(buf);
	return ret;
}

/* The host copies (just loaded) into this run's buffers, and the kernel
 * arguments as the checkpointed run had them. */
static int cl_restored(char *why, size_t len)
{
	size_t nbufs = 0, nargs = 0;
	uint64_t bytes = 0;
	int ret = 0;

	pthread_mutex_lock(&lock);
	if (!have_restoring) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	for (size_t i = 0; ret == 0 && i < restoring.n; i++) {
		const struct gk_clo *c = restoring.o[i];
		struct gk_clo *o = gk_clrec_at(&rec, c->kind, c->idx);
		cl_command_queue q;
		cl_int e;
		int temp;

		if (c->kind != GK_CLO_MEM || c->sub || !c->size || !o || !o->shadow)
			continue;
		q = queue_for(o->parent, &temp);
		e = q ? gk_cl.clEnqueueWriteBuffer(q, R(o->h), CL_TRUE, 0, o->size, o->shadow, 0, NULL,
						   NULL)
		      : CL_INVALID_COMMAND_QUEUE;
		if (e == CL_SUCCESS)
			e = gk_cl.clFinish(q);
		if (temp && q)
			gk_cl.clReleaseCommandQueue(q);
		if (e != CL_SUCCESS) {
			snprintf(why, len,
				 "OpenCL buffer %ld (%" PRIu64 " bytes) could not be loaded: "
				 "clEnqueueWriteBuffer: %s",
				 o->idx, o->size, gk_cl_name(e));
			ret = -EIO;
			break;
		}
		madvise(o->shadow, o->size, MADV_DONTNEED);
		nbufs++;
		bytes += o->size;
	}
	for (size_t i = 0; ret == 0 && i < restoring.n; i++) {
		const struct gk_clo *c = restoring.o[i];
		struct gk_clo *k = gk_clrec_at(&rec, GK_CLO_KERNEL, c->idx);

		if (c->kind != GK_CLO_KERNEL || !k)
			continue;
		for (int a = 0; a < GK_CL_ARGS_MAX; a++) {
			const struct gk_cl_arg *g = &c->args[a];
			const void *value = g->value;
			struct gk_clo *m;
			void *mr;
			cl_int e;

			if (g->kind == GK_CLA_UNSET)
				continue;
			if (g->kind == GK_CLA_LOCAL)
				value = NULL;
			if (g->kind == GK_CLA_MEM) {
				m = gk_clrec_at(&rec, GK_CLO_MEM, g->mem);
				if (!m) {
					snprintf(
					    why, len,
					    "OpenCL kernel '%s' argument %d was buffer %ld, which "
					    "this run has not made",
					    k->name, a, g->mem);
					ret = -EINVAL;
					break;
				}
				mr = real_of(m->h);
				value = &mr;
			}
			e = gk_cl.clSetKernelArg(R(k->h), (cl_uint)a, g->size, value);
			if (e != CL_SUCCESS) {
				snprintf(why, len,
					 "OpenCL kernel '%s' argument %d could not be set again: "
					 "clSetKernelArg: %s",
					 k->name, a, gk_cl_name(e));
				ret = -EIO;
				break;
			}
			k->args[a] = *g;
			nargs++;
		}
	}
	gk_clrec_free(&restoring);
	have_restoring = 0;
	pthread_mutex_unlock(&lock);
	if (ret == 0)
		gk_info("opencl: restored %zu buffers (%" PRIu64 " bytes) and %zu kernel arguments",
			nbufs, bytes, nargs);
	return ret;
}


/* ---- a move onto another device (opencl_move.h) ---- */

static int find_device(const char *spec, cl_device_id *out, char *name, size_t nlen)
{
	static const struct {
		const char *word;
		cl_device_type type;
	} types[] = {{"cpu", CL_DEVICE_TYPE_CPU},
		     {"gpu", CL_DEVICE_TYPE_GPU},
		     {"accelerator", CL_DEVICE_TYPE_ACCELERATOR},
		     {"all", CL_DEVICE_TYPE_ALL}};
	cl_platform_id plats[16];
	cl_uint np = 0;
	cl_device_type type = 0;
	long want = 0, seen = 0;
	const char *colon = strchr(spec, ':');

	for (size_t t = 0; colon && t < sizeof(types) / sizeof(types[0]); t++)
		if ((size_t)(colon - spec) == strlen(types[t].word) &&
		    !strncmp(spec, types[t].word, (size_t)(colon - spec))) {
			char *end;

			type = types[t].type;
			want = strtol(colon + 1, &end, 10);
			if (*end || end == colon + 1 || want < 0)
				return -EINVAL;
		}
	if (gk_cl.clGetPlatformIDs(16, plats, &np) != CL_SUCCESS)
		return -ENODEV;
	for (cl_uint p = 0; p < np && p < 16; p++) {
		cl_device_id devs[64];
		cl_uint nd = 0;

		if (gk_cl.clGetDeviceIDs(plats[p], type ? type : CL_DEVICE_TYPE_ALL, 64, devs,
					 &nd) != CL_SUCCESS)
			continue;
		for (cl_uint d = 0; d < nd && d < 64; d++) {
			name[0] = 0;
			gk_cl.clGetDeviceInfo(devs[d], CL_DEVICE_NAME, nlen - 1, name, NULL);
			name[nlen - 1] = 0;
			if (type ? seen++ == want : !strncmp(name, spec, strlen(spec))) {
				*out = devs[d];
				return 0;
			}
		}
	}
	return -ENODEV;
}

static const char *kind_word(const struct gk_clo *o)
{
	static const char *const n[] = {"context", "command queue", "buffer", "program", "kernel"};

	return o->kind == GK_CLO_MEM ? mem_label(o) : n[o->kind];
}

/* What stops a move of the record onto dev (named dname). */
static int move_refused_locked(cl_device_id dev, const char *dname, char *why, size_t len)
{
	if (!gk_cl_movable()) {
		snprintf(why, len,
			 "the program's OpenCL handles are its implementation's: set "
			 GK_ENV(OPENCL_MOVABLE) "=1 before it starts (docs/opencl.md)");
		return -ENOTSUP;
	}
	if (record_lost) {
		snprintf(why, len, "the record of the process's OpenCL objects is incomplete");
		return -ENOMEM;
	}
	if (nunsaved || unsaved_lost) {
		snprintf(why, len, "the process holds %s, which gpuckpt does not move",
			 nunsaved ? unsaved[0].what : "OpenCL objects gpuckpt does not move");
		return -ENOTSUP;
	}
	if (nuser_events) {
		snprintf(why, len,
			 "an OpenCL user event is not set yet (clSetUserEventStatus): the commands "
			 "waiting on it cannot be drained");
		return -EBUSY;
	}
	for (size_t i = 0; i < rec.n; i++) {
		const struct gk_clo *o = rec.o[i];
		cl_uint nd = 0;
		int ret;

		if (!o->own) {
			snprintf(why, len,
				 "OpenCL %s %ld has no handle of the runtime's (no memory for one "
				 "when it was made)",
				 kind_word(o), o->idx);
			return -ENOMEM;
		}
		if (o->kind == GK_CLO_CONTEXT &&
		    (gk_cl.clGetContextInfo(R(o->h), CL_CONTEXT_NUM_DEVICES, sizeof(nd), &nd,
					    NULL) != CL_SUCCESS ||
		     nd != 1)) {
			snprintf(why, len,
				 "OpenCL context %ld has %u devices; a move takes a context of one",
				 o->idx, nd);
			return -ENOTSUP;
		}
		if (o->kind == GK_CLO_MEM && o->mapped) {
			snprintf(why, len, "OpenCL %s %ld is mapped (clEnqueueMapBuffer)",
				 mem_label(o), o->idx);
			return -EBUSY;
		}
		if (o->kind == GK_CLO_MEM && !o->sub && o->size && !o->shadow) {
			snprintf(why, len, "OpenCL buffer %ld has no host copy", o->idx);
			return -ENOMEM;
		}
		if (o->kind == GK_CLO_MEM && o->sub && !gk_clrec_at(&rec, GK_CLO_MEM, o->parent)) {
			snprintf(why, len, "OpenCL sub-buffer %ld: its buffer is not recorded",
				 o->idx);
			return -ENOTSUP;
		}
		if (o->kind == GK_CLO_PROGRAM && (o->binary || o->linked || !o->src)) {
			snprintf(why, len,
				 "OpenCL program %ld was %s: only a program built from its source "
				 "is built again on another device",
				 o->idx,
				 o->binary   ? "made from a binary, IL or built-in kernels"
				 : o->linked ? "compiled or linked (clCompileProgram, clLinkProgram)"
					     : "made without a copy of its source (no memory)");
			return -ENOTSUP;
		}
		if (o->kind == GK_CLO_PROGRAM) {
			ret = device_offers(dev, dname, o, why, len);
			if (ret < 0)
				return ret;
		}
		if (o->kind == GK_CLO_KERNEL &&
		    (o->arg_too_big || !gk_clrec_at(&rec, GK_CLO_PROGRAM, o->parent))) {
			snprintf(why, len,
				 "OpenCL kernel %ld ('%s') %s", o->idx, o->name,
				 o->arg_too_big ? "has an argument gpuckpt did not keep"
						: "outlived its program's last handle");
			return -ENOTSUP;
		}
		if ((o->kind == GK_CLO_QUEUE || (o->kind == GK_CLO_MEM && !o->sub) ||
		     o->kind == GK_CLO_PROGRAM) &&
		    !gk_clrec_at(&rec, GK_CLO_CONTEXT, o->parent)) {
			snprintf(why, len,
				 "OpenCL %s %ld outlived its context's last handle", kind_word(o),
				 o->idx);
			return -ENOTSUP;
		}
	}
	return 0;
}

/* The position in the record of the object of kind with index idx: its new
 * real object in nu. */
static void *new_of(void **nu, enum gk_clo_kind kind, long idx)
{
	for (size_t i = 0; i < rec.n; i++)
		if (rec.o[i]->kind == kind && rec.o[i]->idx == idx)
			return nu[i];
	return NULL;
}

static void release_real(enum gk_clo_kind kind, void *h)
{
	switch (kind) {
	case GK_CLO_CONTEXT:
		gk_cl.clReleaseContext(h);
		break;
	case GK_CLO_QUEUE:
		gk_cl.clReleaseCommandQueue(h);
		break;
	case GK_CLO_MEM:
		gk_cl.clReleaseMemObject(h);
		break;
	case GK_CLO_PROGRAM:
		gk_cl.clReleaseProgram(h);
		break;
	case GK_CLO_KERNEL:
		gk_cl.clReleaseKernel(h);
		break;
	}
}

static void retain_real(enum gk_clo_kind kind, void *h)
{
	switch (kind) {
	case GK_CLO_CONTEXT:
		gk_cl.clRetainContext(h);
		break;
	case GK_CLO_QUEUE:
		gk_cl.clRetainCommandQueue(h);
		break;
	case GK_CLO_MEM:
		gk_cl.clRetainMemObject(h);
		break;
	case GK_CLO_PROGRAM:
		gk_cl.clRetainProgram(h);
		break;
	case GK_CLO_KERNEL:
		gk_cl.clRetainKernel(h);
		break;
	}
}

/* Object o made anew on dev into *out, its parents' new objects in nu. */
static cl_int make_anew(const struct gk_clo *o, void **nu, cl_device_id dev, void **out)
{
	cl_int e = CL_SUCCESS;

	switch (o->kind) {
	case GK_CLO_CONTEXT:
		*out = gk_cl.clCreateContext(NULL, 1, &dev, NULL, NULL, &e);
		break;
	case GK_CLO_QUEUE: {
		cl_queue_properties props[] = {CL_QUEUE_PROPERTIES, o->props, 0};

		*out = gk_cl.clCreateCommandQueueWithProperties(
		    new_of(nu, GK_CLO_CONTEXT, o->parent), dev, o->props ? props : NULL, &e);
		break;
	}
	case GK_CLO_MEM:
		if (o->sub) {
			cl_buffer_region r = {o->origin, o->size};

			*out = gk_cl.clCreateSubBuffer(new_of(nu, GK_CLO_MEM, o->parent), o->flags,
						       CL_BUFFER_CREATE_TYPE_REGION, &r, &e);
		} else if (o->flags & CL_MEM_USE_HOST_PTR) {
			/* The program's memory holds what the buffer holds. */
			if (o->size)
				memcpy(o->host_ptr, o->shadow, o->size);
			*out = gk_cl.clCreateBuffer(new_of(nu, GK_CLO_CONTEXT, o->parent), o->flags,
						    o->size, o->host_ptr, &e);
		} else {
			cl_mem_flags f = o->flags & ~(cl_mem_flags)CL_MEM_COPY_HOST_PTR;

			*out = gk_cl.clCreateBuffer(new_of(nu, GK_CLO_CONTEXT, o->parent),
						    o->size ? f | CL_MEM_COPY_HOST_PTR : f, o->size,
						    o->size ? o->shadow : NULL, &e);
		}
		break;
	case GK_CLO_PROGRAM: {
		const char *src = o->src;

		*out = gk_cl.clCreateProgramWithSource(new_of(nu, GK_CLO_CONTEXT, o->parent), 1,
						       &src, &o->src_len, &e);
		if (*out && o->built)
			e = gk_cl.clBuildProgram(*out, 1, &dev, o->options, NULL, NULL);
		break;
	}
	case GK_CLO_KERNEL:
		*out = gk_cl.clCreateKernel(new_of(nu, GK_CLO_PROGRAM, o->parent), o->name, &e);
		for (int a = 0; *out && e == CL_SUCCESS && a < GK_CL_ARGS_MAX; a++) {
			const struct gk_cl_arg *g = &o->args[a];
			void *m;

			if (g->kind == GK_CLA_UNSET)
				continue;
			m = g->kind == GK_CLA_MEM ? new_of(nu, GK_CLO_MEM, g->mem) : NULL;
			e = gk_cl.clSetKernelArg(*out, (cl_uint)a, g->size,
						 g->kind == GK_CLA_MEM     ? (const void *)&m
						 : g->kind == GK_CLA_LOCAL ? NULL
									   : (const void *)g->value);
		}
		break;
	}
	if (e == CL_SUCCESS && !*out)
		e = CL_OUT_OF_RESOURCES;
	return e;
}

int gk_cl_move(const char *spec, char *why, size_t len)
{
	struct gk_phase_verdict v = {.why = ""};
	cl_device_id dev = NULL;
	char dname[256] = "";
	void **nu = NULL, **old = NULL;
	size_t n = 0, made = 0, nbufs = 0;
	int ret;

	if (gk_cl_load() < 0) {
		snprintf(why, len, "libOpenCL.so.1 cannot be loaded");
		return -ENOENT;
	}
	ret = find_device(spec, &dev, dname, sizeof(dname));
	if (ret < 0) {
		snprintf(why, len, "no OpenCL device '%s' (a name's beginning, or TYPE:N)", spec);
		return ret;
	}
	pthread_mutex_lock(&lock);
	ret = move_refused_locked(dev, dname, why, len);
	pthread_mutex_unlock(&lock);
	if (ret < 0)
		return ret;
	ret = finish_queues(&v);
	if (ret < 0) {
		snprintf(why, len, "%s", v.why);
		return ret;
	}
	pthread_mutex_lock(&lock);
	ret = copy_locked(&v);
	if (ret < 0) {
		snprintf(why, len, "%s", v.why);
		goto out;
	}
	n = rec.n;
	nu = calloc(n ? n : 1, sizeof(*nu));
	old = calloc(n ? n : 1, sizeof(*old));
	if (!nu || !old) {
		ret = -ENOMEM;
		snprintf(why, len, "out of memory");
		goto out;
	}
	for (made = 0; made < n; made++) {
		const struct gk_clo *o = rec.o[made];
		cl_int e = make_anew(o, nu, dev, &nu[made]);

		if (e != CL_SUCCESS) {
			snprintf(why, len, "OpenCL %s %ld%s%s%s could not be made on device '%s': %s",
				 kind_word(o), o->idx, o->kind == GK_CLO_KERNEL ? " ('" : "",
				 o->kind == GK_CLO_KERNEL ? o->name : "",
				 o->kind == GK_CLO_KERNEL ? "')" : "", dname, gk_cl_name(e));
			if (nu[made])
				release_real(o->kind, nu[made]);
			nu[made] = NULL;
			ret = -EIO;
			break;
		}
		if (o->kind == GK_CLO_MEM && !o->sub)
			nbufs++;
	}
	if (ret < 0) {
		while (made-- > 0)
			release_real(rec.o[made]->kind, nu[made]);
		goto out;
	}
	/* Every object made: the devices the old contexts had map to dev, the
	 * handles are re-pointed, and the program's references move over. */
	for (size_t i = 0; i < n; i++) {
		struct gk_clo *o = rec.o[i];
		cl_device_id od[MOVED_MAX];
		size_t bytes = 0;

		if (o->kind != GK_CLO_CONTEXT ||
		    gk_cl.clGetContextInfo(R(o->h), CL_CONTEXT_DEVICES, sizeof(od), od, &bytes) !=
			CL_SUCCESS)
			continue;
		for (size_t d = 0; d < bytes / sizeof(od[0]); d++) {
			int k, have = __atomic_load_n(&nmoved, __ATOMIC_ACQUIRE);

			for (k = 0; k < have; k++)
				if (moved_to[k] == od[d] && od[d] != dev)
					moved_to[k] = dev;
			for (k = 0; k < have && moved_from[k] != od[d]; k++)
				;
			if (k < have)
				moved_to[k] = dev;
			else if (have < MOVED_MAX && od[d] != dev) {
				moved_from[have] = od[d];
				moved_to[have] = dev;
				__atomic_store_n(&nmoved, have + 1, __ATOMIC_RELEASE);
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct gk_clo *o = rec.o[i];
		struct gk_clh *x = (struct gk_clh *)o->h;

		old[i] = x->real;
		__atomic_store_n(&x->real, nu[i], __ATOMIC_RELEASE);
		for (long r = 1; r < o->refs; r++)
			retain_real(o->kind, nu[i]);
	}
	for (size_t i = n; i-- > 0;) {
		struct gk_clo *o = rec.o[i];

		/* A buffer the program let go of, kept for its sub-buffers:
		 * they hold the new one now. */
		if (o->refs <= 0)
			release_real(o->kind, nu[i]);
		for (long r = 0; r < o->refs; r++)
			release_real(o->kind, old[i]);
		if (o->kind == GK_CLO_MEM && o->shadow && o->size)
			madvise(o->shadow, o->size, MADV_DONTNEED);
	}
	gk_info("opencl: moved %zu OpenCL objects (%zu buffers with their contents) onto device "
		"'%s'",
		n, nbufs, dname);
out:
	pthread_mutex_unlock(&lock);
	free(nu);
	free(old);
	return ret;
}

/*
 * Transparent mode: CRIU brought the process back with its OpenCL objects on
 * the device they had (a CPU device's state is host memory). The job's
 * checkpoint folder may name another device in GK_CL_DEVICE_FILE: then every
 * object is made anew there. A move refused leaves the program on the device
 * it had, saying why.
 */
static void cl_resumed(const char *ckpt)
{
	char path[4200], spec[256] = "", why[1024];
	ssize_t n;
	int fd, ret;

	(void)ckpt;
	snprintf(path, sizeof(path), "%s/" GK_CL_DEVICE_FILE, gk_rt.settings.dir);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return;
	n = read(fd, spec, sizeof(spec) - 1);
	close(fd);
	spec[n > 0 ? n : 0] = 0;
	spec[strcspn(spec, "\r\n")] = 0;
	pthread_mutex_lock(&lock);
	n = (ssize_t)rec.n;
	pthread_mutex_unlock(&lock);
	if (!spec[0] || !n)
		return;
	ret = gk_cl_move(spec, why, sizeof(why));
	if (ret < 0)
		gk_error("opencl: %s names OpenCL device '%s', but the objects stay on the device "
			 "they had: %s",
			 path, spec, why);
	else
		gk_notice("opencl: restored onto OpenCL device '%s' (%s)", spec, path);
}

static const struct gk_phase_hooks cl_hooks = {
    .name = "opencl",
    .order = 50,
    .before = cl_before,
    .committed = cl_committed,
    .restore_check = cl_restore_check,
    .restored = cl_restored,
    .resumed = cl_resumed,
};
GK_PHASE_HOOKS(cl_hooks)
