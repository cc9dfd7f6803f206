# The checkpoint image and the gpuckpt tool, from the outside: a synthetic
# checkpoint writer, the tool on good images, and bad input refused.
check_PROGRAMS += %reldir%/mkimage
%canon_reldir%_mkimage_SOURCES = %reldir%/mkimage.c
%canon_reldir%_mkimage_LDADD = $(top_builddir)/runtime/libgkimage.la \
	$(top_builddir)/runtime/libgkcommon.la

TESTS += %reldir%/cli.sh %reldir%/bad-input.sh
EXTRA_DIST += %reldir%/cli.sh %reldir%/bad-input.sh
# criu/SEAL (runtime/image/seal.c) on its own, linked without the shepherd;
# its root and munged parts skip, saying so, without them.
TESTS += %reldir%/test-seal
check_PROGRAMS += %reldir%/test-seal
%canon_reldir%_test_seal_SOURCES = %reldir%/test-seal.c
%canon_reldir%_test_seal_LDADD = $(top_builddir)/runtime/libgkseal.la \
	$(top_builddir)/runtime/libgkimage.la $(top_builddir)/runtime/libgkcommon.la $(MUNGE_LIBS)
