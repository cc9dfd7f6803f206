#!/bin/bash
# e2e-frameworks.sh - PyTorch, JAX and CuPy training jobs under real Slurm on
# the GPU machine, each checkpointed transparently and restored onto the
# OTHER GPU (issue 25, item 2). The programs are tests/gpu/frameworks/
# fw_torch.py (cuBLAS, cuDNN, Triton kernels from torch.compile, a DataLoader
# with 2 worker processes), fw_jax.py (a jit-compiled MLP, its pool
# preallocated, XLA_PYTHON_CLIENT_MEM_FRACTION=0.05) and fw_cupy.py (cuBLAS,
# NVRTC kernels, CUB); nothing of gpuckpt in them. Each is submitted with
# --gpu-checkpoint=on and --gres=gpu:1 while another job holds the first GPU,
# so it runs on the second; the holder then ends. After step 40 of 100 the
# job is requeued (scontrol requeue): the plugin's shepherd checkpoints it
# with CRIU and the driver. Both GPUs are free when it starts again, and
# Slurm gives a one-GPU job the first free one (seen, not promised: the test
# says which it got), so it is restored onto the first GPU, and must end with
# exactly the step lines (losses as hex floats) and the checksum of an
# uninterrupted run outside Slurm. 9 points per framework.
#
# Needs: root, two GPUs (/dev/nvidia0 and /dev/nvidia1), CRIU 4 or later at
# $GK_CRIU, python3 with the framework seeing a GPU. Anything missing: the
# points (of that framework, or all) are SKIPs with the reason. With one GPU
# the job is requeued and restored on that same GPU: the three points about
# the other GPU (started beside a holder, started again on the other, the
# driver's OLD -> NEW) are SKIPs saying so, the other six run.
# GK_FW_SLURM_CASES picks frameworks (default "torch jax cupy"). The jobs run
# as gkuser1 (GK_TRANSPARENT_USER; root when that user cannot import the
# framework, said in a diagnostic).
#
#   GK_CRIU=/usr/local/sbin/criu make check TESTS=slurm/e2e-frameworks.sh    (in build/tests)
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

