#!/bin/bash
# Legacy CUDA IPC between two processes (tests/runtime/prog-ipc.c), on the
# CUDA driver stand-in: a parent exports a cuMemAlloc buffer
# (cuIpcGetMemHandle), a child opens it (cuIpcOpenMemHandle), and they take
# turns writing halves of it, each from what it read of the other's.
# Natively, the stand-in shares the pages between the processes. Under
# gpuckpt, the buffer is placed memory, which the runtime exports itself
# (runtime/core/interpose/ipc.c): the program must run with the native
# result instead of failing at cuIpcGetMemHandle. Application mode: both
# checkpoint at step 3 and end; both restarted from their checkpoints, the
# setup exchanges a new handle, the child's mapping comes back at the address
# it had, and both finish with the uninterrupted run's checksums.
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
check "... and no message of the runtime about IPC, no CUDA error" \
	eval '! grep -q "^gpuckpt: .*ipc:\|CUDA_ERROR" "$GK_SCRATCH/rt.out"'

D=$GK_SCRATCH/ckpt
with_runtime env GPUCKPT_DIR="$D" "$PROG" --steps 8 --checkpoint-at 3 --exit-after-checkpoint \
	>"$GK_SCRATCH/ck.out" 2>&1
rc=$?
check "both processes checkpoint at step 3, the importer's and the exporter's part written (rc $rc)" \
	eval 'grep -q "prog-ipc: child checkpoint at step 3: 1 " "$GK_SCRATCH/ck.out" &&
		grep -q "prog-ipc: parent checkpoint at step 3: 1 " "$GK_SCRATCH/ck.out"'
check "... the importer is told that only transparent checkpoints are refused" \
	grep -q "opened through gpuckpt's CUDA IPC: transparent checkpoints will be refused" \
	"$GK_SCRATCH/ck.out"
with_runtime env GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto "$PROG" --steps 8 >"$GK_SCRATCH/r.out" 2>&1
rc=$?
got=$(sums "$GK_SCRATCH/r.out")
check "both restored from their checkpoints resume at step 3 (rc $rc)" \
	eval 'grep -q "prog-ipc: child restored at step 3" "$GK_SCRATCH/r.out" &&
		grep -q "prog-ipc: parent restored at step 3" "$GK_SCRATCH/r.out"'
a1=$(sed -n 's/^prog-ipc: child opened the buffer at //p' "$GK_SCRATCH/ck.out")
a2=$(sed -n 's/^prog-ipc: child opened the buffer at //p' "$GK_SCRATCH/r.out")
check "... the child's import at the address it had ($a1, $a2), with the uninterrupted checksums ($got)" \
	test -n "$a1" -a "$a1" = "$a2" -a -n "$ref" -a "$got" = "$ref"
[ "$got" = "$ref" ] || { sed 's/^/# ck: /' "$GK_SCRATCH/ck.out"; sed 's/^/# r: /' "$GK_SCRATCH/r.out"; }
tap_done
