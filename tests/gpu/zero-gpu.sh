#!/bin/bash
# zero-gpu.sh - all-zero chunks on the GPU (issue 25, item 4): the runtime's
# built-in hash kernel (hash_kernel.cu, gk_hash_segments_z) reports them, the
# checkpoint records them without copying or writing them (format 5), and a
# restore sets them with cuMemsetD8. What the stand-in's zero-chunks.sh cannot
# show: that the kernel compiled by nvcc finds them on a real device, and
# that the restore's memset lands there. The program is gpu-tables with a
# pool of GK_ZERO_POOL_MIB (default 4096) of which a sixteenth is used; the
# restored run fills the pool with garbage before the load, so only a restore
# that sets the zeros ends with the uninterrupted run's checksum.
#
# Points: the uninterrupted checksum; a SIGTERM checkpoint in format 5 whose
# data files hold at most 1.15 x the non-zero bytes, the zeros found by the
# kernel (not on the host); the restore's checksum; the same checkpoint with
# GPUCKPT_INCREMENTS=0 (no change keys wanted: the kernel runs for the zeros
# alone); transparent mode (root and CRIU 4, as vmm-gpu.sh): under
# `gpuckpt-shepherd run`, the runtime's line counts the zeros recorded, and
# `gpuckpt-shepherd restore` brings the process back to the uninterrupted
# checksum. Checkpoint and restore times are printed for the record. Every
# point SKIPs without a GPU; the transparent ones without root or CRIU.
#
#   make -C build/tests check TESTS=gpu/zero-gpu.sh     (check-gpu runs it too)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
RT=$top_builddir/runtime/.libs/libgpuckpt.so
SHEP=$top_builddir/runtime/gpuckpt-shepherd
PROG=$top_builddir/tests/gpu/gpu-tables
PLAN=6
tap_plan $PLAN
gk_scratch

if ! nvidia-smi -L >/dev/null 2>&1; then
	for _ in $(seq $PLAN); do tap_skip "no GPU here (nvidia-smi -L failed)"; done
	exit 0
