/*
 * module.c - modules are host shared objects (see standin_kernel.h):
 * cuModuleLoad dlopen()s one, cuModuleLoadData writes an in-memory ELF image
 * to a memfd and dlopen()s that. A kernel NAME needs its argument sizes in
 * NAME__params. A module stays loaded until its last function handle and its
 * last queued launch let go of it, so unloading cannot pull code from under a
 * running kernel. Libraries (cuLibraryLoadFromFile) and their kernels, the
 * context-independent handles that cudart launches with, are below.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "standin.h"
#include "standin_kernel.h"

struct CUfunc_st;

struct CUmod_st {
	struct si_obj obj;
	void *dl;
	pthread_mutex_t lock;
	struct CUfunc_st *funcs; /* handed out by cuModuleGetFunction */
	uintptr_t *globals;	 /* registered by cuModuleGetGlobal */
	size_t nglobals;
};

struct CUfunc_st {
	struct si_obj obj; /* holds a reference to its module */
	struct CUmod_st *mod;
	standin_kernel_fn fn;
	const size_t *param_sizes;
	unsigned nparams;
	struct CUfunc_st *next;
	char name[];
};

static void module_release(struct si_obj *obj)
{
	struct CUmod_st *m = (struct CUmod_st *)obj;

	for (size_t i = 0; i < m->nglobals; i++) {
		struct si_range *r = si_reg_remove(m->globals[i], SI_KIND(SI_MEM_GLOBAL));

		free(r);
	}
	free(m->globals);
	if (m->dl)
		dlclose(m->dl);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

static void func_release(struct si_obj *obj)
{
	struct CUfunc_st *f = (struct CUfunc_st *)obj;

	si_obj_put(&f->mod->obj);
	free(f);
}

static CUresult module_new(struct CUctx_st *ctx, void *dl, CUmodule *out)
{
	struct CUmod_st *m = calloc(1, sizeof(*m));

	if (!m) {
		dlclose(dl);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	si_obj_init(&m->obj, SI_T_MODULE, ctx, module_release);
	m->dl = dl;
	pthread_mutex_init(&m->lock, NULL);
	if (si_handle_add(&m->obj)) {
		si_obj_put(&m->obj);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = m;
	return CUDA_SUCCESS;
}

static CUresult module_open(const char *path, const char *what, CUmodule *out)
{
	struct CUctx_st *ctx;
	void *dl;
	CUresult rc = si_ctx_current(&ctx);

	if (rc)
		return rc;
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		si_msg("%s: not a loadable host shared object: %s", what, dlerror());
		return CUDA_ERROR_INVALID_IMAGE;
	}
	return module_new(ctx, dl, out);
}

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	CUresult rc;

	if (!module || !fname)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	if (access(fname, R_OK))
		SI_RETF(CUDA_ERROR_FILE_NOT_FOUND, "%s", fname);
	rc = module_open(fname, fname, module);
	SI_RETF(rc, "%s -> %p", fname, rc ? NULL : (void *)*module);
}

/* The file size of an ELF image: the furthest byte any header points at. */
static size_t elf_image_size(const unsigned char *image)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)image;
	size_t end = eh->e_ehsize;

#define EXTEND(x)                                                                                  \
	do {                                                                                       \
		size_t e_ = (size_t)(x);                                                           \
		if (e_ > end)                                                                      \
			end = e_;                                                                  \
	} while (0)
	if (eh->e_phoff && eh->e_phnum) {
		EXTEND(eh->e_phoff + (size_t)eh->e_phnum * eh->e_phentsize);
		for (unsigned i = 0; i < eh->e_phnum; i++) {
			const Elf64_Phdr *ph =
			    (const Elf64_Phdr *)(image + eh->e_phoff + (size_t)i * eh->e_phentsize);

			EXTEND(ph->p_offset + ph->p_filesz);
		}
	}
	if (eh->e_shoff && eh->e_shnum) {
		EXTEND(eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize);
		for (unsigned i = 0; i < eh->e_shnum; i++) {
			const Elf64_Shdr *sh =
			    (const Elf64_Shdr *)(image + eh->e_shoff + (size_t)i * eh->e_shentsize);

			if (sh->sh_type != SHT_NOBITS)
				EXTEND(sh->sh_offset + sh->sh_size);
		}
	}
#undef EXTEND
	return end;
}

