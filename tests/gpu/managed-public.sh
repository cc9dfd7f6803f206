#!/bin/bash
# managed-public.sh - a public program that uses managed memory, written by
# no one here and unmodified, checkpointed transparently and restored with the
# uninterrupted run's result (issue 30, "one public program"). make
# check-gpu-managed-public runs it (README.md here).
#
# The program is HeCBench's prefetch-cuda (github.com/zjin-lcf/HeCBench,
# src/prefetch-cuda/main.cu; MIT notice of AMD in the file, the repository's
# BSD-3-Clause LICENSE beside it). Ten rounds with cudaMemPrefetchAsync to the
# device, then ten without: each allocates two 256 MiB managed arrays
# (cudaMallocManaged), fills them on the host, runs `repeat` kernels y += x on
# them, checks every element on the host against repeat + 2 and prints PASS
# or FAIL, and frees them. Public code never goes into this repository: its
# files are carried in the ignored .gpudeps/public/prefetch-cuda/ (GK_PUBLIC_DIR)
# and built here with nvcc alone (its main.cu's SHA-256 must be the copy this
# test was written against: unmodified). Its output goes through
# `stdbuf -oL` (line-buffered stdout, the program untouched) so that the
# test sees its rounds as they end.
#
# Points (8):
#   1. the program builds, from the pinned source, with nvcc alone;
#   2. reference: run natively, it ends (status 0) with 20 PASS and no FAIL;
#   per round trip (same GPU; then onto the other GPU when there are two):
#   3. under `gpuckpt-shepherd run` with the runtime preloaded and
#      GPUCKPT_MODE=transparent (what the Slurm plugin does), SIGTERM in the
#      middle of round GK_PUB_AT + 1 (half a round after its PASS line): a
#      checkpoint is committed, the runtime's log says it moved the managed
#      allocations to host memory and gave them back to the driver, and
#      nothing about managed memory was refused;
#   4. `gpuckpt-shepherd restore` (CUDA_VISIBLE_DEVICES of the second GPU for
#      the other-GPU trip, whose log must then say "restore: GPU 0: OLD -> NEW")
#      brings it back: status 0, the runtime's "managed: N allocations back at
#      their addresses", and it went on (no second "info: set device" line);
#   5. its output before the checkpoint and after the restore together is the
#      reference's, line for line (the timing lines left out): 20 PASS.
#
# Skips, with the reason: no program folder, no nvcc, no GPU, not root, a
# sanitizer build, no CRIU 4 (GK_CRIU, /usr/sbin, /usr/local/sbin, the GPU
# machine's /opt/criu), no stdbuf; the other-GPU points with one GPU; all
# after the reference when the GPU has no concurrent managed access (the
# program then skips itself). The runtime and the shepherd missing from the
# build is a Bail out.
#
# Settings: GK_PUBLIC_DIR (default $top_srcdir/.gpudeps/public/prefetch-cuda),
# GK_PUB_REPEAT (the program's argument, kernels per round; 1000),
# GK_PUB_AT (PASS lines before the signal's round; 5), GK_PUB_DELAY (seconds
# after that PASS line; default half a round of the reference), GK_PUB_TIMEOUT
# (seconds a run; 300), GK_PUB_BUDGET (seconds for the script: a round trip
# not started by then fails, saying so; 420). Logs, the build and the
# checkpoints of failed trips stay in GK_GPU_LOGDIR (default
# tests/gpu/logs/managed-public in the build tree).
#
#   make -C build check-gpu-managed-public      (or, from the build tree:
#   top_srcdir=.. top_builddir=. bash ../tests/gpu/managed-public.sh)
: "${top_srcdir:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
. "$top_srcdir/tests/lib/helpers.sh"

NAME=prefetch-cuda
PUB=${GK_PUBLIC_DIR:-$top_srcdir/.gpudeps/public/$NAME}
# HeCBench f27000a5188f (src/prefetch-cuda/main.cu last changed in 55e02976).
PUB_SHA256=85e69dcfb7f663e6b8b7a4db46f4ebcc2a815ac6a0297f9e6ed8489a4437a57c
SHEP=$top_builddir/runtime/gpuckpt-shepherd
RT=$top_builddir/runtime/.libs/libgpuckpt.so
LOGDIR=${GK_GPU_LOGDIR:-$top_builddir/tests/gpu/logs}/managed-public
BIN=$LOGDIR/$NAME
REPEAT=${GK_PUB_REPEAT:-1000}
AT=${GK_PUB_AT:-5}
LIMIT=${GK_PUB_TIMEOUT:-300}
BUDGET=${GK_PUB_BUDGET:-420}
ROUNDS=20 # ten with prefetch, ten without: fixed in the program
PER_TRIP=3
PLAN=$((2 + 2 * PER_TRIP))
tap_plan $PLAN
gk_scratch

