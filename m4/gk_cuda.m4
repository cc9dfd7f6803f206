# GK_CHECK_CUDA: the CUDA toolkit's headers (cuda.h) and, optionally, nvcc.
# The runtime only needs cuda.h at build time: it opens libcuda.so.1 at run time,
# so that a task without a GPU driver still starts. nvcc builds the GPU tests
# and the CUDA examples; without it those are left out and `make check-gpu` says so.
AC_DEFUN([GK_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit prefix @<:@default: /usr/local/cuda@:>@])],
    [gk_cuda_explicit=yes], [with_cuda=/usr/local/cuda; gk_cuda_explicit=no])
  AS_IF([test "x$with_cuda" = xno],
    [AC_MSG_ERROR([gpuckpt cannot be built without the CUDA toolkit headers (cuda.h)])])
  CUDA_PREFIX=$with_cuda
  CUDA_CPPFLAGS="-I$CUDA_PREFIX/include"
  gk_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"
  AC_CHECK_HEADER([cuda.h], [],
    [AC_MSG_ERROR([cuda.h not found under $CUDA_PREFIX/include: install the CUDA toolkit (NVIDIA's cuda-toolkit packages) or point --with-cuda=DIR at it])])
  AC_MSG_CHECKING([that cuda.h is CUDA 12.0 or later])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <cuda.h>
#if CUDA_VERSION < 12000
#error too old
#endif]], [])], [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no]); AC_MSG_ERROR([gpuckpt needs the CUDA 12.0 or later headers (cuGetProcAddress_v2, stream-ordered allocation)])])
  CPPFLAGS=$gk_save_CPPFLAGS
  AC_PATH_PROG([NVCC], [nvcc], [], [$CUDA_PREFIX/bin$PATH_SEPARATOR$PATH])
  AS_IF([test -z "$NVCC"],
    [AC_MSG_WARN([nvcc not found: the GPU tests and CUDA examples will not be built])])
  # nvcc runs a host C++ compiler (g++); without one it fails on every file,
  # so one that cannot compile is left out the same way, saying why.
  AS_IF([test -n "$NVCC"], [
    AC_MSG_CHECKING([that $NVCC can compile (it needs g++)])
    gk_cu=conftest_nvcc.cu
    echo 'int main(void) { return 0; }' >$gk_cu
    AS_IF([$NVCC -c -o conftest_nvcc.o $gk_cu >conftest_nvcc.err 2>&1],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       AC_MSG_WARN([$NVCC cannot compile ($(head -n 1 conftest_nvcc.err)): install g++; the GPU tests and CUDA examples will not be built])
       NVCC=])
    rm -f $gk_cu conftest_nvcc.o conftest_nvcc.err])
  AC_ARG_VAR([NVCC_ARCH], [nvcc -arch value for GPU tests and examples (default: sm_90)])
  AS_IF([test -z "$NVCC_ARCH"], [NVCC_ARCH=sm_90])
  AC_SUBST([CUDA_PREFIX])
  AC_SUBST([CUDA_CPPFLAGS])
  AM_CONDITIONAL([HAVE_NVCC], [test -n "$NVCC"])
])
