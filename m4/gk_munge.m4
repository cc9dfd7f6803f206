# GK_CHECK_MUNGE: libmunge, to sign checkpoint manifests for their owner.
# No .pc file ships with munge on Debian, so this is a header and link test.
AC_DEFUN([GK_CHECK_MUNGE], [
  AC_ARG_WITH([munge],
    [AS_HELP_STRING([--with-munge=DIR], [Munge prefix @<:@default: /usr@:>@])],
    [], [with_munge=yes])
  AS_IF([test "x$with_munge" = xno],
    [AC_MSG_ERROR([gpuckpt needs Munge to sign checkpoints: install the Debian package libmunge-dev])])
  AS_IF([test "x$with_munge" != xyes],
    [MUNGE_CFLAGS="-I$with_munge/include"; MUNGE_LIBS="-L$with_munge/lib -lmunge"],
    [MUNGE_CFLAGS=""; MUNGE_LIBS="-lmunge"])
  gk_save_CPPFLAGS=$CPPFLAGS; gk_save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $MUNGE_CFLAGS"; LIBS="$MUNGE_LIBS $LIBS"
  AC_CHECK_HEADER([munge.h], [],
    [AC_MSG_ERROR([munge.h not found: install the Debian package libmunge-dev])])
  AC_MSG_CHECKING([for munge_encode in -lmunge])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <munge.h>]],
      [[char *c; return munge_encode(&c, 0, 0, 0);]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([cannot link with libmunge: install the Debian package libmunge-dev])])
  CPPFLAGS=$gk_save_CPPFLAGS; LIBS=$gk_save_LIBS
  AC_SUBST([MUNGE_CFLAGS])
  AC_SUBST([MUNGE_LIBS])
])
