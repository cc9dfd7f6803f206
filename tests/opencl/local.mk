# OpenCL (docs/opencl.md): the record of OpenCL objects on its own, and
# programs on pocl checkpointed in application mode and restored onto another
# OpenCL device (opencl-app.sh). Without OpenCL headers (configure) the
# programs are not built and opencl-app.sh skips, saying why.
check_PROGRAMS += %reldir%/test-clrecord
%canon_reldir%_test_clrecord_SOURCES = %reldir%/test-clrecord.c
%canon_reldir%_test_clrecord_LDADD = $(top_builddir)/runtime/libgkclrec.la
TESTS += %reldir%/test-clrecord

if HAVE_OPENCL
check_PROGRAMS += %reldir%/prog-clsteps
%canon_reldir%_prog_clsteps_SOURCES = %reldir%/prog-clsteps.c
%canon_reldir%_prog_clsteps_CFLAGS = $(AM_CFLAGS) $(OPENCL_CFLAGS)
%canon_reldir%_prog_clsteps_LDADD = $(top_builddir)/runtime/libgpuckpt.la $(OPENCL_LIBS)
endif
TESTS += %reldir%/opencl-app.sh
EXTRA_DIST += %reldir%/opencl-app.sh
