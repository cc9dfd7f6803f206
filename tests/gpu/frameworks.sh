#!/bin/bash
# frameworks.sh - PyTorch, JAX and CuPy programs, unmodified, checkpointed
# transparently (gpuckpt-shepherd, CRIU and the driver) on one GPU and
# restored with the uninterrupted run's results, bitwise (issue 25, item 2).
# make check-gpu-frameworks runs it (README.md here).
#
# The programs are tests/gpu/frameworks/fw_*.py, run with the machine's
# python3; they know nothing of gpuckpt. Each case:
#   1. reference: an uninterrupted run without gpuckpt ends with a checksum;
#   2. checkpoint: the same run under `gpuckpt-shepherd run` (the runtime
#      preloaded, GPUCKPT_MODE=transparent, as the Slurm plugin does) gets
#      SIGTERM after step 40 of 100 (40 %): a checkpoint is committed;
#   3. restore: `gpuckpt-shepherd restore` brings it back and it runs to the
#      end (exit status 0), going on from where it was (no new start line);
#   4. the same: every "step K" line (loss as a hex float) of the two parts
#      together, and the final checksum of the parameters, are the
#      reference's, byte for byte.
# Cases: torch (cuBLAS, cuDNN, Triton kernels from torch.compile, a
# DataLoader with 2 worker processes), jax.prealloc (JAX's pool preallocated
# at start-up), jax.grow (XLA_PYTHON_CLIENT_PREALLOCATE=false), cupy (cuBLAS,
# an ElementwiseKernel and a ReductionKernel compiled by NVRTC, CUB). With two
# GPUs also torch.other-gpu: checkpointed on the first, restored onto the
# second (CUDA_VISIBLE_DEVICES of the restoring shepherd; 3 points).
#
# Deterministic settings, named: PyTorch torch.manual_seed,
# torch.use_deterministic_algorithms(True), cudnn.deterministic,
# CUBLAS_WORKSPACE_CONFIG=:4096:8; JAX XLA_FLAGS=--xla_gpu_deterministic_ops=true
# (GK_FW_XLA_FLAGS to change); CuPy CUBLAS_WORKSPACE_CONFIG; fixed seeds.
#
# The preallocated JAX pool is XLA_PYTHON_CLIENT_MEM_FRACTION=0.05 of the GPU
# here (GK_FW_JAX_FRACTION; "default" leaves JAX's 0.75). The pool's unused
# part is zero: the runtime records its chunks, not their bytes (format 5),
# which one more point of jax.prealloc checks (the runtime's line "wrote N
# bytes (Z bytes of all-zero chunks recorded, not written)": Z > N). With
# GK_FW_JAX_FRACTION=default a checkpoint of the whole 75 % pool should then
# cost what JAX holds, not the pool (issue 25, item 4; not yet run on a GPU).
#
# Skips, with the reason: no python3 or no such framework (per case); not
# root (the shepherd runs as root); no GPU; no CRIU 4 (GK_CRIU,
# /usr/local/sbin/criu or the GPU machine's /opt/criu); the framework sees no
# GPU. The runtime and the shepherd missing from the build is a Bail out.
# Logs, and the checkpoints of failed cases, stay in GK_GPU_LOGDIR (default
# tests/gpu/logs/frameworks in the build tree); a passing case's checkpoint is
# removed after its size is printed (GK_FW_KEEP=1 keeps it). GK_FW_MEMORY=1
# writes CASE.memory there: each process's resident, anonymous and private
# anonymous kB just before the SIGTERM (record_memory), what a checkpoint's
# size is measured against, and the private dirty kB of its file mappings
# (libraries' relocated data, which CRIU must dump too).
#
#   make -C build check-gpu-frameworks      (or: make -C build/tests check-gpu-frameworks)
: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/lib/helpers.sh"

