#!/bin/bash
# nccl-gpu.sh - NCCL jobs on two GPUs, checkpointed transparently and
# restored (issue 27; make check-gpu-nccl). Each rank is a process of its own
# under its own `gpuckpt-shepherd run` (as srun starts one task per GPU).
# SIGTERM to both shepherds part-way: the runtime brings both ranks to the
# same collective, takes NCCL's communicators down, and CRIU and the driver
# dump each process; `restore` brings both back and the runtime makes the
# communicators again. Each rank must then print the uninterrupted run's
# lines. Two jobs:
#
# - a plain all-reduce program in C (tests/runtime/prog-nccl, 1 GiB of device
#   ballast per rank), built here against the libnccl.so.2 that PyTorch ships
#   (the nvidia-nccl package; GK_NCCL_LIB names another folder): restored on
#   the same GPUs, one GPU per process; and with both GPUs visible to each
#   process (as torchrun shows them), restored onto them in the other order
#   (CUDA_VISIBLE_DEVICES=1,0 for the restore);
# - PyTorch DDP (tests/gpu/frameworks/fw_ddp.py, unmodified, RANK, WORLD_SIZE
#   and MASTER_ADDR/PORT as a job script sets them), whose TCPStore keeps TCP
#   connections between the ranks: the shepherds run with --tcp close. The
#   same two rounds; every rank's loss lines and final checksum must be the
#   uninterrupted run's.
#
# Not covered, and why (docs/nccl.md): one GPU per process restored onto the
# GPUs in the other order fails on the H200s (NCCL's re-import:
# cuMemSetAccess answers CUDA_ERROR_INVALID_DEVICE).
#
# Needs root, two GPUs, CRIU 4.2 or later (GK_CRIU, or the GPU machine's
# /opt/criu; 4.1 cannot dump a TCP socket on newer kernels), gcc, and python3
# with torch and the nvidia-nccl package (or GK_NCCL_LIB). GK_NCCL_CASES
# picks "c", "ddp" or both (the default; make check-gpu-nccl runs "c" and
# make check-gpu-ddp "ddp", each within one 10-minute run of a fresh GPU
# machine); the logs are copied to $GK_GPU_LOGDIR/nccl
# (build/tests/gpu/logs/nccl).
#
# GK_NCCL_WAIT (default 0): seconds between the checkpoint and the restore
# of the "other order" rounds, for a restore long after the checkpoint: the
# monotonic clock has jumped by that much when PyTorch's and NCCL's
# watchdogs look again. For DDP, TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC is then
# set to a quarter of it, so that the jump is larger than PyTorch's
# heartbeat timeout within one run of the machine.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
RT=$top_builddir/runtime/.libs/libgpuckpt.so
DDP=$top_srcdir/tests/gpu/frameworks/fw_ddp.py
CASES=${GK_NCCL_CASES:-c ddp}
LOGS=${GK_GPU_LOGDIR:-$top_builddir/tests/gpu/logs}/nccl
PLAN=13
tap_plan $PLAN
skip_all() {
	for _ in $(seq $PLAN); do tap_skip "$1"; done
	exit 0
}
[ "$(id -u)" = 0 ] || skip_all "needs root (gpuckpt-shepherd runs as root)"
nvidia-smi -L >/dev/null 2>&1 || skip_all "no GPU here (nvidia-smi -L failed)"
[ "$(nvidia-smi -L | grep -c '^GPU ')" -ge 2 ] || skip_all "needs two GPUs (nvidia-smi -L lists fewer)"
NL=${GK_NCCL_LIB:-$(python3 -c 'import nvidia.nccl, os; print(os.path.join(nvidia.nccl.__path__[0], "lib"))' 2>/dev/null)}
[ -n "$NL" ] && [ -f "$NL/libnccl.so.2" ] || skip_all "no libnccl.so.2 (python3's nvidia-nccl package, or GK_NCCL_LIB)"
gk_scratch
gk_find_criu || skip_all "$CRIU_WHY"
CRIU_MINOR=$("$CRIU" --version | sed -n 's/^Version: *4\.\([0-9]*\).*/\1/p' | head -n 1)
gk_need_built "$SHEP" "$RT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# The logs, not the checkpoints, stay for a look after the run.
keep_logs() {
	rm -rf "$LOGS" && mkdir -p "$LOGS" &&
		(cd "$GK_SCRATCH" && find . \( -name '*.out' -o -name '*.err' \) -exec cp --parents {} "$LOGS" \;)
}
trap 'pkill -KILL -f "$GK_SCRATCH/" 2>/dev/null; keep_logs; rm -rf "$GK_SCRATCH"' EXIT
wants() { [[ " $CASES " == *" $1 "* ]]; }

