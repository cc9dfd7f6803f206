# Transparent mode (README.md): gpuckpt-shepherd (root, one per task). Installed in
# $(pkglibexecdir) = $(libexecdir)/gpuckpt, 0755, never setuid. The modules
# are a library of their own so that the unit tests link them.
noinst_LTLIBRARIES += libgkshepherd.la
libgkshepherd_la_SOURCES = \
	%reldir%/shepherd.h \
	%reldir%/options.c \
	%reldir%/cudackpt.c \
	%reldir%/criu.c \
	%reldir%/tree.c \
	%reldir%/hold.c \
	%reldir%/watchdog.c \
	%reldir%/links.c \
	%reldir%/stdio.c \
	%reldir%/sock.c \
	%reldir%/proc_parts.c \
	%reldir%/checkpoint.c \
	%reldir%/restore_tree.c \
	%reldir%/events.c \
	%reldir%/supervise.c
libgkshepherd_la_CFLAGS = $(AM_CFLAGS) $(JSON_C_CFLAGS)
libgkshepherd_la_LIBADD = libgkseal.la libgkimage.la libgkcommon.la $(JSON_C_LIBS)

pkglibexec_PROGRAMS += gpuckpt-shepherd
gpuckpt_shepherd_SOURCES = %reldir%/shepherd_main.c
# GK_LIBEXECDIR means $(libexecdir), as in spank-plugin/Makefile.am, where the
# plugin finds $(GK_LIBEXECDIR)/gpuckpt/gpuckpt-shepherd the same way.
gpuckpt_shepherd_CPPFLAGS = $(AM_CPPFLAGS) \
	-DGK_LIBEXECDIR='"$(libexecdir)"' 
gpuckpt_shepherd_LDADD = libgkshepherd.la
EXTRA_DIST += %reldir%/README.md