static bool is_shared_object(const unsigned char *image)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)image;

	return memcmp(image, ELFMAG, SELFMAG) == 0 && image[EI_CLASS] == ELFCLASS64 &&
	       eh->e_type == ET_DYN && eh->e_phentsize == sizeof(Elf64_Phdr) &&
	       (!eh->e_shnum || eh->e_shentsize == sizeof(Elf64_Shdr));
}

static CUresult load_image(CUmodule *module, const void *image)
{
	char path[64];
	size_t size, done = 0;
	int fd;
	CUresult rc;

	if (!module || !image)
		return CUDA_ERROR_INVALID_VALUE;
	/* A cubin, PTX or fatbinary is no host code: the stand-in cannot run it. */
	if (!is_shared_object(image))
		return CUDA_ERROR_INVALID_IMAGE;
	size = elf_image_size(image);
	fd = memfd_create("gpuckpt-standin-module", MFD_CLOEXEC);
	if (fd < 0) {
		si_msg("cuModuleLoadData: memfd_create: %s", strerror(errno));
		return CUDA_ERROR_OPERATING_SYSTEM;
	}
	while (done < size) {
		ssize_t n = write(fd, (const char *)image + done, size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			si_msg("cuModuleLoadData: writing %zu bytes to a memfd: %s", size,
			       strerror(errno));
			rc = CUDA_ERROR_OPERATING_SYSTEM;
			goto out_close;
		}
		done += (size_t)n;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	rc = module_open(path, "cuModuleLoadData", module);
out_close:
	close(fd); /* the mapping made by dlopen keeps the contents */
	return rc;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
	CUresult rc = load_image(module, image);

	SI_RETF(rc, "%p -> %p", image, rc ? NULL : (void *)*module);
}

CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
			    CUjit_option *options, void **optionValues)
{
	CUresult rc = load_image(module, image);

	/* JIT options have nothing to act on: there is no JIT. */
	SI_RETF(rc, "%p options=%u -> %p", image, numOptions, rc ? NULL : (void *)*module);
}

CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
	CUresult rc = load_image(module, fatCubin);

	SI_RETF(rc, "%p -> %p", fatCubin, rc ? NULL : (void *)*module);
}

static CUresult module_get(CUmodule h, struct CUmod_st **out)
{
	CUresult rc = si_check_init();
	struct si_obj *obj;

	if (rc)
		return rc;
	obj = si_handle_get(h, SI_T_MODULE);
	if (!obj)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct CUmod_st *)obj;
	return CUDA_SUCCESS;
}

/* Takes the module's handle (and its functions' handles) away; obj is the handle's reference. */
static void module_unload(struct CUmod_st *m)
{
	struct CUfunc_st *f;

	pthread_mutex_lock(&m->lock);
	f = m->funcs;
	m->funcs = NULL;
	pthread_mutex_unlock(&m->lock);
	while (f) {
		struct CUfunc_st *next = f->next;

		if (si_handle_del(&f->obj))
			si_obj_put(&f->obj);
		f = next;
	}
	si_obj_put(&m->obj);
}

CUresult cuModuleUnload(CUmodule hmod)
{
	struct CUmod_st *m;
	CUresult rc = module_get(hmod, &m);

	if (rc)
		SI_RETF(rc, "%p", (void *)hmod);
	if (si_handle_del(&m->obj))
		module_unload(m);
	si_obj_put(&m->obj);
	SI_RETF(CUDA_SUCCESS, "%p", (void *)hmod);
}

void si_module_ctx_teardown(struct CUctx_st *ctx)
{
	struct si_obj **objs;
	size_t n = si_handle_take_owned(ctx, SI_T_MODULE, &objs);

	for (size_t i = 0; i < n; i++)
		module_unload((struct CUmod_st *)objs[i]);
	free(objs);
}

