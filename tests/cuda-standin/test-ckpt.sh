#!/bin/bash
# test-ckpt.sh - runs test-ckpt against the stand-in's build with the
# checkpoint API (ckpt/libcuda.so.1), not whatever driver the machine has.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

prog=$top_builddir/tests/cuda-standin/test-ckpt
lib=$top_builddir/tests/cuda-standin/ckpt/.libs
gk_need_built "$prog" "$lib/libcuda.so.1"
unset CUDA_VISIBLE_DEVICES GPUCKPT_STANDIN_GPUS GPUCKPT_STANDIN_MEMORY GPUCKPT_STANDIN_CC \
	GPUCKPT_STANDIN_TRACE GPUCKPT_STANDIN_CKPT_DIR
LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0} \
	exec "$prog"
