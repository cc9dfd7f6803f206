#!/bin/bash
# standin.sh - the GPU scenarios that also run without a GPU: heat-drv (CUDA
# driver API) on the host-memory driver stand-in, with its kernels from
# heat_kernels_host.so, through prepare / checkpoint / verify, several
# checkpoints in one run, restore on another (emulated) GPU and a corrupted
# checkpoint; and route-drv's allocations in the runtime's range. Then
# gpu-slack, whose kernels read outside its allocations (as srad_v2 does):
# with the runtime's guards the reads land on mapped memory through a
# checkpoint and a restore, and a read beyond any guard breaks the context,
# which the checkpoint then names. The same scenario code as run.sh
# (scenario.sh); the checksums differ from a GPU's, so runs are only compared
# with runs on the stand-in.

. "$top_srcdir/tests/lib/helpers.sh"
. "$top_srcdir/tests/gpu/scenario.sh"

HEAT=$top_builddir/examples/heat/heat-drv
HEAT_MODULE=$top_builddir/examples/heat/.libs/heat_kernels_host.so
GPU_DIR=$top_builddir/tests/gpu
SLACK=$GPU_DIR/gpu-slack
SLACK_MODULE=$GPU_DIR/.libs/slack_kernels_host.so
# Images of 2 MiB, a whole granule: a read past the last one's end leaves the
# block (a size that is not would end inside its own rounded-up extent).
SLACK_CMD=("$SLACK" --module "$SLACK_MODULE" --edges all --size 524288 --steps 300
	--report-every 10)
SLACK_TESTS=8
SC_TIMEOUT=120
SC_WAIT=60
CMD=("$HEAT" --module "$HEAT_MODULE" --size 96 --steps 300 --report-every 10)
TABLES=("$GPU_DIR/gpu-tables" --size 256 --steps 300 --report-every 10)
HASH_MODULE=$top_builddir/tests/cuda-standin/modules/.libs/hash_kernel_host.so

TOTAL=$((SC_SCENARIO_TESTS + SC_MULTI_TESTS + SC_OTHER_GPU_TESTS + SC_CORRUPT_TESTS +
	SC_ROUTE_TESTS + SC_SCENARIO_TESTS + SC_BACKGROUND_TESTS + SC_INCREMENT_TESTS + SLACK_TESTS))
tap_plan "$TOTAL"

gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$HEAT_MODULE" "$HASH_MODULE" "${TABLES[0]}" \
	"$SLACK" "$SLACK_MODULE" "$GK_RUNTIME"

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

# slack_allocs FILE: the "alloc NAME ADDRESS BYTES" lines of a gpu-slack run.
slack_allocs() { grep '^gpu-slack: alloc ' "$1"; }

# The reference is a run under the runtime: natively on the stand-in the
# allocations have no neighbours at all, and the first out-of-bounds read
# faults (that is what the stand-in's kernels check; on a GPU, run.sh starts
# from the native run).
sc_start gpu-slack.reference runtime -- "${SLACK_CMD[@]}" --delay-ms 0
sc_wait_exit
SC_REF=$(sc_checksum gpu-slack "$SC_OUT")
ref_allocs=$(slack_allocs "$SC_OUT")
if [ "$SC_STATUS" = 0 ] && [ -n "$SC_REF" ] && [ "$(wc -l <<<"$ref_allocs")" = 6 ]; then
	tap_ok "gpu-slack: under the runtime, 512-byte reads before and after each of its 6 allocations, first and last included, do not fault (checksum $SC_REF)"
else
	tap_not_ok "gpu-slack: under the runtime, reads before and after its allocations do not fault (exit status $SC_STATUS)"
	sc_diag
fi
sc_start gpu-slack.other-gpu runtime CUDA_VISIBLE_DEVICES=2 -- "${SLACK_CMD[@]}" --steps 1
sc_wait_exit
if [ "$SC_STATUS" = 0 ] && [ "$(slack_allocs "$SC_OUT")" = "$ref_allocs" ]; then
	tap_ok "gpu-slack: the same requests get the same addresses on another GPU"
else
	tap_not_ok "gpu-slack: the same requests get the same addresses on another GPU (exit status $SC_STATUS)"
	tap_diag "reference: $ref_allocs"
	sc_diag
fi
sc_checkpoint gpu-slack gpu-slack "$SC_LOGDIR/gpu-slack.ckpt" -- "${SLACK_CMD[@]}"
sc_restore gpu-slack gpu-slack "$SC_LOGDIR/gpu-slack.ckpt" "$SC_SIGNAL_AT" -- "${SLACK_CMD[@]}"
if [ "$(slack_allocs "$SC_OUT")" = "$ref_allocs" ]; then
	tap_ok "gpu-slack: the restored run got every allocation back at its address"
else
	tap_not_ok "gpu-slack: the restored run got every allocation back at its address"
	tap_diag "reference: $ref_allocs"
	sc_diag
fi

# A read 3 MiB before each array is beyond any guard: the kernel faults, the
# context keeps CUDA_ERROR_ILLEGAL_ADDRESS, and the program (which, like
# srad, checks nothing) runs on. The checkpoint on SIGTERM must say so once,
# not fail half-way through its staging.
dir=$SC_LOGDIR/gpu-slack.broken.ckpt
mkdir -p "$dir"
sc_start gpu-slack.broken runtime GPUCKPT_DIR="$dir" -- "${SLACK_CMD[@]}" --slack 3145728 \
	--keep-going --delay-ms "$SC_DELAY"
if sc_wait_line "^gpu-slack: step $SC_SIGNAL_AT\$"; then
	kill -TERM "$SC_PID"
	sc_wait_exit
fi
sc_stop
said=$(grep -c "checkpoint: $dir: the program's CUDA context is broken (CUDA_ERROR_ILLEGAL_ADDRESS): no checkpoint possible" "$SC_ERR")
others=$(grep '^gpuckpt: ' "$SC_ERR" | grep -v "context is broken\|SIGTERM received\|no checkpoint taken on SIGTERM\|ends as it would" | grep -ci "error\|fail\|cannot")
if [ "$SC_STATUS" = 143 ] && [ "$said" = 1 ] && [ "$others" = 0 ] &&
	grep -q "^gpu-slack: .*CUDA_ERROR_ILLEGAL_ADDRESS; going on" "$SC_ERR"; then
	tap_ok "gpu-slack: a broken context (a read beyond the guards) at SIGTERM: one line says the context is broken (CUDA_ERROR_ILLEGAL_ADDRESS) and no checkpoint is possible; the run ends by SIGTERM"
else
	tap_not_ok "gpu-slack: a broken context at SIGTERM gives one clear line and the run ends by SIGTERM (exit status $SC_STATUS, lines saying so: $said, other error lines: $others)"
	sc_diag
fi
if [ -z "$(ls -A "$dir" | grep -vx gpuckpt.events)" ]; then
	tap_ok "gpu-slack: nothing was written for the broken context"
else
	tap_not_ok "gpu-slack: nothing was written for the broken context"
	tap_diag "$(ls -la "$dir")"
fi
# Background and incremental checkpoints of a mostly static state, with the
# stand-in's host copy of the hash kernel.
SC_RUNTIME+=(GPUCKPT_HASH_MODULE="$HASH_MODULE")
SC_SNAPSHOT=512M
sc_scenario gpu-tables gpu-tables "${TABLES[@]}"
sc_background gpu-tables gpu-tables "${TABLES[@]}"
sc_increments gpu-tables gpu-tables "${TABLES[@]}"

sc_summary