SHEP=$top_builddir/runtime/gpuckpt-shepherd
RT=$top_builddir/runtime/.libs/libgpuckpt.so
PROGS=$top_srcdir/tests/gpu/frameworks
LOGDIR=${GK_GPU_LOGDIR:-$top_builddir/tests/gpu/logs}/frameworks
STEPS=${GK_FW_STEPS:-100}
AT=${GK_FW_AT:-40}
ARGS=(--steps "$STEPS" --report-every 5 --delay-ms "${GK_FW_DELAY_MS:-50}")
WAIT=${GK_FW_WAIT:-300}   # seconds for a run to reach step $AT (torch.compile: a cold cache)
RUN_LIMIT=${GK_FW_TIMEOUT:-300}
CASES=(torch jax.prealloc jax.grow cupy)
# GK_FW_CASES: the cases to run (default all, torch.other-gpu included), or
# frameworks ("jax": both JAX cases); the others are skipped, saying so. GK_FW_BUDGET: seconds for the whole script
# (420); a case not started by then fails, saying so (the GPU machine's run
# ends at 10 minutes, set-up and build included).
SELECTED=" ${GK_FW_CASES:-${CASES[*]} torch.other-gpu} "
BUDGET=${GK_FW_BUDGET:-420}
PER_CASE=4
OTHER_TESTS=3
ZERO_TESTS=1 # jax.prealloc: the pool's zeros recorded, not written
PLAN=$((${#CASES[@]} * PER_CASE + OTHER_TESTS + ZERO_TESTS))
tap_plan $PLAN

# Settings come from here, not from whoever runs the suite.
unset GPUCKPT_DIR GPUCKPT_RESTORE GPUCKPT_CONFIG GPUCKPT_MODE
frac=${GK_FW_JAX_FRACTION:-0.05}
jax_frac=()
[ "$frac" = default ] || jax_frac=(XLA_PYTHON_CLIENT_MEM_FRACTION="$frac")
declare -A PROG=([torch]=fw_torch.py [jax.prealloc]=fw_jax.py [jax.grow]=fw_jax.py [cupy]=fw_cupy.py)
declare -A TAG=([torch]=fw-torch [jax.prealloc]=fw-jax [jax.grow]=fw-jax [cupy]=fw-cupy)
declare -A MODULE=([torch]=torch [jax.prealloc]=jax [jax.grow]=jax [cupy]=cupy)
declare -A FWNAME=([torch]=PyTorch [jax]=JAX [cupy]=CuPy)
# The environment of every run of a case (reference, checkpoint, restore's
# shepherd): the deterministic settings and the caches, in the log folder.
# NVLink multicast stays off on the GPU machines, for every program
# (/work/shared/gpu-machine/README.md): these use none, but nothing is left to chance.
CACHE=$LOGDIR/cache
MC_OFF="NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1"
declare -A ENVS=(
	[torch]="CUBLAS_WORKSPACE_CONFIG=:4096:8 TORCHINDUCTOR_CACHE_DIR=$CACHE/inductor TRITON_CACHE_DIR=$CACHE/triton"
	[jax.prealloc]="XLA_FLAGS=${GK_FW_XLA_FLAGS:---xla_gpu_deterministic_ops=true} ${jax_frac[*]}"
	[jax.grow]="XLA_FLAGS=${GK_FW_XLA_FLAGS:---xla_gpu_deterministic_ops=true} XLA_PYTHON_CLIENT_PREALLOCATE=false"
	[cupy]="CUBLAS_WORKSPACE_CONFIG=:4096:8 CUPY_CACHE_DIR=$CACHE/cupy"
)
# What the framework must answer on a GPU machine (after the import).
declare -A GPU_PROBE=(
	[torch]='import torch; assert torch.cuda.is_available(), "torch.cuda.is_available() is False"; print(torch.__version__, torch.cuda.get_device_name(0))'
	[jax]='import jax; print(jax.__version__, jax.devices("gpu")[0].device_kind)'
	[cupy]='import cupy; print(cupy.__version__, cupy.cuda.runtime.getDeviceCount(), "devices")'
)

# The reason every case is skipped (empty: they can run).
common=
if ! command -v python3 >/dev/null 2>&1; then
	common="no python3 on this machine"
elif [ "$(id -u)" -ne 0 ]; then
	common="needs root (gpuckpt-shepherd runs as root)"
elif [ -n "${ASAN_RUNTIME:-}" ]; then
	common="sanitizer build: an ASan-built runtime cannot be preloaded into python3; run it from a normal build"
elif ! command -v nvidia-smi >/dev/null 2>&1 || ! timeout 30 nvidia-smi -L >/dev/null 2>&1; then
	common="no GPU here (nvidia-smi -L)"
elif ! { gk_scratch; gk_find_criu; }; then
	common=$CRIU_WHY
fi

# why_not CASE: WHY gets the reason CASE cannot run here, empty if it can.
# The framework's own absence comes first: it is the reason on any machine.
# (Not in a $(...): the answers are kept for the next case of the framework,
# and the framework's version goes to the TAP output as a diagnostic.)
declare -A WHY_FW
why_not() {
	local mod=${MODULE[$1]} out
	WHY=
	if ! command -v python3 >/dev/null 2>&1; then
		WHY="no python3 on this machine"
		return
	fi
	if [ -z "${WHY_FW[$mod]+set}" ]; then
		WHY_FW[$mod]=
		if ! out=$(timeout 120 python3 -c "import $mod" 2>&1); then
			WHY_FW[$mod]="no ${FWNAME[$mod]} for $(command -v python3) (import $mod: $(tail -n 1 <<<"$out"))"
		elif [ -z "$common" ] &&
			! out=$(env $MC_OFF XLA_PYTHON_CLIENT_PREALLOCATE=false timeout 120 python3 -c "${GPU_PROBE[$mod]}" 2>&1); then
			WHY_FW[$mod]="${FWNAME[$mod]} sees no GPU here: $(tail -n 1 <<<"$out")"
		elif [ -z "$common" ]; then
			tap_diag "${FWNAME[$mod]}: $(tail -n 1 <<<"$out")"
		fi
	fi
	WHY=${WHY_FW[$mod]:-$common}
}

if [ -z "$common" ]; then
	gk_need_built "$SHEP" "$RT"
	# The last run's logs and checkpoints go; the caches stay.
	mkdir -p "$LOGDIR" "$CACHE"
	find "$LOGDIR" -mindepth 1 -maxdepth 1 ! -name cache -exec rm -rf {} +
	tap_diag "logs: $LOGDIR; CRIU: $CRIU ($("$CRIU" --version 2>/dev/null | head -n 1))"
	tap_diag "$(nvidia-smi -L 2>&1)"
fi
# The first GPU, and the second for the restore onto another one.
IFS=, read -r -a VISIBLE <<<"${CUDA_VISIBLE_DEVICES:-0,1}"
NGPU=0
[ -z "$common" ] && NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && [ "${#VISIBLE[@]}" -lt "$NGPU" ] && NGPU=${#VISIBLE[@]}
GPU_A=${VISIBLE[0]:-0}
GPU_B=${VISIBLE[1]:-1}

# steps FILE TAG: the "step K" lines of a run.
steps() { grep "^$2: step " "$1" 2>/dev/null; }
# sum FILE TAG: the final checksum.
sum() { sed -n "s/^$2: done: steps=[0-9]* checksum=\([0-9a-f]*\)\$/\1/p" "$1" 2>/dev/null | tail -n 1; }
# diag_tail FILE...: the last lines of each file, for a failure.
diag_tail() {
	local f
	for f in "$@"; do
		[ -s "$f" ] || continue
		tap_diag "--- ${f#"$LOGDIR"/} (last 15 lines)"
		tap_diag "$(tail -n 15 "$f")"
	done
}
# wait_line FILE REGEX SECONDS PID: until FILE has a line matching REGEX;
# 1 when PID ended first or the time ran out.
wait_line() {
	local t=0
	while ! grep -Eq -- "$2" "$1" 2>/dev/null; do
		kill -0 "$4" 2>/dev/null || { grep -Eq -- "$2" "$1" 2>/dev/null; return; }
		[ "$t" -ge $(($3 * 10)) ] && return 1
		sleep 0.1
		t=$((t + 1))
	done
}
# wait_pid PID SECONDS: wait for a background job; its status in STATUS
# ("timeout" when it was killed after SECONDS).
# descendants PID: its children, theirs, and so on.
descendants() {
	local c
	for c in $(pgrep -P "$1"); do
		echo "$c"
		descendants "$c"
	done
}

# hang_snapshot PID: where PID and its descendants were stuck, for the
# diagnostics (the GPU machines have no gdb): each process's threads,
# grouped by state, name, kernel wait channel and system call number.
hang_snapshot() {
	local p t
	for p in "$1" $(descendants "$1"); do
		tap_diag "stuck: pid $p: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null | cut -c1-100)"
		for t in /proc/"$p"/task/*; do
			echo "$(sed 's/.*) \(.\).*/\1/' "$t/stat" 2>/dev/null) $(cat "$t/comm" 2>/dev/null)" \
				"wchan=$(cat "$t/wchan" 2>/dev/null) syscall=$(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
		done | sort | uniq -c | head -n 20 | while read -r line; do tap_diag "  $line"; done
	done
}

wait_pid() {
	local t=0
	while kill -0 "$1" 2>/dev/null; do
		if [ "$t" -ge $(($2 * 10)) ]; then
			hang_snapshot "$1"
			kill -KILL "$1" 2>/dev/null
			wait "$1" 2>/dev/null
			STATUS=timeout
			return 1
		fi
		sleep 0.1
		t=$((t + 1))
	done
	wait "$1"
	STATUS=$?
}

declare -A REF_OUT

# reference CASE [quiet]: point 1 (quiet: no point, a diagnostic). REF_OUT[CASE]
# is its output when it has a checksum.
reference() {
	local c=$1 quiet=${2:-} tag=${TAG[$1]} out=$LOGDIR/$1.reference.out err=$LOGDIR/$1.reference.err t0=$SECONDS
	local -a envs
	read -r -a envs <<<"${ENVS[$c]} $MC_OFF"
	echo "env CUDA_VISIBLE_DEVICES=$GPU_A ${envs[*]} python3 $PROGS/${PROG[$c]} ${ARGS[*]}" >"$LOGDIR/$c.reference.cmd"
	env CUDA_VISIBLE_DEVICES="$GPU_A" "${envs[@]}" python3 "$PROGS/${PROG[$c]}" "${ARGS[@]}" >"$out" 2>"$err" &
	wait_pid $! "$RUN_LIMIT"
	if [ "$STATUS" = 0 ] && [ -n "$(sum "$out" "$tag")" ] && [ "$(steps "$out" "$tag" | wc -l)" -ge 2 ]; then
		REF_OUT[$c]=$out
		[ -n "$quiet" ] && { tap_diag "$c: reference for the next case: checksum $(sum "$out" "$tag")"; return; }
		tap_ok "$c: reference: an uninterrupted run without gpuckpt ends with checksum $(sum "$out" "$tag" | cut -c1-16)... ($((SECONDS - t0)) s)"
		tap_diag "$(head -n 1 "$out")"
	elif [ -n "$quiet" ]; then
		tap_diag "$c: the reference run for the next case ended with no checksum (exit status $STATUS)"
		diag_tail "$LOGDIR/$c.reference.cmd" "$out" "$err"
	else
		tap_not_ok "$c: reference: an uninterrupted run without gpuckpt ends with a checksum (exit status $STATUS)"
		diag_tail "$LOGDIR/$c.reference.cmd" "$out" "$err"
	fi
}

# record_memory PID: benchmarks/frameworks/memory, which the benchmark reads
# the same way: for PID and every process under it, a line "pid comm rss_kB
# anonymous_kB private_anonymous_kB file_private_dirty_kB" from its smaps,
# then a total: what issue 25's size goal counts (GK_FW_MEMORY=1, a
# diagnostic, just before the checkpoint's SIGTERM).
record_memory() {
	"$top_srcdir/benchmarks/frameworks/memory" "$1"
}

# round_trip CASE LABEL GPU_RUN GPU_RESTORE [other]: points 2-4 (LABEL names
# them and their files). The restoring shepherd sees GPU_RESTORE; with
# "other", its log must also say that the driver restored the GPU onto
# another one ("restore: GPU 0: OLD -> NEW", OLD != NEW).
round_trip() {
	local c=$1 label=$2 ga=$3 gb=$4 other=${5:-} tag=${TAG[$1]} d=$LOGDIR/$2.ckpt
	local failed_before=$TAP_FAILED moved= old new
	local out=$LOGDIR/$2.run.out err=$LOGDIR/$2.run.err rout=$LOGDIR/$2.restore.out rerr=$LOGDIR/$2.restore.err
	local spid committed= got ref first from size t0
	local -a envs
	read -r -a envs <<<"${ENVS[$c]} $MC_OFF"
	rm -rf "$d"
	mkdir -p "$d"
	echo "env CUDA_VISIBLE_DEVICES=$ga GPUCKPT_LOG_LEVEL=info $SHEP run --criu $CRIU --dir $d --uid 0 --gid 0 -- env ${envs[*]} LD_PRELOAD=$RT GPUCKPT_MODE=transparent python3 $PROGS/${PROG[$c]} ${ARGS[*]}" >"$LOGDIR/$label.run.cmd"
	env CUDA_VISIBLE_DEVICES="$ga" GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$CRIU" --dir "$d" \
		--uid 0 --gid 0 -- env "${envs[@]}" LD_PRELOAD="$RT" GPUCKPT_MODE=transparent \
		python3 "$PROGS/${PROG[$c]}" "${ARGS[@]}" >"$out" 2>"$err" &
	spid=$!
	if wait_line "$out" "^$tag: step $AT " "$WAIT" "$spid"; then
		[ -n "${GK_FW_MEMORY:-}" ] && record_memory "$spid" >"$LOGDIR/$label.memory"
		kill -TERM "$spid"
		wait_pid "$spid" 180
		committed=$(grep -o "checkpoint ckpt\.[0-9]* committed:.*" "$err" | tail -n 1)
	else
		kill -KILL "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		STATUS="never reached step $AT"
	fi
	# The program's processes (DataLoader workers, compile workers): what
	# the checkpoint took; for the record.
	if [ -n "$committed" ] && ! grep -q "uses a MIG instance\|no checkpoint of pid" "$err"; then
		size=$(du -sh "$d" 2>/dev/null | cut -f1)
		tap_ok "$label: SIGTERM after step $AT of $STEPS under gpuckpt-shepherd: $committed; $size on disk (shepherd exit status $STATUS)"
	else
		tap_not_ok "$label: SIGTERM after step $AT of $STEPS under gpuckpt-shepherd commits a checkpoint (shepherd exit status $STATUS)"
		tap_diag "$(grep -E "refus|MIG|no checkpoint|error|Error" "$err" | tail -n 8)"
		diag_tail "$LOGDIR/$label.run.cmd" "$out" "$err"
	fi
	t0=$SECONDS
	echo "env CUDA_VISIBLE_DEVICES=$gb GPUCKPT_LOG_LEVEL=debug $SHEP restore --criu $CRIU --dir $d --uid 0 --gid 0" >"$LOGDIR/$label.restore.cmd"
	# debug: the shepherd names each driver call of the restore, so that a
	# restore that hangs says in which (hang_snapshot says where).
	env CUDA_VISIBLE_DEVICES="$gb" GPUCKPT_LOG_LEVEL=debug "$SHEP" restore --criu "$CRIU" \
		--dir "$d" --uid 0 --gid 0 >"$rout" 2>"$rerr" &
	wait_pid $! "$RUN_LIMIT"
	local restored
	restored=$(grep -o "transparent: restored ckpt.*" "$rerr" | tail -n 1)
	read -r old new < <(sed -n 's/.*transparent: restore: GPU 0: \([^ ]*\) -> \([^ ]*\).*/\1 \2/p' "$rerr" | head -n 1)
	[ -z "$other" ] || { [ -n "${old:-}" ] && [ -n "${new:-}" ] && [ "$old" != "$new" ]; } && moved=1
	if [ "$STATUS" = 0 ] && [ -n "$restored" ] && [ -n "$(sum "$rout" "$tag")" ] &&
		! grep -q "^$tag: start: " "$rout" && [ -n "$moved" ]; then
		tap_ok "$label: restored ($restored)${other:+ onto another GPU, $old -> $new,} and ran to the end in $((SECONDS - t0)) s, going on from where it was"
	else
		tap_not_ok "$label: restored by gpuckpt-shepherd restore${other:+ onto another GPU (CUDA_VISIBLE_DEVICES=$gb; GPU 0: '${old:-}' -> '${new:-}')} and ran to the end, going on from where it was (exit status $STATUS; restore line '${restored}'; a start line after the restore: $(grep -c "^$tag: start: " "$rout"))"
		diag_tail "$rout" "$rerr"
	fi
	ref=${REF_OUT[$c]:-}
	got=$(sum "$rout" "$tag")
	first=$(steps "$rout" "$tag" | head -n 1 | cut -d' ' -f3)
	from=$(steps "$out" "$tag" | tail -n 1 | cut -d' ' -f3)
	if [ -z "$ref" ]; then
		tap_not_ok "$label: the same losses and checksum as the uninterrupted run (no reference: its run failed)"
	elif [ -n "$got" ] && [ "$got" = "$(sum "$ref" "$tag")" ] &&
		diff <(steps "$ref" "$tag") <(steps "$out" "$tag"; steps "$rout" "$tag") >"$LOGDIR/$label.diff" 2>&1; then
		tap_ok "$label: the same $(steps "$ref" "$tag" | wc -l) step lines, bitwise, and checksum as the uninterrupted run (steps up to $from before the checkpoint, from $first after the restore)"
	else
		tap_not_ok "$label: the same step lines, bitwise, and checksum as the uninterrupted run (checksum '${got}', reference '$(sum "$ref" "$tag")')"
		diag_tail "$LOGDIR/$label.diff"
	fi
	tap_diag "$label: $(grep -hE "transparent: (restore: GPU|checkpoint ckpt|restored)|phases:|wrote [0-9]+ bytes|device memory (loaded|left)|refused|cuMemMap|INVALID_HANDLE" "$err" "$rerr" "$out" "$rout" | cut -c1-300 | sort -u | tr '\n' ' ')"
	if [ "$TAP_FAILED" -eq "$failed_before" ] && [ -z "${GK_FW_KEEP:-}" ]; then rm -rf "$d"; fi
}

# over_budget CASE N: N failures when the time is spent (returns 0), else 1.
over_budget() {
	[ "$SECONDS" -ge "$BUDGET" ] || return 1
	for _ in $(seq "$2"); do
		tap_not_ok "$1: not run: the time for the whole script (GK_FW_BUDGET, $BUDGET s) was spent"
	done
}

# zero_point LABEL: the runtime's checkpoint of a preallocated pool wrote less
# than it recorded as all zero (the pool is mostly unused).
zero_point() {
	local err=$LOGDIR/$1.run.err line written zero
	line=$(grep -o "transparent: [^ ]*: wrote [0-9]* bytes ([0-9]* bytes of all-zero chunks recorded, not written)" "$err" | tail -n 1)
	read -r written zero < <(sed -n 's/.*wrote \([0-9]*\) bytes (\([0-9]*\) bytes of all-zero.*/\1 \2/p' <<<"$line")
	if [ -n "${zero:-}" ] && [ "$zero" -gt 0 ] && [ "$written" -lt "$zero" ]; then
		tap_ok "$1: the pool's unused part is recorded as zero, not written: $written bytes written, $zero bytes of all-zero chunks (XLA_PYTHON_CLIENT_MEM_FRACTION=${frac})"
	else
		tap_not_ok "$1: the pool's unused part is recorded as zero, not written (the runtime's line: '${line}')"
	fi
}

for c in "${CASES[@]}"; do
	n=$PER_CASE
	[ "$c" = jax.prealloc ] && n=$((n + ZERO_TESTS))
	if [ "${SELECTED#* "$c" }" = "$SELECTED" ] && [ "${SELECTED#* "${c%%.*}" }" = "$SELECTED" ]; then
		for _ in $(seq $n); do tap_skip "$c: not selected (GK_FW_CASES='${GK_FW_CASES:-}')"; done
		continue
	fi
	why_not "$c"
	if [ -n "$WHY" ]; then
		for _ in $(seq $n); do tap_skip "$c: $WHY"; done
		continue
	fi
	over_budget "$c" $n && continue
	t_case=$SECONDS
	reference "$c"
	round_trip "$c" "$c" "$GPU_A" "$GPU_A"
	[ "$c" = jax.prealloc ] && zero_point "$c"
	tap_diag "$c: $((SECONDS - t_case)) s in all, $SECONDS s since the start"
done

# torch.other-gpu: checkpointed on the first GPU, restored onto the second.
why_not torch
if [ "${SELECTED#* torch.other-gpu }" = "$SELECTED" ]; then
	WHY="not selected (GK_FW_CASES='${GK_FW_CASES:-}')"
elif [ -z "$WHY" ] && [ "$NGPU" -lt 2 ]; then
	WHY="a restore onto another GPU needs two, this machine shows $NGPU"
fi
if [ -n "$WHY" ]; then
	for _ in $(seq $OTHER_TESTS); do tap_skip "torch.other-gpu: $WHY"; done
elif ! over_budget torch.other-gpu $OTHER_TESTS; then
	# Its reference is the torch case's; when that did not run, one here.
	[ -n "${REF_OUT[torch]:-}" ] || [ -s "$LOGDIR/torch.reference.out" ] || reference torch quiet
	round_trip torch torch.other-gpu "$GPU_A" "$GPU_B" other
fi
tap_done
