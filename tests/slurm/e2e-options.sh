#!/bin/bash
# e2e-options.sh - what the plugin does at submission and to tasks, through
# real sbatch, srun and salloc: bad values refused with the option named, the
# runtime and a private checkpoint folder put into every task when asked for,
# nothing at all touched when not, and the optional job_submit.lua and
# cli_filter.lua rules.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 34
e2e_start
# What the plugin puts into LD_PRELOAD (the cluster's plugstack.conf says).
RT=$(sed -n 's/.* runtime=\([^ ]*\).*/\1/p' "$E2E_DIR/etc/plugstack.conf")

# Refused at submission, naming what is wrong.
refused() { # DESC PATTERN CMD...
	local desc=$1 pat=$2 out
	shift 2
	out=$("$@" 2>&1)
	if [ $? -ne 0 ] && grep -q -- "$pat" <<<"$out"; then tap_ok "$desc"; else
		tap_not_ok "$desc"; tap_diag "$out"; fi
}
# (Slurm names the option and the value: "Invalid --OPT argument: VALUE"; the
# plugin adds what the option takes.)
refused "sbatch --gpu-checkpoint=maybe refused, option named with what it takes" \
	"gpuckpt: --gpu-checkpoint takes on or off" sbatch --gpu-checkpoint=maybe --wrap true
refused "srun --gpu-checkpoint=maybe refused, option and value named" \
	"Invalid --gpu-checkpoint argument: maybe" srun --gpu-checkpoint=maybe true
refused "salloc --gpu-checkpoint=1 refused, option named" \
	"gpuckpt: --gpu-checkpoint takes on or off" salloc --gpu-checkpoint=1 true
refused "sbatch --gpu-checkpoint-interval=10m refused" \
	"gpuckpt: --gpu-checkpoint-interval takes seconds, 0 or more" sbatch --gpu-checkpoint=on --gpu-checkpoint-interval=10m --wrap true
refused "sbatch --gpu-checkpoint-on-bad=retry refused" \
	"gpuckpt: --gpu-checkpoint-on-bad takes fail or fresh" sbatch --gpu-checkpoint=on --gpu-checkpoint-on-bad=retry --wrap true
refused "GPUCKPT_CHECKPOINT=yes refused at submission, variable named" \
	"GPUCKPT_CHECKPOINT: invalid value 'yes'" env GPUCKPT_CHECKPOINT=yes sbatch --wrap true
refused "sbatch --gpu-checkpoint-interval=60 without --gpu-checkpoint=on refused, saying what it needs" \
	"gpu-checkpoint-interval=60 has no effect: checkpointing is off for this job (add --gpu-checkpoint=on" \
	sbatch --gpu-checkpoint-interval=60 --wrap true
refused "srun --gpu-checkpoint-mode=app with --gpu-checkpoint=off refused" \
	"gpu-checkpoint-mode=app has no effect" srun --gpu-checkpoint=off --gpu-checkpoint-mode=app true
check "no job was queued by the refused submissions" [ -z "$(squeue -h)" ]
out=$(sbatch --gpu-checkpoint=maybe --wrap true 2>&1)
n=$(grep -c "maybe" <<<"$out")
if [ "$n" = 1 ]; then tap_ok "a bad option value is reported once"; else
	tap_not_ok "a bad option value is reported once ($n times)"; tap_diag "$out"; fi

# --gpu-checkpoint alone is on, and takes nothing that follows for its value.
j=$(sbatch --parsable -D "$JOBS" -o "$JOBS/%j.out" --gpu-checkpoint -p low --wrap 'echo "alone: $GPUCKPT_CHECKPOINT $SLURM_JOB_PARTITION"')
wait_over "$j" 60
check_out "$j" "sbatch --gpu-checkpoint -p low: on, and -p low is still the partition" "^alone: on low$"
out=$(srun --gpu-checkpoint bash -c 'echo "srun-alone: $GPUCKPT_CHECKPOINT"' 2>&1)
if grep -q "^srun-alone: on$" <<<"$out"; then tap_ok "srun --gpu-checkpoint PROG: on, PROG runs"; else
	tap_not_ok "srun --gpu-checkpoint PROG: on, PROG runs"; tap_diag "$out"; fi

