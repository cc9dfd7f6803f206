# libgpuckpt.so: interposition of the CUDA driver, placement of device memory,
# quiesce, dump, restore, triggers and the application interface.
# The placement data structure and the copy order on their own, so that tests
# can exercise them.
noinst_LTLIBRARIES += libgkplace.la
libgkplace_la_SOURCES = %reldir%/intervals.c %reldir%/intervals.h %reldir%/order.c %reldir%/order.h
libgkplace_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden

lib_LTLIBRARIES += libgpuckpt.la
libgpuckpt_la_SOURCES = \
	%reldir%/hooks.def \
	%reldir%/driver.c %reldir%/driver.h \
	%reldir%/handlers.h \
	%reldir%/interpose.c \
	%reldir%/gate.c %reldir%/gate.h \
	%reldir%/arena.c %reldir%/arena.h \
	%reldir%/memory.c \
	%reldir%/track.c %reldir%/track.h \
	%reldir%/trigger.c %reldir%/trigger.h \
	%reldir%/transfer.c %reldir%/transfer.h \
	%reldir%/io.c %reldir%/io.h \
	%reldir%/numa.c %reldir%/numa.h \
	%reldir%/dump.c %reldir%/dump.h \
	%reldir%/agent.c %reldir%/agent.h \
	%reldir%/restore.c %reldir%/restore.h \
	%reldir%/coord.c %reldir%/coord.h \
	%reldir%/api.c %reldir%/api.h \
	%reldir%/runtime.c %reldir%/runtime.h
libgpuckpt_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) -fvisibility=hidden
libgpuckpt_la_LIBADD = libgkplace.la libgkimage.la libgkcommon.la $(HWLOC_LIBS) $(PTHREAD_LIBS) -ldl
libgpuckpt_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 -no-undefined -Wl,--no-undefined -Wl,-Bsymbolic-functions \
	-Wl,--version-script=$(srcdir)/%reldir%/libgpuckpt.map
EXTRA_DIST += %reldir%/libgpuckpt.map
