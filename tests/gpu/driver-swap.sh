#!/bin/bash
# driver-swap.sh - what the CUDA driver can give back to processes that share
# GPU memory after its checkpoint API restored them onto each other's GPUs
# (tests/gpu/driver-swap.c; no gpuckpt involved). gpuckpt-shepherd --nccl
# refuses such a restore for a rank that saw one GPU of several
# (gk_gpu_shared_move, docs/nccl.md "Limits") because of point 2: when a
# driver passes it, that refusal can go.
#
#  1. Each process sees one GPU; restored onto the same GPUs: each maps the
#     other's cuMemCreate allocation (exported descriptor) and its cuMemAlloc
#     one (legacy IPC) and reads what the other wrote.
#  2. The same, restored onto each other's GPUs: on driver 580 both maps fail
#     (cuMemSetAccess: CUDA_ERROR_INVALID_DEVICE, cuIpcOpenMemHandle:
#     CUDA_ERROR_INVALID_VALUE), while each process's own memory came back.
#  3. Each process sees both GPUs and uses its own; restored onto each
#     other's: both maps work and read the other's values.
#
# Needs two GPUs; SKIPs with the reason otherwise. About 15 s.
#
#   make -C build/tests check TESTS=gpu/driver-swap.sh     (check-gpu runs it too)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/gpu/driver-swap
N=3
tap_plan $N
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "${ngpu:-0}" -lt 2 ]; then
	for _ in $(seq $N); do tap_skip "needs two GPUs (nvidia-smi lists ${ngpu:-none})"; done
	exit 0
fi
gk_need_built "$PROG"
gk_scratch

# round NAME MODE VIS0 ORD0 VIS1 ORD1: both peers and the controller; their
# lines in $GK_SCRATCH/NAME.out.
round() {
	local d=$GK_SCRATCH/$1 p0 p1
	mkdir -p "$d"
	CUDA_VISIBLE_DEVICES=$3 timeout -s KILL 60 "$PROG" peer 0 "$d" "$4" >"$d/0" 2>&1 &
	p0=$!
	CUDA_VISIBLE_DEVICES=$5 timeout -s KILL 60 "$PROG" peer 1 "$d" "$6" >"$d/1" 2>&1 &
	p1=$!
	CUDA_VISIBLE_DEVICES=0,1 timeout -s KILL 60 "$PROG" ctl "$d" "$2" >"$d/ctl" 2>&1
	wait "$p0" "$p1"
	cat "$d/ctl" "$d/0" "$d/1" >"$GK_SCRATCH/$1.out"
}
has() { grep -c -- "$2" "$GK_SCRATCH/$1.out"; }
show() { tap_diag "$(grep -v ': ok$' "$GK_SCRATCH/$1.out" | head -n 12)"; }
# restored NAME MODE: the controller restored both; read NAME: each peer
# read the other's memory through both kinds of IPC.
restored() { [ "$(has "$1" "ctl: checkpointed and restored ($2): ok")" = 1 ]; }
read_both() { [ "$(has "$1" "import holds the other's: ok")" = 2 ] && [ "$(has "$1" "legacy holds the other's: ok")" = 2 ]; }

round same same 0 0 1 0
if restored same same && read_both same; then
	tap_ok "one GPU each, restored onto the same GPUs: each maps and reads the other's memory (exported and legacy IPC)"
else
	tap_not_ok "one GPU each, restored onto the same GPUs: each maps and reads the other's memory"
	show same
fi

round swap swap 0 0 1 0
if restored swap swap && [ "$(has swap 'own memory: ok')" = 2 ] &&
	[ "$(has swap 'import access: failed (CUDA_ERROR_INVALID_DEVICE)')" = 2 ] &&
	[ "$(has swap 'legacy open: failed')" = 2 ]; then
	tap_ok "one GPU each, restored onto each other's GPUs: own memory back, but the driver maps neither the other's exported memory (CUDA_ERROR_INVALID_DEVICE) nor its legacy IPC memory: the shepherd's --nccl refusal stands"
elif [ "$(has swap "import holds the other's: ok")" = 2 ]; then
	tap_not_ok "one GPU each, restored onto each other's GPUs: this driver now maps the other's memory; gk_gpu_shared_move's refusal can go (docs/nccl.md)"
	show swap
else
	tap_not_ok "one GPU each, restored onto each other's GPUs: not what driver 580 did"
	show swap
fi

round both swap 0,1 0 0,1 1
if restored both swap && read_both both; then
	tap_ok "both GPUs seen by each, restored onto each other's: each maps and reads the other's memory"
else
	tap_not_ok "both GPUs seen by each, restored onto each other's: each maps and reads the other's memory"
	show both
fi
tap_done
