#!/bin/bash
# mig-caps.sh - a program that holds NVIDIA's MIG capability devices open, on
# a GPU that is not in MIG mode, is checkpointed transparently and restored
# with the uninterrupted run's checksum (issue 25, item 1).
#
# Why: NVML, which PyTorch, JAX and CuPy load, opens /dev/nvidia-caps/nvidia-cap1
# and cap2 on every machine. The shepherd once refused every such process as a
# MIG user ("pid N uses a MIG instance (/dev/nvidia-caps/nvidia-cap1 open)");
# it now asks the driver whether a GPU is a MIG instance. The program here is
# examples/unaware with nvml-hold.c preloaded, which initialises NVML at
# start-up and keeps it, as the frameworks do: the program holds the
# capability devices as they do, without a framework in the way. (Devices
# opened by hand instead, by a shell, are not NVML's: CRIU cannot dump such a
# character device, "Can't dump file 7 of that type [20400] (chr 241:1)".)
#
# Needs root (the shepherd runs as root; the GPU machine's root cannot dump
# another user's process), a GPU not in MIG mode, a /dev/nvidia-caps/ device
# to open, CRIU 4 (GK_CRIU, /usr/local/sbin/criu or the GPU machine's
# /opt/criu) and examples/unaware (configure found nvcc). Any of them missing:
# every point is a SKIP with the reason.
#
#   make -C build/tests check TESTS=gpu/mig-caps.sh     (check-gpu runs it too)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
RT=$top_builddir/runtime/.libs/libgpuckpt.so
UNAWARE=$top_builddir/examples/unaware/unaware
PLAN=4
tap_plan $PLAN
gk_scratch

why=
caps=$(ls /dev/nvidia-caps/nvidia-cap* 2>/dev/null | head -n 2)
if [ "$(id -u)" -ne 0 ]; then
	why="needs root (the shepherd does)"
elif ! nvidia-smi -L >/dev/null 2>&1; then
	why="no GPU here (nvidia-smi -L failed)"
elif nvidia-smi --query-gpu=mig.mode.current --format=csv,noheader 2>/dev/null | grep -q Enabled; then
	why="a GPU here is in MIG mode: this test is for a machine without MIG"
elif [ -z "$caps" ]; then
	why="no /dev/nvidia-caps/nvidia-cap* device to hold open"
elif [ ! -x "$UNAWARE" ]; then
	why="examples/unaware is not built (configure found no nvcc)"
elif ! gk_find_criu; then
	why=$CRIU_WHY
fi
if [ -n "$why" ]; then
	for _ in $(seq $PLAN); do tap_skip "$why"; done
	exit 0
fi
gk_need_built "$SHEP" "$RT"

ARGS=(--size 4000000 --steps 200 --report-every 10 --delay-ms 20)
sum() { sed -n 's/^unaware: done: .*checksum=\(0x[0-9a-f]*\)$/\1/p' "$1" | tail -n 1; }
"$UNAWARE" "${ARGS[@]}" --out "$GK_SCRATCH/ref.data" >"$GK_SCRATCH/ref.out" 2>&1
ref=$(sum "$GK_SCRATCH/ref.out")
tap_diag "reference (uninterrupted, no shepherd): ${ref:-none}; capability devices held: $(echo $caps)"

d=$GK_SCRATCH/ckpt out=$GK_SCRATCH/run.out log=$GK_SCRATCH/run.err
mkdir -p "$d"
HOLD=$GK_SCRATCH/nvml-hold.so
if ! ${CC:-cc} -shared -fPIC -o "$HOLD" "$top_srcdir/tests/gpu/nvml-hold.c" -ldl 2>"$GK_SCRATCH/cc.err"; then
	for _ in $(seq $PLAN); do tap_not_ok "nvml-hold.c does not build: $(head -n 2 "$GK_SCRATCH/cc.err")"; done
	exit 1
fi
GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$CRIU" --dir "$d" --uid 0 --gid 0 -- \
	env LD_PRELOAD="$RT:$HOLD" GPUCKPT_MODE=transparent "$UNAWARE" "${ARGS[@]}" \
	--out "$GK_SCRATCH/run.data" >"$out" 2>"$log" &
spid=$!
for _ in $(seq 600); do grep -q "^unaware: step 60$" "$out" 2>/dev/null && break; sleep 0.1; done
held=$(ls -l /proc/"$(pgrep -n -f "$UNAWARE")"/fd 2>/dev/null | grep -c nvidia-caps)
kill -TERM "$spid"
wait "$spid"
if grep -q "checkpoint ckpt\.[0-9]* committed" "$log" && [ "${held:-0}" -ge 1 ]; then
	tap_ok "a program holding $held capability device(s) open is checkpointed (no MIG here)"
else
	tap_not_ok "a program holding capability devices open is checkpointed (held: ${held:-0})"
	tap_diag "$(grep -E "MIG|no checkpoint|error" "$log" | tail -n 5)"
fi
if ! grep -q "uses a MIG instance" "$log"; then
	tap_ok "and no MIG refusal is logged"
else
	tap_not_ok "and no MIG refusal is logged"
	tap_diag "$(grep "MIG" "$log" | head -n 3)"
fi
GPUCKPT_LOG_LEVEL=info "$SHEP" restore --criu "$CRIU" --dir "$d" --uid 0 --gid 0 >>"$out" 2>>"$log"
status=$?
if [ "$status" = 0 ] && grep -q "restored ckpt" "$log"; then
	tap_ok "restored by CRIU and the driver, and ran to the end"
else
	tap_not_ok "restored by CRIU and the driver, and ran to the end (status $status)"
	tap_diag "$(tail -n 6 "$log")"
fi
got=$(sum "$out")
if [ -n "$ref" ] && [ "$got" = "$ref" ] && cmp -s "$GK_SCRATCH/ref.data" "$GK_SCRATCH/run.data"; then
	tap_ok "same checksum and output file as the uninterrupted run ($got)"
else
	tap_not_ok "same checksum and output file as the uninterrupted run ($got, want $ref)"
fi
tap_done
