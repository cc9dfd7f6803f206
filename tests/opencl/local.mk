# OpenCL (docs/opencl.md): the record of OpenCL objects on its own, the
# OpenCL concern in the pipeline (opencl-transparent.sh), and programs on
# pocl checkpointed in application mode and restored onto another OpenCL
# device (opencl-app.sh). Without OpenCL headers (configure) the
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
# The OpenCL concern in the pipeline, the runtime linked in as test-pipeline
# links it (opencl-transparent.sh).
check_PROGRAMS += %reldir%/test-cltransparent
%canon_reldir%_test_cltransparent_SOURCES = %reldir%/test-cltransparent.c
%canon_reldir%_test_cltransparent_CFLAGS = $(AM_CFLAGS) $(OPENCL_CFLAGS)
%canon_reldir%_test_cltransparent_LDADD = $(runtime_test_pipeline_LDADD) $(OPENCL_LIBS)
%canon_reldir%_test_cltransparent_DEPENDENCIES = $(top_builddir)/runtime/libgkcore.la
%canon_reldir%_test_cltransparent_LDFLAGS = $(runtime_test_pipeline_LDFLAGS)
# An OpenCL program that knows nothing of gpuckpt (opencl-criu.sh).
check_PROGRAMS += %reldir%/prog-clloop
%canon_reldir%_prog_clloop_SOURCES = %reldir%/prog-clloop.c
%canon_reldir%_prog_clloop_CFLAGS = $(AM_CFLAGS) $(OPENCL_CFLAGS)
%canon_reldir%_prog_clloop_LDADD = $(OPENCL_LIBS)
endif
TESTS += %reldir%/opencl-transparent.sh
EXTRA_DIST += %reldir%/opencl-transparent.sh
TESTS += %reldir%/opencl-app.sh
EXTRA_DIST += %reldir%/opencl-app.sh
# Transparent mode with a real CRIU (the trixie root's, in CI's check-slurm):
# an OpenCL program under the shepherd, checkpointed half-way and restored.
TESTS += %reldir%/opencl-criu.sh
EXTRA_DIST += %reldir%/opencl-criu.sh
# A public OpenCL program (CLBlast's test, from Debian), unmodified, through
# transparent mode with a real CRIU (opencl-public.sh): in the roots.
TESTS += %reldir%/opencl-public.sh
EXTRA_DIST += %reldir%/opencl-public.sh %reldir%/public-fetch.sh
# OpenCL objects made anew on another device in a running process (the move a
# transparent restore makes after CRIU): opencl-move.sh runs test-clmove.
if HAVE_OPENCL
check_PROGRAMS += %reldir%/test-clmove
%canon_reldir%_test_clmove_SOURCES = %reldir%/test-clmove.c
%canon_reldir%_test_clmove_CFLAGS = $(AM_CFLAGS) $(OPENCL_CFLAGS)
%canon_reldir%_test_clmove_LDADD = $(runtime_test_pipeline_LDADD) $(OPENCL_LIBS)
%canon_reldir%_test_clmove_DEPENDENCIES = $(top_builddir)/runtime/libgkcore.la
%canon_reldir%_test_clmove_LDFLAGS = $(runtime_test_pipeline_LDFLAGS)
endif
TESTS += %reldir%/opencl-move.sh
EXTRA_DIST += %reldir%/opencl-move.sh
# Transparent mode onto another OpenCL device after CRIU's restore (the
# roots' CRIU 4; skips elsewhere, saying why).
TESTS += %reldir%/opencl-criu-move.sh
EXTRA_DIST += %reldir%/opencl-criu-move.sh
