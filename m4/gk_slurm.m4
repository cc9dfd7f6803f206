# GK_CHECK_SLURM: Slurm's SPANK header, for the plugin. The plugin must be built
# against the same Slurm major release it loads into, so the version is recorded.
AC_DEFUN([GK_CHECK_SLURM], [
  AC_ARG_WITH([slurm],
    [AS_HELP_STRING([--with-slurm=DIR], [Slurm prefix @<:@default: /usr@:>@])],
    [], [with_slurm=yes])
  AS_IF([test "x$with_slurm" = xno],
    [AC_MSG_ERROR([gpuckpt's SPANK plugin needs slurm/spank.h: install the Debian package libslurm-dev])])
  AS_IF([test "x$with_slurm" != xyes], [SLURM_CPPFLAGS="-I$with_slurm/include"], [SLURM_CPPFLAGS=""])
  gk_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $SLURM_CPPFLAGS"
  AC_CHECK_HEADER([slurm/spank.h], [],
    [AC_MSG_ERROR([slurm/spank.h not found: install the Debian package libslurm-dev])])
  AC_MSG_CHECKING([Slurm version])
  AC_COMPUTE_INT([gk_slurm_version], [SLURM_VERSION_NUMBER], [#include <slurm/slurm_version.h>],
    [AC_MSG_ERROR([cannot read SLURM_VERSION_NUMBER from slurm/slurm_version.h])])
  SLURM_VERSION_MAJOR=$(printf '%d.%02d' $(( gk_slurm_version >> 16 )) $(( (gk_slurm_version >> 8) & 255 )))
  AC_MSG_RESULT([$SLURM_VERSION_MAJOR])
  CPPFLAGS=$gk_save_CPPFLAGS
  # The plugin's epilog sets the job's AdminComment with scontrol.
  AC_PATH_PROG([SCONTROL], [scontrol], [/usr/bin/scontrol], [$with_slurm/bin$PATH_SEPARATOR$PATH])
  AC_SUBST([SLURM_CPPFLAGS])
  AC_SUBST([SLURM_VERSION_MAJOR])
])
