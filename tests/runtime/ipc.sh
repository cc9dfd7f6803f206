#!/bin/bash
# Legacy CUDA IPC between two processes (tests/runtime/prog-ipc.c), on the
# CUDA driver stand-in: a parent exports a cuMemAlloc buffer
# (cuIpcGetMemHandle), a child opens it (cuIpcOpenMemHandle), and they take
# turns writing halves of it, each from what it read of the other's.
# Natively, the stand-in shares the pages between the processes. Under
# gpuckpt, the buffer is placed memory, which the runtime exports itself
# (runtime/core/interpose/ipc.c): the program must run with the native
# result instead of failing at cuIpcGetMemHandle. A checkpoint of either
# process is still refused, naming the IPC memory, and the run goes on to the
# same result (re-establishing IPC after a restore is not done yet).
. "${top_srcdir:-.}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/runtime/prog-ipc
tap_plan 8
gk_scratch
gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME" "$PROG"

sums() { sed -n 's/^prog-ipc: \(parent\|child\) sum //p' "$1" | sort | tr '\n' ' '; }

with_standin "$PROG" --steps 8 >"$GK_SCRATCH/native.out" 2>&1
rc=$?
ref=$(sums "$GK_SCRATCH/native.out")
check "natively on the stand-in, the child opens the parent's buffer and both finish (rc $rc)" \
	test "$rc" -eq 0 -a "$(wc -w <<<"$ref")" -eq 2
[ "$rc" -eq 0 ] || sed 's/^/# /' "$GK_SCRATCH/native.out"

with_runtime "$PROG" --steps 8 >"$GK_SCRATCH/rt.out" 2>&1
rc=$?
got=$(sums "$GK_SCRATCH/rt.out")
check "under gpuckpt the program runs (rc $rc): cuIpcGetMemHandle of placed memory is served" \
	test "$rc" -eq 0
[ "$rc" -eq 0 ] || sed 's/^/# /' "$GK_SCRATCH/rt.out"
check "... with the native checksums ($got)" test -n "$ref" -a "$got" = "$ref"
check "... and no error message" eval '! grep -q "\[gpuckpt\].*\(error\|ERROR\)" "$GK_SCRATCH/rt.out"'

D=$GK_SCRATCH/ckpt
with_runtime env GPUCKPT_DIR="$D" "$PROG" --steps 8 --checkpoint-at 3 >"$GK_SCRATCH/ck.out" 2>&1
rc=$?
got=$(sums "$GK_SCRATCH/ck.out")
check "a checkpoint asked for at step 3 in both processes: the run goes on (rc $rc)" \
	test "$rc" -eq 0
check "... the importer's checkpoint is refused, not written" \
	grep -q "prog-ipc: child checkpoint at step 3: 3 " "$GK_SCRATCH/ck.out"
check "... the exporter's too, since another process maps its memory" \
	grep -q "prog-ipc: parent checkpoint at step 3: 3 " "$GK_SCRATCH/ck.out"
check "... the refusal names the IPC memory, and the checksums are the native ones" \
	eval 'grep -q "opened through CUDA IPC" "$GK_SCRATCH/ck.out" && test -n "$ref" -a "$got" = "$ref"'
grep -v '^prog-ipc: \(parent\|child\) sum' "$GK_SCRATCH/ck.out" | head -20 | sed 's/^/# /'
tap_done
