# GK_CHECK_HWLOC: hwloc, to put staging buffers on the GPU's NUMA node.
AC_DEFUN([GK_CHECK_HWLOC], [
  PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [],
    [AC_MSG_ERROR([hwloc not found ($HWLOC_PKG_ERRORS): install the Debian package libhwloc-dev])])
])