PER=9
CASES=(${GK_FW_SLURM_CASES:-torch jax cupy})
N=$((PER * ${#CASES[@]}))
SHEP=${GK_SHEPHERD_DIR:-$top_builddir/runtime}
FW=$top_srcdir/tests/gpu/frameworks
PY=${GK_PYTHON:-$(command -v python3 2>/dev/null)}
STEPS=${GK_FW_STEPS:-100}
AT=${GK_FW_AT:-40}
ARGS="--steps $STEPS --report-every 5 --delay-ms ${GK_FW_DELAY_MS:-50}"
why=""
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
if [ "$(id -u)" -ne 0 ]; then
	why="needs root"
elif [ -z "$PY" ]; then
	why="no python3 on this machine"
elif [ ! -c /dev/nvidia0 ] || ! nvidia-smi -L >/dev/null 2>&1; then
	why="no GPU here (/dev/nvidia0, nvidia-smi)"
elif [ -z "${GK_CRIU:-}" ] || [ ! -x "$GK_CRIU" ]; then
	why="no CRIU: set GK_CRIU to CRIU 4 or later"
elif [ "$(gk_criu_major "$GK_CRIU")" = "" ] || [ "$(gk_criu_major "$GK_CRIU")" -lt 4 ]; then
	why="$GK_CRIU is CRIU $("$GK_CRIU" --version 2>/dev/null | head -n 1 | sed 's/Version: *//'); 4 or later is needed"
fi
if [ -z "$why" ]; then
	gk_need_built "$SHEP/gpuckpt-shepherd"
	probe=$("$SHEP/gpuckpt-shepherd" probe --criu "$GK_CRIU" \
		--uid "$(id -u "${GK_TRANSPARENT_USER:-gkuser1}" 2>/dev/null || echo 65534)" 2>&1) ||
		why="gpuckpt-shepherd probe: $probe"
fi
# Two GPUs: the restore goes onto the other one; one: onto the same.
NGPU=2
if [ -z "$why" ] && { [ "${ngpu:-0}" -lt 2 ] || [ ! -c /dev/nvidia1 ]; }; then
	NGPU=1
	one_gpu="a restore onto the other GPU needs two, this machine shows ${ngpu:-0}"
fi
if [ -n "$why" ]; then
	tap_plan $N
	for _ in $(seq $N); do tap_skip "$why"; done
	exit 0
fi
E2E_OWN_APP=1
e2e_require $N
GK_E2E_PLUGIN_ARGS="criu=$GK_CRIU shepherd=$SHEP ${GK_E2E_PLUGIN_ARGS:-}"
export GK_GPU_COUNT=$NGPU
e2e_start --real-gpu

# What each framework brings: its program, the tag of its lines, what it
# must answer on this machine (two GPUs), and its environment in the
# reference run and in the job: the deterministic settings and its caches in
# a folder of the job's own (on this one node; on a cluster they must be
# where the restoring node finds them: docs/frameworks.md). NVLink multicast
# off, as for every program on the GPU machines.
declare -A PROG=([torch]=fw_torch.py [jax]=fw_jax.py [cupy]=fw_cupy.py)
declare -A PROBE=(
	[torch]="import torch; assert torch.cuda.device_count() >= $NGPU, torch.cuda.device_count()"
	[jax]="import jax; n = len(jax.devices('gpu')); assert n >= $NGPU, n"
	[cupy]="import cupy; n = cupy.cuda.runtime.getDeviceCount(); assert n >= $NGPU, n"
)
fw_env() { # CASE CACHE
	local mc="NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 HOME=$2/home"
	case $1 in
	torch) echo "CUBLAS_WORKSPACE_CONFIG=:4096:8 TORCHINDUCTOR_CACHE_DIR=$2/inductor TRITON_CACHE_DIR=$2/triton $mc" ;;
	jax) echo "XLA_FLAGS=--xla_gpu_deterministic_ops=true XLA_PYTHON_CLIENT_MEM_FRACTION=0.05 $mc" ;;
	cupy) echo "CUBLAS_WORKSPACE_CONFIG=:4096:8 CUPY_CACHE_DIR=$2/cupy $mc" ;;
	esac
}
steps_of() { grep "^$tag: step " "$1" 2>/dev/null; }
sum_of() { sed -n "s/^$tag: done: steps=[0-9]* checksum=\([0-9a-f]*\)\$/\1/p" "$1" 2>/dev/null | tail -n 1; }
as_user() {
	if [ "$USER_AS" = root ]; then
		"$@"
	else
		setpriv --reuid="$(id -u "$USER_AS")" --regid="$(id -g "$USER_AS")" --clear-groups "$@"
	fi
}
# gpu_of JOB RESTART: CUDA_VISIBLE_DEVICES of the batch script's run RESTART.
gpu_of() { sed -n "s/^batch: node .* restart $2 GPU \(.*\)\$/\1/p" "$(job_out "$1")" | tail -n 1; }
holder() { # NAME: a job that holds one GPU until cancelled
	submit --gres=gpu:1 -J "$1" --wrap "echo \"$1: GPU \$CUDA_VISIBLE_DEVICES\"; exec sleep 900"
}

