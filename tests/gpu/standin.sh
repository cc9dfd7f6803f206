#!/bin/bash
# standin.sh - the GPU scenarios that also run without a GPU: heat-drv (CUDA
# driver API) on the host-memory driver stand-in, with its kernels from
# heat_kernels_host.so, through prepare / checkpoint / verify, several
# checkpoints in one run, restore on another (emulated) GPU and a corrupted
# checkpoint; and route-drv's allocations in the runtime's range. The same
# scenario code as run.sh (scenario.sh); the checksums differ from a GPU's, so
# runs are only compared with runs on the stand-in.

. "$top_srcdir/tests/lib/helpers.sh"
. "$top_srcdir/tests/gpu/scenario.sh"

HEAT=$top_builddir/examples/heat/heat-drv
HEAT_MODULE=$top_builddir/examples/heat/.libs/heat_kernels_host.so
GPU_DIR=$top_builddir/tests/gpu
SC_TIMEOUT=120
SC_WAIT=60
CMD=("$HEAT" --module "$HEAT_MODULE" --size 96 --steps 300 --report-every 10)

TOTAL=$((SC_SCENARIO_TESTS + SC_MULTI_TESTS + SC_OTHER_GPU_TESTS + SC_CORRUPT_TESTS +
	SC_ROUTE_TESTS))
tap_plan "$TOTAL"

gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$HEAT_MODULE" "$GK_RUNTIME"

gk_scratch
SC_LOGDIR=$GK_SCRATCH
SC_NATIVE=(LD_LIBRARY_PATH="$GK_STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}")
SC_RUNTIME=("${SC_NATIVE[@]}" LD_PRELOAD="$(gk_preload)" GPUCKPT_LOG_LEVEL=info)

sc_scenario heat-drv heat-drv "${CMD[@]}"
ckpt=$SC_CKPT
sc_multi heat-drv heat-drv "${CMD[@]}"

env "${SC_NATIVE[@]}" "$GPU_DIR/gpu-probe" >"$SC_LOGDIR/gpu-probe.out" 2>&1
ndev=$(sed -n 's/^devices=//p' "$SC_LOGDIR/gpu-probe.out")
if [ "${ndev:-0}" -ge 2 ]; then
	sc_other_gpu heat-drv heat-drv 0 1 "${CMD[@]}"
else
	sc_skip_n "$SC_OTHER_GPU_TESTS" "the stand-in shows ${ndev:-no} device(s), restore on another needs two"
	sc_diag "$SC_LOGDIR/gpu-probe.out"
fi

sc_corrupt heat-drv heat-drv "$ckpt" "${CMD[@]}"
sc_route route-drv route-drv "$GPU_DIR/route-drv"

sc_summary
