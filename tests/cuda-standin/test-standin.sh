#!/bin/bash
# test-standin.sh - runs test-standin against the stand-in libcuda.so.1 (not
# whatever driver the machine may have), with the stand-in's defaults: the
# caller's CUDA_VISIBLE_DEVICES (a Slurm job's, say) must not leak in.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

prog=$top_builddir/tests/cuda-standin/test-standin
module=$top_builddir/tests/cuda-standin/modules/.libs/test_kernels.so

for f in "$prog" "$module" "$GK_STANDIN_DIR/libcuda.so.1"; do
	if [ ! -e "$f" ]; then
		echo "1..1"
		echo "not ok 1 - $f is built (run make check)"
		exit 1
	fi
done

unset CUDA_VISIBLE_DEVICES GPUCKPT_STANDIN_GPUS GPUCKPT_STANDIN_MEMORY GPUCKPT_STANDIN_CC \
	GPUCKPT_STANDIN_TRACE
STANDIN_TEST_MODULE=$module with_standin "$prog"
