#!/bin/bash
# plan.sh - runs test-plan (the plan, the change keys, the baseline and restore's plan, with the
# runtime linked in) on the CUDA driver stand-in, chunks of 1 MiB.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

prog=$top_builddir/tests/runtime/test-plan
gk_need_built "$prog" "$top_builddir/tests/cuda-standin/modules/.libs/hash_kernel_host.so" "$GK_STANDIN_DIR/libcuda.so.1"
gk_scratch
mkdir -m 700 "$GK_SCRATCH/ckpt"
HASH=$top_builddir/tests/cuda-standin/modules/.libs/hash_kernel_host.so
unset CUDA_VISIBLE_DEVICES GPUCKPT_STANDIN_TRACE GPUCKPT_SHEPHERD GPUCKPT_VA_BASE GPUCKPT_VA_SIZE \
	GPUCKPT_RESTORE
GPUCKPT_DIR=$GK_SCRATCH/ckpt GPUCKPT_LOG_LEVEL=info GPUCKPT_CHUNK_SIZE=1M GPUCKPT_INCREMENTS=3 \
	GPUCKPT_HASH_MODULE=$HASH GPUCKPT_STANDIN_MEMORY=64M with_standin "$prog" 2>"$GK_SCRATCH/log"
rc=$?
if [ "$rc" -ne 0 ]; then
	tail -n 40 "$GK_SCRATCH/log" | sed 's/^/# /'
fi
exit "$rc"