static CUresult make_function(struct CUmod_st *m, const char *name, struct CUfunc_st **out)
{
	char pname[512];
	struct CUfunc_st *f;
	const size_t *sizes;
	void *fn;

	if (snprintf(pname, sizeof(pname), "%s__params", name) >= (int)sizeof(pname))
		return CUDA_ERROR_NOT_FOUND;
	fn = dlsym(m->dl, name);
	sizes = dlsym(m->dl, pname);
	if (!fn || !sizes) {
		if (fn)
			si_msg("cuModuleGetFunction: %s has no %s (see standin_kernel.h)", name,
			       pname);
		return CUDA_ERROR_NOT_FOUND;
	}
	f = calloc(1, sizeof(*f) + strlen(name) + 1);
	if (!f)
		return CUDA_ERROR_OUT_OF_MEMORY;
	si_obj_init(&f->obj, SI_T_FUNCTION, m->obj.owner, func_release);
	f->mod = m;
	si_obj_ref(&m->obj);
	*(void **)&f->fn = fn;
	f->param_sizes = sizes;
	while (sizes[f->nparams])
		f->nparams++;
	strcpy(f->name, name);
	if (si_handle_add(&f->obj)) {
		si_obj_put(&f->obj);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*out = f;
	return CUDA_SUCCESS;
}

/* The module's function of that name, the same handle each time; with
 * ref, a new reference to it for the caller. */
static CUresult module_function(struct CUmod_st *m, const char *name, bool ref,
				struct CUfunc_st **out)
{
	struct CUfunc_st *f;
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&m->lock);
	for (f = m->funcs; f; f = f->next)
		if (strcmp(f->name, name) == 0)
			break;
	if (!f) {
		rc = make_function(m, name, &f);
		if (!rc) {
			f->next = m->funcs;
			m->funcs = f;
		}
	}
	if (!rc && ref)
		si_obj_ref(&f->obj);
	pthread_mutex_unlock(&m->lock);
	if (!rc)
		*out = f;
	return rc;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct CUmod_st *m;
	struct CUfunc_st *f = NULL;
	CUresult rc;

	if (!hfunc || !name)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	rc = module_get(hmod, &m);
	if (rc)
		SI_RETF(rc, "%p %s", (void *)hmod, name);
	rc = module_function(m, name, false, &f);
	if (!rc)
		*hfunc = f;
	si_obj_put(&m->obj);
	SI_RETF(rc, "%p %s -> %p", (void *)hmod, name, rc ? NULL : (void *)f);
}

/* The name an object of `type` keeps at `off` (cuFuncGetName,
 * cuKernelGetName); the trace names the caller. */
static CUresult name_of(const char *api, const char **name, void *h, enum si_type type, size_t off)
{
	struct si_obj *obj;
	CUresult rc = si_check_init();

	if (rc)
		return rc;
	if (!name)
		return si_traced(api, CUDA_ERROR_INVALID_VALUE, "%s", "");
	obj = si_handle_get(h, type);
	if (!obj)
		return si_traced(api, CUDA_ERROR_INVALID_HANDLE, "%p", h);
	*name = (const char *)obj + off;
	si_obj_put(obj);
	return si_traced(api, CUDA_SUCCESS, "%p -> %s", h, *name);
}

/* The function's name, as cuModuleGetFunction was given it (the driver's
 * is the mangled name of the kernel): it lives as long as the module. A
 * CUkernel is no CUfunction here: CUDA_ERROR_INVALID_HANDLE, as driver 580
 * answers (cuKernelGetName names a CUkernel). */
CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
	return name_of(__func__, name, hfunc, SI_T_FUNCTION, offsetof(struct CUfunc_st, name));
}

/* ---- libraries and kernels (CUDA 12.0) ----
 *
 * A CUlibrary is the context-independent form of a module and a CUkernel
 * that of a function: how the CUDA runtime (cudart 12 and later) loads its
 * kernels, and the handle it passes to cuLaunchKernel (cast to CUfunction)
 * where a driver-API program passes a CUfunction. A library is a host shared
 * object here too (cuLibraryLoadFromFile dlopen()s it); in each context that
 * asks for a kernel's function (cuKernelGetFunction, or a launch of the
 * CUkernel) it is loaded once as a module of that context, so the kernel has
 * one CUfunction per context, the same one each time, as on the driver.
 */
struct lib_mod {
	struct CUmod_st *mod; /* holds a reference */
	struct lib_mod *next;
};

struct CUlib_st {
	struct si_obj obj;
	char *path;
	void *dl; /* to check a kernel's name at cuLibraryGetKernel */
	pthread_mutex_t lock;
	struct CUkern_st *kernels; /* handed out by cuLibraryGetKernel */
	struct lib_mod *mods;	   /* one module per context that used it */
};

struct CUkern_st {
	struct si_obj obj; /* holds a reference to its library */
	struct CUlib_st *lib;
	struct CUkern_st *next;
	char name[];
};