fi
gk_need_built "$RT" "$PROG" "$SHEP"
POOL=${GK_ZERO_POOL_MIB:-4096}
ARGS=(--size 64 --pool "$POOL" --steps 300 --report-every 10)
NONZERO=$(((64 + POOL / 16) * 1048576 + 65536))
unset GPUCKPT_DIR GPUCKPT_RESTORE GPUCKPT_HASH_MODULE GPUCKPT_INCREMENTS GPUCKPT_MODE
export GPUCKPT_LOG_LEVEL=info
sum() { sed -n 's/^gpu-tables: done: steps=[0-9]* checksum=\(0x[0-9a-f]*\)$/\1/p' "$1" | tail -n 1; }
resumed() { sed -n 's/^gpu-tables: resumed from step \([0-9]*\) .*/\1/p' "$1" | tail -n 1; }
field() { sed -n "s/^  \"$2\": *\\([0-9]*\\).*/\\1/p" "$1/manifest.json" | head -n 1; }
data_bytes() { find "$1" -maxdepth 1 -type f -name '*.data' -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
wait_line() { for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }
# term NAME DIR [VAR=VALUE...]: SIGTERM after step 100, a checkpoint.
term() {
	local name=$1 dir=$2
	shift 2
	env LD_PRELOAD="$RT" GPUCKPT_DIR="$dir" "$@" "$PROG" "${ARGS[@]}" --delay-ms 10 \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	local pid=$!
	wait_line "$GK_SCRATCH/$name.out" "step 100"
	kill -TERM $pid
	wait $pid
}
show() { tap_diag "$(tail -n 12 "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err" 2>/dev/null)"; }

"$PROG" "${ARGS[@]}" >"$GK_SCRATCH/ref.out" 2>&1
ref=$(sum "$GK_SCRATCH/ref.out")
if [ -n "$ref" ]; then tap_ok "native, uninterrupted: checksum $ref"; else tap_not_ok "native, uninterrupted run gave no checksum"; show ref; fi

D=$GK_SCRATCH/ckpt
term run "$D"
C=$D/ckpt.000001
b=$(data_bytes "$C")
if [ "$(field "$C" version)" = 5 ] && grep -q '"zero": true' "$C/manifest.json" &&
	[ "$b" -gt 0 ] && [ $((b * 100)) -le $((NONZERO * 115)) ] &&
	grep -q "the hash kernel is loaded (built in)" "$GK_SCRATCH/run.err" &&
	! grep -q "found on the host" "$GK_SCRATCH/run.err"; then
	tap_ok "a pool of $POOL MiB, a sixteenth used: format 5, $b bytes of data for $NONZERO non-zero bytes, the zeros found by the built-in kernel"
else
	tap_not_ok "format 5 with the zeros found by the built-in kernel and data <= 1.15 x $NONZERO bytes (version $(field "$C" version), $b bytes)"
	show run
fi

env LD_PRELOAD="$RT" GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto "$PROG" "${ARGS[@]}" \
	>"$GK_SCRATCH/restore.out" 2>"$GK_SCRATCH/restore.err"
if [ -n "$ref" ] && [ "$(sum "$GK_SCRATCH/restore.out")" = "$ref" ] &&
	[ "$(resumed "$GK_SCRATCH/restore.out")" = "$(field "$C" step)" ]; then
	tap_ok "restored over a pool of garbage: the zeros set on the device, the uninterrupted checksum"
else
	tap_not_ok "the restore sets the zeros and ends with the uninterrupted checksum ($(sum "$GK_SCRATCH/restore.out") vs $ref)"
	show restore
fi

N=$GK_SCRATCH/nokeys
term nokeys "$N" GPUCKPT_INCREMENTS=0
b=$(data_bytes "$N/ckpt.000001")
if grep -q '"zero": true' "$N/ckpt.000001/manifest.json" && ! grep -q '"keys"' "$N/ckpt.000001/manifest.json" &&
	[ $((b * 100)) -le $((NONZERO * 115)) ]; then
	tap_ok "GPUCKPT_INCREMENTS=0: the kernel runs for the zeros alone ($b bytes), no keys recorded"
else
	tap_not_ok "GPUCKPT_INCREMENTS=0: zero parts, no keys, data small ($b bytes)"
	show nokeys
fi

tap_diag "for the record: $(grep -ho "ckpt.000001: wrote .*" "$GK_SCRATCH/run.err" | head -n 1 | cut -c1-200); $(grep -ho "restore: .*: loaded [0-9]* bytes in [0-9.]* s" "$GK_SCRATCH/restore.err" | head -n 1)"

# ---- transparent mode ----
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
T=$GK_SCRATCH/transparent
mkdir -p "$T"
GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$CRIU" --dir "$T" --uid 0 --gid 0 -- \
	env LD_PRELOAD="$RT" GPUCKPT_MODE=transparent "$PROG" "${ARGS[@]}" --delay-ms 10 \
	>"$GK_SCRATCH/tr.out" 2>"$GK_SCRATCH/tr.err" &
spid=$!
wait_line "$GK_SCRATCH/tr.out" "step 100"
kill -TERM $spid
wait $spid
line=$(grep -o "transparent: [^ ]*: wrote [0-9]* bytes ([0-9]* bytes of all-zero chunks recorded, not written)" "$GK_SCRATCH/tr.err" | tail -n 1)
read -r written zero < <(sed -n 's/.*wrote \([0-9]*\) bytes (\([0-9]*\) bytes of all-zero.*/\1 \2/p' <<<"$line")
if grep -q "checkpoint ckpt\.[0-9]* committed" "$GK_SCRATCH/tr.err" && [ -n "${zero:-}" ] &&
	[ "$zero" -gt "$written" ]; then
	tap_ok "transparent: checkpointed; the runtime wrote $written bytes and recorded $zero bytes of all-zero chunks"
else
	tap_not_ok "transparent: checkpointed with the zeros recorded, not written (the runtime's line: '$line')"
	tap_diag "$(grep -E "transparent|error|refus" "$GK_SCRATCH/tr.err" | tail -n 8)"
fi
GPUCKPT_LOG_LEVEL=info "$SHEP" restore --criu "$CRIU" --dir "$T" --uid 0 --gid 0 \
	>>"$GK_SCRATCH/tr.out" 2>>"$GK_SCRATCH/tr.err"
st=$?
if [ $st = 0 ] && grep -q "restored ckpt" "$GK_SCRATCH/tr.err" && [ -n "$ref" ] &&
	[ "$(sum "$GK_SCRATCH/tr.out")" = "$ref" ]; then
	tap_ok "transparent: restored, the zeros set, run to the end with the uninterrupted checksum"
else
	tap_not_ok "transparent: restored and run to the end with the uninterrupted checksum (status $st, checksum '$(sum "$GK_SCRATCH/tr.out")', want '$ref')"
	tap_diag "$(grep -E "restore|error|loaded" "$GK_SCRATCH/tr.err" | tail -n 8)"
fi
