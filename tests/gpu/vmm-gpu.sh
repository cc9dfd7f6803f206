#!/bin/bash
# vmm-gpu.sh - memory the program maps itself (cuMemAddressReserve, cuMemCreate,
# cuMemMap, cuMemSetAccess, as XLA, NCCL and PyTorch's expandable segments do)
# is saved by the runtime and comes back at the same address with its contents,
# in both modes, on the same GPU and on the other one (issue 25, item 3). The
# program is gpu-vmm: 256 MiB of tables in four handles mapped into one
# reservation, a few blocks rewritten every step.
#
#   application mode: SIGTERM at step 100 checkpoints (status 143); a restore
#     resumes at its step, with the range at the same address and the
#     uninterrupted run's checksum; then the same restored on the second GPU.
#   transparent mode (root, CRIU 4): under `gpuckpt-shepherd run`, SIGTERM at
#     step 100; the runtime writes the mappings itself and gives their memory
#     back before the driver's checkpoint (its log says so); `gpuckpt-shepherd
#     restore` brings the process back, the runtime maps them again and loads
#     them, and the run ends with the uninterrupted checksum; then the same
#     with the restore under CUDA_VISIBLE_DEVICES=<second GPU>.
#
# Every point SKIPs with the reason where its needs are missing (no GPU, one
# GPU for the other-GPU points, not root or no CRIU 4 for the transparent ones).
#
#   make -C build/tests check TESTS=gpu/vmm-gpu.sh     (check-gpu runs it too)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
RT=$top_builddir/runtime/.libs/libgpuckpt.so
PROG=$top_builddir/tests/gpu/gpu-vmm
PLAN=13
tap_plan $PLAN
gk_scratch

why=
if ! nvidia-smi -L >/dev/null 2>&1; then
	why="no GPU here (nvidia-smi -L failed)"
fi
if [ -n "$why" ]; then
	for _ in $(seq $PLAN); do tap_skip "$why"; done
	exit 0
fi
gk_need_built "$SHEP" "$RT" "$PROG"
IFS=, read -r -a visible <<<"${CUDA_VISIBLE_DEVICES:-0,1}"
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
A=${visible[0]}
B=${visible[1]:-}
[ "$ngpu" -ge 2 ] && [ -n "$B" ] || B=

