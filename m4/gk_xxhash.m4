# GK_CHECK_XXHASH: libxxhash, for the per-chunk checksums of checkpoint data
# (XXH3 for images of format 3, XXH64 to keep verifying older ones). 0.8 is
# the release that made XXH3 stable. Where the library has its x86 dispatcher
# (XXH3_64bits_dispatch: AVX2/AVX-512 chosen at run time), that is used.
AC_DEFUN([GK_CHECK_XXHASH], [
  PKG_CHECK_MODULES([XXHASH], [libxxhash >= 0.8], [],
    [AC_MSG_ERROR([libxxhash not found ($XXHASH_PKG_ERRORS): install the Debian package libxxhash-dev])])
  gk_save_CFLAGS=$CFLAGS; gk_save_LIBS=$LIBS
  CFLAGS="$CFLAGS $XXHASH_CFLAGS"; LIBS="$XXHASH_LIBS $LIBS"
  AC_MSG_CHECKING([for XXH3_64bits_dispatch in libxxhash])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <xxh_x86dispatch.h>]],
      [[return (int)XXH3_64bits_dispatch("", 0);]])],
    [AC_MSG_RESULT([yes])
     AC_DEFINE([HAVE_XXH3_DISPATCH], [1], [libxxhash has the run-time x86 dispatcher])],
    [AC_MSG_RESULT([no])])
  CFLAGS=$gk_save_CFLAGS; LIBS=$gk_save_LIBS
])