static void library_release(struct si_obj *obj)
{
	struct CUlib_st *l = (struct CUlib_st *)obj;

	while (l->mods) {
		struct lib_mod *lm = l->mods;

		l->mods = lm->next;
		si_obj_put(&lm->mod->obj);
		free(lm);
	}
	if (l->dl)
		dlclose(l->dl);
	free(l->path);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static void kernel_release(struct si_obj *obj)
{
	struct CUkern_st *k = (struct CUkern_st *)obj;

	si_obj_put(&k->lib->obj);
	free(k);
}

/* JIT and library options have nothing to act on: there is no JIT. */
CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
			       void **jitOptionsValues, unsigned int numJitOptions,
			       CUlibraryOption *libraryOptions, void **libraryOptionValues,
			       unsigned int numLibraryOptions)
{
	struct CUlib_st *l;
	CUresult rc = si_check_init();

	if (rc)
		SI_RET(rc);
	if (!library || !fileName)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	if (access(fileName, R_OK))
		SI_RETF(CUDA_ERROR_FILE_NOT_FOUND, "%s", fileName);
	l = calloc(1, sizeof(*l));
	if (!l || !(l->path = strdup(fileName))) {
		free(l);
		SI_RET(CUDA_ERROR_OUT_OF_MEMORY);
	}
	si_obj_init(&l->obj, SI_T_LIBRARY, NULL, library_release);
	pthread_mutex_init(&l->lock, NULL);
	l->dl = dlopen(fileName, RTLD_NOW | RTLD_LOCAL);
	if (!l->dl) {
		si_msg("%s: not a loadable host shared object: %s", fileName, dlerror());
		si_obj_put(&l->obj);
		SI_RETF(CUDA_ERROR_INVALID_IMAGE, "%s", fileName);
	}
	if (si_handle_add(&l->obj)) {
		si_obj_put(&l->obj);
		SI_RET(CUDA_ERROR_OUT_OF_MEMORY);
	}
	*library = l;
	SI_RETF(CUDA_SUCCESS, "%s -> %p", fileName, (void *)l);
}

static CUresult library_get(CUlibrary h, struct CUlib_st **out)
{
	CUresult rc = si_check_init();
	struct si_obj *obj;

	if (rc)
		return rc;
	obj = si_handle_get(h, SI_T_LIBRARY);
	if (!obj)
		return CUDA_ERROR_INVALID_HANDLE;
	*out = (struct CUlib_st *)obj;
	return CUDA_SUCCESS;
}

/* Takes the library's kernels' handles away and unloads its modules, as the
 * driver does; the library's memory goes with its last reference. */
CUresult cuLibraryUnload(CUlibrary library)
{
	struct CUlib_st *l;
	struct CUkern_st *k;
	struct lib_mod *lm;
	CUresult rc = library_get(library, &l);

	if (rc)
		SI_RETF(rc, "%p", (void *)library);
	if (!si_handle_del(&l->obj)) {
		si_obj_put(&l->obj);
		SI_RETF(CUDA_ERROR_INVALID_HANDLE, "%p", (void *)library);
	}
	pthread_mutex_lock(&l->lock);
	k = l->kernels;
	l->kernels = NULL;
	for (lm = l->mods; lm; lm = lm->next)
		if (si_handle_del(&lm->mod->obj))
			module_unload(lm->mod);
	pthread_mutex_unlock(&l->lock);
	while (k) {
		struct CUkern_st *next = k->next;

		if (si_handle_del(&k->obj))
			si_obj_put(&k->obj);
		k = next;
	}
	si_obj_put(&l->obj); /* the handle's */
	si_obj_put(&l->obj);
	SI_RETF(CUDA_SUCCESS, "%p", (void *)library);
}

