#!/bin/bash
# ipc-transparent.sh - legacy CUDA IPC served by the runtime
# (runtime/core/interpose/ipc.c) is refused by transparent checkpoints, on
# both sides, since the driver's checkpoint cannot save imported memory: an
# exporter under gpuckpt (prog-unaware --ipc-export) and an importer
# (--ipc-open), each in turn under `gpuckpt-shepherd run` (the stand-in and a
# fake CRIU, as tests/shepherd/agent.sh), SIGTERM to the shepherd: the
# runtime refuses, naming the IPC memory, the shepherd says the process
# holds memory shared with another, and nothing is written. Both run with
# GPUCKPT_CUDA_IPC unset: by default the runtime serves such IPC.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
unset GPUCKPT_CUDA_IPC
SHEP=$top_builddir/runtime/gpuckpt-shepherd
UNAWARE=$top_builddir/tests/runtime/prog-unaware
PLAN=4
tap_plan $PLAN
gk_scratch
gk_need_built "$SHEP" "$UNAWARE" "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME"
if [ "$(id -u)" -ne 0 ]; then
	for _ in $(seq $PLAN); do tap_skip "needs root (the shepherd refuses to run without it)"; done
	exit 0
fi
FAKE=$GK_SCRATCH/criu
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "Version: 4.1"; exit 0; }\nexit 1\n' >"$FAKE"
chmod 0755 "$FAKE"
D=$GK_SCRATCH/ckpt
H=$GK_SCRATCH/handle
wait_for() { for _ in $(seq 300); do grep -qs "$1" "$2" && return 0; sleep 0.1; done; return 1; }
# under_shepherd NAME ARGS...: prog-unaware ARGS under the shepherd, in the
# background ($! is the shepherd), until the program is ready.
under_shepherd() {
	local name=$1
	shift
	env "${GK_STANDIN_ENV[@]}" GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$FAKE" --dir "$D" \
		--uid 0 --gid 0 -- env "${GK_RUNTIME_ENV[@]}" GPUCKPT_LOG_LEVEL=info "$UNAWARE" "$@" \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	wait_for ready "$GK_SCRATCH/$name.out"
}

# The importer: the exporter runs on its own, the importer under the shepherd.
env "${GK_RUNTIME_ENV[@]}" "$UNAWARE" --ipc-export "$H" >"$GK_SCRATCH/exp.out" 2>&1 &
exp=$!
wait_for ready "$GK_SCRATCH/exp.out"
under_shepherd imp --ipc-open "$H"
spid_imp=$!
kill -TERM $spid_imp
wait $spid_imp
status=$?
kill $exp 2>/dev/null
wait $exp 2>/dev/null
check "the importer is refused a transparent checkpoint, naming the IPC memory (status $status)" \
	grep -q "transparent: refused, no checkpoint taken: this process holds device memory of another process opened through gpuckpt's CUDA IPC" \
	"$GK_SCRATCH/imp.err"
check "... the shepherd names it, and nothing is written" \
	eval 'grep -q "transparent: no checkpoint of pid [0-9]*: pid [0-9]* holds device memory shared with another process" "$GK_SCRATCH/imp.err" &&
		test -z "$(ls -A "$D" 2>/dev/null | grep -vx gpuckpt.events)"'

# The exporter under the shepherd, once another process opened its memory.
rm -rf "$D" "$H"
under_shepherd exp2 --ipc-export "$H"
spid_exp=$!
env "${GK_RUNTIME_ENV[@]}" "$UNAWARE" --ipc-open "$H" >"$GK_SCRATCH/imp2.out" 2>&1 &
imp=$!
wait_for ready "$GK_SCRATCH/imp2.out"
kill -TERM $spid_exp
wait $spid_exp
status=$?
kill $imp 2>/dev/null
wait $imp 2>/dev/null
check "the exporter whose memory another process opened is refused too (status $status)" \
	eval 'grep -q ready "$GK_SCRATCH/imp2.out" &&
		grep -q "transparent: refused, no checkpoint taken: this process holds device memory another process opened through CUDA IPC" "$GK_SCRATCH/exp2.err"'
check "... and nothing is written" test -z "$(ls -A "$D" 2>/dev/null | grep -vx gpuckpt.events)"
tap_done
