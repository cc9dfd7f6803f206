#!/bin/bash
# pipeline.sh - runs test-pipeline (the checkpoint pipeline, phase by phase,
# with the runtime linked in) on the CUDA driver stand-in, with a checkpoint
# folder of its own. The settings are read when the program loads, so they
# are set here.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

prog=$top_builddir/tests/runtime/test-pipeline
HASH=$top_builddir/tests/cuda-standin/modules/.libs/hash_kernel_host.so

gk_need_built "$prog" "$HASH" "$GK_STANDIN_DIR/libcuda.so.1"
gk_scratch
unset CUDA_VISIBLE_DEVICES GPUCKPT_STANDIN_GPUS GPUCKPT_STANDIN_MEMORY GPUCKPT_STANDIN_CC \
	GPUCKPT_STANDIN_TRACE GPUCKPT_SHEPHERD
# The log (stderr) kept for a failure's diagnosis.
GPUCKPT_DIR=$GK_SCRATCH/ckpt GPUCKPT_LOG_LEVEL=info GPUCKPT_HASH_MODULE=$HASH \
	GPUCKPT_CHUNK_SIZE=1M GPUCKPT_SNAPSHOT_MEMORY=64M with_standin "$prog" 2>"$GK_SCRATCH/log"
rc=$?
if [ "$rc" -ne 0 ]; then
	tail -n 40 "$GK_SCRATCH/log" | sed 's/^/# /'
fi
exit "$rc"
