#!/bin/bash
# procs-gpu.sh - several CUDA processes in one task, on a real GPU, in
# transparent mode (issue 27: torchrun): each process's runtime writes its
# own folder, and the shepherd makes one checkpoint of the task of them, each
# a part, ckpt.N/proc.PID (runtime/shepherd/proc_parts.c). The program is
# gpu-tables (its checksum depends only on the number of steps); every
# process has its own device memory, on the one GPU they share.
#
#  1. The uninterrupted checksum.
#  2. Two gpu-tables started by one shell under `gpuckpt-shepherd run`,
#     SIGTERM after step 100 in both: one checkpoint, both parts in it.
#  3. `gpuckpt-shepherd restore`: both end with the uninterrupted checksum.
#  4. `gpuckpt verify` checks the checkpoint and both parts.
#  5. The same with PyTorch's torchrun as the launcher
#     (`torchrun --nnodes=1 --nproc-per-node=2 --no-python`, its default
#     static rendezvous on 127.0.0.1, gpu-tables as each worker; the
#     launcher's TCPStore connections dumped with `--tcp close`):
#     checkpointed with both workers' parts,
#  6. restored: both workers end with the uninterrupted checksum, and
#     torchrun ends 0.
#
# Every point SKIPs without a GPU, the transparent ones without root or CRIU
# 4, the torchrun ones without python3 that imports torch.
#
#   make -C build/tests check TESTS=gpu/procs-gpu.sh     (check-gpu runs it too)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
RT=$top_builddir/runtime/.libs/libgpuckpt.so
SHEP=$top_builddir/runtime/gpuckpt-shepherd
GK=$top_builddir/runtime/gpuckpt
[ -x "$top_builddir/runtime/.libs/gpuckpt" ] && GK=$top_builddir/runtime/.libs/gpuckpt
PROG=$top_builddir/tests/gpu/gpu-tables
PLAN=6
tap_plan $PLAN
gk_scratch

if ! nvidia-smi -L >/dev/null 2>&1; then
	for _ in $(seq $PLAN); do tap_skip "no GPU here (nvidia-smi -L failed)"; done
	exit 0