# One job's command line for rank R on device DEV, in folder D: JOB is c or ddp.
C_ARGS=(--nranks 2 --steps 30 --sleep-ms 150 --floats 4194304 --mib 1024)
DDP_STEPS=40
job() {
	local kind=$1 r=$2 dev=$3 d=$4
	if [ "$kind" = c ]; then
		echo "$PROG" --rank "$r" --device "$dev" --id "$d/id" "${C_ARGS[@]}"
	else
		echo env RANK="$r" WORLD_SIZE=2 LOCAL_RANK="$dev" MASTER_ADDR=127.0.0.1 \
			MASTER_PORT="$(cat "$d/port")" python3 "$DDP" --steps $DDP_STEPS --sleep 0.1
	fi
}
# What must match the uninterrupted run: the step lines (and the C job's
# ballast and checksums, DDP's parameter checksum).
lines() { grep -E '^(step|ballast|done|fw-ddp: (step|done))' "$@"; }
# A free TCP port for the TCPStore of one run.
new_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' >"$1/port"; }

# reference KIND: the uninterrupted run, one GPU per rank. One point.
reference() {
	local kind=$1 d=$GK_SCRATCH/$1.ref r n
	mkdir -p "$d"
	new_port "$d"
	for r in 0 1; do
		CUDA_VISIBLE_DEVICES=$r timeout -s KILL 200 $(job "$kind" $r 0 "$d") \
			>"$d/out$r" 2>"$d/err$r" &
	done
	wait
	lines "$d/out0" >"$GK_SCRATCH/$kind.ref0"
	lines "$d/out1" >"$GK_SCRATCH/$kind.ref1"
	n=30
	[ "$kind" = ddp ] && n=$DDP_STEPS
	check "$kind: the uninterrupted run: both ranks print $n steps and the same lines" \
		eval '[ "$(grep -c "step " "$GK_SCRATCH/$kind.ref0")" = $n ] &&
			diff <(grep -v ballast "$GK_SCRATCH/$kind.ref0") <(grep -v ballast "$GK_SCRATCH/$kind.ref1") >/dev/null'
}