# one CASE: the framework's 9 points.
one() {
	local fw=$1 prog=$FW/${PROG[$1]} cache=$JOBS/cache-$1 ref=$JOBS/reference-$1.out out why=
	local t0 rsum h1 h1gpu j g0 g1 moved old new got script
	tag=fw-$fw
	# Whose job: gkuser1's, unless that user cannot import the framework
	# (installed under root's home): then root's.
	if ! out=$(timeout 120 "$PY" -c "${PROBE[$fw]}" 2>&1); then
		why="$fw does not see $NGPU GPU(s) here, or is missing: $(tail -n 1 <<<"$out")"
		for _ in $(seq $PER); do tap_skip "$why"; done
		return
	fi
	USER_AS=${GK_TRANSPARENT_USER:-gkuser1}
	if [ "$USER_AS" != root ] &&
		! out=$(cd / && setpriv --reuid="$(id -u "$USER_AS")" --regid="$(id -g "$USER_AS")" --clear-groups \
			env HOME=/tmp timeout 120 "$PY" -c "import $fw" 2>&1); then
		tap_diag "$USER_AS cannot import $fw ($(tail -n 1 <<<"$out")): the job runs as root"
		USER_AS=root
	fi
	AS=(--as "$USER_AS")
	[ "$USER_AS" = root ] && AS=()
	mkdir -p "$cache/home"
	[ "$USER_AS" = root ] || chown -R "$USER_AS:" "$cache"

	# The reference: an uninterrupted run outside Slurm, on the first GPU,
	# as the job's user and with the job's caches (so the job finds the
	# compilers' work done: one cold compile, not two, in the 10 minutes).
	t0=$SECONDS
	# shellcheck disable=SC2046
	(cd "$JOBS" && as_user env CUDA_VISIBLE_DEVICES=0 $(fw_env "$fw" "$cache") timeout 300 "$PY" "$prog" $ARGS) \
		>"$ref" 2>"$JOBS/reference-$fw.err"
	rsum=$(sum_of "$ref")
	if [ -n "$rsum" ]; then
		tap_ok "$fw: reference: an uninterrupted run outside Slurm ends with checksum ${rsum:0:16}... ($((SECONDS - t0)) s)"
		tap_diag "$(head -n 1 "$ref")"
	else
		tap_not_ok "$fw: reference: an uninterrupted run outside Slurm ends with a checksum"
		tap_diag "$(tail -n 15 "$JOBS/reference-$fw.err")"
	fi

	# The first GPU taken by a holder, so that the job starts on the second.
	h1=
	[ $NGPU = 2 ] && h1=$(holder "hold-$fw") && wait_out "$h1" "^hold-$fw: GPU" 60
	script=$(job_script "$fw" "mkdir -p $cache/home
export $(fw_env "$fw" "$cache") GPUCKPT_LOG_LEVEL=info
srun $PY $prog $ARGS")
	j=$(submit "${AS[@]}" --gres=gpu:1 --gpu-checkpoint=on "$script")
	wait_out "$j" "^batch: node .* restart 0 " 120
	g0=$(gpu_of "$j" 0)
	[ -n "$h1" ] && h1gpu=$(sed -n "s/^hold-$fw: GPU //p" "$(job_out "$h1")")
	if [ $NGPU = 1 ]; then
		tap_skip "$fw: started beside a job holding the other GPU: $one_gpu"
	elif [ -n "$g0" ] && [ "$g0" != "$h1gpu" ]; then
		tap_ok "$fw: the job started on GPU $g0 while another job held GPU $h1gpu"
	else
		tap_not_ok "$fw: the job started on the GPU the holder left free (job: '${g0}', holder: '${h1gpu}')"
		show_out "$j"
	fi
	# The holder goes now (the job keeps its GPU): at the requeue both are free.
	if [ -n "$h1" ]; then
		scancel "$h1"
		wait_over "$h1" 60 || tap_diag "the holder $h1 did not end"
	fi

	# Requeued after step $AT (torch.compile: up to 300 s to get there).
	t0=$SECONDS
	if wait_out "$j" "^$tag: step $AT " 300; then
		scontrol requeue "$j"
	else
		tap_diag "job $j never reached step $AT"
	fi
	if wait_out "$j" '^gpuckpt: transparent: checkpoint ckpt\.[0-9]+ committed' 180; then
		tap_ok "$fw: checkpointed transparently when requeued after step $AT: $(grep -o 'checkpoint ckpt\.[0-9]* committed.*' "$(job_out "$j")" | tail -n 1)"
	else
		tap_not_ok "$fw: checkpointed transparently when requeued after step $AT"
		tap_diag "$(grep -E 'gpuckpt' "$(job_out "$j")" | tail -n 10)"
	fi
	wait_out "$j" '^batch: node .* restart 1 ' 180
	wait_over "$j" 400
	g1=$(gpu_of "$j" 1)
	if [ $NGPU = 1 ]; then
		tap_skip "$fw: started again on the other GPU: $one_gpu (restored on GPU '${g1}')"
	elif [ -n "$g1" ] && [ -n "$g0" ] && [ "$g1" != "$g0" ]; then
		tap_ok "$fw: requeued, it started again on the other GPU ($g0, then $g1)"
	else
		tap_not_ok "$fw: requeued, it started again on the other GPU (first '${g0}', then '${g1}')"
	fi
	check_out "$j" "$fw: the plugin had the shepherd restore it" "^gpuckpt: job $j step.0 task 0: restart 1: restoring .*transparently"
	check_out "$j" "$fw: restored by CRIU and the driver" '^gpuckpt: transparent: restored ckpt\.[0-9]+'
	moved=$(sed -n 's/^gpuckpt: transparent: restore: GPU 0: \([^ ]*\) -> \([^ ]*\).*/\1 \2/p' "$(job_out "$j")" | head -n 1)
	read -r old new <<<"$moved"
	if [ $NGPU = 1 ]; then
		tap_skip "$fw: the driver restored its GPU onto the other one: $one_gpu (its line: '${moved}')"
	elif [ -n "${old:-}" ] && [ -n "${new:-}" ] && [ "$old" != "$new" ]; then
		tap_ok "$fw: the driver restored its GPU onto the other one ($old -> $new)"
	else
		tap_not_ok "$fw: the driver restored its GPU onto the other one (the shepherd's 'restore: GPU 0: OLD -> NEW' line: '${moved}')"
	fi
	check_state "$j" COMPLETED "$fw: the job completed"
	got=$(sum_of "$(job_out "$j")")
	if [ -n "$rsum" ] && [ "$got" = "$rsum" ] &&
		diff <(steps_of "$ref") <(steps_of "$(job_out "$j")") >"$JOBS/steps-$fw.diff" 2>&1 &&
		[ "$(grep -c "^$tag: start: " "$(job_out "$j")")" = 1 ]; then
		tap_ok "$fw: the same $(steps_of "$ref" | wc -l) step lines, bitwise, and checksum as the uninterrupted run ($((SECONDS - t0)) s from the requeue point to the end)"
	else
		tap_not_ok "$fw: the same step lines, bitwise, and checksum as the uninterrupted run, started once (checksum '${got}', reference '${rsum}', start lines $(grep -c "^$tag: start: " "$(job_out "$j")"))"
		tap_diag "$(head -n 20 "$JOBS/steps-$fw.diff")"
		show_out "$j"
	fi
	tap_diag "$fw: times: $(grep -hE 'gpuckpt: transparent: (checkpoint ckpt.* committed|restored|restore: GPU)|phases:|wrote [0-9]+ bytes in|AdminComment' "$(job_out "$j")" | tr '\n' ' ')"
	tap_diag "$fw: AdminComment: $(scontrol show job "$j" | sed -n 's/^ *AdminComment=//p')"
	[ -n "$h1" ] && scancel "$h1" 2>/dev/null
	return 0
}

for c in "${CASES[@]}"; do
	case $c in
	torch | jax | cupy) one "$c" ;;
	*) for _ in $(seq $PER); do tap_skip "GK_FW_SLURM_CASES: no case '$c' (torch, jax, cupy)"; done ;;
	esac
done
tap_done
