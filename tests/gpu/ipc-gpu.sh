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
#   transparent mode (root, CRIU 4, as zero-gpu.sh): a program that does no
#     IPC (gpu-tables), its placed memory created exportable (the default),
#     checkpointed by the driver under `gpuckpt-shepherd run` and restored to
#     the uninterrupted checksum. The driver's checkpoint is documented not to
#     take IPC memory before driver 610; these two points show it takes
#     exportable memory no one imported.
#
# Everything under gpuckpt runs with GPUCKPT_CUDA_IPC unset, the default
# (with 0 cuIpcGetMemHandle of placed memory is refused, tests/runtime/ipc.sh).
# Every point SKIPs with the reason where there is no GPU; the transparent
# ones without root or CRIU.
#
#   make -C build/tests check TESTS=gpu/ipc-gpu.sh     (check-gpu runs it too)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
RT=$top_builddir/runtime/.libs/libgpuckpt.so
PROG=$top_builddir/tests/runtime/prog-ipc
SHEP=$top_builddir/runtime/gpuckpt-shepherd
TABLES=$top_builddir/tests/gpu/gpu-tables
PLAN=8
tap_plan $PLAN
gk_scratch

if ! nvidia-smi -L >/dev/null 2>&1; then
	for _ in $(seq $PLAN); do tap_skip "no GPU here (nvidia-smi -L failed)"; done
	exit 0
fi
gk_need_built "$RT" "$PROG" "$SHEP" "$TABLES"
unset GPUCKPT_DIR GPUCKPT_RESTORE GPUCKPT_MODE
unset GPUCKPT_CUDA_IPC
# Each run of the pair ends within T seconds: in a session where the two
# disagreed (one checkpointed, the other refused), the pair deadlocked and
# held the GPU machine until its run was killed (prog-ipc now closes its
# pipes first; this keeps any other hang from taking check-gpu with it).
T=${GK_GPU_TIMEOUT:-120}
A=$(cut -d, -f1 <<<"${CUDA_VISIBLE_DEVICES:-0}")
sums() { sed -n 's/^prog-ipc: \(parent\|child\) sum //p' "$1" | sort | tr '\n' ' '; }
show() { tap_diag "$(tail -n 12 "$1")"; }

CUDA_VISIBLE_DEVICES=$A timeout $T "$PROG" --steps 8 >"$GK_SCRATCH/native.out" 2>&1
ref=$(sums "$GK_SCRATCH/native.out")
if [ "$(wc -w <<<"$ref")" -eq 2 ]; then tap_ok "native legacy IPC: checksums $ref"
else tap_not_ok "native legacy IPC gave no checksums"; show "$GK_SCRATCH/native.out"; fi

timeout $T env CUDA_VISIBLE_DEVICES="$A" LD_PRELOAD="$RT" "$PROG" --steps 8 >"$GK_SCRATCH/rt.out" 2>&1
got=$(sums "$GK_SCRATCH/rt.out")
if [ -n "$ref" ] && [ "$got" = "$ref" ] && ! grep -q "^gpuckpt: .*ipc:\|CUDA_ERROR" "$GK_SCRATCH/rt.out"; then
	tap_ok "under gpuckpt: the runtime serves IPC of placed memory, native checksums"
else tap_not_ok "under gpuckpt: checksums '$got', native '$ref'"; show "$GK_SCRATCH/rt.out"; fi

D=$GK_SCRATCH/ckpt
timeout $T env CUDA_VISIBLE_DEVICES="$A" LD_PRELOAD="$RT" GPUCKPT_DIR="$D" "$PROG" --steps 8 \
	--checkpoint-at 3 --exit-after-checkpoint >"$GK_SCRATCH/ck.out" 2>&1
check "application mode: both processes write their checkpoint at step 3" \
	eval 'grep -q "prog-ipc: child checkpoint at step 3: 1 " "$GK_SCRATCH/ck.out" &&
		grep -q "prog-ipc: parent checkpoint at step 3: 1 " "$GK_SCRATCH/ck.out"'
check "... the import went to its place in the runtime's window (no 'not at its place')" \
	eval '! grep -q "not at its place" "$GK_SCRATCH/ck.out"'
timeout $T env CUDA_VISIBLE_DEVICES="$A" LD_PRELOAD="$RT" GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto "$PROG" \
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

# ---- transparent mode, placed memory exportable, no IPC ----
why=
if [ "$(id -u)" -ne 0 ]; then
	why="the transparent points need root (the shepherd does)"
elif ! gk_find_criu; then
	why=$CRIU_WHY
fi
if [ -n "$why" ]; then
	for _ in 1 2; do tap_skip "$why"; done
	exit 0
fi
ARGS=(--size 64 --pool 256 --steps 300 --report-every 10)
tsum() { sed -n 's/^gpu-tables: done: steps=[0-9]* checksum=\(0x[0-9a-f]*\)$/\1/p' "$1" | tail -n 1; }
wait_line() { for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
CUDA_VISIBLE_DEVICES=$A "$TABLES" "${ARGS[@]}" >"$GK_SCRATCH/tref.out" 2>&1
tref=$(tsum "$GK_SCRATCH/tref.out")
T=$GK_SCRATCH/transparent
mkdir -p "$T"
CUDA_VISIBLE_DEVICES=$A GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$CRIU" --dir "$T" --uid 0 --gid 0 -- \
	env LD_PRELOAD="$RT" GPUCKPT_MODE=transparent "$TABLES" "${ARGS[@]}" \
	--delay-ms 10 >"$GK_SCRATCH/tr.out" 2>"$GK_SCRATCH/tr.err" &
spid=$!
wait_line "$GK_SCRATCH/tr.out" "step 100"
kill -TERM $spid
wait $spid
if grep -q "exportable as a file descriptor" "$GK_SCRATCH/tr.err"; then
	tap_not_ok "transparent, by default: the driver would not create exportable memory, nothing to learn"
	tap_diag "$(grep "exportable" "$GK_SCRATCH/tr.err" | head -n 2)"
elif grep -q "checkpoint ckpt\.[0-9]* committed" "$GK_SCRATCH/tr.err"; then
	tap_ok "transparent, by default: the driver checkpointed a process whose placed memory is exportable"
else
	tap_not_ok "transparent, by default: the driver's checkpoint of exportable placed memory"
	tap_diag "$(grep -E "transparent|error|refus|exportable" "$GK_SCRATCH/tr.err" | tail -n 8)"
fi
CUDA_VISIBLE_DEVICES=$A GPUCKPT_LOG_LEVEL=info "$SHEP" restore --criu "$CRIU" --dir "$T" --uid 0 --gid 0 \
	>>"$GK_SCRATCH/tr.out" 2>>"$GK_SCRATCH/tr.err"
st=$?
if [ $st = 0 ] && grep -q "restored ckpt" "$GK_SCRATCH/tr.err" && [ -n "$tref" ] &&
	[ "$(tsum "$GK_SCRATCH/tr.out")" = "$tref" ]; then
	tap_ok "... restored, run to the end with the uninterrupted checksum ($tref)"
else
	tap_not_ok "... restored and run to the end (status $st, checksum '$(tsum "$GK_SCRATCH/tr.out")', want '$tref')"
	tap_diag "$(grep -E "restore|error|exportable" "$GK_SCRATCH/tr.err" | tail -n 8)"
fi
tap_done
