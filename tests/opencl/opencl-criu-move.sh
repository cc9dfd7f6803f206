#!/bin/bash
# opencl-criu-move.sh - transparent mode onto another OpenCL device
# (docs/opencl.md, "Another device after CRIU"): prog-clloop, which knows
# nothing of gpuckpt, runs under `gpuckpt-shepherd run` with the runtime
# preloaded, GPUCKPT_OPENCL_MOVABLE=1 and pocl's two CPU devices (pthread and
# basic), on the first of them. A SIGTERM half-way: CRIU dumps it. Before the
# restore, the checkpoint folder's opencl.device names the other device; the
# restored runtime makes every OpenCL object anew there, and the program ends
# on that device with the uninterrupted run's result.
#
# Needs root, munged, pocl and CRIU 4 or later (gk_find_criu: the trixie root
# has it); elsewhere every test is a SKIP with the reason.
#
#   make check TESTS=opencl/opencl-criu-move.sh     (in build/tests)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
PROG=$top_builddir/tests/opencl/prog-clloop
PLAN=4
tap_plan $PLAN
gk_scratch

skip_all() {
	for _ in $(seq $PLAN); do tap_skip "$1"; done
	exit 0
}
grep -q '^#define HAVE_OPENCL 1' "$top_builddir/config.h" ||
	skip_all "built without OpenCL (configure --without-opencl, or no OpenCL headers: install ocl-icd-opencl-dev)"
gk_need_built "$SHEP" "$PROG" "$GK_RUNTIME"
export POCL_CACHE_DIR=$GK_SCRATCH/pocl-cache POCL_DEVICES="pthread basic"
STEPS=40 PAUSE=60
ref=$("$PROG" $STEPS 0 2>&1)
want=$(sed -n 's/^result //p' <<<"$ref")
first=$(sed -n 's/^device //p' <<<"$ref")
[ -n "$want" ] || skip_all "no OpenCL device (install pocl-opencl-icd): $(head -c 300 <<<"$ref")"
# pocl 6 renamed the devices (not POCL_DEVICES' words): pthread-ARCH became
# cpu-ARCH and basic-ARCH cpu-minimal-ARCH (trixie, sid). opencl.device names
# the other device by its whole name, which is no other's beginning.
case $first in
basic-* | cpu-minimal-*) word=pthread ;;
pthread-* | cpu-*) word=basic ;;
*) skip_all "pocl does not offer its pthread and basic devices together here (first device '$first')" ;;
esac
other=$(POCL_DEVICES=$word "$PROG" 1 0 2>&1 | sed -n 's/^device //p')
[ -n "$other" ] && [ "$other" != "$first" ] ||
	skip_all "pocl's $word device is not there (POCL_DEVICES=$word gave '$other')"
if [ "$(id -u)" -ne 0 ]; then
	skip_all "needs root (the shepherd does)"
elif ! gk_find_criu; then
	skip_all "$CRIU_WHY"
elif ! gk_munged; then
	skip_all "$MUNGE_WHY"
fi
trap '[ -n "$MUNGED" ] && kill "$MUNGED" 2>/dev/null; rm -rf "$GK_SCRATCH"' EXIT
gk_close_inherited

wait_for() { # FILE PATTERN SECONDS
	for _ in $(seq $(($3 * 20))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}
RUN=(env "LD_PRELOAD=$(gk_preload)" "ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}"
	GPUCKPT_LOG_LEVEL=info GPUCKPT_OPENCL_MOVABLE=1 "$PROG" $STEPS $PAUSE)
dir=$GK_SCRATCH/move out=$GK_SCRATCH/move.out
args=(--criu "$CRIU" --dir "$dir" --uid 0 --gid 0 --job 1 --step 0 --task 0)
mkdir -p "$dir"
"$SHEP" run "${args[@]}" -- "${RUN[@]}" </dev/null >"$out" 2>&1 &
SPID=$!
wait_for "$out" "^step 12$" 20
kill -TERM "$SPID" 2>/dev/null
wait "$SPID"
status=$?
last1=$(grep -o "^step [0-9]*" "$out" | tail -n 1 | cut -d' ' -f2)
if [ -d "$dir/ckpt.000001/criu" ] && [ -n "$last1" ] && [ "$last1" -lt $((STEPS - 1)) ] &&
	! grep -q "^result" "$out"; then
	tap_ok "checkpointed by CRIU at step $last1 of $STEPS on '$first' (the shepherd ended $status)"
else
	tap_not_ok "checkpointed by CRIU half-way (the shepherd ended $status, last step '$last1')"
	tap_diag "$(tail -n 12 "$out")"
fi
echo "$other" >"$dir/opencl.device"
again=$GK_SCRATCH/move.restored.out
"$SHEP" restore "${args[@]}" </dev/null >"$again" 2>&1
status=$?
check "restored by CRIU; the runtime made its OpenCL objects anew on '$other' (status $status)" \
	grep -qF "opencl: restored onto OpenCL device '$other'" "$again"
check "the program ends on '$other' (its queue's device: $(sed -n 's/^device //p' "$again"))" \
	[ "$(sed -n 's/^device //p' "$again" | tail -n 1)" = "$other" ]
check "with the uninterrupted run's result ($want)" \
	test "$(sed -n 's/^result //p' "$again")" = "$want"
[ "$(sed -n 's/^result //p' "$again")" = "$want" ] || tap_diag "$(tail -n 15 "$again")"
tap_done
