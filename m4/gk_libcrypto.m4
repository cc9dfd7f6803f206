# GK_CHECK_LIBCRYPTO: OpenSSL's libcrypto, for the SHA-256 that a checkpoint's
# Munge signature covers (its EVP interface uses the CPU's SHA instructions).
AC_DEFUN([GK_CHECK_LIBCRYPTO], [
  PKG_CHECK_MODULES([LIBCRYPTO], [libcrypto >= 1.1], [],
    [AC_MSG_ERROR([libcrypto not found ($LIBCRYPTO_PKG_ERRORS): install the Debian package libssl-dev])])
])
