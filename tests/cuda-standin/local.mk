# cuda-standin: libcuda.so.1 emulating the CUDA driver in host memory, for
# machines without a GPU (README.md). A test double: built by `make check`,
# never installed. `make standin` builds it alone (for check-slurm and the
# runtime's scenario tests).
check_LTLIBRARIES += %reldir%/libcuda_ptds.la %reldir%/libcuda_core.la %reldir%/libcuda.la \
	%reldir%/ckpt/libcuda.la

CUDA_STANDIN_SOURCES = \
	%reldir%/standin.h \
	%reldir%/trace.c \
	%reldir%/errors.c \
	%reldir%/handle.c \
	%reldir%/init.c \
	%reldir%/device.c \
	%reldir%/context.c \
	%reldir%/peer.c \
	%reldir%/stream.c \
	%reldir%/event.c \
	%reldir%/hostfn.c \
	%reldir%/registry.c \
	%reldir%/memory.c \
	%reldir%/pool.c \
	%reldir%/vmm.c \
	%reldir%/pointer.c \
	%reldir%/copy.c \
	%reldir%/array.c \
	%reldir%/module.c \
	%reldir%/graph.c \
	%reldir%/procaddr.c

# The per-thread default stream variants: the same cuda.h names, compiled so
# that cuda.h gives them their _ptsz/_ptds symbols.
%canon_reldir%_libcuda_ptds_la_SOURCES = %reldir%/ptds.c %reldir%/standin.h
%canon_reldir%_libcuda_ptds_la_CPPFLAGS = $(AM_CPPFLAGS) -DCUDA_API_PER_THREAD_DEFAULT_STREAM

# The stand-in's code, compiled once for both builds of libcuda.so.1.
%canon_reldir%_libcuda_core_la_SOURCES = $(CUDA_STANDIN_SOURCES)
%canon_reldir%_libcuda_core_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/%reldir%

# soname libcuda.so.1 like the driver; only cu* exported; calls between the
# stand-in's own entry points stay inside it even under an LD_PRELOADed interposer.
CUDA_STANDIN_LDFLAGS = $(AM_LDFLAGS) -rpath /nowhere -version-info 1:0:0 \
	-no-undefined -Wl,--version-script=$(srcdir)/%reldir%/libcuda.map -Wl,-Bsymbolic
CUDA_STANDIN_LIBADD = %reldir%/libcuda_core.la %reldir%/libcuda_ptds.la $(PTHREAD_LIBS) -ldl

# .libs/libcuda.so.1: without the checkpoint API, as a driver older than 570.
%canon_reldir%_libcuda_la_SOURCES =
%canon_reldir%_libcuda_la_LIBADD = $(CUDA_STANDIN_LIBADD)
%canon_reldir%_libcuda_la_LDFLAGS = $(CUDA_STANDIN_LDFLAGS)
%canon_reldir%_libcuda_la_DEPENDENCIES = %reldir%/libcuda_core.la %reldir%/libcuda_ptds.la %reldir%/libcuda.map

# ckpt/.libs/libcuda.so.1: the same with the checkpoint API (checkpoint.c),
# for the shepherd's whole transparent path without a GPU.
%canon_reldir%_ckpt_libcuda_la_SOURCES = %reldir%/checkpoint.c %reldir%/standin.h
%canon_reldir%_ckpt_libcuda_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/%reldir%
%canon_reldir%_ckpt_libcuda_la_LIBADD = $(CUDA_STANDIN_LIBADD)
%canon_reldir%_ckpt_libcuda_la_LDFLAGS = $(CUDA_STANDIN_LDFLAGS)
%canon_reldir%_ckpt_libcuda_la_DEPENDENCIES = %reldir%/libcuda_core.la %reldir%/libcuda_ptds.la %reldir%/libcuda.map

# Host "kernels" for the test, loaded with cuModuleLoad/cuModuleLoadData.
check_LTLIBRARIES += %reldir%/modules/test_kernels.la
%canon_reldir%_modules_test_kernels_la_SOURCES = %reldir%/modules/test_kernels.c
%canon_reldir%_modules_test_kernels_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/%reldir%
%canon_reldir%_modules_test_kernels_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version \
	-rpath /nowhere

# The runtime's change-key kernel as a host function (GPUCKPT_HASH_MODULE).
check_LTLIBRARIES += %reldir%/modules/hash_kernel_host.la
%canon_reldir%_modules_hash_kernel_host_la_SOURCES = %reldir%/modules/hash_kernel_host.c
%canon_reldir%_modules_hash_kernel_host_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/%reldir%
%canon_reldir%_modules_hash_kernel_host_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version \
	-rpath /nowhere

check_PROGRAMS += %reldir%/test-standin
%canon_reldir%_test_standin_SOURCES = %reldir%/test-standin.c
%canon_reldir%_test_standin_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/%reldir%
%canon_reldir%_test_standin_LDADD = %reldir%/libcuda.la $(PTHREAD_LIBS) -ldl
# A plain executable (no libtool wrapper): the test script picks the driver.
%canon_reldir%_test_standin_LDFLAGS = $(AM_LDFLAGS) -no-install

TESTS += %reldir%/test-standin.sh
EXTRA_DIST += %reldir%/test-standin.sh %reldir%/test-ckpt.sh %reldir%/README.md %reldir%/libcuda.map \
	%reldir%/errors.def %reldir%/procaddr.def %reldir%/standin_kernel.h

# The checkpoint API of the second build, as the shepherd calls it.
check_PROGRAMS += %reldir%/test-ckpt
%canon_reldir%_test_ckpt_SOURCES = %reldir%/test-ckpt.c
%canon_reldir%_test_ckpt_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/%reldir%
%canon_reldir%_test_ckpt_LDADD = %reldir%/ckpt/libcuda.la
%canon_reldir%_test_ckpt_LDFLAGS = $(AM_LDFLAGS) -no-install
TESTS += %reldir%/test-ckpt.sh

standin: %reldir%/libcuda.la %reldir%/ckpt/libcuda.la %reldir%/modules/test_kernels.la %reldir%/modules/hash_kernel_host.la
.PHONY: standin
