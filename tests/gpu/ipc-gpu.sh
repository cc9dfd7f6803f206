#!/bin/bash
# ipc-gpu.sh - legacy CUDA IPC between two processes on a real GPU (issue 27,
# item 2), with tests/runtime/prog-ipc: a parent exports a cuMemAlloc buffer
# (cuIpcGetMemHandle), a child opens it (cuIpcOpenMemHandle), both take turns
# rewriting halves of it. The same scenario as tests/runtime/ipc.sh on the
# stand-in, here against the driver:
#
#   native: the driver's own legacy IPC; the checksums to match.
#   under gpuckpt: the buffer is placed VMM memory, exported by the runtime as
#     POSIX file descriptors over a unix socket and imported with
#     cuMemImportFromShareableHandle; the same checksums, no refusal.
#   application mode: both checkpoint at step 3 and end; both restarted from
#     their checkpoints, the child's import at the same address (the runtime's
#     import window must be honoured by the driver's cuMemAddressReserve), and
#     the uninterrupted checksums.
#
# Every point SKIPs with the reason where there is no GPU.
#
#   make -C build/tests check TESTS=gpu/ipc-gpu.sh     (check-gpu runs it too)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
RT=$top_builddir/runtime/.libs/libgpuckpt.so
PROG=$top_builddir/tests/runtime/prog-ipc
PLAN=6
tap_plan $PLAN
gk_scratch

if ! nvidia-smi -L >/dev/null 2>&1; then
	for _ in $(seq $PLAN); do tap_skip "no GPU here (nvidia-smi -L failed)"; done
	exit 0
fi
gk_need_built "$RT" "$PROG"
A=$(cut -d, -f1 <<<"${CUDA_VISIBLE_DEVICES:-0}")
sums() { sed -n 's/^prog-ipc: \(parent\|child\) sum //p' "$1" | sort | tr '\n' ' '; }
show() { tap_diag "$(tail -n 12 "$1")"; }

CUDA_VISIBLE_DEVICES=$A "$PROG" --steps 8 >"$GK_SCRATCH/native.out" 2>&1
ref=$(sums "$GK_SCRATCH/native.out")
if [ "$(wc -w <<<"$ref")" -eq 2 ]; then tap_ok "native legacy IPC: checksums $ref"
else tap_not_ok "native legacy IPC gave no checksums"; show "$GK_SCRATCH/native.out"; fi

env CUDA_VISIBLE_DEVICES="$A" LD_PRELOAD="$RT" "$PROG" --steps 8 >"$GK_SCRATCH/rt.out" 2>&1
got=$(sums "$GK_SCRATCH/rt.out")
if [ -n "$ref" ] && [ "$got" = "$ref" ] && ! grep -q "^gpuckpt: .*ipc:\|CUDA_ERROR" "$GK_SCRATCH/rt.out"; then
	tap_ok "under gpuckpt: the runtime serves IPC of placed memory, native checksums"
else tap_not_ok "under gpuckpt: checksums '$got', native '$ref'"; show "$GK_SCRATCH/rt.out"; fi

D=$GK_SCRATCH/ckpt
env CUDA_VISIBLE_DEVICES="$A" LD_PRELOAD="$RT" GPUCKPT_DIR="$D" "$PROG" --steps 8 \
	--checkpoint-at 3 --exit-after-checkpoint >"$GK_SCRATCH/ck.out" 2>&1
check "application mode: both processes write their checkpoint at step 3" \
	eval 'grep -q "prog-ipc: child checkpoint at step 3: 1 " "$GK_SCRATCH/ck.out" &&
		grep -q "prog-ipc: parent checkpoint at step 3: 1 " "$GK_SCRATCH/ck.out"'
check "... the import went to its place in the runtime's window (no 'not at its place')" \
	eval '! grep -q "not at its place" "$GK_SCRATCH/ck.out"'
env CUDA_VISIBLE_DEVICES="$A" LD_PRELOAD="$RT" GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto "$PROG" \
	--steps 8 >"$GK_SCRATCH/r.out" 2>&1
got=$(sums "$GK_SCRATCH/r.out")
check "both restarted from their checkpoints resume at step 3" \
	eval 'grep -q "prog-ipc: child restored at step 3" "$GK_SCRATCH/r.out" &&
		grep -q "prog-ipc: parent restored at step 3" "$GK_SCRATCH/r.out"'
a1=$(sed -n 's/^prog-ipc: child opened the buffer at //p' "$GK_SCRATCH/ck.out")
a2=$(sed -n 's/^prog-ipc: child opened the buffer at //p' "$GK_SCRATCH/r.out")
if [ -n "$a1" ] && [ "$a1" = "$a2" ] && [ -n "$ref" ] && [ "$got" = "$ref" ]; then
	tap_ok "... the import at the address it had ($a1), the uninterrupted checksums"
else
	tap_not_ok "... import at $a1 then $a2, checksums '$got' (native '$ref')"
	show "$GK_SCRATCH/ck.out"
	show "$GK_SCRATCH/r.out"
fi
tap_done