# Settings come from here, not from whoever runs the suite; NVLink multicast
# stays off on the GPU machines for every program.
unset GPUCKPT_DIR GPUCKPT_RESTORE GPUCKPT_CONFIG GPUCKPT_MODE GPUCKPT_SHEPHERD
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# skip_rest N REASON: the remaining N points skipped, and the script ends
# (non-zero when a point failed).
skip_rest() {
	for _ in $(seq "$1"); do tap_skip "$2"; done
	tap_done
	exit
}

[ -n "${NVCC:-}" ] || NVCC=$(command -v nvcc 2>/dev/null || echo "${CUDA_PREFIX:-/usr/local/cuda}/bin/nvcc")
why=
if [ ! -f "$PUB/main.cu" ]; then
	why="no public program: $PUB/main.cu is missing (GK_PUBLIC_DIR; HeCBench's src/prefetch-cuda, tests/gpu/README.md)"
elif [ ! -x "$NVCC" ]; then
	why="nvcc not found ($NVCC; NVCC or PATH)"
elif ! command -v nvidia-smi >/dev/null 2>&1 || ! timeout 30 nvidia-smi -L >/dev/null 2>&1; then
	why="no GPU here (nvidia-smi -L)"
elif [ "$(id -u)" -ne 0 ]; then
	why="needs root (gpuckpt-shepherd runs as root)"
elif [ -n "${ASAN_RUNTIME:-}" ]; then
	why="sanitizer build: an ASan-built runtime cannot be preloaded into this program; run it from a normal build"
elif ! gk_find_criu; then
	why=$CRIU_WHY
elif ! command -v stdbuf >/dev/null 2>&1; then
	why="no stdbuf (coreutils): the program's output could not be followed line by line"
fi
[ -z "$why" ] || skip_rest $PLAN "$why"
gk_need_built "$SHEP" "$RT"

