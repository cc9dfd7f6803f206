# GK_COMPILER_FLAGS: warnings set once for the whole tree; --enable-werror (CI)
# and --enable-sanitizers (AddressSanitizer + UndefinedBehaviorSanitizer, used by
# the tests).
AC_DEFUN([GK_COMPILER_FLAGS], [
  WARN_CFLAGS="-Wall -Wextra -Wshadow -Wformat=2 -Wmissing-prototypes -Wstrict-prototypes -Wno-unused-parameter"
  AC_ARG_ENABLE([werror],
    [AS_HELP_STRING([--enable-werror], [treat compiler warnings as errors (CI does)])],
    [], [enable_werror=no])
  AS_IF([test "x$enable_werror" = xyes], [WARN_CFLAGS="$WARN_CFLAGS -Werror"])
  AC_ARG_ENABLE([sanitizers],
    [AS_HELP_STRING([--enable-sanitizers], [build with AddressSanitizer and UndefinedBehaviorSanitizer])],
    [], [enable_sanitizers=no])
  SAN_CFLAGS=""; SAN_LDFLAGS=""
  AS_IF([test "x$enable_sanitizers" = xyes], [
    SAN_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
    SAN_LDFLAGS="-fsanitize=address,undefined"
    # A library preloaded into a program that was not built with ASan needs the
    # ASan runtime loaded first; the tests put this in front of LD_PRELOAD.
    ASAN_RUNTIME=$($CC -print-file-name=libasan.so)
  ])
  AC_SUBST([WARN_CFLAGS])
  AC_SUBST([SAN_CFLAGS])
  AC_SUBST([SAN_LDFLAGS])
  AC_SUBST([ASAN_RUNTIME])
  AM_CONDITIONAL([SANITIZERS], [test "x$enable_sanitizers" = xyes])
])