CUresult cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library, const char *name)
{
	char pname[512];
	struct CUlib_st *l;
	struct CUkern_st *k;
	CUresult rc;

	if (!pKernel || !name)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	rc = library_get(library, &l);
	if (rc)
		SI_RETF(rc, "%p %s", (void *)library, name);
	pthread_mutex_lock(&l->lock);
	for (k = l->kernels; k; k = k->next)
		if (strcmp(k->name, name) == 0)
			break;
	if (!k) {
		/* What cuModuleGetFunction would take as a kernel (make_function). */
		if (snprintf(pname, sizeof(pname), "%s__params", name) >= (int)sizeof(pname) ||
		    !dlsym(l->dl, name) || !dlsym(l->dl, pname)) {
			rc = CUDA_ERROR_NOT_FOUND;
		} else if (!(k = calloc(1, sizeof(*k) + strlen(name) + 1))) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			si_obj_init(&k->obj, SI_T_KERNEL, NULL, kernel_release);
			k->lib = l;
			si_obj_ref(&l->obj);
			strcpy(k->name, name);
			if (si_handle_add(&k->obj)) {
				si_obj_put(&k->obj);
				k = NULL;
				rc = CUDA_ERROR_OUT_OF_MEMORY;
			} else {
				k->next = l->kernels;
				l->kernels = k;
			}
		}
	}
	pthread_mutex_unlock(&l->lock);
	if (!rc)
		*pKernel = k;
	si_obj_put(&l->obj);
	SI_RETF(rc, "%p %s -> %p", (void *)library, name, rc ? NULL : (void *)k);
}

/* The kernel's function in ctx (loading its library there at the first
 * use); with ref, a new reference to it for the caller. */
static CUresult kernel_function(struct CUkern_st *k, struct CUctx_st *ctx, bool ref,
				struct CUfunc_st **out)
{
	struct CUlib_st *l = k->lib;
	struct CUmod_st *m = NULL;
	struct lib_mod **pp, *lm;
	CUresult rc;

	pthread_mutex_lock(&l->lock);
	for (pp = &l->mods; (lm = *pp);) {
		struct si_obj *live = si_handle_get(lm->mod, SI_T_MODULE);

		if (!live) { /* unloaded with its context: forget it */
			*pp = lm->next;
			si_obj_put(&lm->mod->obj);
			free(lm);
			continue;
		}
		if (lm->mod->obj.owner == ctx) {
			m = lm->mod; /* live: the reference taken above */
			break;
		}
		si_obj_put(live);
		pp = &lm->next;
	}
	if (!m) {
		void *dl = dlopen(l->path, RTLD_NOW | RTLD_LOCAL);

		lm = calloc(1, sizeof(*lm));
		if (!dl || !lm) {
			if (dl)
				dlclose(dl);
			free(lm);
			pthread_mutex_unlock(&l->lock);
			return dl ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_ERROR_INVALID_IMAGE;
		}
		rc = module_new(ctx, dl, &m);
		if (rc) {
			free(lm);
			pthread_mutex_unlock(&l->lock);
			return rc;
		}
		si_obj_ref(&m->obj); /* the list's */
		si_obj_ref(&m->obj); /* ours, below */
		lm->mod = m;
		lm->next = l->mods;
		l->mods = lm;
	}
	pthread_mutex_unlock(&l->lock);
	rc = module_function(m, k->name, ref, out);
	si_obj_put(&m->obj);
	return rc;
}

CUresult cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	struct CUctx_st *ctx;
	struct CUfunc_st *f = NULL;
	struct si_obj *obj;
	CUresult rc = si_check_init();

	if (rc)
		SI_RET(rc);
	if (!pFunc)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	obj = si_handle_get(kernel, SI_T_KERNEL);
	if (!obj)
		SI_RETF(CUDA_ERROR_INVALID_HANDLE, "%p", (void *)kernel);
	rc = si_ctx_current(&ctx);
	if (!rc)
		rc = kernel_function((struct CUkern_st *)obj, ctx, false, &f);
	if (!rc)
		*pFunc = f;
	si_obj_put(obj);
	SI_RETF(rc, "%p -> %p", (void *)kernel, rc ? NULL : (void *)f);
}

/* The name cuLibraryGetKernel was given (the driver's: the mangled name);
 * it lives as long as the library. */
CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
	return name_of(__func__, name, hfunc, SI_T_KERNEL, offsetof(struct CUkern_st, name));
}

/* Makes the global addressable by copies; its size comes from the ELF symbol. */
static CUresult register_global(struct CUmod_st *m, uintptr_t addr, size_t size, bool managed)
{
	struct si_range *r;
	uintptr_t *g;
	CUresult rc;

	for (size_t i = 0; i < m->nglobals; i++)
		if (m->globals[i] == addr)
			return CUDA_SUCCESS;
	g = realloc(m->globals, (m->nglobals + 1) * sizeof(*g));
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->globals = g;
	r = calloc(1, sizeof(*r));
	if (!r)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r->base = addr;
	r->size = size;
	r->kind = SI_MEM_GLOBAL;
	r->flags = managed ? SI_GLOBAL_MANAGED : 0;
	r->ctx = m->obj.owner;
	r->dev = m->obj.owner ? m->obj.owner->dev : 0;
	r->owner = m;
	rc = si_reg_insert(r);
	if (rc) {
		free(r);
		return rc;
	}
	m->globals[m->nglobals++] = addr;
	return CUDA_SUCCESS;
}