rm -rf "$LOGDIR"
mkdir -p "$LOGDIR"
IFS=, read -r -a VISIBLE <<<"${CUDA_VISIBLE_DEVICES:-0,1}"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && [ "${#VISIBLE[@]}" -lt "$NGPU" ] && NGPU=${#VISIBLE[@]}
GPU_A=${VISIBLE[0]:-0}
GPU_B=${VISIBLE[1]:-1}
tap_diag "logs: $LOGDIR; CRIU: $CRIU ($("$CRIU" --version 2>/dev/null | head -n 1)); $NGPU GPU(s) to use"
tap_diag "$(nvidia-smi -L 2>&1)"

# ---- 1. build ----
sha=$(sha256sum "$PUB/main.cu" | cut -d' ' -f1)
# The flags of its own Makefile, less OpenMP (it uses none).
echo "$NVCC -std=c++17 -O3 -arch=${NVCC_ARCH:-sm_90} -o $BIN $PUB/main.cu" >"$LOGDIR/build.cmd"
if [ "$sha" != "$PUB_SHA256" ]; then
	tap_not_ok "$NAME: $PUB/main.cu is the unmodified upstream file (SHA-256 $sha, want $PUB_SHA256)"
	skip_rest $((PLAN - 1)) "not the pinned, unmodified program"
elif ! "$NVCC" -std=c++17 -O3 -arch="${NVCC_ARCH:-sm_90}" -o "$BIN" "$PUB/main.cu" >"$LOGDIR/build.log" 2>&1; then
	tap_not_ok "$NAME: built by nvcc from the unmodified $PUB/main.cu"
	tap_diag "$(tail -n 15 "$LOGDIR/build.log")"
	skip_rest $((PLAN - 1)) "the program did not build"
fi
tap_ok "$NAME: built by nvcc alone from the unmodified $PUB/main.cu (SHA-256 ${sha:0:16}..., HeCBench, licence file: $(cd "$PUB" && for f in LICEN[CS]E* COPYING*; do [ -e "$f" ] && echo "$f"; done | head -n 1 | grep . || echo 'NONE'))"

# result FILE...: the program's output lines that do not depend on time.
result() { cat "$@" 2>/dev/null | grep -v '^Average execution time'; }
npass() { cat "$@" 2>/dev/null | grep -c '^PASS$'; }
# wait_pid PID SECONDS: a background job's status in STATUS ("timeout": killed).
wait_pid() {
	local t=0
	while kill -0 "$1" 2>/dev/null; do
		if [ "$t" -ge $(($2 * 10)) ]; then
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
diag_tail() {
	local f
	for f in "$@"; do
		[ -s "$f" ] || continue
		tap_diag "--- ${f#"$LOGDIR"/} (last 12 lines)"
		tap_diag "$(tail -n 12 "$f")"
	done
}
now() { date +%s.%N; }

# ---- 2. reference ----
REF=$LOGDIR/reference.out
echo "env CUDA_VISIBLE_DEVICES=$GPU_A stdbuf -oL $BIN $REPEAT" >"$LOGDIR/reference.cmd"
t0=$(now)
env CUDA_VISIBLE_DEVICES="$GPU_A" stdbuf -oL "$BIN" "$REPEAT" >"$REF" 2>"$LOGDIR/reference.err" &
wait_pid $! "$LIMIT"
ref_s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN {printf "%.1f", b - a}')
if [ "$STATUS" = 0 ] && grep -q "concurrent managed access not supported" "$REF"; then
	tap_skip "reference: the GPU has no concurrent managed access: the program skips itself"
	skip_rest $((PLAN - 2)) "the GPU has no concurrent managed access"
elif [ "$STATUS" = 0 ] && [ "$(npass "$REF")" -eq $ROUNDS ] && ! grep -q "^FAIL$\|^error: " "$REF"; then
	tap_ok "reference: natively, $NAME $REPEAT ends with $ROUNDS PASS in $ref_s s"
else
	tap_not_ok "reference: natively, $NAME $REPEAT ends (status $STATUS) with $ROUNDS PASS, no FAIL ($(npass "$REF") PASS)"
	diag_tail "$LOGDIR/reference.cmd" "$REF" "$LOGDIR/reference.err"
	skip_rest $((PLAN - 2)) "no reference: the uninterrupted run failed"
fi
# Half a round after the PASS of round AT: the middle of round AT + 1 (the
# host filling the arrays, the kernels, or the host checking them).
DELAY=${GK_PUB_DELAY:-$(awk -v s="$ref_s" -v r=$ROUNDS 'BEGIN {printf "%.2f", s / r / 2}')}
tap_diag "reference: $ref_s s, $(grep -m1 '^Average' "$REF") in round 1; the signal comes $DELAY s after PASS number $AT"
[ "${ref_s%.*}" -ge 10 ] || tap_diag "the reference ran less than 10 s: GK_PUB_REPEAT larger lets the signal come in the middle"

# round_trip LABEL GPU_RUN GPU_RESTORE [other]: points 3-5.
round_trip() {
	local label=$1 ga=$2 gb=$3 other=${4:-} d=$LOGDIR/$1.ckpt failed_before=$TAP_FAILED
	local out=$LOGDIR/$1.run.out err=$LOGDIR/$1.run.err rout=$LOGDIR/$1.restore.out rerr=$LOGDIR/$1.restore.err
	local spid committed moved refused back restored old='' new='' ok_other=1 before t0
	rm -rf "$d"
	mkdir -p "$d"
	echo "env CUDA_VISIBLE_DEVICES=$ga GPUCKPT_LOG_LEVEL=info $SHEP run --criu $CRIU --dir $d --uid 0 --gid 0 -- env LD_PRELOAD=$RT GPUCKPT_MODE=transparent stdbuf -oL $BIN $REPEAT" >"$LOGDIR/$label.run.cmd"
	env CUDA_VISIBLE_DEVICES="$ga" GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$CRIU" --dir "$d" \
		--uid 0 --gid 0 -- env LD_PRELOAD="$RT" GPUCKPT_MODE=transparent \
		stdbuf -oL "$BIN" "$REPEAT" >"$out" 2>"$err" &
	spid=$!
	t0=$SECONDS
	while [ "$(npass "$out")" -lt "$AT" ] && kill -0 "$spid" 2>/dev/null && [ $((SECONDS - t0)) -lt "$LIMIT" ]; do
		sleep 0.1
	done
	if [ "$(npass "$out")" -ge "$AT" ] && kill -0 "$spid" 2>/dev/null; then
		sleep "$DELAY"
		before=$(npass "$out")
		kill -TERM "$spid"
		wait_pid "$spid" "$LIMIT"
	else
		before=$(npass "$out")
		kill -KILL "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		STATUS="never reached PASS number $AT"
	fi
	committed=$(grep -o "checkpoint ckpt\.[0-9]* committed:.*" "$err" | tail -n 1)
	moved=$(grep -o "managed: [1-9][0-9]* allocations ([0-9]* bytes) moved to host memory and given back to the driver.*" "$err" | tail -n 1)
	refused=$(grep -i "refus" "$err" | grep -i "managed" | head -n 3)
	if [ -n "$committed" ] && [ -n "$moved" ] && [ -z "$refused" ] && [ "$before" -lt $ROUNDS ]; then
		tap_ok "$label: SIGTERM after PASS number $before of $ROUNDS: $committed; the runtime: $moved; $(du -sh "$d" 2>/dev/null | cut -f1) on disk"
	else
		tap_not_ok "$label: SIGTERM in the middle (after PASS number $before of $ROUNDS) commits a checkpoint with the managed memory moved out of the driver's way, none refused (shepherd status $STATUS; committed '$committed'; moved '$moved'; refused '$refused')"
		diag_tail "$LOGDIR/$label.run.cmd" "$out" "$err"
	fi

	echo "env CUDA_VISIBLE_DEVICES=$gb GPUCKPT_LOG_LEVEL=info $SHEP restore --criu $CRIU --dir $d --uid 0 --gid 0" >"$LOGDIR/$label.restore.cmd"
	t0=$SECONDS
	env CUDA_VISIBLE_DEVICES="$gb" GPUCKPT_LOG_LEVEL=info "$SHEP" restore --criu "$CRIU" \
		--dir "$d" --uid 0 --gid 0 >"$rout" 2>"$rerr" &
	wait_pid $! "$LIMIT"
	restored=$(grep -o "transparent: restored ckpt.*" "$rerr" | tail -n 1)
	back=$(grep -o "managed: [1-9][0-9]* allocations back at their addresses.*" "$rerr" | tail -n 1)
	refused=$(grep -i "refus" "$rerr" | grep -i "managed" | head -n 3)
	if [ -n "$other" ]; then
		read -r old new < <(sed -n 's/.*transparent: restore: GPU 0: \([^ ]*\) -> \([^ ]*\).*/\1 \2/p' "$rerr" | head -n 1)
		[ -n "$old" ] && [ -n "$new" ] && [ "$old" != "$new" ] || ok_other=
	fi
	if [ "$STATUS" = 0 ] && [ -n "$restored" ] && [ -n "$back" ] && [ -z "$refused" ] &&
		! grep -q "^info: set device" "$rout" && [ -n "$ok_other" ]; then
		tap_ok "$label: restored${other:+ onto another GPU, $old -> $new,} ($restored); the runtime: $back; it went on and ended in $((SECONDS - t0)) s"
	else
		tap_not_ok "$label: restored by gpuckpt-shepherd restore${other:+ onto another GPU (CUDA_VISIBLE_DEVICES=$gb; GPU 0: '$old' -> '$new')}, managed memory back at its addresses, going on to the end (status $STATUS; restore line '$restored'; managed line '$back'; refused '$refused'; a start line after the restore: $(grep -c "^info: set device" "$rout"))"
		diag_tail "$LOGDIR/$label.restore.cmd" "$rout" "$rerr"
	fi

	if diff <(result "$REF") <(result "$out" "$rout") >"$LOGDIR/$label.diff" 2>&1 &&
		[ "$(npass "$out" "$rout")" -eq $ROUNDS ]; then
		tap_ok "$label: the reference's output, line for line: $(npass "$out") PASS before the checkpoint, $(npass "$rout") after the restore, no FAIL"
	else
		tap_not_ok "$label: the reference's output, line for line, $ROUNDS PASS ($(npass "$out") before the checkpoint, $(npass "$rout") after the restore; $(cat "$out" "$rout" 2>/dev/null | grep -c '^FAIL$') FAIL)"
		diag_tail "$LOGDIR/$label.diff"
	fi
	tap_diag "$label: $(grep -hE "transparent: (restore: GPU|checkpoint ckpt|restored)|phases:|managed:|refused" "$err" "$rerr" | cut -c1-300 | sort -u | tr '\n' ' ')"
	[ "$TAP_FAILED" -ne "$failed_before" ] || rm -rf "$d"
}

# over_budget LABEL: the trip's points fail when the time is spent (0), else 1.
over_budget() {
	[ "$SECONDS" -ge "$BUDGET" ] || return 1
	for _ in $(seq $PER_TRIP); do
		tap_not_ok "$1: not run: the time for the whole script (GK_PUB_BUDGET, $BUDGET s) was spent"
	done
}

over_budget same-gpu || round_trip same-gpu "$GPU_A" "$GPU_A"
if [ "$NGPU" -lt 2 ]; then
	for _ in $(seq $PER_TRIP); do tap_skip "other-gpu: a restore onto another GPU needs two, this machine shows $NGPU"; done
else
	over_budget other-gpu || round_trip other-gpu "$GPU_A" "$GPU_B" other
fi
tap_diag "$SECONDS s in all"
tap_done
