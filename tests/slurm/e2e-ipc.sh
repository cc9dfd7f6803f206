#!/bin/bash
# e2e-ipc.sh - issue 27 under real Slurm: the two tasks of one step (srun -n 2,
# one node) share device memory through legacy CUDA IPC, in application mode
# with GPUCKPT_CUDA_IPC unset, as by default (runtime/core/interpose/ipc.c), on the CUDA driver
# stand-in. tests/slurm/prog-ipc-ranks: task 0 exports a cuMemAlloc block and
# publishes the handle in a file of the job's folder, task 1 opens it; they
# take turns rewriting its halves, talking only through the block, and
# checkpoint as one set of the step (the program is the agreeing layer of
# gpuckpt_coord.h, over the shared block, as gpuckpt_mpi.h is over MPI).
#
#   1. `scontrol requeue` in the middle: both tasks write their part of one
#      set at the same step (task 0's holds the block), Slurm requeues the
#      job, the plugin restores that set in both tasks, task 0 re-exports
#      (a new handle file), task 1 opens it at the address it had, both
#      resume at the step and end with the uninterrupted run's checksums.
#   2. With GPUCKPT_CUDA_IPC=0 cuIpcGetMemHandle of placed memory is
#      refused, with the message naming the setting.
#
# GK_E2E_IPC_BREAK=nocoord runs job 1 without the agreeing layer (plain
# gpuckpt_point()): the runtime refuses a checkpoint of one task of two, so
# there is nothing to restore and the points on the restore must fail (the
# "before" case); GK_E2E_IPC_BREAK=lostblock has task 0 clear the shared
# block after its restore, as if it had not been restored: the checksums must
# then differ. About 25 s.
#
#   flock /tmp/gk-cluster.lock make -C build/plain/tests check TESTS=slurm/e2e-ipc.sh
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

PROG=$top_builddir/tests/slurm/prog-ipc-ranks
E2E_OWN_APP=1
e2e_require 14
for f in "$PROG" "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME"; do
	[ -e "$f" ] || e2e_bail "not built: $f (make check builds the stand-in and prog-ipc-ranks)"
done
export GK_KILL_WAIT=${GK_KILL_WAIT:-10}
e2e_start
APP_ENV="export LD_LIBRARY_PATH=$GK_STANDIN_DIR\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
STEPS=40 DELAY=150
X=""
case ${GK_E2E_IPC_BREAK:-} in
nocoord) X=--no-coord && tap_diag "GK_E2E_IPC_BREAK=nocoord: job 1 runs without the agreeing layer" ;;
lostblock) X=--lose-block && tap_diag "GK_E2E_IPC_BREAK=lostblock: job 1's task 0 clears the shared block after its restore" ;;
esac

# The reference: the two tasks natively on the stand-in, outside Slurm.
ref_dir=$(mktemp -d /tmp/gk-e2e-ipc.XXXXXX)
for r in 0 1; do
	with_standin env -u SLURM_RESTART_COUNT SLURM_PROCID=$r SLURM_NTASKS=2 "$PROG" \
		--handle "$ref_dir/handle" --steps $STEPS >"$ref_dir/$r.out" 2>&1 &
done
wait
sums() { sed -n 's/^prog-ipc-ranks: rank \([01]\) sum /\1 /p' "$@" | sort | tr '\n' ' '; }
ref=$(sums "$ref_dir"/0.out "$ref_dir"/1.out)
tap_diag "reference (uninterrupted, outside Slurm): $ref"
check "natively on the stand-in, task 1 opens task 0's block and both finish ($ref)" \
	test "$(wc -w <<<"$ref")" -eq 4
[ "$(wc -w <<<"$ref")" -eq 4 ] || tap_diag "$(cat "$ref_dir"/*.out)"
rm -rf "$ref_dir"

