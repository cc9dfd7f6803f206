# nccl-standin: libnccl.so.2 emulating NCCL between the processes of a node,
# on top of the CUDA driver stand-in (README.md). A test double: built by
# `make check`, never installed. `make nccl-standin` builds it alone (for the
# runtime's NCCL scenario tests).
check_LTLIBRARIES += %reldir%/libnccl.la

%canon_reldir%_libnccl_la_SOURCES = \
	%reldir%/nccl_standin.h \
	%reldir%/trace.c \
	%reldir%/errors.c \
	%reldir%/reduce.c \
	%reldir%/shared.c \
	%reldir%/bootstrap.c \
	%reldir%/comm.c \
	%reldir%/collectives.c \
	%reldir%/group.c
%canon_reldir%_libnccl_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/%reldir% \
	-I$(top_srcdir)/runtime/core/interpose
# Its cu* calls go to the stand-in libcuda.so.1's exported symbols, where an
# LD_PRELOADed interposer sees them as it sees real NCCL's.
%canon_reldir%_libnccl_la_LIBADD = cuda-standin/libcuda.la $(PTHREAD_LIBS)
# soname libnccl.so.2 like NCCL's; only nccl* exported; its calls between its
# own entry points stay inside it.
%canon_reldir%_libnccl_la_LDFLAGS = $(AM_LDFLAGS) -rpath /nowhere -version-info 2:0:0 \
	-no-undefined -Wl,--version-script=$(srcdir)/%reldir%/libnccl.map -Wl,-Bsymbolic
%canon_reldir%_libnccl_la_DEPENDENCIES = cuda-standin/libcuda.la %reldir%/libnccl.map

check_PROGRAMS += %reldir%/test-nccl-standin
%canon_reldir%_test_nccl_standin_SOURCES = %reldir%/test-nccl-standin.c
%canon_reldir%_test_nccl_standin_CPPFLAGS = $(AM_CPPFLAGS) \
	-I$(top_srcdir)/runtime/core/interpose
%canon_reldir%_test_nccl_standin_LDADD = %reldir%/libnccl.la cuda-standin/libcuda.la \
	$(PTHREAD_LIBS)
# A plain executable (no libtool wrapper): the test script picks the libraries.
%canon_reldir%_test_nccl_standin_LDFLAGS = $(AM_LDFLAGS) -no-install

TESTS += %reldir%/test-nccl-standin.sh
EXTRA_DIST += %reldir%/test-nccl-standin.sh %reldir%/README.md %reldir%/libnccl.map

nccl-standin: %reldir%/libnccl.la cuda-standin/libcuda.la
.PHONY: nccl-standin
