# Unit tests (TAP): checksums, manifest, signature, checkpoint root, settings,
# sizes for people.
GK_UNIT_LIBS = $(top_builddir)/runtime/libgkimage.la $(top_builddir)/runtime/libgkcommon.la
GK_UNIT_TESTS = \
	%reldir%/test-checksum \
	%reldir%/test-manifest \
	%reldir%/test-sign \
	%reldir%/test-store \
	%reldir%/test-store-transparent \
	%reldir%/test-stepset \
	%reldir%/test-settings \
	%reldir%/test-sizefmt \
	%reldir%/test-events \
	%reldir%/test-slurm-cmd
TESTS += $(GK_UNIT_TESTS)
check_PROGRAMS += $(GK_UNIT_TESTS)

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

%canon_reldir%_test_settings_SOURCES = %reldir%/test-settings.c
%canon_reldir%_test_settings_LDADD = $(GK_UNIT_LIBS)

%canon_reldir%_test_sizefmt_SOURCES = %reldir%/test-sizefmt.c
%canon_reldir%_test_sizefmt_LDADD = $(GK_UNIT_LIBS)

%canon_reldir%_test_events_SOURCES = %reldir%/test-events.c
%canon_reldir%_test_events_LDADD = $(GK_UNIT_LIBS)

# The tool's reading of `scontrol show job -o` (runtime/cli/slurm_cmd.c).
%canon_reldir%_test_slurm_cmd_SOURCES = %reldir%/test-slurm-cmd.c $(top_srcdir)/runtime/cli/slurm_cmd.c
%canon_reldir%_test_slurm_cmd_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/runtime/cli
