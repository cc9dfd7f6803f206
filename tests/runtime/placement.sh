#!/bin/bash
# placement.sh - runs test-placement (the arena's placement policy, with the
# runtime linked in) on the CUDA driver stand-in with two GPUs of 64 MiB.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

prog=$top_builddir/tests/runtime/test-placement
gk_need_built "$prog" "$GK_STANDIN_DIR/libcuda.so.1"
gk_scratch
unset CUDA_VISIBLE_DEVICES GPUCKPT_STANDIN_TRACE GPUCKPT_SHEPHERD GPUCKPT_VA_BASE GPUCKPT_VA_SIZE \
	GPUCKPT_RESTORE
GPUCKPT_DIR=$GK_SCRATCH/ckpt GPUCKPT_LOG_LEVEL=info GPUCKPT_STANDIN_GPUS=2 \
	GPUCKPT_STANDIN_MEMORY=64M with_standin "$prog" 2>"$GK_SCRATCH/log"
rc=$?
if [ "$rc" -ne 0 ]; then
	tail -n 40 "$GK_SCRATCH/log" | sed 's/^/# /'
fi
exit "$rc"
