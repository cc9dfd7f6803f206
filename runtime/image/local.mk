# The checkpoint image: manifest, checksums, signature, the checkpoint root.
noinst_LTLIBRARIES += libgkimage.la
libgkimage_la_SOURCES = \
	%reldir%/image.h \
	%reldir%/ckptname.h \
	%reldir%/checksum.c \
	%reldir%/smallfile.c \
	%reldir%/manifest.c \
	%reldir%/manifest_write.c \
	%reldir%/manifest_read.c \
	%reldir%/sign.c \
	%reldir%/verify.c \
	%reldir%/store.c \
	%reldir%/chain.c \
	%reldir%/setfile.c %reldir%/setfile.h \
	%reldir%/stepset.c %reldir%/stepset.h
libgkimage_la_CFLAGS = $(AM_CFLAGS) $(JSON_C_CFLAGS) $(MUNGE_CFLAGS) $(XXHASH_CFLAGS) \
	$(LIBCRYPTO_CFLAGS) -fvisibility=hidden
libgkimage_la_LIBADD = $(JSON_C_LIBS) $(MUNGE_LIBS) $(XXHASH_LIBS) $(LIBCRYPTO_LIBS) $(PTHREAD_LIBS)

# The step's set records (setfile), a leaf that calls nothing but the C
# library, again for the SPANK plugin and the container hook: built without
# the sanitizers, as libgkcommon-plugin (runtime/common/local.mk).
noinst_LTLIBRARIES += libgkimage-plugin.la
libgkimage_plugin_la_SOURCES = %reldir%/setfile.c %reldir%/setfile.h
libgkimage_plugin_la_CFLAGS = $(WARN_CFLAGS) -fvisibility=hidden

# criu/SEAL, the seal of a transparent checkpoint (seal.h): written by
# gpuckpt-shepherd, checked by it, by `gpuckpt verify` and by gpuckpt-stage,
# none of which needs the others. A library of its own: libgpuckpt.so takes
# the whole of libgkimage and never reads a seal, so it does not carry one
# (nor the seal's 1 MiB read buffer per thread).
noinst_LTLIBRARIES += libgkseal.la
libgkseal_la_SOURCES = %reldir%/seal.c %reldir%/seal.h
libgkseal_la_CFLAGS = $(AM_CFLAGS) $(JSON_C_CFLAGS) -fvisibility=hidden
libgkseal_la_LIBADD = libgkimage.la $(JSON_C_LIBS)

# The format, specified (checked by tests/image/manifest-schema.sh).
EXTRA_DIST += %reldir%/FORMAT.md %reldir%/manifest.schema.json
