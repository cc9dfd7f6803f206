# libgpuckpt.so: interposition of the CUDA driver, placement of device memory,
# quiesce, dump, restore, triggers and the application interface.
lib_LTLIBRARIES += libgpuckpt.la
libgpuckpt_la_SOURCES = %reldir%/api.c
libgpuckpt_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
libgpuckpt_la_LIBADD = libgkimage.la libgkcommon.la $(HWLOC_LIBS) $(PTHREAD_LIBS) -ldl
libgpuckpt_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 \
	-Wl,--version-script=$(srcdir)/%reldir%/libgpuckpt.map
EXTRA_DIST += %reldir%/libgpuckpt.map
