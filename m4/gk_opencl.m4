# GK_CHECK_OPENCL: the OpenCL headers and ICD loader (Debian: ocl-icd-opencl-dev,
# OpenCL.pc), for the runtime's OpenCL interposition (runtime/core/interpose/
# opencl.c) and its tests (tests/opencl/, which run on pocl). Optional: without
# them the OpenCL part is left out and its tests skip, saying why, unless the
# user asked for it with --with-opencl.
AC_DEFUN([GK_CHECK_OPENCL], [
  AC_ARG_WITH([opencl],
    [AS_HELP_STRING([--with-opencl], [interpose the OpenCL API @<:@default: if found@:>@])],
    [], [with_opencl=check])
  gk_have_opencl=no
  AS_IF([test "x$with_opencl" != xno], [
    PKG_CHECK_MODULES([OPENCL], [OpenCL], [gk_have_opencl=yes],
      [OPENCL_CFLAGS=; OPENCL_LIBS=-lOpenCL; gk_have_opencl=maybe])
    gk_save_CPPFLAGS=$CPPFLAGS
    gk_save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $OPENCL_CFLAGS -DCL_TARGET_OPENCL_VERSION=300"
    LIBS="$LIBS $OPENCL_LIBS"
    AC_MSG_CHECKING([that an OpenCL program (clCreateSubBuffer) links])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <CL/cl.h>]],
      [[cl_buffer_region r = {0, 0}; return clCreateSubBuffer(0, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, 0) != 0;]])],
      [AC_MSG_RESULT([yes]); gk_have_opencl=yes], [AC_MSG_RESULT([no]); gk_have_opencl=no])
    CPPFLAGS=$gk_save_CPPFLAGS
    LIBS=$gk_save_LIBS
    AS_IF([test "x$gk_have_opencl" = xno && test "x$with_opencl" = xyes],
      [AC_MSG_ERROR([--with-opencl: no OpenCL headers and ICD loader found: install the Debian package ocl-icd-opencl-dev])])
  ])
  AS_IF([test "x$gk_have_opencl" = xyes],
    [AC_DEFINE([HAVE_OPENCL], [1], [The OpenCL API is interposed])])
  AC_SUBST([OPENCL_CFLAGS])
  AC_SUBST([OPENCL_LIBS])
  AM_CONDITIONAL([HAVE_OPENCL], [test "x$gk_have_opencl" = xyes])
])