ARGS=(--size 256 --steps 300 --report-every 10 --updates 4)
sum() { sed -n 's/^gpu-vmm: done: steps=[0-9]* checksum=\(0x[0-9a-f]*\)$/\1/p' "$1" | tail -n 1; }
range() { sed -n 's/^gpu-vmm: range \(0x[0-9a-f]*\) .*/\1/p' "$1" | tail -n 1; }
resumed() { sed -n 's/^gpu-vmm: resumed from step \([0-9]*\) .*/\1/p' "$1" | tail -n 1; }
uuid() { sed -n 's/.*device=.*(\(GPU-[0-9a-fA-F-]*\))$/\1/p' "$1" | tail -n 1; }
# wait_line FILE RE: until FILE has a line matching RE (60 s at most).
wait_line() { for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

CUDA_VISIBLE_DEVICES=$A "$PROG" "${ARGS[@]}" >"$GK_SCRATCH/ref.out" 2>&1
ref=$(sum "$GK_SCRATCH/ref.out")
if [ -n "$ref" ]; then
	tap_ok "native, uninterrupted: checksum $ref"
else
	tap_not_ok "native, uninterrupted run gave no checksum"
	tap_diag "$(tail -n 5 "$GK_SCRATCH/ref.out")"
fi

# ---- application mode ----
# sigterm_at_100 NAME DIR ARGS...: gpu-vmm under the runtime with its
# checkpoints in DIR, SIGTERM after step 100; its output in NAME.out and
# NAME.err, its exit status in $status.
sigterm_at_100() {
	local name=$GK_SCRATCH/$1 dir=$2 pid
	shift 2
	env CUDA_VISIBLE_DEVICES="$A" LD_PRELOAD="$RT" GPUCKPT_DIR="$dir" GPUCKPT_LOG_LEVEL=info \
		"$PROG" "$@" --delay-ms 20 >"$name.out" 2>"$name.err" &
	pid=$!
	wait_line "$name.out" "^gpu-vmm: step 100$"
	kill -TERM $pid
	wait $pid
	status=$?
}
d=$GK_SCRATCH/app
sigterm_at_100 app "$d" "${ARGS[@]}"
va=$(range "$GK_SCRATCH/app.out")
if [ $status = 143 ] && ls -d "$d"/ckpt.* >/dev/null 2>&1 &&
	grep -q '"kind": *"vmm"' "$d"/ckpt.*/manifest.json &&
	! grep -q "checkpoints will be refused\|mapped itself" "$GK_SCRATCH/app.err"; then
	tap_ok "application mode: SIGTERM checkpointed the mapped memory (range $va), not refused"
else
	tap_not_ok "application mode: SIGTERM checkpointed the mapped memory (status $status)"
	tap_diag "$(tail -n 8 "$GK_SCRATCH/app.err")"
fi
restore_app() { # LABEL DEVICE
	local out=$GK_SCRATCH/app-$1.out
	env CUDA_VISIBLE_DEVICES="$2" LD_PRELOAD="$RT" GPUCKPT_DIR="$d" GPUCKPT_RESTORE=auto \
		GPUCKPT_LOG_LEVEL=info "$PROG" "${ARGS[@]}" >"$out" 2>"$out.err"
	local st=$? k got at
	k=$(resumed "$out")
	got=$(sum "$out")
	at=$(range "$out")
	if [ $st = 0 ] && [ "${k:-0}" -ge 100 ] && [ -n "$ref" ] && [ "$got" = "$ref" ] &&
		[ -n "$va" ] && [ "$at" = "$va" ]; then
		tap_ok "application mode, restored on GPU $2 ($(uuid "$out")): resumed at step $k, range at $at, checksum $got"
	else
		tap_not_ok "application mode, restored on GPU $2: resumed '$k', range '$at' (want $va), checksum '$got' (want $ref), status $st"
		tap_diag "$(tail -n 8 "$out.err")"
	fi
	RESTORED_UUID=$(uuid "$out")
}
restore_app same "$A"
first_uuid=$RESTORED_UUID

# A small range (--size 4: a reservation of about 16 MiB). Left to the
# driver it lands in the driver's own pool, at an address a restarted
# process cannot ask for; the runtime places it in its window (layout.h).
small=(--size 4 --steps 300 --report-every 10 --updates 2)
CUDA_VISIBLE_DEVICES=$A "$PROG" "${small[@]}" >"$GK_SCRATCH/sref.out" 2>&1
sref=$(sum "$GK_SCRATCH/sref.out")
ds=$GK_SCRATCH/small
sigterm_at_100 small "$ds" "${small[@]}"
sva=$(range "$GK_SCRATCH/small.out")
check "a small range (--size 4, at $sva): SIGTERM checkpointed it (status $status)" \
	eval '[ $status = 143 ] && ls -d "$ds"/ckpt.* >/dev/null 2>&1'
env CUDA_VISIBLE_DEVICES="$A" LD_PRELOAD="$RT" GPUCKPT_DIR="$ds" GPUCKPT_RESTORE=auto \
	"$PROG" "${small[@]}" >"$GK_SCRATCH/small-r.out" 2>"$GK_SCRATCH/small-r.err"
st=$?
k=$(resumed "$GK_SCRATCH/small-r.out")
got=$(sum "$GK_SCRATCH/small-r.out")
at=$(range "$GK_SCRATCH/small-r.out")
if [ $st = 0 ] && [ "${k:-0}" -ge 100 ] && [ -n "$sref" ] && [ "$got" = "$sref" ] &&
	[ -n "$sva" ] && [ "$at" = "$sva" ]; then
	tap_ok "... restored: resumed at step $k, the range at $at again, checksum $got"
else
	tap_not_ok "... restored: resumed '$k', range '$at' (want $sva), checksum '$got' (want $sref), status $st"
	tap_diag "$(tail -n 6 "$GK_SCRATCH/small-r.err")"
fi
if [ -n "$B" ]; then
	restore_app other "$B"
	if [ -n "$RESTORED_UUID" ] && [ "$RESTORED_UUID" != "$first_uuid" ]; then
		tap_ok "... and that was another GPU ($RESTORED_UUID, not $first_uuid)"
	else
		tap_not_ok "... and that was another GPU ('$RESTORED_UUID' vs '$first_uuid')"
	fi
else
	tap_skip "restore on another GPU needs two, this machine shows $ngpu"
	tap_skip "restore on another GPU needs two, this machine shows $ngpu"
fi

# ---- transparent mode ----
if [ "$(id -u)" -ne 0 ]; then
	why="the transparent points need root (the shepherd does)"
elif ! gk_find_criu; then
	why=$CRIU_WHY
fi
if [ -n "$why" ]; then
	for _ in $(seq 6); do tap_skip "$why"; done
	tap_done
	exit $?
fi

transparent() { # LABEL RESTORE-DEVICE: 3 points
	local t=$GK_SCRATCH/tr-$1 out=$GK_SCRATCH/tr-$1.out log=$GK_SCRATCH/tr-$1.err spid st got
	mkdir -p "$t"
	CUDA_VISIBLE_DEVICES=$A GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$CRIU" --dir "$t" \
		--uid 0 --gid 0 -- env LD_PRELOAD="$RT" GPUCKPT_MODE=transparent \
		"$PROG" "${ARGS[@]}" --delay-ms 20 >"$out" 2>"$log" &
	spid=$!
	wait_line "$out" "^gpu-vmm: step 100$"
	kill -TERM "$spid"
	wait "$spid"
	if grep -q "checkpoint ckpt\.[0-9]* committed" "$log" &&
		grep -q "vmm: released [1-9][0-9]* bytes in 4 mappings" "$log" &&
		grep -q "transparent: .*wrote [1-9][0-9]* bytes" "$log"; then
		tap_ok "transparent ($1): checkpointed; the runtime wrote the 4 mappings and gave their memory back before the driver's checkpoint"
	else
		tap_not_ok "transparent ($1): checkpointed with the runtime writing the mappings"
		tap_diag "$(grep -E "vmm|transparent|error|refus" "$log" | tail -n 8)"
	fi
	CUDA_VISIBLE_DEVICES=$2 GPUCKPT_LOG_LEVEL=info "$SHEP" restore --criu "$CRIU" --dir "$t" \
		--uid 0 --gid 0 >>"$out" 2>>"$log"
	st=$?
	if [ $st = 0 ] && grep -q "restored ckpt" "$log" && grep -q "vmm: mapped 4 mappings again" "$log"; then
		tap_ok "transparent ($1): restored on GPU $2, the mappings made again at their addresses, run to the end"
	else
		tap_not_ok "transparent ($1): restored on GPU $2 and run to the end (status $st)"
		tap_diag "$(grep -E "vmm|restore|error" "$log" | tail -n 8)"
	fi
	got=$(sum "$out")
	if [ -n "$ref" ] && [ "$got" = "$ref" ]; then
		tap_ok "transparent ($1): the uninterrupted checksum ($got)"
	else
		tap_not_ok "transparent ($1): checksum '$got', want '$ref'"
	fi
}
transparent same "$A"
if [ -n "$B" ]; then
	transparent other "$B"
else
	for _ in 1 2 3; do tap_skip "restore on another GPU needs two, this machine shows $ngpu"; done
fi
tap_done
