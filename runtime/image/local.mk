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
