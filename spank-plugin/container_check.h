/*
 * container_check.h - can the runtime work in the userland this process sees
 * now (a container's)? Asked when a containerized task starts, so that a
 * container that cannot load the runtime, or does not show the task's
 * checkpoint folder, is named in the job's output then and not found out at
 * preemption (spank-plugin/README.md, "Containers").
 *
 * The question goes to the container's own dynamic loader: it is run on the
 * runtime the way ldd -r does (LD_TRACE_LOADED_OBJECTS, LD_BIND_NOW,
 * LD_WARN), so every library, symbol version and symbol is resolved as the
 * program's own start would resolve them, with this userland's C library.
 * The runtime's own libraries come from its bundle folder (RPATH $ORIGIN);
 * the C library is the container's.
 */
#ifndef GK_CONTAINER_CHECK_H
#define GK_CONTAINER_CHECK_H

#include <stddef.h>

/* The dynamic loader the runtime's architecture uses (its PT_INTERP). */
#if defined(__x86_64__)
#define GK_LDSO "/lib64/ld-linux-x86-64.so.2"
#elif defined(__aarch64__)
#define GK_LDSO "/lib/ld-linux-aarch64.so.1"
#elif defined(__powerpc64__)
#define GK_LDSO "/lib64/ld64.so.2"
#else
#error "gpuckpt: the dynamic loader's path for this architecture is not known"
#endif

/*
 * Check runtime (its path in this mount namespace) and dir (the task's
 * checkpoint folder; NULL: not checked). Returns 1 when both are fine, 0 with
 * the reason in reason ("the container's C library is older than the runtime
 * needs: GLIBC_2.34 not found (glibc 2.34 or later is needed)"), or a negative
 * errno when the check itself could not be made (reason says why). *loads
 * says whether the runtime itself loads: when it does not, the caller takes
 * it out of LD_PRELOAD, or the loader would stop the program at its start
 * (it does for a preloaded library that asks for a newer glibc).
 */
int gk_container_check(const char *runtime, const char *dir, int *loads, char *reason, size_t len);

/*
 * What the loader printed, read for the first problem: the highest GLIBC_x
 * version not found, else a library not found, else an undefined symbol.
 * Returns 1 with the reason set, 0 if out holds none. (Split out for tests.)
 */
int gk_loader_problem(const char *out, char *reason, size_t len);

#endif