CUresult cuModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
	struct CUmod_st *m;
	const ElfW(Sym) *sym = NULL;
	Dl_info info;
	void *addr;
	size_t size = 0;
	char marker[512];
	bool managed;
	CUresult rc;

	if ((!dptr && !bytes) || !name)
		SI_RET(CUDA_ERROR_INVALID_VALUE);
	rc = module_get(hmod, &m);
	if (rc)
		SI_RETF(rc, "%p %s", (void *)hmod, name);
	addr = dlsym(m->dl, name);
	if (!addr) {
		rc = CUDA_ERROR_NOT_FOUND;
		goto out_put;
	}
	if (dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) && sym)
		size = sym->st_size;
	/* STANDIN_MANAGED(name): a __managed__ variable. */
	managed = (size_t)snprintf(marker, sizeof(marker), "%s__managed", name) < sizeof(marker) &&
		  dlsym(m->dl, marker);
	pthread_mutex_lock(&m->lock);
	if (size)
		rc = register_global(m, (uintptr_t)addr, size, managed);
	pthread_mutex_unlock(&m->lock);
	if (rc)
		goto out_put;
	if (dptr)
		*dptr = (CUdeviceptr)(uintptr_t)addr;
	if (bytes)
		*bytes = size;
out_put:
	si_obj_put(&m->obj);
	SI_RETF(rc, "%p %s -> %p (%zu bytes)", (void *)hmod, name, rc ? NULL : addr, size);
}

/* ---- launches ---- */

struct launch_op {
	struct si_op op;
	struct CUfunc_st *func; /* holds a reference */
	struct CUctx_st *ctx;	/* the stream's: faults are sticky there */
	struct standin_launch dims;
	void **params; /* pointers into the copied argument values */
	bool faulted;
};

/* A kernel's question before it touches memory (standin_kernel.h). */
static int launch_access(const struct standin_launch *launch, const void *p, size_t n, int write)
{
	struct launch_op *l =
	    (struct launch_op *)((char *)launch - offsetof(struct launch_op, dims));

	if (si_reg_check((uintptr_t)p, n, write) == CUDA_SUCCESS)
		return 1;
	if (si_tracing())
		si_msg("kernel %s: %s of %zu bytes at %p: not device memory: the launch faults "
		       "(CUDA_ERROR_ILLEGAL_ADDRESS)",
		       l->func->name, write ? "write" : "read", n, p);
	l->faulted = true;
	return 0;
}

static void launch_run(struct si_op *op)
{
	struct launch_op *l = (struct launch_op *)op;

	/* A broken context runs no more kernels. */
	if (si_ctx_sticky(l->ctx))
		return;
	l->func->fn(&l->dims, l->params);
	if (l->faulted)
		si_ctx_fault(l->ctx, CUDA_ERROR_ILLEGAL_ADDRESS);
}

static void launch_fini(struct si_op *op)
{
	struct launch_op *l = (struct launch_op *)op;

	si_obj_put(&l->func->obj);
	free(l->params);
	free(l);
}

/* One allocation: the pointer array, then each argument's bytes, 16-byte aligned. */
static void **copy_params(const struct CUfunc_st *f, void **params)
{
	size_t off = si_align_up(f->nparams * sizeof(void *), 16), total = off;
	char *buf;

	for (unsigned i = 0; i < f->nparams; i++)
		total += si_align_up(f->param_sizes[i], 16);
	buf = malloc(total ? total : 1);
	if (!buf)
		return NULL;
	for (unsigned i = 0; i < f->nparams; i++) {
		memcpy(buf + off, params[i], f->param_sizes[i]);
		((void **)buf)[i] = buf + off;
		off += si_align_up(f->param_sizes[i], 16);
	}
	return (void **)buf;
}

static CUresult check_dims(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
			   unsigned bz)
{
	if (!gx || !gy || !gz || !bx || !by || !bz)
		return CUDA_ERROR_INVALID_VALUE;
	if (gx > 0x7fffffffu || gy > 65535 || gz > 65535)
		return CUDA_ERROR_INVALID_VALUE;
	if (bx > 1024 || by > 1024 || bz > 64 || (unsigned long long)bx * by * bz > 1024)
		return CUDA_ERROR_INVALID_VALUE;
	return CUDA_SUCCESS;
}

