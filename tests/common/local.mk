# Unit tests (TAP) of runtime/common: settings, sizes for people, the event line.
GK_COMMON_TESTS = \
	%reldir%/test-settings \
	%reldir%/test-sizefmt \
	%reldir%/test-events
TESTS += $(GK_COMMON_TESTS)
check_PROGRAMS += $(GK_COMMON_TESTS)

%canon_reldir%_test_settings_SOURCES = %reldir%/test-settings.c
%canon_reldir%_test_settings_LDADD = $(GK_UNIT_LIBS)

%canon_reldir%_test_sizefmt_SOURCES = %reldir%/test-sizefmt.c
%canon_reldir%_test_sizefmt_LDADD = $(GK_UNIT_LIBS)

%canon_reldir%_test_events_SOURCES = %reldir%/test-events.c
%canon_reldir%_test_events_LDADD = $(GK_UNIT_LIBS)

# A job's folder walked by root: bounded whatever the user planted (issue 24's review).
TESTS += %reldir%/test-jobdir
check_PROGRAMS += %reldir%/test-jobdir
%canon_reldir%_test_jobdir_SOURCES = %reldir%/test-jobdir.c
%canon_reldir%_test_jobdir_LDADD = $(GK_UNIT_LIBS)

# settings.def as text, for tests/man/settings-table.sh.
check_PROGRAMS += %reldir%/settings-dump
%canon_reldir%_settings_dump_SOURCES = %reldir%/settings-dump.c
