#!/bin/bash
# e2e-flush-sets.sh - a step of several tasks survives the loss of a node
# from its newest *flushed* set (issue 29): the runtime flushes every task's
# part and task 0's set records (flush_root= in plugstack.conf), and after a
# node loss the prolog copies the newest set that is whole in the flush root
# into the shared root before it plans, so the ranks restore it together.
#
# A 4-rank MPI job (examples/halo, srun --mpi=pmix, gpuckpt_mpi.h) on gk1 and
# gk2 checkpoints every 2 s. Once sets are flushed, gk1 (ranks 0 and 1, task
# 0's set records) "crashes": its burst buffer is gone and its epilog never
# runs; gk2's epilog stages its ranks' parts out, without any set record, so
# the shared root has no complete set. While the job waits for a node, the
# newest flushed set is made incomplete (rank 1's part removed from the flush
# root, as if gk1 died before flushing it): the job must restore the set
# before it, the newest flushed *complete* one, never the incomplete one and
# never a mix, and end with the uninterrupted checksum. On 62494b7 (the plan
# read the shared root only) the ranks start afresh: the points on the
# restored set fail.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

HALO=$top_builddir/examples/halo/halo-drv
MOD=$top_builddir/examples/halo/.libs/halo_kernels_host.so
N=14
# Without MPI at configure time there is no halo-drv: the one reason to skip.
if ! grep -q '^MPI_LIBS = .*-l' "$top_builddir/Makefile" 2>/dev/null; then
	tap_plan 1
	tap_skip "no MPI at configure time (libopenmpi-dev, libpmix-dev): examples/halo/halo-drv is not built"
	exit 0
fi
E2E_OWN_APP=1
e2e_require $N
for f in "$HALO" "$MOD" "$GK_STANDIN_DIR/libcuda.so.1"; do
	[ -e "$f" ] || e2e_bail "not built: $f (make; make check-slurm builds the CUDA stand-in)"
done
FLUSH=$E2E_DIR/flush
export GK_E2E_PLUGIN_ARGS="flush_root=$FLUSH"
T0=$SECONDS
e2e_start --nodes 3
mkdir -p "$FLUSH"
chmod 0755 "$FLUSH"
# As e2e-mpi.sh: a Slurm without mpi/pmix cannot start Open MPI's ranks.
mpi_types=$(srun --mpi=list 2>&1)
if ! grep -qw pmix <<<"$mpi_types"; then
	why="this Slurm ($(sinfo --version 2>/dev/null)) has no mpi/pmix plugin (srun --mpi=list: $(tr -s '\n\t ' ' ' <<<"$mpi_types" | cut -c1-160)): srun cannot start Open MPI's ranks"
	for _ in $(seq $N); do tap_skip "$why"; done
	exit 0
fi
APP_ENV="export LD_LIBRARY_PATH=$GK_STANDIN_DIR\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
SH=$E2E_DIR/shared
STEPS=400 DELAY=50

ref=$(with_standin "$HALO" --size 64 --steps $STEPS --report-every 0 --module "$MOD" 2>/dev/null |
	sed -n 's/^halo: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p')
tap_diag "reference checksum (uninterrupted, outside Slurm): $ref"

final() { sed -n 's/^0: halo: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p' "$(job_out "$1")" | tail -n 1; }
resumed() { sed -n 's/^[0-3]: halo: resumed from step \([0-9]*\).*/\1/p' "$(job_out "$1")" | sort -un; }
resumed_count() { out_count "$1" '^[0-3]: halo: resumed from step'; }
restoring_set() { out_count "$1" "^[0-3]: gpuckpt: job $1 step.0 task [0-3]: restart [0-9]+: restoring set $2, as every one of the 4 tasks"; }
# flushed_sets JOB: the sets whole in the flush root (a record and all 4
# parts), newest first.
flushed_sets() {
	local d=$FLUSH/$1/step.0 n p
	for n in $(ls "$d" 2>/dev/null | sed -n 's/^set\.0*\([0-9][0-9]*\)$/\1/p' | sort -rn); do
		p=$(printf %06d "$n")
		[ -f "$d/task.0/ckpt.$p/manifest.json" ] && [ -f "$d/task.1/ckpt.$p/manifest.json" ] &&
			[ -f "$d/task.2/ckpt.$p/manifest.json" ] && [ -f "$d/task.3/ckpt.$p/manifest.json" ] &&
			echo "$n"
	done
}
shared_sets() { ls "$SH/$1/step.0" 2>/dev/null | grep -c '^set\.'; }
crash_down() {
	"$CLUSTER" crash "$1" >/dev/null 2>&1
	scontrol update nodename="$1" state=down reason="gpuckpt test: node lost"
}