# round KIND LABEL ALL G0 G1: run under two shepherds, SIGTERM after step 10,
# restore rank r on GPU Gr (ALL=1: both GPUs visible to each, rank r on
# device r, and the restore sees "G0,G1"). Two points.
round() {
	local kind=$1 label="$1: $2" all=$3 g0=$4 g1=$5 d=$GK_SCRATCH/$1.$4$5$3 r vis dev sp0 sp1 rp0 rp1 s0 s1 gg
	local tcp=() wait=0 hb=()
	[ "$kind" = ddp ] && tcp=(--tcp close)
	[ "$all" = 1 ] && wait=${GK_NCCL_WAIT:-0}
	[ "$kind" = ddp ] && [ "$wait" -ge 8 ] && hb=(TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=$((wait / 4)))
	mkdir -p "$d/r0" "$d/r1"
	new_port "$d"
	for r in 0 1; do
		vis=$r dev=0
		[ "$all" = 1 ] && vis=0,1 dev=$r
		env CUDA_VISIBLE_DEVICES=$vis GPUCKPT_LOG_LEVEL=info timeout -s KILL 200 "$SHEP" run \
			--criu "$CRIU" "${tcp[@]}" --dir "$d/r$r" --uid 0 --gid 0 -- env LD_PRELOAD="$RT" \
			GPUCKPT_LOG_LEVEL=info "${hb[@]}" $(job "$kind" $r $dev "$d") \
			>"$d/run$r.out" 2>"$d/run$r.err" &
		eval "sp$r=\$!"
	done
	for _ in $(seq 1200); do
		grep -qs 'step 10 ' "$d/run0.out" && grep -qs 'step 10 ' "$d/run1.out" && break
		sleep 0.1
	done
	kill -TERM "$sp0" "$sp1"
	wait "$sp0"; s0=$?
	wait "$sp1"; s1=$?
	check "$label: SIGTERM after step 10: both ranks took NCCL down at a common collective and committed (shepherds $s0 $s1)" \
		eval 'grep -q "nccl: communicators taken down at a common collective" "$d/run0.err" &&
			grep -q "nccl: communicators taken down at a common collective" "$d/run1.err" &&
			grep -q "checkpoint ckpt.000001 committed" "$d/run0.err" &&
			grep -q "checkpoint ckpt.000001 committed" "$d/run1.err"'
	grep -h "committed:" "$d/run0.err" "$d/run1.err" | sed 's/^/# /'
	if [ "$wait" -gt 0 ]; then
		echo "# waiting $wait s before the restore (GK_NCCL_WAIT${hb:+; $hb})"
		sleep "$wait"
	fi
	for r in 0 1; do
		gg=$g0
		[ $r = 1 ] && gg=$g1
		[ "$all" = 1 ] && gg=$g0,$g1
		env CUDA_VISIBLE_DEVICES=$gg GPUCKPT_LOG_LEVEL=info timeout -s KILL 200 "$SHEP" restore \
			--criu "$CRIU" --dir "$d/r$r" --uid 0 --gid 0 >"$d/rest$r.out" 2>"$d/rest$r.err" &
		eval "rp$r=\$!"
	done
	wait "$rp0"; s0=$?
	wait "$rp1"; s1=$?
	cat "$d/run0.out" "$d/rest0.out" | lines >"$d/all0"
	cat "$d/run1.out" "$d/rest1.out" | lines >"$d/all1"
	[ "$wait" -gt 0 ] && label="$label $wait s later"
	check "$label: restored ($(grep -h 'restore: GPU' "$d/rest0.err" | head -1 | sed 's/.*restore: //')), NCCL made again, and both ranks print the uninterrupted run's lines (restores $s0 $s1)" \
		eval '[ $s0 = 0 ] && [ $s1 = 0 ] &&
			grep -q "nccl: communicators made again" "$d/rest0.err" &&
			cmp -s "$d/all0" "$GK_SCRATCH/$kind.ref0" && cmp -s "$d/all1" "$GK_SCRATCH/$kind.ref1"'
	grep -h "restored ckpt" "$d/rest0.err" "$d/rest1.err" | sed 's/^/# /'
	[ "$all" = 1 ] && check "$label: ... and the restore put rank 0 on the GPU rank 1 had" \
		eval 'grep -q "restore: GPU 0: \(GPU-[0-9a-f-]*\) -> " "$d/rest0.err" &&
			! grep -E "restore: GPU 0: (GPU-[0-9a-f-]*) -> \1$" "$d/rest0.err" >/dev/null'
	return 0
}

if wants c; then
	PROG=$GK_SCRATCH/prog-nccl
	CUDA=${CUDA_PREFIX:-/usr/local/cuda}
	if ! gcc -O2 -I"$top_srcdir/runtime/core/interpose" -I"$CUDA/include" \
		"$top_srcdir/tests/runtime/prog-nccl.c" -o "$PROG" -L"$CUDA/lib64/stubs" -lcuda \
		-L"$NL" -l:libnccl.so.2 -Wl,-rpath,"$NL" 2>"$GK_SCRATCH/build.err"; then
		echo "Bail out! prog-nccl does not build against $NL: $(head -3 "$GK_SCRATCH/build.err")"
		exit 1
	fi
	reference c
	round c "same GPUs, one per process" 0 0 1
	round c "both GPUs visible, restored in the other order" 1 1 0
else
	for _ in 1 2 3 4 5 6; do tap_skip "c: not in GK_NCCL_CASES ($CASES)"; done
fi
if ! wants ddp; then
	for _ in 1 2 3 4 5 6; do tap_skip "ddp: not in GK_NCCL_CASES ($CASES)"; done
elif ! python3 -c 'import torch.distributed' 2>/dev/null; then
	for _ in 1 2 3 4 5 6; do tap_skip "ddp: python3 has no torch.distributed"; done
elif [ "${CRIU_MINOR:-0}" -lt 2 ]; then
	for _ in 1 2 3 4 5 6; do tap_skip "ddp: $CRIU is CRIU 4.${CRIU_MINOR:-?}: TCP sockets need 4.2 or later"; done
else
	reference ddp
	round ddp "same GPUs, one per process" 0 0 1
	round ddp "both GPUs visible, restored in the other order" 1 1 0
fi
check "no rendezvous file is left in any round" \
	eval '[ -z "$(ls "$GK_SCRATCH"/*.*/ 2>/dev/null | grep gpuckpt-nccl)" ]'
tap_done
