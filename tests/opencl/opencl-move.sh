#!/bin/bash
# opencl-move.sh - runs test-clmove (OpenCL objects made anew on another
# device in a running process, the runtime linked in) on pocl with its
# pthread and basic devices and GPUCKPT_OPENCL_MOVABLE=1. Skips, saying why,
# where the build has no OpenCL.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

prog=$top_builddir/tests/opencl/test-clmove
if ! grep -q '^#define HAVE_OPENCL 1' "$top_builddir/config.h"; then
	tap_plan 1
	tap_skip "built without OpenCL (configure --without-opencl, or no OpenCL headers: install ocl-icd-opencl-dev)"
	exit 0
fi
gk_need_built "$prog" "$GK_STANDIN_DIR/libcuda.so.1"
gk_scratch
mkdir -p "$GK_SCRATCH/ckpt"
unset GPUCKPT_SHEPHERD
GPUCKPT_DIR=$GK_SCRATCH/ckpt GPUCKPT_LOG_LEVEL=info GPUCKPT_OPENCL_MOVABLE=1 \
	POCL_DEVICES="pthread basic" POCL_CACHE_DIR=$GK_SCRATCH/pocl-cache \
	with_standin "$prog" 2>"$GK_SCRATCH/log"
rc=$?
[ "$rc" -ne 0 ] && tail -n 40 "$GK_SCRATCH/log" | sed 's/^/# /'
exit "$rc"