# A plugstack.conf with an unknown key or a bad value: refused, logged, named.
# (Slurm 24.11 reads cli_filter.lua beside the slurm.conf in use, and before
# the plugin stack: the copy of slurm.conf gets the scripts beside it.)
cp "$E2E_DIR"/etc/*.lua "$JOBS"/ 2>/dev/null
for arg in colour=blue keep=lots; do
	sed "s|^PlugStackConfig=.*|PlugStackConfig=$JOBS/plugstack-$arg.conf|" "$SLURM_CONF" >"$JOBS/slurm-$arg.conf"
	sed "s|\$| $arg|" "$E2E_DIR/etc/plugstack.conf" >"$JOBS/plugstack-$arg.conf"
	out=$(nsenter --net=/run/netns/gpuckpt-gkctl env SLURM_CONF="$JOBS/slurm-$arg.conf" /usr/bin/sbatch --wrap true 2>&1)
	want="gpuckpt: plugstack.conf: unknown argument 'colour'"
	[ "$arg" = keep=lots ] && want="gpuckpt: plugstack.conf: keep: invalid value 'lots'"
	if [ -n "$(grep -F "$want" <<<"$out")" ] && [ -z "$(grep '^Submitted' <<<"$out")" ]; then
		tap_ok "plugstack.conf '$arg' refused with a log line naming it"
	else
		tap_not_ok "plugstack.conf '$arg' refused with a log line naming it"
		tap_diag "$out"
	fi
done

# srun making its own allocation.
out=$(srun --gpu-checkpoint=on bash -c 'echo "srun-env: $GPUCKPT_DIR"' 2>&1)
if grep -q "^srun-env: $E2E_DIR/bb/[0-9]*/step.0/task.0$" <<<"$out"; then tap_ok "srun --gpu-checkpoint=on on its own"; else
	tap_not_ok "srun --gpu-checkpoint=on on its own"; tap_diag "$out"; fi

