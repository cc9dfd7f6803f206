# Logging, settings, whole reads and writes (io) and sizes for people
# (sizefmt), used by every part of the runtime and by the tool;
# folders opened safely as root (fsafe) and the tests' pause points (testhook),
# used by the root-run programs.
# The leaves that call nothing but the C library: how root opens folders
# (fsafe), whole reads and writes (io), the event format, the job summary and
# the job folders (events, jobstats, jobdir).
GK_COMMON_LEAVES = \
	%reldir%/fsafe.c %reldir%/fsafe.h \
	%reldir%/io.c %reldir%/io.h \
	%reldir%/events.c %reldir%/events.h \
	%reldir%/jobstats.c %reldir%/jobstats.h \
	%reldir%/jobdir.c %reldir%/jobdir.h

noinst_LTLIBRARIES += libgkcommon.la
libgkcommon_la_SOURCES = \
	%reldir%/clock.h \
	%reldir%/contract.h \
	%reldir%/error.h \
	%reldir%/export.h \
	%reldir%/shepherd_protocol.h \
	$(GK_COMMON_LEAVES) \
	%reldir%/log.c %reldir%/log.h \
	%reldir%/settings.c %reldir%/settings.h \
	%reldir%/settings.def %reldir%/settings_env.h \
	%reldir%/sizefmt.c %reldir%/sizefmt.h \
	%reldir%/procstat.c %reldir%/procstat.h \
	%reldir%/testhook.c %reldir%/testhook.h \
	%reldir%/user.c %reldir%/user.h
libgkcommon_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden

# The leaves again, for what Slurm's daemons load (the SPANK plugin) and for
# the container hook: built without the sanitizers (Slurm's programs are
# not), so that they link the same sources rather than compiling them again.
noinst_LTLIBRARIES += libgkcommon-plugin.la
libgkcommon_plugin_la_SOURCES = $(GK_COMMON_LEAVES)
libgkcommon_plugin_la_CFLAGS = $(WARN_CFLAGS) -fvisibility=hidden
