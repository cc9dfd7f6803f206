#!/bin/bash
# capture.sh - checkpoints asked for while the program has a CUDA stream
# capture open, on the CUDA driver stand-in. XLA captures its launches into
# CUDA graphs ("command buffers") on its own threads; on an H200 a JAX job
# checkpointed in the middle of a capture lost it: the drain's
# cuCtxSynchronize is refused while a stream of the context captures, and
# the refusal invalidates the capture (the program then failed at
# cuStreamEndCapture's graph). The runtime must let the capturing thread
# run to the end of its capture, start no new one while the gate is closed,
# and drain only once none is open (runtime/core/interpose/gate.h).
#
# prog-capture (not linked against libgpuckpt; its main thread reaches a
# checkpoint point every millisecond, bound weakly) captures K launches
# into a graph per step on a worker thread, pausing between launches, then
# instantiates, launches and waits for the graph. Under the runtime, SIGUSR1
# ("checkpoint and continue") every 0.2 s while it runs. For each capture
# mode (global, relaxed, thread-local):
#   1. every call succeeds, cuStreamEndCapture included (the program exits 0;
#      an invalidated capture would end it with the error's name);
#   2. the checksum of the buffer is the one computed on the host (no
#      captured launch lost or run twice);
#   3. at least MIN_CKPTS checkpoints were committed (the runtime's
#      "checkpoint: DIR/ckpt.N: wrote" line);
#   4. at least one was asked for while a capture was open: the runtime's
#      "checkpoint: waited T s for M open stream capture(s) to end".
# And the same program without the runtime ends with the same checksum.
# The stand-in's cuCtxSynchronize refuses and invalidates captures as the
# driver documents (test-standin.c checks that: the negative control); its
# capture is emulated (launches recorded, a graph replayed on the host).
# The stand-in is no evidence for a GPU: tests/gpu/capture.sh is.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/runtime/prog-capture
MODULE=$top_builddir/tests/runtime/.libs/kern_capture_host.so
MIN_CKPTS=3
MODES=(global relaxed thread)
tap_plan $((4 * ${#MODES[@]} + 2))
gk_scratch
gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$PROG" "$MODULE" "$GK_RUNTIME"
export GPUCKPT_LOG_LEVEL=info
unset CUDA_VISIBLE_DEVICES GPUCKPT_STANDIN_TRACE
ARGS=(--module "$MODULE" --steps 30 --launches 8 --pause-ms 10)

checksum() { sed -n 's/^done: checksum=\(0x[0-9a-f]*\) expected=\(0x[0-9a-f]*\)$/\1 \2/p' "$1"; }
good() { local c; c=$(checksum "$1"); [ -n "$c" ] && [ "${c% *}" = "${c#* }" ]; }
committed() { grep -c 'checkpoint: .*/ckpt\.[0-9]*: wrote ' "$GK_SCRATCH/$1.err"; }
# ended_ok NAME STATUS: exit 0, the last step's capture ended, no failed call.
ended_ok() {
	[ "$2" -eq 0 ] && grep -q '^done: ' "$GK_SCRATCH/$1.out" &&
		! grep -q '^prog-capture: ' "$GK_SCRATCH/$1.out"
}

for mode in "${MODES[@]}"; do
	name=$mode
	env "${GK_RUNTIME_ENV[@]}" GPUCKPT_DIR="$GK_SCRATCH/$name" "$PROG" "${ARGS[@]}" --mode "$mode" \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	pid=$!
	# SIGUSR1 before the first checkpoint point would end the program (it
	# is not checkpoint-aware until then): "ready" comes after that point.
	gk_wait_for "$name" "^ready" 20
	while kill -0 "$pid" 2>/dev/null; do
		kill -USR1 "$pid" 2>/dev/null
		sleep 0.2
	done
	wait "$pid"
	status=$?
	n=$(committed "$name")
	gk_expect "$mode: every capture ended with CUDA_SUCCESS, the program exits 0 ($status)" "$name" \
		ended_ok "$name" "$status"
	gk_expect "$mode: the checksum is the host's ($(checksum "$GK_SCRATCH/$name.out"))" "$name" \
		good "$GK_SCRATCH/$name.out"
	gk_expect "$mode: at least $MIN_CKPTS checkpoints committed ($n)" "$name" \
		test "$n" -ge $MIN_CKPTS
	gk_expect "$mode: one was asked for while a capture was open: the runtime waited for it" \
		"$name" grep -q 'open stream capture' "$GK_SCRATCH/$name.err"
done

with_standin "$PROG" "${ARGS[@]}" >"$GK_SCRATCH/plain.out" 2>"$GK_SCRATCH/plain.err"
status=$?
gk_expect "without the runtime: every capture ended with CUDA_SUCCESS ($status)" plain \
	ended_ok plain "$status"
# The same arguments: the host's checksum is the one points 2 compare with.
gk_expect "... and the checksum is the host's, as under the runtime ($(checksum "$GK_SCRATCH/plain.out"))" \
	plain good "$GK_SCRATCH/plain.out"
tap_done
