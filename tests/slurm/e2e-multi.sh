#!/bin/bash
# e2e-multi.sh - steps with several tasks and job arrays: after a requeue,
# each task of `srun -n 2` whose tasks are declared independent
# (GPUCKPT_TASKS=independent) restores its own image (the two tasks compute
# different things, so a swapped image would show); the same step without the
# declaration takes no checkpoint (its tasks cannot agree on one point) and
# starts afresh; each element of a requeued job array resumes its own work.
# (Steps whose tasks checkpoint together: e2e-mpi.sh.)
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 17
e2e_start
STEPS=300 DELAY=50
ref0=$(reference 64 $STEPS)
ref1=$(reference 96 $STEPS)
tap_diag "reference checksums: size 64 $ref0, size 96 $ref1"
check "the two tasks' results differ (so a swapped image would show)" [ -n "$ref0" -a "$ref0" != "$ref1" ]

# 1. srun -n 2: task 0 works on size 64, task 1 on size 96; output lines labelled.
s=$(job_script multi "export GPUCKPT_TASKS=independent
srun -l -n 2 bash -c 'exec $APP \$(echo $(app_args X $STEPS $DELAY) | sed \"s/X/\$((64 + 32 * SLURM_PROCID))/\")'")
j=$(submit --as gkuser1 -n 2 --gres=gpu:2 --gpu-checkpoint=on "$s")
wait_out "$j" '^0: heat-drv: step 30$' 90
wait_out "$j" '^1: heat-drv: step 30$' 30
scontrol requeue "$j"
wait_over "$j" 240
check_out "$j" "task 0 checkpointed into its own folder" "^0: gpuckpt: checkpoint: $E2E_DIR/bb/$j/step.0/task.0/ckpt"
check_out "$j" "task 1 checkpointed into its own folder" "^1: gpuckpt: checkpoint: $E2E_DIR/bb/$j/step.0/task.1/ckpt"
check_out "$j" "task 0 pointed at task 0's images" "^0: gpuckpt: job $j step.0 task 0: restart 1: restoring from $E2E_DIR/bb/$j/step.0/task.0 "
check_out "$j" "task 1 pointed at task 1's images" "^1: gpuckpt: job $j step.0 task 1: restart 1: restoring from $E2E_DIR/bb/$j/step.0/task.1 "
check_out "$j" "both resumed" '^1: heat-drv: resumed from step [1-9]'
got0=$(sed -n 's/^0: heat-drv: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p' "$(job_out "$j")")
got1=$(sed -n 's/^1: heat-drv: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p' "$(job_out "$j")")
check "task 0 ends with its own uninterrupted checksum ($got0)" [ "$got0" = "$ref0" ]
check "task 1 ends with its own uninterrupted checksum ($got1)" [ "$got1" = "$ref1" ]

# 1b. The same step without GPUCKPT_TASKS=independent: the tasks have no way
# to agree on one point, so neither checkpoints, and both start afresh.
s=$(job_script multi-together "srun -l -n 2 bash -c 'exec $APP \$(echo $(app_args X $STEPS $DELAY) | sed \"s/X/\$((64 + 32 * SLURM_PROCID))/\")'")
j=$(submit --as gkuser1 -n 2 --gres=gpu:2 --gpu-checkpoint=on "$s")
wait_out "$j" '^0: heat-drv: step 30$' 90
wait_out "$j" '^1: heat-drv: step 30$' 30
scontrol requeue "$j"
wait_over "$j" 240
check "without agreement, neither task checkpointed ($(out_count "$j" 'checkpoint: .*refused, no checkpoint written: task [01] is one of the 2 tasks') refusals)" \
	[ "$(out_count "$j" 'checkpoint: .*refused, no checkpoint written: task [01] is one of the 2 tasks of this step, and they have no way to agree')" -eq 2 -a "$(out_count "$j" 'gpuckpt: checkpoint: .*wrote')" -eq 0 ]
check "on the restart both tasks were told there is no set, and started afresh" \
	[ "$(out_count "$j" "^[01]: gpuckpt: job $j step.0 task [01]: restart 1: no checkpoint set to restore")" -eq 2 -a "$(out_count "$j" '^[01]: heat-drv: resumed')" -eq 0 ]
got0=$(sed -n 's/^0: heat-drv: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p' "$(job_out "$j")")
got1=$(sed -n 's/^1: heat-drv: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p' "$(job_out "$j")")
check "task 0 ends with its uninterrupted checksum ($got0)" [ "$got0" = "$ref0" ]
check "task 1 ends with its uninterrupted checksum ($got1)" [ "$got1" = "$ref1" ]

# 2. A job array of two, requeued as a whole.
s=$(job_script array "srun bash -c 'exec $APP \$(echo $(app_args X $STEPS $DELAY) | sed \"s/X/\$((32 + 32 * SLURM_ARRAY_TASK_ID))/\")'")
a=$(submit --as gkuser2 --array=1-2 --gres=gpu:1 --gpu-checkpoint=on "$s")
wait_until 60 '[ "$(squeue -h -r -t R -j "$a" | wc -l)" -eq 2 ]'
ids=$(squeue -h -r -j "$a" -o '%A %K' | sort -k2 -n | awk '{ print $1 }')
set -- $ids
e1=$1 e2=$2
wait_out "$e1" '^heat-drv: step 30$' 90
wait_out "$e2" '^heat-drv: step 30$' 30
scontrol requeue "$a"
wait_over "$e1" 240
wait_over "$e2" 240
for e in "$e1" "$e2"; do
	check_out "$e" "array element $e resumed from its own checkpoint" "restoring from $E2E_DIR/bb/$e/step.0/task.0"
done
check "element 1 ends with the size-64 checksum" [ "$(final_checksum "$e1")" = "$ref0" ]
check "element 2 ends with the size-96 checksum" [ "$(final_checksum "$e2")" = "$ref1" ]
check "both elements completed" [ "$(job_state "$e1") $(job_state "$e2")" = "COMPLETED COMPLETED" ]
tap_done
