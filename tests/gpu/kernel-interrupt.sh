#!/bin/bash
# kernel-interrupt.sh - a long kernel marked interruptible (gpuckpt_kernel.cuh)
# on a GPU: gpu-kernel runs one kernel of about 30 s (a random-number stream
# per element, checked exactly on the host); SIGTERM comes at a random point
# inside it. In each mode (blocks: a check at the top of each block; loop: a
# persistent grid-stride loop, a check per round, positions saved; hydro:
# gpu-hydro, a hydrodynamics-like kernel after LULESH's per-zone updates, in
# loop mode, its zones checked bit for bit against the host's integration):
#
#   1. the program ends by SIGTERM (143), after its checkpoint;
#   2. the runtime's log names the interrupted kernel and its executed blocks
#      (loop mode: threads that finished), fewer than the total;
#   3. the kernel never finished in that run;
#   4. the checkpoint was committed (ckpt.000001) after the interruption;
#   5. restored, the program resumes at the kernel's step, and the log says
#      the kernel resumed from its record with the same count executed;
#   6. the result is the uninterrupted one: every element equals the host's
#      closed form (an element skipped or computed from a half state is a
#      mismatch), exit 0; hydro: every zone ran all its cycles, and a spread
#      sample of 2048 zones equals the host's integration in every bit.
# And: cudaLaunchCooperativeKernel of the marked kernel is refused, by name
# (the CUDA runtime's launch reaches the driver with the kernel's CUkernel,
# not the CUfunction given to gpuckpt_kernel_create: the runtime must see
# that they are the same kernel, or this point fails, as it did on an H200
# until it did).
#
# Nothing about time is asserted; the diagnostics print the times (signal to
# exit, the runtime's own), which benchmarks/kernels/run.sh measures. The
# kernels last GK_KERNEL_SECONDS (blocks, default 30), GK_LOOP_SECONDS
# (default 20) and GK_HYDRO_SECONDS (default 25) s: about 2 1/2 minutes in
# all. Every point SKIPs where there is no GPU.
#
#   make check-gpu-kernels      (or: make -C tests check-gpu-kernels)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
RT=$top_builddir/runtime/.libs/libgpuckpt.so
PROG=$top_builddir/tests/gpu/gpu-kernel
HYDRO=$top_builddir/tests/gpu/gpu-hydro
SECONDS_KERNEL=${GK_KERNEL_SECONDS:-30}
declare -A SECS=([blocks]=$SECONDS_KERNEL [loop]=${GK_LOOP_SECONDS:-20} [hydro]=${GK_HYDRO_SECONDS:-25})
PLAN=22
tap_plan $PLAN
gk_scratch

if ! nvidia-smi -L >/dev/null 2>&1; then
	for _ in $(seq $PLAN); do tap_skip "no GPU here (nvidia-smi -L failed)"; done
	exit 0
fi
gk_need_built "$RT" "$PROG" "$HYDRO"