# --gpu-checkpoint=on, as a user: the batch step and each task of an srun step.
s=$(job_script env-on '
echo "batch-env: LD_PRELOAD=$LD_PRELOAD DIR=$GPUCKPT_DIR CK=$GPUCKPT_CHECKPOINT"
srun -n 2 bash -c '"'"'echo "task-env $SLURM_PROCID: LD_PRELOAD=$LD_PRELOAD DIR=$GPUCKPT_DIR"; stat -c "task-dir $SLURM_PROCID: %U %a" "$GPUCKPT_DIR"'"'"'
srun -n 1 --gpu-checkpoint=off bash -c '"'"'echo "off-step: LD_PRELOAD=${LD_PRELOAD-unset} DIR=${GPUCKPT_DIR-unset}"'"'"'
echo "off-step-dir: $(ls -d '"$E2E_DIR"'/bb/$SLURM_JOB_ID/step.1 2>/dev/null || echo absent)"
')
j=$(submit --as gkuser1 -n 2 --gpu-checkpoint=on "$s")
wait_over "$j" 60
BB=$E2E_DIR/bb
check_out "$j" "batch step: runtime in LD_PRELOAD" "^batch-env: LD_PRELOAD=$RT "
check_out "$j" "batch step: its own folder under the burst buffer" "DIR=$BB/$j/step.batch/task.0 CK=on"
check_out "$j" "srun step inherits it (GPUCKPT_CHECKPOINT from the batch step): task 0" "^task-env 0: LD_PRELOAD=$RT DIR=$BB/$j/step.0/task.0$"
check_out "$j" "srun step: task 1 has a folder of its own" "^task-env 1: LD_PRELOAD=$RT DIR=$BB/$j/step.0/task.1$"
check_out "$j" "task folders belong to the user, mode 0700" "^task-dir 1: gkuser1 700$"
check_out "$j" "srun --gpu-checkpoint=off inside: runtime and folder taken out" "^off-step: LD_PRELOAD=unset DIR=unset$"
check_out "$j" "no folder for the step that was off" "^off-step-dir: absent$"

# The variable alone, with the user's own LD_PRELOAD kept in front.
j=$(submit --as gkuser2 --wrap 'export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libm.so.6; GPUCKPT_CHECKPOINT=on srun bash -c "echo var-env: \$LD_PRELOAD"')
wait_over "$j" 60
check_out "$j" "GPUCKPT_CHECKPOINT=on alone turns it on; the user's LD_PRELOAD stays first" \
	"^var-env: /usr/lib/x86_64-linux-gnu/libm.so.6:$RT$"

# salloc: its shell gets the variable, its srun steps the runtime.
out=$(salloc --gpu-checkpoint=on bash -c 'srun bash -c "echo salloc-env: \$LD_PRELOAD \$GPUCKPT_DIR"' 2>&1)
if grep -q "^salloc-env: $RT $BB/[0-9]*/step.0/task.0" <<<"$out"; then tap_ok "salloc --gpu-checkpoint=on: srun in it gets the runtime"; else
	tap_not_ok "salloc --gpu-checkpoint=on: srun in it gets the runtime"; tap_diag "$out"; fi

# Off, or not asked for: nothing touched, no folders.
for how in "--gpu-checkpoint=off" ""; do
	j=$(submit $how --wrap 'echo "plain-env: LD_PRELOAD=${LD_PRELOAD-unset} DIR=${GPUCKPT_DIR-unset} RESTORE=${GPUCKPT_RESTORE-unset}"; srun bash -c "echo plain-step: \${LD_PRELOAD-unset} \${GPUCKPT_DIR-unset}"; echo "plain-dir: $(ls -A '"$E2E_DIR"'/bb | grep -x $SLURM_JOB_ID || echo absent)"')
	wait_over "$j" 60
	check_out "$j" "${how:-no option}: batch step untouched" "^plain-env: LD_PRELOAD=unset DIR=unset RESTORE=unset$"
	check_out "$j" "${how:-no option}: srun step untouched" "^plain-step: unset unset$"
	check_out "$j" "${how:-no option}: no folder made on the node" "^plain-dir: absent$"
done

# A first run never restores, whatever the user put into GPUCKPT_RESTORE.
j=$(submit --as gkuser1 --gpu-checkpoint=on --export=ALL,GPUCKPT_RESTORE=/tmp/elsewhere/ckpt.000001 --wrap 'echo "restore-env: ${GPUCKPT_RESTORE-unset}"')
wait_over "$j" 60
check_out "$j" "a restore the job did not earn is removed" "^restore-env: unset$"

# The optional hooks: requeueable unless the user said no, a warning before the time limit.
j=$(submit --gpu-checkpoint=on --no-requeue --hold --wrap true)
check "job_submit.lua leaves the user's --no-requeue alone" grep -q 'Requeue=0' <<<"$(scontrol show job "$j")"
scancel "$j"
# The warning is due at once (4 minutes < GPUCKPT_WARN_TIME) and comes at
# slurmctld's next time-limit pass (every 30 s). The program runs 200 s: a
# 100 s one once ended before a loaded CI machine's slurmctld sent it.
s=$(job_script warn "srun $APP $(app_args 64 4000 50)")
j=$(submit --gpu-checkpoint=on -t 4 "$s")
if wait_out "$j" "gpuckpt: checkpoint: .*: wrote [0-9]+ bytes" 200; then
	tap_ok "cli_filter.lua: a job with a time limit gets SIGUSR1 before it and checkpoints"
	n=$(grep -c '^heat-drv: step' "$(job_out "$j")")
	wait_until 20 '[ "$(out_count "$j" "^heat-drv: step")" -gt $((n + 1)) ]'
	check "and goes on after the checkpoint" [ "$(job_state "$j")" = RUNNING ]
else
	tap_not_ok "cli_filter.lua: a job with a time limit gets SIGUSR1 before it and checkpoints"
	show_out "$j"
	tap_not_ok "and goes on after the checkpoint"
fi
scancel "$j"

tap_done
