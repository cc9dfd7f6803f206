# Logging, settings, whole reads and writes (io) and sizes for people
# (sizefmt), used by every part of the runtime and by the tool;
# folders opened safely as root (fsafe) and the tests' pause points (testhook),
# used by the root-run programs.
noinst_LTLIBRARIES += libgkcommon.la
libgkcommon_la_SOURCES = \
	%reldir%/clock.h \
	%reldir%/contract.h \
	%reldir%/error.h \
	%reldir%/export.h \
	%reldir%/shepherd_protocol.h \
	%reldir%/fsafe.c %reldir%/fsafe.h \
	%reldir%/io.c %reldir%/io.h \
	%reldir%/log.c %reldir%/log.h \
	%reldir%/settings.c %reldir%/settings.h \
	%reldir%/settings.def %reldir%/settings_env.h \
	%reldir%/sizefmt.c %reldir%/sizefmt.h \
	%reldir%/events.c %reldir%/events.h \
	%reldir%/jobstats.c %reldir%/jobstats.h \
	%reldir%/jobdir.c %reldir%/jobdir.h \
	%reldir%/procstat.c %reldir%/procstat.h \
	%reldir%/testhook.c %reldir%/testhook.h \
	%reldir%/user.c %reldir%/user.h
libgkcommon_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