s=$(job_script flushsets "srun --mpi=pmix -l -N 2 --ntasks-per-node=2 bash -c 'exec $HALO --size 64 --steps $STEPS --delay-ms $DELAY --report-every 10 --module $MOD'
rc=\$?
[ \$rc -eq 143 ] && sleep 600
exit \$rc")
drain gk3
j=$(submit --as gkuser1 -N 2 --ntasks-per-node=2 --gres=gpu:1 --gpu-checkpoint=on \
	--gpu-checkpoint-interval=2 --requeue "$s")
wait_running "$j" 60
check "job $j runs on gk1 and gk2" [ "$(job_node "$j")" = "gk[1-2]" ]
# Two sets whole in the flush root: the newest is then made incomplete.
wait_until 90 '[ "$(flushed_sets "$j" | wc -l)" -ge 2 ]'
wait_out "$j" "^0: gpuckpt: flush: $FLUSH/$j/step.0/set\.[0-9]+: the record of set [0-9]+" 5
check_out "$j" "task 0 flushed the set records" "^0: gpuckpt: flush: $FLUSH/$j/step.0/set\.[0-9]+: the record of set [0-9]+"
crash_down gk1
# The job needs 2 nodes: with gk1 down and gk3 drained it waits, requeued.
wait_until 90 '[ "$(job_state "$j")" = PENDING ]'
sets=$(flushed_sets "$j" | tr '\n' ' ')
newest=$(flushed_sets "$j" | head -n 1)
check "sets whole in the flush root after the crash ($sets)" [ -n "$newest" ]
rm -rf "$FLUSH/$j/step.0/task.1/ckpt.$(printf %06d "${newest:-0}")"
want=$(flushed_sets "$j" | head -n 1)
tap_diag "flushed sets $sets; set $newest made incomplete; expected restore: set $want"
check "an older whole set is left in the flush root ($want < $newest)" [ -n "$want" -a "${want:-0}" -lt "${newest:-0}" ]
check "gk1's epilog never ran" sh -c "! grep -q 'stage-out: job $j' '$E2E_DIR/log/slurmd.gk1.log'"
check "no set record reached the shared root before the restart ($(shared_sets "$j"))" [ "$(shared_sets "$j")" -eq 0 ]
resume gk3
wait_for 150 out_has "$j" '^batch: node gk2 restart 1'
wait_over "$j" 180
logs="$E2E_DIR/log/slurmd.gk2.log $E2E_DIR/log/slurmd.gk3.log"
check "the prolog passed over the incomplete set $newest, naming rank 1's missing part" \
	sh -c "cat $logs | grep -Eq 'stage-in: job $j: plan: step.0: flushed set $newest incomplete in $FLUSH/$j/step.0: task.1/ckpt.[0-9]+ was not flushed'"
check "the prolog copied set $want from the flush root to the shared root" \
	sh -c "cat $logs | grep -Eq 'stage-in: job $j: plan: step.0: flushed set $want copied from the flush root $FLUSH/$j/step.0 to the shared root'"
check "the prolog planned set $want" sh -c "cat $logs | grep -q 'stage-in: job $j: plan: step.0 set sequence=$want '"
check "every rank was given set $want ($(restoring_set "$j" "$want") of 4)" [ "$(restoring_set "$j" "$want")" -eq 4 ]
check "no rank restored set $newest" [ "$(restoring_set "$j" "$newest")" -eq 0 ]
check "every rank resumed, from one step after the start ($(resumed "$j" | tr '\n' ' '))" \
	[ "$(resumed_count "$j")" -eq 4 -a "$(resumed "$j" | wc -l)" -eq 1 -a "$(resumed "$j" | head -n 1)" -gt 0 ]
got=$(final "$j")
check "the uninterrupted checksum ($got = $ref)" [ -n "$got" -a "$got" = "$ref" ]
check_state "$j" COMPLETED "job completed"
tap_diag "e2e-flush-sets took $((SECONDS - T0)) s"
tap_done
