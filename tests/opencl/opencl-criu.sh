#!/bin/bash
# opencl-criu.sh - transparent mode for an OpenCL program on pocl's CPU device
# (docs/opencl.md): prog-clloop, which knows nothing of gpuckpt, runs under
# `gpuckpt-shepherd run` with the runtime preloaded and no CUDA driver. A
# SIGTERM half-way: the runtime drains its queues and reports, the shepherd
# dumps the tree with CRIU (the buffers are host memory) and seals it; the
# restore brings it back to go on from where it was, to the uninterrupted
# run's result. Then a continue trigger (SIGUSR1): dumped and left running, to
# the same result.
#
# Needs root, munged, pocl and CRIU 4 or later (gk_find_criu: the trixie root
# has it; CI runs this in the roots' check-slurm); elsewhere every test is a
# SKIP with the reason.
#
#   make check TESTS=opencl/opencl-criu.sh     (in build/tests)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
PROG=$top_builddir/tests/opencl/prog-clloop
PLAN=6
tap_plan $PLAN
gk_scratch

skip_all() {
	for _ in $(seq $PLAN); do tap_skip "$1"; done
	exit 0
}
grep -q '^#define HAVE_OPENCL 1' "$top_builddir/config.h" ||
	skip_all "built without OpenCL (configure --without-opencl, or no OpenCL headers: install ocl-icd-opencl-dev)"
gk_need_built "$SHEP" "$PROG" "$GK_RUNTIME"
export POCL_CACHE_DIR=$GK_SCRATCH/pocl-cache POCL_DEVICES=pthread
STEPS=40 PAUSE=60
ref=$("$PROG" $STEPS 0 2>&1)
want=$(sed -n 's/^result //p' <<<"$ref")
[ -n "$want" ] || skip_all "no OpenCL device (install pocl-opencl-icd): $(head -c 300 <<<"$ref")"
if [ "$(id -u)" -ne 0 ]; then
	skip_all "needs root (the shepherd does)"
elif ! gk_find_criu; then
	skip_all "$CRIU_WHY"
elif ! gk_munged; then
	skip_all "$MUNGE_WHY"
fi
trap '[ -n "$MUNGED" ] && kill "$MUNGED" 2>/dev/null; rm -rf "$GK_SCRATCH"' EXIT
# Nothing of ours goes into the checkpointed program.
gk_close_inherited

wait_for() { # FILE PATTERN SECONDS
	for _ in $(seq $(($3 * 20))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}
# No stand-in libcuda: the node has no CUDA driver, as in the roots.
RUN=(env "LD_PRELOAD=$(gk_preload)" "ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}"
	GPUCKPT_LOG_LEVEL=info "$PROG" $STEPS $PAUSE)

# one NAME SIGNAL: run under the shepherd, SIGNAL at step 12.
one() {
	local dir=$GK_SCRATCH/$1 out=$GK_SCRATCH/$1.out
	local args=(--criu "$CRIU" --dir "$dir" --uid 0 --gid 0 --job 1 --step 0 --task 0)
	mkdir -p "$dir"
	"$SHEP" run "${args[@]}" -- "${RUN[@]}" </dev/null >"$out" 2>&1 &
	SPID=$!
	wait_for "$out" "^step 12$" 20
	kill -"$2" "$SPID" 2>/dev/null
}

# Exit trigger: dumped, ended, restored.
one term TERM
wait "$SPID"
status=$?
dir=$GK_SCRATCH/term out=$GK_SCRATCH/term.out
last1=$(grep -o "^step [0-9]*" "$out" | tail -n 1 | cut -d' ' -f2)
if [ -d "$dir/ckpt.000001/criu" ] && grep -q "checkpoint ckpt.000001 committed" "$out" &&
	[ -n "$last1" ] && [ "$last1" -lt $((STEPS - 1)) ] && ! grep -q "^result" "$out"; then
	tap_ok "checkpointed by CRIU at step $last1 of $STEPS, with no CUDA driver (the shepherd ended $status)"
else
	tap_not_ok "checkpointed by CRIU half-way (the shepherd ended $status, last step '$last1')"
	tap_diag "$(tail -n 12 "$out"; cat "$dir"/.tmp*/criu/dump.log 2>/dev/null | grep -i error | tail -n 5)"
fi
check "the runtime drained its queues and reported to the shepherd (no 'did not report')" \
	eval "grep -q 'transparent: .tmp.ckpt.000001.*wrote' '$out' && ! grep -q 'did not report' '$out'"
again=$GK_SCRATCH/term.restored.out
"$SHEP" restore --criu "$CRIU" --dir "$dir" --uid 0 --gid 0 --job 1 --step 0 --task 0 \
	</dev/null >"$again" 2>&1
status=$?
first2=$(grep -o "^step [0-9]*" "$again" | head -n 1 | cut -d' ' -f2)
got=$(sed -n 's/^result //p' "$again")
if [ "$status" = 0 ] && grep -q "transparent: restored from" "$again" &&
	[ -n "$first2" ] && [ "$first2" -gt 0 ] && [ "$first2" -le $((last1 + 1)) ]; then
	tap_ok "restored by CRIU; the runtime saw its checkpoint committed and the program went on from step $first2"
else
	tap_not_ok "restored by CRIU and went on (status $status, first step '$first2')"
	tap_diag "$(tail -n 12 "$again"; grep -i error "$dir"/ckpt.*/criu/restore.log 2>/dev/null | tail -n 5)"
fi
check "the restored program ends with the uninterrupted run's result ($want)" test "$got" = "$want"

# Continue trigger: dumped and left running.
one cont USR1
wait "$SPID"
status=$?
dir=$GK_SCRATCH/cont out=$GK_SCRATCH/cont.out
check "continue trigger: checkpointed by CRIU and left running (the shepherd ended $status)" \
	eval "[ -d '$dir/ckpt.000001/criu' ] && grep -q 'checkpoint ckpt.000001 committed' '$out' && [ $status = 0 ]"
check "continue trigger: the program ends with the uninterrupted run's result" \
	test "$(sed -n 's/^result //p' "$out")" = "$want"
tap_done