fi
gk_need_built "$RT" "$PROG" "$SHEP" "$GK"
ARGS=(--size 64 --steps 300 --report-every 10)
unset GPUCKPT_DIR GPUCKPT_RESTORE GPUCKPT_MODE
export GPUCKPT_LOG_LEVEL=info
sum() { sed -n 's/^gpu-tables: done: steps=[0-9]* checksum=\(0x[0-9a-f]*\)$/\1/p' "$1" | tail -n 1; }
wait_line() { for _ in $(seq 900); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

"$PROG" "${ARGS[@]}" >"$GK_SCRATCH/ref.out" 2>&1
ref=$(sum "$GK_SCRATCH/ref.out")
if [ -n "$ref" ]; then
	tap_ok "uninterrupted: checksum $ref"
else
	tap_not_ok "uninterrupted run: no checksum"
	tap_diag "$(tail -n 5 "$GK_SCRATCH/ref.out")"
fi

why=
if [ "$(id -u)" -ne 0 ]; then
	why="the transparent points need root (the shepherd does)"
elif ! gk_find_criu; then
	why=$CRIU_WHY
fi
if [ -n "$why" ]; then
	for _ in $(seq $((PLAN - 1))); do tap_skip "$why"; done
	tap_done
	exit
fi

# round NAME CMD...: CMD under the shepherd (its processes write
# NAME.0.out and NAME.1.out), SIGTERM once both passed step 100, then the
# restore; the shepherd's lines in NAME.err, the restore's in NAME.rerr.
round() {
	local name=$1 dir=$GK_SCRATCH/$1 spid
	shift
	mkdir -p "$dir"
	"$SHEP" run --criu "$CRIU" --dir "$dir" --uid 0 --gid 0 --tcp close -- "$@" \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	spid=$!
	wait_line "$GK_SCRATCH/$name.0.out" "step 100" && wait_line "$GK_SCRATCH/$name.1.out" "step 100"
	kill -TERM $spid
	wait $spid
	t0=$(date +%s.%N)
	"$SHEP" restore --criu "$CRIU" --dir "$dir" --uid 0 --gid 0 >>"$GK_SCRATCH/$name.out" \
		2>"$GK_SCRATCH/$name.rerr"
	RST=$?
	RSECS=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
}
# parts NAME N: the checkpoint committed with N parts (N a regular
# expression), and as many folders.
parts() {
	local dir=$GK_SCRATCH/$1 n
	n=$(sed -n 's/.*transparent: \([0-9]*\) processes of the task wrote checkpoints; each becomes a part.*/\1/p' "$GK_SCRATCH/$1.err" | head -n 1)
	[[ "$n" =~ ^($2)$ ]] && grep -q "transparent: checkpoint ckpt\.[0-9]* committed" "$GK_SCRATCH/$1.err" &&
		[ "$(ls -d "$dir"/ckpt.*/proc.* 2>/dev/null | wc -l)" = "$n" ]
}
both_done() { [ -n "$ref" ] && [ "$(sum "$GK_SCRATCH/$1.0.out")" = "$ref" ] && [ "$(sum "$GK_SCRATCH/$1.1.out")" = "$ref" ]; }
show() { tap_diag "$(grep -hE "transparent|error|refus|fail" "$GK_SCRATCH/$1.err" "$GK_SCRATCH/$1.rerr" 2>/dev/null | tail -n 12; tail -n 3 "$GK_SCRATCH/$1".[01].out "$GK_SCRATCH/$1.out" 2>/dev/null)"; }

O=$GK_SCRATCH/shell
round shell bash -c "env LD_PRELOAD=$RT GPUCKPT_MODE=transparent $PROG ${ARGS[*]} --delay-ms 10 >$O.0.out 2>&1 &
	env LD_PRELOAD=$RT GPUCKPT_MODE=transparent $PROG ${ARGS[*]} --delay-ms 10 >$O.1.out 2>&1 & wait"
if parts shell 2; then
	tap_ok "two CUDA processes of one task: one checkpoint, both parts in it ($(grep -o "checkpoint ckpt.* committed: .*total [0-9.]* s" "$GK_SCRATCH/shell.err" | head -n 1))"
else
	tap_not_ok "two CUDA processes of one task: one checkpoint, both parts in it"
	show shell
fi
if [ "$RST" = 0 ] && both_done shell; then
	tap_ok "restored ($RSECS s): both processes ran to the end with the uninterrupted checksum"
else
	tap_not_ok "restored: both processes ran to the end with the uninterrupted checksum (restore status $RST; $(sum "$O.0.out"), $(sum "$O.1.out"), want $ref)"
	show shell
fi
v=$("$GK" verify --owner root "$GK_SCRATCH"/shell/ckpt.* 2>&1)
if [ "$(echo "$v" | grep -c ': OK ')" = 3 ] && [ "$(echo "$v" | grep -c '/proc\.[0-9]*: OK ')" = 2 ]; then
	tap_ok "gpuckpt verify: the checkpoint and both its parts are good"
else
	tap_not_ok "gpuckpt verify: the checkpoint and both its parts are good"
	tap_diag "$v"
fi

PY=$(command -v python3 || true)
if [ -z "$PY" ] || ! timeout 120 "$PY" -c 'import torch.distributed.run' >/dev/null 2>&1; then
	for _ in 5 6; do tap_skip "no python3 that imports torch.distributed.run (torchrun)"; done
	tap_done
	exit
fi
O=$GK_SCRATCH/torchrun
# Each worker is gpu-tables, its output in a file by its local rank.
PORT=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
round torchrun env LD_PRELOAD="$RT" GPUCKPT_MODE=transparent "$PY" -m torch.distributed.run \
	--nnodes=1 --nproc-per-node=2 --master-addr=127.0.0.1 --master-port="$PORT" --no-python \
	bash -c "exec $PROG ${ARGS[*]} --delay-ms 10 >$O.\$LOCAL_RANK.out 2>&1"
# The launcher is a CUDA process too when torch asked it how many GPUs
# there are (PyTorch 2.11 does): its runtime writes a part of its own.
if parts torchrun '2|3'; then
	tap_ok "torchrun, two workers: one checkpoint of the task, both workers' parts in it (and the launcher's: $(ls -d "$GK_SCRATCH"/torchrun/ckpt.*/proc.* | wc -l) parts) ($(grep -o "checkpoint ckpt.* committed: .*total [0-9.]* s" "$GK_SCRATCH/torchrun.err" | head -n 1))"
else
	tap_not_ok "torchrun, two workers: one checkpoint of the task, both workers' parts in it"
	show torchrun
fi
if [ "$RST" = 0 ] && both_done torchrun; then
	tap_ok "torchrun: restored ($RSECS s); both workers ran to the end with the uninterrupted checksum, and torchrun ended 0"
else
	tap_not_ok "torchrun: restored; both workers ran to the end with the uninterrupted checksum and torchrun ended 0 (status $RST; $(sum "$O.0.out"), $(sum "$O.1.out"), want $ref)"
	show torchrun
fi
tap_diag "torchrun's own lines after the restore: $(grep -vE '^gpuckpt|^$' "$GK_SCRATCH/torchrun.out" "$GK_SCRATCH/torchrun.rerr" 2>/dev/null | grep -iE 'error|warn|fail|broken|closed|Traceback' | head -n 6 | cut -c1-300)"
tap_done
