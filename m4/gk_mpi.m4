# GK_CHECK_MPI: an MPI library (Open MPI's ompi-c.pc, or MPICH's mpich.pc), for
# libgpuckpt-mpi (the collective checkpoint point of gpuckpt_mpi.h), the MPI
# example and its tests. Optional: without it they are left out, unless the
# user asked for it with --with-mpi.
AC_DEFUN([GK_CHECK_MPI], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi], [build libgpuckpt-mpi and the MPI example @<:@default: if found@:>@])],
    [], [with_mpi=check])
  gk_have_mpi=no
  AS_IF([test "x$with_mpi" != xno], [
    PKG_CHECK_MODULES([MPI], [ompi-c], [gk_have_mpi=yes],
      [PKG_CHECK_MODULES([MPI], [mpich], [gk_have_mpi=yes], [gk_have_mpi=no])])
    AS_IF([test "x$gk_have_mpi" = xyes], [
      gk_save_CPPFLAGS=$CPPFLAGS
      gk_save_LIBS=$LIBS
      CPPFLAGS="$CPPFLAGS $MPI_CFLAGS"
      LIBS="$LIBS $MPI_LIBS"
      AC_MSG_CHECKING([that an MPI 3 program (MPI_Iallreduce) links])
      AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <mpi.h>]],
        [[MPI_Request r; int a = 0, b; return MPI_Iallreduce(&a, &b, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD, &r);]])],
        [AC_MSG_RESULT([yes])], [AC_MSG_RESULT([no]); gk_have_mpi=no])
      CPPFLAGS=$gk_save_CPPFLAGS
      LIBS=$gk_save_LIBS
    ])
    AS_IF([test "x$gk_have_mpi" = xno && test "x$with_mpi" = xyes],
      [AC_MSG_ERROR([--with-mpi: no MPI 3 library found: install the Debian package libopenmpi-dev])])
  ])
  AM_CONDITIONAL([HAVE_MPI], [test "x$gk_have_mpi" = xyes])
])
