#!/bin/bash
# capture.sh - checkpoints asked for while a CUDA stream capture is open, on
# a GPU. On an H200 a JAX job checkpointed while XLA captured its launches
# into a CUDA graph lost the capture: the drain's cuCtxSynchronize is
# refused (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) while a stream of the
# context captures, which invalidates the capture, and the program failed
# after the checkpoint ("Failed to destroy CUDA graph", a failed cuBLAS
# launch). The runtime must let a capture open at the checkpoint run to its
# end, begin no new one while the gate is closed, and drain after.
#
# gpu-capture (CUDA runtime API, not linked against libgpuckpt; its main
# thread reaches a checkpoint point every millisecond) captures K launches
# of a kernel into a graph per step on a worker thread, with a host pause
# between launches, then instantiates, launches and waits for the graph.
# Under the runtime (LD_PRELOAD), SIGUSR1 ("checkpoint and continue") every
# 0.2 s while it runs. For each capture mode (global, relaxed,
# thread-local):
#   1. every call succeeds, cudaStreamEndCapture included (exit 0; an
#      invalidated capture ends it with the error's name);
#   2. the checksum of the buffer is the one computed on the host;
#   3. at least MIN_CKPTS checkpoints were committed ("checkpoint:
#      DIR/ckpt.N: wrote");
#   4. at least one was asked for while a capture was open: the runtime's
#      "checkpoint: waited T s for M open stream capture(s) to end".
# And without the runtime the same checksum. The stand-in's version of this
# test is tests/runtime/capture.sh. Every point SKIPs, with the reason,
# where there is no GPU, or no nvcc to build gpu-capture.
#
#   make check-gpu-capture      (or: make -C tests check-gpu-capture)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
RT=$top_builddir/runtime/.libs/libgpuckpt.so
PROG=$top_builddir/tests/gpu/gpu-capture
MIN_CKPTS=3
MODES=(global relaxed thread)
PLAN=$((4 * ${#MODES[@]} + 2))
tap_plan $PLAN
gk_scratch

skip_all() { for _ in $(seq $PLAN); do tap_skip "$1"; done; exit 0; }
nvidia-smi -L >/dev/null 2>&1 || skip_all "no GPU here (nvidia-smi -L failed)"
if [ ! -e "$PROG" ] && ! command -v "${NVCC:-nvcc}" >/dev/null 2>&1 &&
	[ ! -x /usr/local/cuda/bin/nvcc ]; then
	skip_all "no nvcc: gpu-capture is not built"
fi
gk_need_built "$RT" "$PROG"
export GPUCKPT_LOG_LEVEL=info
ARGS=(--steps 30 --launches 8 --pause-ms 10)

checksum() { sed -n 's/^done: checksum=\(0x[0-9a-f]*\) expected=\(0x[0-9a-f]*\)$/\1 \2/p' "$1"; }
good() { local c; c=$(checksum "$1"); [ -n "$c" ] && [ "${c% *}" = "${c#* }" ]; }
committed() { grep -c 'checkpoint: .*/ckpt\.[0-9]*: wrote ' "$GK_SCRATCH/$1.err"; }
ended_ok() {
	[ "$2" -eq 0 ] && grep -q '^done: ' "$GK_SCRATCH/$1.out" &&
		! grep -q '^gpu-capture: ' "$GK_SCRATCH/$1.out"
}

for mode in "${MODES[@]}"; do
	name=$mode
	env GPUCKPT_DIR="$GK_SCRATCH/$name" LD_PRELOAD="$RT" "$PROG" "${ARGS[@]}" --mode "$mode" \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	pid=$!
	# Not before the program's first checkpoint point ("ready"): until then
	# it is not checkpoint-aware, and SIGUSR1 would end it.
	gk_wait_for "$name" "^ready" 60
	while kill -0 "$pid" 2>/dev/null; do
		kill -USR1 "$pid" 2>/dev/null
		sleep 0.2
	done
	wait "$pid"
	status=$?
	n=$(committed "$name")
	gk_expect "$mode: every capture ended with cudaSuccess, the program exits 0 ($status)" "$name" \
		ended_ok "$name" "$status"
	gk_expect "$mode: the checksum is the host's ($(checksum "$GK_SCRATCH/$name.out"))" "$name" \
		good "$GK_SCRATCH/$name.out"
	gk_expect "$mode: at least $MIN_CKPTS checkpoints committed ($n)" "$name" \
		test "$n" -ge $MIN_CKPTS
	gk_expect "$mode: one was asked for while a capture was open: the runtime waited for it" \
		"$name" grep -q 'open stream capture' "$GK_SCRATCH/$name.err"
	tap_diag "$mode: $(grep -c '^capture ended' "$GK_SCRATCH/$name.out") captures; $(grep 'open stream capture' "$GK_SCRATCH/$name.err" | head -3)"
done

"$PROG" "${ARGS[@]}" >"$GK_SCRATCH/plain.out" 2>"$GK_SCRATCH/plain.err"
status=$?
gk_expect "without the runtime: every capture ended with cudaSuccess ($status)" plain \
	ended_ok plain "$status"
# The same arguments: the host's checksum is the one points 2 compare with.
gk_expect "... and the checksum is the host's, as under the runtime ($(checksum "$GK_SCRATCH/plain.out"))" \
	plain good "$GK_SCRATCH/plain.out"
tap_done
