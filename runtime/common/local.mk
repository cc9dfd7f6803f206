# Logging and settings, used by every part of the runtime and by the tool.
noinst_LTLIBRARIES += libgkcommon.la
libgkcommon_la_SOURCES = \
	%reldir%/clock.h \
	%reldir%/log.c %reldir%/log.h \
	%reldir%/settings.c %reldir%/settings.h \
	%reldir%/events.c %reldir%/events.h \
	%reldir%/jobstats.c %reldir%/jobstats.h \
	%reldir%/jobdir.c %reldir%/jobdir.h \
	%reldir%/procstat.c %reldir%/procstat.h
libgkcommon_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