/* Queues one launch of f on s (with a reference to f of its own). */
static CUresult launch_submit(struct CUstream_st *s, struct CUfunc_st *f,
			      const struct standin_launch *dims, void **params)
{
	struct launch_op *l = calloc(1, sizeof(*l));
	CUresult rc;

	if (!l || !(l->params = copy_params(f, params))) {
		free(l);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	l->op.run = launch_run;
	l->op.fini = launch_fini;
	si_obj_ref(&f->obj);
	l->func = f;
	l->ctx = s->ctx;
	l->dims = *dims;
	l->dims.access = launch_access;
	rc = si_stream_submit(s, &l->op, NULL, NULL);
	if (rc)
		launch_fini(&l->op);
	return rc;
}

/* A launch recorded by a stream capture (graph.c): the function and a copy
 * of the argument values, launched anew by each graph launch. */
struct kernel_node {
	struct si_node node;
	struct CUfunc_st *func; /* holds a reference */
	struct standin_launch dims;
	void **params;
};

static CUresult kernel_node_submit(struct si_node *n, struct CUstream_st *s)
{
	struct kernel_node *k = (struct kernel_node *)n;

	return launch_submit(s, k->func, &k->dims, k->params);
}

static void kernel_node_fini(struct si_node *n)
{
	struct kernel_node *k = (struct kernel_node *)n;

	si_obj_put(&k->func->obj);
	free(k->params);
	free(k);
}

static CUresult launch_capture(struct CUstream_st *s, struct CUfunc_st *f,
			       const struct standin_launch *dims, void **params)
{
	struct kernel_node *k = calloc(1, sizeof(*k));

	if (!k || !(k->params = copy_params(f, params))) {
		free(k);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	k->node.submit = kernel_node_submit;
	k->node.fini = kernel_node_fini;
	si_obj_ref(&f->obj);
	k->func = f;
	k->dims = *dims;
	return si_capture_record(s, &k->node);
}

CUresult si_api_launch(CUfunction h, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
		       unsigned by, unsigned bz, unsigned shmem, CUstream hs, void **params,
		       void **extra, bool ptds)
{
	struct standin_launch dims = {
	    .grid = {gx, gy, gz}, .block = {bx, by, bz}, .shared_bytes = shmem};
	struct si_obj *obj;
	struct CUfunc_st *f;
	struct CUstream_st *s;
	CUresult rc = si_check_init();

	if (rc)
		return rc;
	obj = si_handle_get(h, SI_T_FUNCTION);
	if (!obj) {
		/* A CUkernel in place of the CUfunction, as cudart launches: the
		 * kernel's function in the stream's context. */
		struct si_obj *k = si_handle_get(h, SI_T_KERNEL);

		if (!k)
			return CUDA_ERROR_INVALID_HANDLE;
		rc = si_stream_resolve(hs, ptds, &s);
		if (!rc) {
			rc = kernel_function((struct CUkern_st *)k, s->ctx, true, &f);
			si_stream_put(s);
		}
		si_obj_put(k);
		if (rc)
			return rc;
		obj = &f->obj;
	}
	f = (struct CUfunc_st *)obj;
	if (extra) {
		rc = CUDA_ERROR_NOT_SUPPORTED; /* arguments packed in one buffer: not emulated */
		goto out_func;
	}
	rc = check_dims(gx, gy, gz, bx, by, bz);
	if (!rc && f->nparams && !params)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (rc)
		goto out_func;
	rc = si_stream_resolve(hs, ptds, &s);
	if (rc)
		goto out_func;
	if (si_stream_capturing(s))
		rc = launch_capture(s, f, &dims, params);
	else
		rc = launch_submit(s, f, &dims, params);
	si_stream_put(s);
out_func:
	si_obj_put(obj);
	return rc;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
			unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
			unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
			void **kernelParams, void **extra)
{
	SI_RETF(si_api_launch(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
			      sharedMemBytes, hStream, kernelParams, extra, false),
		"%p grid=%ux%ux%u block=%ux%ux%u stream=%p", (void *)f, gridDimX, gridDimY,
		gridDimZ, blockDimX, blockDimY, blockDimZ, (void *)hStream);
}
