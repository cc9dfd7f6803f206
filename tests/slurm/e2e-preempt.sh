#!/bin/bash
# e2e-preempt.sh - preemption with requeue: a --gpu-checkpoint=on job in the
# low partition is preempted by a job of the high partition
# (PreemptType=preempt/partition_prio, PreemptMode=REQUEUE, GraceTime), writes
# its checkpoint within GraceTime, is requeued, comes back when the high job
# ends, resumes, and ends with the checksum of an uninterrupted run.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 8
e2e_start
SIZE=96 STEPS=400 DELAY=50
ref=$(reference $SIZE $STEPS)
tap_diag "reference checksum (uninterrupted, outside Slurm): $ref"
grace=$(sed -n 's/^PartitionName=low .*GraceTime=\([0-9]*\).*/\1/p' "$SLURM_CONF")

# Preemption stops the steps (SIGTERM, the runtime checkpoints) but does not
# signal the batch shell; a script that went on to its end would end the job
# before Slurm requeues it at the end of GraceTime. So, as the README says:
# when the step was stopped by SIGTERM, wait for the requeue.
s=$(job_script low "srun $APP $(app_args $SIZE $STEPS $DELAY)
rc=\$?
[ \$rc -eq 143 ] && sleep 600
exit \$rc")
low=$(submit --as gkuser1 -p low --gres=gpu:2 --gpu-checkpoint=on "$s")
wait_out "$low" '^heat-drv: step 30$' 90
# The high job needs every GPU of both nodes: the low job must make way.
high=$(submit -p high -N 2 --gres=gpu:2 --exclusive --wrap 'echo high: running on $SLURM_JOB_NODELIST; sleep 15')
t0=$(date +%s)
if wait_out "$low" '^gpuckpt: checkpoint: .*: wrote [0-9]+ bytes' $((grace + 10)); then
	tap_ok "the low job checkpointed within GraceTime (${grace} s): $(($(date +%s) - t0)) s after the high job came"
else
	tap_not_ok "the low job checkpointed within GraceTime (${grace} s)"
	show_out "$low"
fi
wait_running "$high" $((grace + 30))
check "the high job runs (it preempted the low one)" state_is "$high" RUNNING
check "the low job is requeued, not cancelled" [ "$(job_state "$low")" = PENDING ]
wait_over "$high" 60
wait_out "$low" '^batch: node .* restart 1 ' 120
check "the low job comes back after the high one ended" out_has "$low" '^batch: node .* restart 1 '
wait_over "$low" 180
check_out "$low" "it resumed from its checkpoint" '^heat-drv: resumed from step [1-9][0-9]*'
check_out "$low" "the plugin pointed it at the checkpoint" "restart 1: restoring from $E2E_DIR/bb/$low/step.0/task.0"
got=$(final_checksum "$low")
check "same checksum as an uninterrupted run ($got = $ref)" [ -n "$ref" -a "$got" = "$ref" ]
check "the low job completed" state_is "$low" COMPLETED
tap_done