# wait_line FILE RE [TENTHS]: until FILE has a line matching RE.
wait_line() { for _ in $(seq "${3:-600}"); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
show() { tap_diag "$(tail -n 12 "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err" 2>/dev/null)"; }
expect() {
	local desc=$1 name=$2; shift 2
	if "$@"; then tap_ok "$desc"; else tap_not_ok "$desc"; show "$name"; fi
}
line_of() { grep -n "$2" "$1" | head -1 | cut -d: -f1; }

env GPUCKPT_DIR="$GK_SCRATCH/coop" LD_PRELOAD="$RT" "$PROG" --mode blocks --coop \
	>"$GK_SCRATCH/coop.out" 2>"$GK_SCRATCH/coop.err"
expect "a cooperative launch of the marked kernel is refused (cudaErrorNotSupported), naming it" coop \
	sh -c "grep -q 'cooperative launch: cudaErrorNotSupported' '$GK_SCRATCH/coop.out' &&
		grep -q 'launch: lcg_blocks: .* of a kernel marked interruptible is refused' '$GK_SCRATCH/coop.err'"

for mode in blocks loop hydro; do
	S=${SECS[$mode]}
	if [ $mode = hydro ]; then
		K=hydro_loop P=$HYDRO TAG=gpu-hydro ARGS=(--seconds "$S")
	else
		K=lcg_$mode P=$PROG TAG=gpu-kernel ARGS=(--mode $mode --seconds "$S")
	fi
	D=$GK_SCRATCH/$mode
	run=$mode-term
	env GPUCKPT_DIR="$D" GPUCKPT_LOG_LEVEL=info LD_PRELOAD="$RT" \
		"$P" "${ARGS[@]}" \
		>"$GK_SCRATCH/$run.out" 2>"$GK_SCRATCH/$run.err" &
	pid=$!
	wait_line "$GK_SCRATCH/$run.out" "kernel started" 900
	# A random point inside the kernel: 10% to 80% of its length.
	at=$(awk -v s="$S" -v r="$RANDOM" 'BEGIN { printf "%.2f", s * (0.1 + 0.7 * r / 32767) }')
	sleep "$at"
	t0=$(date +%s.%N)
	kill -TERM $pid
	wait $pid
	status=$?
	t1=$(date +%s.%N)
	tap_diag "$mode: SIGTERM $at s into the kernel; the process ended $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') s later"
	tap_diag "$(grep -h "interrupted for a checkpoint\|checkpoint: draining\|ckpt.000001: wrote" "$GK_SCRATCH/$run.err")"
	expect "$mode: SIGTERM inside the kernel: checkpoint, then the program ends by SIGTERM ($status)" $run \
		test "$status" -eq 143
	ex=$(sed -n "s/.*kernel $K: interrupted for a checkpoint .*: \([0-9]*\) of \([0-9]*\) [a-z]* executed.*/\1 \2/p" \
		"$GK_SCRATCH/$run.err" | head -1)
	expect "$mode: the log names the interrupted kernel ($K) and its executed units, fewer than all (${ex:-none})" $run \
		test -n "$ex" -a "${ex% *}" -lt "${ex#* }"
	expect "$mode: ... and the kernel never finished in that run" $run \
		test "$(grep -c 'kernel done' "$GK_SCRATCH/$run.out")" = 0
	li=$(line_of "$GK_SCRATCH/$run.err" "interrupted for a checkpoint")
	lw=$(line_of "$GK_SCRATCH/$run.err" "ckpt.000001: wrote")
	expect "$mode: the checkpoint was committed after the interruption (ckpt.000001)" $run \
		test -f "$D/ckpt.000001/manifest.json" -a -n "$li" -a -n "$lw" -a "${li:-0}" -lt "${lw:-0}"

	run=$mode-restore
	env GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto GPUCKPT_LOG_LEVEL=info LD_PRELOAD="$RT" \
		"$P" "${ARGS[@]}" \
		>"$GK_SCRATCH/$run.out" 2>"$GK_SCRATCH/$run.err"
	status=$?
	tap_diag "$(grep -h "kernel done\|resumed" "$GK_SCRATCH/$run.out" "$GK_SCRATCH/$run.err")"
	expect "$mode: restored, it resumes at the kernel's step" $run \
		grep -q "^$TAG: resumed from step 0" "$GK_SCRATCH/$run.out"
	expect "$mode: ... the kernel from its record: ${ex% *} of ${ex#* } already executed, only the rest runs" $run \
		grep -q "kernel $K: resumed from its record: ${ex% *} of ${ex#* } [a-z]* executed" "$GK_SCRATCH/$run.err"
	expect "$mode: ... and ends with the uninterrupted result: $([ $mode = hydro ] && echo "all zones' cycles, 2048 zones bit for bit" || echo "every element checked") ($status)" $run \
		sh -c "test $status -eq 0 && grep -q '^$TAG: result: ok n=[0-9]* .*mismatches=0 ' '$GK_SCRATCH/$run.out'"
done
tap_done
