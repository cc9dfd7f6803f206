#!/bin/bash
# e2e-preempt.sh - preemption with requeue: a --gpu-checkpoint=on job in the
# low partition is preempted by a job of the high partition
# (PreemptType=preempt/partition_prio, PreemptMode=REQUEUE, GraceTime), writes
# its checkpoint within GraceTime, is requeued, comes back when the high job
# ends, resumes, and ends with the checksum of an uninterrupted run.
#
# Its script is just `srun APP`: preemption stops the steps (SIGTERM, the
# runtime checkpoints) but does not signal the batch shell, so the script
# ends at once. Slurm 24.05 and later requeue such a job themselves; before
# (22.05), it ended, so the plugin, in the batch step's end, sees that a step
# of the preempted job was checkpointed in this run and requeues the job
# (scripts needed `[ $rc -eq 143 ] && sleep 600` to wait for Slurm's requeue
# at the end of GraceTime). Jobs that were not checkpointed end as that
# Slurm always ended them: one preempted at the same time without the option
# (22.05: ends; 24.05 on: Slurm requeues it, the plugin stays out), and a
# checkpointed one whose steps were sent SIGTERM by scancel (not requeued).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 15
e2e_start
SIZE=96 STEPS=400 DELAY=50
ref=$(reference $SIZE $STEPS)
tap_diag "reference checksum (uninterrupted, outside Slurm): $ref"
grace=$(sed -n 's/^PartitionName=low .*GraceTime=\([0-9]*\).*/\1/p' "$SLURM_CONF")
# slurmd -V: "slurm-wlm 22.05.8" (Debian), "slurm 24.11.5"; needs no slurm.conf.
ver=$(slurmd -V 2>&1 | sed -n 's/^slurm[-a-z]* \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
[ -n "$ver" ] || e2e_bail "cannot read Slurm's version from slurmd -V ($(slurmd -V 2>&1 | head -n 1))"
set -- $ver
# Slurm 24.05 and later requeue a job whose script ends within GraceTime.
if [ "$1" -gt 24 ] || { [ "$1" -eq 24 ] && [ "$2" -ge 5 ]; }; then slurm_requeues=1; else slurm_requeues=0; fi
tap_diag "Slurm $1.$2: $([ $slurm_requeues = 1 ] && echo "requeues a job whose script ends within GraceTime itself" || echo "the plugin requeues a checkpointed job whose script ends within GraceTime")"
plugin_requeued() { grep -Eqs "gpuckpt: job $1: preempted and checkpointed; requeued" "$E2E_DIR"/log/slurmd.gk*.log; }
plugin_stayed_out() { ! plugin_requeued "$1"; }
restarts() { scontrol show job -o "$1" 2>/dev/null | sed -n 's/.* Restarts=\([0-9]*\) .*/\1/p'; }

# No sleep line: the script ends with its srun step.
s=$(job_script low "srun $APP $(app_args $SIZE $STEPS $DELAY)")
plain=$(job_script plain "srun sleep 600")
low=$(submit --as gkuser1 -p low --gres=gpu:2 --gpu-checkpoint=on "$s")
wait_out "$low" '^heat-drv: step 30$' 90
# On the other node, a job of the same partition without the option.
other=$(submit --as gkuser2 -p low --gres=gpu:2 "$plain")
wait_running "$other" 60
# The high job needs every GPU of both nodes: both low jobs must make way.
high=$(submit -p high -N 2 --gres=gpu:2 --exclusive --wrap 'echo high: running on $SLURM_JOB_NODELIST; sleep 15')
t0=$(date +%s)
if wait_out "$low" '^gpuckpt: checkpoint: .*: wrote [0-9]+ bytes' $((grace + 10)); then
	tap_ok "the low job checkpointed within GraceTime (${grace} s): $(($(date +%s) - t0)) s after the high job came"
else
	tap_not_ok "the low job checkpointed within GraceTime (${grace} s)"
	show_out "$low"
fi
wait_running "$high" $((grace + 30))
check "the high job runs (it preempted the low ones)" state_is "$high" RUNNING
check "the low job is requeued, not ended, though its script ended ($(job_state "$low"))" [ "$(job_state "$low")" = PENDING ]
if [ $slurm_requeues = 1 ]; then
	check "Slurm requeued it itself: the plugin stayed out" plugin_stayed_out "$low"
	wait_for 30 test "$(restarts "$other")" = 1
	check "the job without the option: Slurm requeued it too (Restarts=$(restarts "$other"))" [ "$(restarts "$other")" = 1 ]
	check "not the plugin" plugin_stayed_out "$other"
	scancel "$other"
else
	check "the plugin requeued it, as its batch script ended" plugin_requeued "$low"
	wait_over "$other" 30
	check "the job without the option ended as Slurm ends it ($(job_state "$other"))" is_over "$other"
	check "and was not requeued (Restarts=$(restarts "$other"))" [ "$(restarts "$other")" = 0 ]
fi
wait_over "$high" 60
wait_out "$low" '^batch: node .* restart 1 ' 120
check "the low job comes back after the high one ended" out_has "$low" '^batch: node .* restart 1 '
wait_over "$low" 180
check_out "$low" "it resumed from its checkpoint" '^heat-drv: resumed from step [1-9][0-9]*'
check_out "$low" "the plugin pointed it at the checkpoint" "restart 1: restoring from $E2E_DIR/bb/$low/step.0/task.0"
got=$(final_checksum "$low")
check "same checksum as an uninterrupted run ($got = $ref)" [ -n "$ref" -a "$got" = "$ref" ]
check_state "$low" COMPLETED "the low job completed"
check "it was requeued once (Restarts=$(restarts "$low"))" [ "$(restarts "$low")" = 1 ]

# Checkpointed, but not preempted: scancel's SIGTERM to the steps ends the
# step (the runtime checkpoints) and then the script; the job is not requeued.
j=$(submit --as gkuser1 -p low --gres=gpu:1 --gpu-checkpoint=on "$s")
wait_out "$j" '^heat-drv: step 20$' 90
scancel --signal=TERM "$j"
wait_over "$j" 60
check_out "$j" "a SIGTERM from scancel: checkpointed" '^gpuckpt: checkpoint: .*: wrote [0-9]+ bytes'
check "the job ended ($(job_state "$j"))" is_over "$j"
check "and was not requeued (Restarts=$(restarts "$j"))" [ "$(restarts "$j")" = 0 -a "$(out_count "$j" '^batch: node')" = 1 ]
tap_done
