#!/bin/bash
# opencl-public.sh - transparent mode for a public OpenCL program that no one
# here wrote, unmodified: CLBlast's own test of its AXPY routine
# (clblast_test_xaxpy, Debian trixie's clblast-tests 1.6.3-1+b1, with
# libclblast1 and libblas3, the reference BLAS it compares against). It is
# fetched from Debian's archive into a cache outside the tree by
# public-fetch.sh ($GK_PUBLIC_CACHE, default
# /var/cache/gpuckpt-test/opencl-public; the roots fetch it before their
# tests lose the network), each .deb checked against its SHA-256 from
# trixie's package index, unpacked (dpkg-deb -x), and run on pocl's pthread device under `gpuckpt-shepherd
# run` with the runtime preloaded and no CUDA driver: SIGTERM half-way
# through the time the uninterrupted run took (its output goes to a file,
# fully buffered: nothing of it shows when it is), CRIU's dump, the restore,
# and the combined output (before the dump, after the restore) must report
# what the uninterrupted run reports for every precision.
#
# Needs root, munged, CRIU 4 or later, pocl, trixie's libraries (the
# binaries need its glibc: the trixie root, CI's check-slurm) and the
# archive (or the cache); elsewhere every test is a SKIP with the reason.
#
#   make check TESTS=opencl/opencl-public.sh     (in build/tests)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
PLAN=4
tap_plan $PLAN
gk_scratch

skip_all() {
	for _ in $(seq $PLAN); do tap_skip "$1"; done
	exit 0
}
grep -q '^#define HAVE_OPENCL 1' "$top_builddir/config.h" ||
	skip_all "built without OpenCL (configure --without-opencl, or no OpenCL headers: install ocl-icd-opencl-dev)"
gk_need_built "$SHEP" "$GK_RUNTIME"
if [ "$(id -u)" -ne 0 ]; then
	skip_all "needs root (the shepherd does)"
elif ! gk_find_criu; then
	skip_all "$CRIU_WHY"
elif [ "$(dpkg --print-architecture 2>/dev/null)" != amd64 ]; then
	skip_all "the program fetched is Debian's amd64 build"
fi

# The program and what it needs, from the cache (fetched there first where
# there is a network: public-fetch.sh).
X=$GK_SCRATCH/x
debs=$(bash "$top_srcdir/tests/opencl/public-fetch.sh") || skip_all "$debs"
while IFS= read -r f; do
	dpkg-deb -x "$f" "$X" || skip_all "dpkg-deb cannot unpack $f"
done <<<"$debs"
PROG=$X/usr/bin/clblast_test_xaxpy
LIBS=$X/usr/lib/x86_64-linux-gnu:$X/usr/lib/x86_64-linux-gnu/blas
export POCL_DEVICES=pthread
t0=$(date +%s%N)
ref=$(POCL_CACHE_DIR=$GK_SCRATCH/pocl-cache LD_LIBRARY_PATH=$LIBS "$PROG" 2>&1)
took_ms=$((($(date +%s%N) - t0) / 1000000))
# What each precision came to; the device's name aside.
results() { grep -aE "Starting tests|Pass rate|test\(s\) (passed|skipped|failed)|All tests skipped" | sed 's/\x1b\[[0-9;]*m//g'; }
want=$(results <<<"$ref")
grep -q "Starting tests for the 'DAXPY'" <<<"$want" ||
	skip_all "clblast_test_xaxpy does not run here (it needs trixie's libraries and an OpenCL device): $(head -c 300 <<<"$ref")"
gk_munged || skip_all "$MUNGE_WHY"
trap '[ -n "$MUNGED" ] && kill "$MUNGED" 2>/dev/null; rm -rf "$GK_SCRATCH"' EXIT
# Nothing of ours goes into the checkpointed program.
gk_close_inherited

dir=$GK_SCRATCH/ck out=$GK_SCRATCH/out err=$GK_SCRATCH/err
args=(--criu "$CRIU" --dir "$dir" --uid 0 --gid 0 --job 1 --step 0 --task 0)
mkdir -p "$dir"
# A kernel cache of its own: it compiles its kernels again, as the first did.
"$SHEP" run "${args[@]}" -- env "LD_LIBRARY_PATH=$LIBS" "LD_PRELOAD=$(gk_preload)" \
	POCL_CACHE_DIR="$GK_SCRATCH/pocl-cache2" \
	"ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}" GPUCKPT_LOG_LEVEL=info "$PROG" \
	</dev/null >"$out" 2>"$err" &
spid=$!
sleep "$(printf '%d.%03d' $((took_ms / 2000)) $((took_ms / 2 % 1000)))"
kill -TERM $spid 2>/dev/null
wait $spid
status=$?
# 143: checkpointed on SIGTERM before the program ended (had it ended, its
# own status would be the shepherd's, and no checkpoint taken).
if [ "$status" = 143 ] && [ -d "$dir/ckpt.000001/criu" ] &&
	grep -q "checkpoint ckpt.000001 committed" "$err"; then
	tap_ok "clblast_test_xaxpy (Debian's, unmodified) checkpointed by CRIU $((took_ms / 2)) ms into a $took_ms ms run"
else
	tap_not_ok "clblast_test_xaxpy checkpointed by CRIU $((took_ms / 2)) ms into a $took_ms ms run (the shepherd ended $status)"
	tap_diag "$(tail -n 8 "$err"; cat "$dir"/.tmp*/criu/dump.log 2>/dev/null | grep -i error | tail -n 5)"
fi
"$SHEP" restore "${args[@]}" </dev/null >"$out.2" 2>"$err.2"
status=$?
if [ "$status" = 0 ] && grep -q "transparent: restored from" "$err.2"; then
	tap_ok "restored by CRIU and ran to its end"
else
	tap_not_ok "restored by CRIU and ran to its end (status $status)"
	tap_diag "$(tail -n 8 "$err.2"; grep -i error "$dir"/ckpt.*/criu/restore.log 2>/dev/null | tail -n 5)"
fi
got=$(cat "$out" "$out.2" | results)
check "before the dump and after the restore, its output reports what the uninterrupted run reports ($(grep -c "Pass rate" <<<"$want") pass rates)" \
	test "$got" = "$want"
[ "$got" = "$want" ] || tap_diag "$(diff <(echo "$want") <(echo "$got") | head -n 10)"
check "the uninterrupted run's tests all passed" eval "grep -q 'test(s) passed' <<<\"\$want\" && ! grep -Eq '^ *[1-9][0-9]* test\(s\) failed' <<<\"\$want\""
tap_done
