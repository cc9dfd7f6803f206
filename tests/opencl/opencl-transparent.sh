#!/bin/bash
# opencl-transparent.sh - runs test-cltransparent (the OpenCL concern in the
# checkpoint pipeline, the runtime linked in) on pocl, with a checkpoint
# folder of its own. Skips, saying why, where the build has no OpenCL.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

prog=$top_builddir/tests/opencl/test-cltransparent
if ! grep -q '^#define HAVE_OPENCL 1' "$top_builddir/config.h"; then
	tap_plan 1
	tap_skip "built without OpenCL (configure --without-opencl, or no OpenCL headers: install ocl-icd-opencl-dev)"
	exit 0
fi
gk_need_built "$prog" "$GK_STANDIN_DIR/libcuda.so.1"
gk_scratch
unset GPUCKPT_SHEPHERD
GPUCKPT_DIR=$GK_SCRATCH/ckpt GPUCKPT_LOG_LEVEL=info POCL_DEVICES=pthread \
	POCL_CACHE_DIR=$GK_SCRATCH/pocl-cache with_standin "$prog" \
	2>"$GK_SCRATCH/log"
rc=$?
[ "$rc" -ne 0 ] && tail -n 40 "$GK_SCRATCH/log" | sed 's/^/# /'
exit "$rc"