# job 1: IPC on (the default), requeued in the middle. job 2: IPC off.
s1=$(job_script ipc-on "unset GPUCKPT_CUDA_IPC
srun -N 1 -n 2 $PROG --handle $JOBS/ipc-handle.\$SLURM_JOB_ID --steps $STEPS --delay-ms $DELAY $X")
s2=$(job_script ipc-off "export GPUCKPT_CUDA_IPC=0
srun -N 1 -n 2 $PROG --handle $JOBS/ipc-handle.\$SLURM_JOB_ID --steps 4 --wait-s 20")
a=$(submit --as gkuser1 -N 1 -n 2 -w gk1 --gres=gpu:1 --gpu-checkpoint=on "$s1")
b=$(submit --as gkuser2 -N 1 -n 2 -w gk2 --gres=gpu:1 --gpu-checkpoint=on "$s2")

both_at() { out_has "$1" "^prog-ipc-ranks: rank 0 step $2\$" && out_has "$1" "^prog-ipc-ranks: rank 1 step $2\$"; }
wait_for 90 both_at "$a" 6 || { job_diag "$a"; show_out "$a"; }
scontrol requeue "$a"
wait_out "$a" '^batch: node .* restart 1 ' 90
wait_over "$a" 120
out=$(job_out "$a")
first_run() { awk '/^batch: node .* restart [1-9]/ { exit } { print }' "$out"; }
after() { awk 'f { print } /^batch: node .* restart 1/ { f = 1 }' "$out"; }

# The checkpoint of the requeue: one set, the same step in both tasks.
c0=$(first_run | sed -n 's/^prog-ipc-ranks: rank 0 checkpoint at step \([0-9]*\): set \([0-9]*\) recorded .*/\1 \2/p')
c1=$(first_run | sed -n 's/^prog-ipc-ranks: rank 1 checkpoint at step \([0-9]*\): set \([0-9]*\) recorded .*/\1 \2/p')
tap_diag "requeued after step 6; checkpoints (step set): rank 0 '$c0', rank 1 '$c1'"
check "the requeue: both tasks wrote their part of one set at the same step, recorded (rank 0: $c0; rank 1: $c1)" \
	test -n "$c0" -a "$c0" = "$c1" -a "$(wc -l <<<"$c0")" -eq 1
S=${c0% *} N=${c0#* }
last() { first_run | sed -n "s/^prog-ipc-ranks: rank $1 step \([0-9]*\)\$/\1/p" | tail -n 1; }
check "... the tasks' last step in that run is the set's (rank 0: $(last 0), rank 1: $(last 1), set at ${S:-none}), before the end ($STEPS)" \
	test -n "$S" -a "$(last 0)" = "$S" -a "$(last 1)" = "$S" -a "${S:-0}" -lt $STEPS
check "... no error of the runtime's IPC, no CUDA error in the program, no checkpoint refused" \
	eval '! grep -q "^gpuckpt: ipc:\|^prog-ipc-ranks: .*CUDA_ERROR\|: refused" "$out"'
grep "^gpuckpt: ipc:\|^prog-ipc-ranks: .*CUDA_ERROR\|: refused" "$out" | head -n 5 | while read -r l; do tap_diag "$l"; done
check_out "$a" "Slurm requeued the job and it started again" '^batch: node .* restart 1 '
for t in 0 1; do
	check_out "$a" "the plugin restores set ${N:-?} in task $t, as in every task of the step" \
		"^gpuckpt: job $a step\\.0 task $t: restart 1: restoring set ${N:-none}, as every one of the 2 tasks"
done
r0=$(after | sed -n 's/^prog-ipc-ranks: rank 0 restored at step \([0-9]*\) from set \([0-9]*\)$/\1 \2/p')
r1=$(after | sed -n 's/^prog-ipc-ranks: rank 1 restored at step \([0-9]*\) from set \([0-9]*\)$/\1 \2/p')
check "both tasks restored at the set's step ($c0): rank 0 '$r0', rank 1 '$r1'" \
	test -n "$c0" -a "$r0" = "$c0" -a "$r1" = "$c0"
h=$(ls "$JOBS"/ipc-handle."$a" 2>/dev/null)
e=$(od -An -t d8 -j 8 -N 8 "$JOBS/ipc-handle.$a" 2>/dev/null | tr -d ' ')
check "task 0 published a new handle after the restore (the handle file's run: ${e:-none})" \
	test -n "$h" -a "$e" = 1
o1=$(first_run | sed -n 's/^prog-ipc-ranks: rank 1 opened the block at //p')
o2=$(after | sed -n 's/^prog-ipc-ranks: rank 1 opened the block at //p')
check "task 1 opened the new handle at the address it had ($o1, then $o2)" test -n "$o1" -a "$o1" = "$o2"
got=$(after | sed -n 's/^prog-ipc-ranks: rank \([01]\) sum /\1 /p' | sort | tr '\n' ' ')
check "both tasks ended with the uninterrupted run's checksums ($got; reference $ref)" \
	test -n "$got" -a "$got" = "$ref"
[ "$got" = "$ref" ] || show_out "$a"
check_state "$a" COMPLETED "the job completed"

# --- GPUCKPT_CUDA_IPC=0 ------------------------------------------------------------------
wait_over "$b" 60
msg="gpuckpt: ipc: 0x[0-9a-f]*: CUDA IPC of device memory is turned off under gpuckpt (GPUCKPT_CUDA_IPC=0; unset it to let gpuckpt serve it, or run without --gpu-checkpoint)"
said=$(grep -cx "$msg" "$(job_out "$b")")
check "with GPUCKPT_CUDA_IPC=0, task 0's cuIpcGetMemHandle of placed memory is refused, the message naming the setting (said $said time(s))" \
	eval 'test "$said" -eq 1 && out_has "$b" "^prog-ipc-ranks: rank 0: cuIpcGetMemHandle: CUDA_ERROR_NOT_SUPPORTED"'
check "... task 1 is told, and the job failed rather than running on" \
	eval 'out_has "$b" "^prog-ipc-ranks: rank 1: rank 0 could not export its memory" && state_is "$b" FAILED'
[ "$TAP_FAILED" -eq 0 ] || show_out "$b"
tap_done
