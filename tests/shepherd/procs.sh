#!/bin/bash
# procs.sh - a task whose tree runs several CUDA processes with the runtime
# (torchrun's ranks; runtime/shepherd/proc_parts.c), when the checkpoint
# fails after their folders became parts of the task's: CRIU here is a fake
# that fails every dump, so this runs wherever root does (the round trip with
# a real CRIU is tests/slurm/e2e-procs.sh's). Two ranks of prog-nccl on the
# stand-ins (the driver with its checkpoint API), started by one shell under
# `gpuckpt-shepherd run`:
#
#  1. a SIGTERM sent to the shell alone, from outside (Slurm signals every
#     process of the step), is held: the shell, which never uses CUDA, is
#     there after it (at its default it ended the shell, and CRIU later
#     found the tree broken);
#  2. on SIGUSR1 (a continue trigger) both ranks write their folders and the
#     shepherd takes them as parts of the task's checkpoint;
#  3. the dump fails, and each rank loads its device memory back from its
#     own folder (moved back before the unlock) and makes its communicators
#     again;
#  4. no folder is left in the root: each runtime removed its own, the
#     shepherd its;
#  5. both ranks run to the end with the uninterrupted run's lines.
#
#   make check TESTS=shepherd/procs.sh     (in build/tests; needs root)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
CK=$top_builddir/tests/cuda-standin/ckpt/.libs
NC=$top_builddir/tests/nccl-standin/.libs
PROG=$top_builddir/tests/runtime/prog-nccl
[ -x "$top_builddir/tests/runtime/.libs/prog-nccl" ] && PROG=$top_builddir/tests/runtime/.libs/prog-nccl
PLAN=5
tap_plan $PLAN
gk_scratch
gk_need_built "$SHEP" "$PROG" "$CK/libcuda.so.1" "$NC/libnccl.so.2" "$GK_RUNTIME"
if [ "$(id -u)" -ne 0 ]; then
	for _ in $(seq $PLAN); do tap_skip "needs root (the shepherd refuses to run without it)"; done
	exit 0
fi
trap 'kill $SPID 2>/dev/null; rm -rf "$GK_SCRATCH"' EXIT
FAKE=$GK_SCRATCH/criu
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "Version: 4.1"; exit 0; }\nexit 1\n' >"$FAKE"
chmod 0755 "$FAKE"
mkdir -p "$GK_SCRATCH/state" "$GK_SCRATCH/ckpt" "$GK_SCRATCH/ref"
# (In a sanitizer build: no leak report, which would fail the programs'
# exit; the sanitizer's runtime before the runtime's.)
export LD_LIBRARY_PATH=$NC:$CK GPUCKPT_STANDIN_CKPT_DIR=$GK_SCRATCH/state GPUCKPT_STANDIN_NAME=stand-in
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
ARGS="--nranks 2 --steps 40 --per-step 3 --floats 4096 --mib 4"
LINES='^(step|ballast|done) '

for r in 0 1; do
	timeout -s KILL 120 "$PROG" --rank $r --id "$GK_SCRATCH/ref/id" --device $r $ARGS \
		>"$GK_SCRATCH/ref/$r.out" 2>&1 &
	eval "rp$r=\$!"
done
if ! { wait "$rp0" && wait "$rp1"; }; then
	tap_diag "the reference run failed: $(tail -n 3 "$GK_SCRATCH"/ref/*.out)"
	for _ in $(seq $PLAN); do tap_not_ok "no reference run"; done
	exit 1
fi

O=$GK_SCRATCH/run
GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$FAKE" --dir "$GK_SCRATCH/ckpt" --uid 0 --gid 0 -- \
	env LD_PRELOAD="$(gk_preload)" bash -c "$PROG --rank 0 --id $GK_SCRATCH/id --device 0 $ARGS --sleep-ms 100 >$O.0 2>&1 &
		$PROG --rank 1 --id $GK_SCRATCH/id --device 1 $ARGS --sleep-ms 100 >$O.1 2>&1 & wait" \
	>"$O.out" 2>&1 &
SPID=$!
wait_line() { for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
wait_line "$O.0" "^step 3 " && wait_line "$O.1" "^step 3 "
sh=$(pgrep -P "$SPID" -x bash | head -n 1)
kill -TERM "$sh" 2>/dev/null
sleep 0.5
if [ -n "$sh" ] && kill -0 "$sh" 2>/dev/null; then
	tap_ok "a SIGTERM sent to the shell alone, from outside, is held: the shell is still there"
else
	tap_not_ok "a SIGTERM sent to the shell alone, from outside, is held: the shell is still there (pid ${sh:-none})"
fi
kill -USR1 "$SPID"
wait_line "$O.out" "checkpoint of pid [0-9]* failed"
if grep -q "transparent: 2 processes of the task wrote checkpoints; each becomes a part" "$O.out" &&
	grep -q "checkpoint of pid [0-9]* failed: criu dump failed" "$O.out"; then
	tap_ok "both ranks wrote their folders, taken as parts of the task's checkpoint; the fake CRIU failed the dump"
else
	tap_not_ok "both ranks wrote their folders, taken as parts of the task's checkpoint; the fake CRIU failed the dump"
	tap_diag "$(grep gpuckpt "$O.out" "$O.0" "$O.1" | tail -n 10)"
fi
wait_line "$O.1" "communicators made again" && wait_line "$O.0" "communicators made again"
if [ "$(cat "$O.0" "$O.1" | grep -c "transparent: device memory loaded")" = 2 ] &&
	[ "$(cat "$O.0" "$O.1" | grep -c "nccl: communicators made again")" = 2 ]; then
	tap_ok "each rank loaded its device memory back from its own folder and made its communicators again"
else
	tap_not_ok "each rank loaded its device memory back from its own folder and made its communicators again"
	tap_diag "$(grep gpuckpt "$O.0" "$O.1" | tail -n 10)"
fi
wait "$SPID"
st=$?
SPID=
left=$(ls -A "$GK_SCRATCH/ckpt" | grep -v '^gpuckpt.events$' | tr '\n' ' ')
if [ -z "$left" ]; then
	tap_ok "no folder is left in the root"
else
	tap_not_ok "no folder is left in the root (${left})"
fi
same=1
for r in 0 1; do
	grep -E "$LINES" "$GK_SCRATCH/ref/$r.out" >"$GK_SCRATCH/ref/$r.lines"
	grep -E "$LINES" "$O.$r" | cmp -s - "$GK_SCRATCH/ref/$r.lines" || same=0
done
if [ "$st" = 0 ] && [ $same = 1 ]; then
	tap_ok "both ranks ran to the end with the uninterrupted run's lines ($(tail -n 1 "$GK_SCRATCH/ref/0.lines"))"
else
	tap_not_ok "both ranks ran to the end with the uninterrupted run's lines (the shepherd ended $st)"
	tap_diag "$(diff <(grep -E "$LINES" "$O.0") "$GK_SCRATCH/ref/0.lines" | head -n 6)"
fi
tap_done
