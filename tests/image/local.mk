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

# Unit tests (TAP) of runtime/image: checksums, manifest, signature, the
# checkpoint root (store.c, its transparent side too), a step's sets.
GK_IMAGE_TESTS = \
	%reldir%/test-checksum \
	%reldir%/test-manifest \
	%reldir%/test-sign \
	%reldir%/test-store \
	%reldir%/test-store-transparent \
	%reldir%/test-stepset
TESTS += $(GK_IMAGE_TESTS)
check_PROGRAMS += $(GK_IMAGE_TESTS)

%canon_reldir%_test_checksum_SOURCES = %reldir%/test-checksum.c
%canon_reldir%_test_checksum_LDADD = $(GK_UNIT_LIBS)

%canon_reldir%_test_manifest_SOURCES = %reldir%/test-manifest.c
%canon_reldir%_test_manifest_CFLAGS = $(AM_CFLAGS) $(JSON_C_CFLAGS)
%canon_reldir%_test_manifest_LDADD = $(GK_UNIT_LIBS) $(JSON_C_LIBS)

%canon_reldir%_test_sign_SOURCES = %reldir%/test-sign.c
%canon_reldir%_test_sign_LDADD = $(GK_UNIT_LIBS)

%canon_reldir%_test_store_SOURCES = %reldir%/test-store.c
%canon_reldir%_test_store_LDADD = $(GK_UNIT_LIBS)

%canon_reldir%_test_store_transparent_SOURCES = %reldir%/test-store-transparent.c
%canon_reldir%_test_store_transparent_LDADD = $(GK_UNIT_LIBS)

%canon_reldir%_test_stepset_SOURCES = %reldir%/test-stepset.c
%canon_reldir%_test_stepset_LDADD = $(GK_UNIT_LIBS)

# runtime/image/manifest.schema.json (FORMAT.md) against the manifests of real
# checkpoints, the fuzz corpus and inspect --json; skips without python3-jsonschema.
TESTS += %reldir%/manifest-schema.sh
EXTRA_DIST += %reldir%/manifest-schema.sh %reldir%/manifest-schema.py

# What the unit tests of runtime/image share (header-only, like tap.h).
EXTRA_DIST += %reldir%/fixture-manifest.h %reldir%/fixture-root.h
