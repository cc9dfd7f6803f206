#!/bin/bash
# e2e-requeue.sh - scontrol requeue of running --gpu-checkpoint=on jobs: the
# job checkpoints within KillWait, is requeued, starts again (here forced onto
# the other node and another GPU), its checkpoint staged through the shared
# root, resumes where it was and ends with the checksum of an uninterrupted
# run; then the same job requeued three times; then its checkpoints removed
# once it is over.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 17
e2e_start
SIZE=64 STEPS=400 DELAY=50
ref=$(reference $SIZE $STEPS)
tap_diag "reference checksum (uninterrupted, outside Slurm): $ref"
s=$(job_script requeue "srun $APP $(app_args $SIZE $STEPS $DELAY)")

# 1. Requeued onto the other node and another GPU.
drain gk2
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on "$s")
wait_running "$j" 60 && resume gk2
check "job $j starts on gk1" [ "$(job_node "$j")" = gk1 ]
# Someone else takes GPU 0 of gk2, so the job must come back on GPU 1 there.
blocker=$(submit -w gk2 --gres=gpu:1 --wrap 'sleep 600')
wait_running "$blocker" 30
requeue_when "$j" '^heat-drv: step 30$'
drain gk1
t0=$(date +%s)
wait_for 120 out_has "$j" '^batch: node gk2 restart 1'
tap_diag "requeue to restart: $(($(date +%s) - t0)) s"
wait_over "$j" 180
check_out "$j" "checkpointed when requeued (within KillWait)" "^gpuckpt: checkpoint: $E2E_DIR/bb/$j/step.0/task.0/ckpt.[0-9]+: wrote [0-9]+ bytes \([^)]*allocations[^)]*\) in [0-9.]+ s"
check "staged out to the shared root by gk1's epilog" grep -q "stage-out: job $j: staged out step.0/task.0/ckpt" "$E2E_DIR/log/slurmd.gk1.log"
check "staged in on gk2 by its prolog" grep -q "stage-in: job $j: staged in step.0/task.0/ckpt" "$E2E_DIR/log/slurmd.gk2.log"
check_out "$j" "restarted on gk2, GPU 1" "^batch: node gk2 restart 1 GPU 1$"
check_out "$j" "the plugin pointed the task at its checkpoint" "^gpuckpt: job $j step.0 task 0: restart 1: restoring from $E2E_DIR/bb/$j/step.0/task.0"
check_out "$j" "resumed from a step after the start" '^heat-drv: resumed from step [1-9][0-9]*'
got=$(final_checksum "$j")
check "same checksum as an uninterrupted run ($got = $ref)" [ -n "$ref" -a "$got" = "$ref" ]
check_state "$j" COMPLETED "job completed"
scancel "$blocker"
resume gk1

# 2. One job requeued three times.
j=$(submit --as gkuser2 --gres=gpu:1 --gpu-checkpoint=on "$s")
requeue_when "$j" '^heat-drv: step 20$'
for n in 1 2; do
	# Back and some progress past the restore (output is appended across runs), then again.
	wait_until 120 '[ "$(out_count "$j" "^heat-drv: resumed from step")" -ge $n ]'
	base=$(out_count "$j" '^heat-drv: step')
	wait_until 60 '[ "$(out_count "$j" "^heat-drv: step")" -ge $((base + 2)) ]'
	scontrol requeue "$j"
done
wait_over "$j" 240
check "three restarts" [ "$(out_count "$j" '^batch: node .* restart [123] ')" -eq 3 ]
check "three checkpoints, one per requeue" [ "$(out_count "$j" '^gpuckpt: checkpoint: .*wrote')" -eq 3 ]
steps=$(sed -n 's/^heat-drv: resumed from step \([0-9]*\).*/\1/p' "$(job_out "$j")" | tr '\n' ' ')
check "each restart resumed further on ($steps)" awk -v s="$steps" 'BEGIN { n = split(s, a, " "); for (i = 2; i <= n; i++) if (a[i] <= a[i - 1]) exit 1; exit n != 3 }'
got=$(final_checksum "$j")
check "same checksum after three requeues ($got = $ref)" [ "$got" = "$ref" ]
check_state "$j" COMPLETED "job completed"

# 3. Cleanup: once the job is over, the next epilog's sweep removes its checkpoints.
check "the finished job's checkpoints are on the shared root until the sweep" [ -d "$E2E_DIR/shared/$j" ]
k=$(submit --gpu-checkpoint=on -w "$(squeue -h -t all -j "$j" -o %N)" --wrap true)
wait_over "$k" 60
wait_for 20 test ! -d "$E2E_DIR/shared/$j"
check "removed from the shared root by the next epilog" [ ! -d "$E2E_DIR/shared/$j" ]
check "and from every burst buffer" [ -z "$(ls "$E2E_DIR"/nodes/*/bb | grep -x "$j")" ]
tap_done
