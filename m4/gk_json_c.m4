# GK_CHECK_JSON_C: json-c, for checkpoint manifests (0.15 for json_tokener_get_parse_end,
# which says where a malformed manifest goes wrong).
AC_DEFUN([GK_CHECK_JSON_C], [
  PKG_CHECK_MODULES([JSON_C], [json-c >= 0.15], [],
    [AC_MSG_ERROR([json-c not found ($JSON_C_PKG_ERRORS): install the Debian package libjson-c-dev])])
])
