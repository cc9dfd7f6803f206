# AX_PTHREAD_LITE: POSIX threads through -pthread (glibc); enough for Linux, the
# only system gpuckpt targets.
AC_DEFUN([AX_PTHREAD_LITE], [
  PTHREAD_CFLAGS=-pthread
  PTHREAD_LIBS=-pthread
  AC_SUBST([PTHREAD_CFLAGS])
  AC_SUBST([PTHREAD_LIBS])
])
