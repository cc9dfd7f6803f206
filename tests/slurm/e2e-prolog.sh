#!/bin/bash
# e2e-prolog.sh - when the prolog (the plugin's stage-in) runs on each node of
# a job: PrologFlags=Alloc (etc/slurm.conf.fragment; the test cluster sets it,
# GK_PROLOG_FLAGS).
#
# 0. With PrologFlags=Alloc slurmd's log says nothing of it (without it:
#    e2e-prolog-flags.sh).
# 1. Without it slurmd runs the prolog of a node other than the job's first
#    only at the job's first task launch there, after the batch script
#    started; the prolog of a first run removes the flush root's folder of
#    the job (it can only be an earlier job's of that id, flow.c
#    flush_job_in), which the job's first step, on the first node alone, had
#    already filled: its flushed checkpoints were gone. With Alloc every
#    node's prolog runs at allocation, before anything is flushed.
# 2. A job of two tasks on gk1 and gk2 requeued twice, back onto the same
#    two nodes within the credential's life (cred_expire=5): every node's
#    prolog runs at each restart (slurmd takes a reissued credential for a
#    new run), and both tasks restore and resume. (Without Alloc a node
#    other than the first decides at the task launch, from its cache of
#    credentials, before it drops the run before's revoked record: slurmctld
#    starts a requeued job cred_expire + 1 s after its epilog, when that
#    record has expired; not seen to fail here.)
# 3. A job whose node was lost comes back on it once it is revived: its
#    prolog runs there (slurmd's saved credential state removed, as at boot).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 19
FLUSH=$E2E_DIR/flush
export GK_E2E_PLUGIN_ARGS="flush_root=$FLUSH"
SIZE=64 DELAY=50
no_line() { ! grep -q "$@"; }

e2e_start
mkdir -p "$FLUSH"
chmod 0755 "$FLUSH"
tap_diag "slurm.conf: $(grep -E '^(PrologFlags|AuthInfo)=' "$E2E_DIR/etc/slurm.conf" | tr '\n' ' ')"
check "with PrologFlags=Alloc slurmd's log says nothing of it" \
	no_line 'gpuckpt: slurm.conf has no PrologFlags' "$E2E_DIR"/log/slurmd.gk[12].log

# 1. A first run: step 0 on the first node alone, flushed; then a step on both.
s=$(job_script prolog-first "srun -N 1 -n 1 -w \"\$SLURMD_NODENAME\" $APP $(app_args $SIZE 100 $DELAY)
srun -N 2 -n 2 --ntasks-per-node=1 true
echo \"batch: flushed after the second step: \$(ls $FLUSH/\$SLURM_JOB_ID/step.0/task.0 2>/dev/null | grep -c '^ckpt\\.')\"")
j=$(submit --as gkuser1 -N 2 --ntasks-per-node=1 --gres=gpu:1 --gpu-checkpoint=on --gpu-checkpoint-interval=1 "$s")
wait_over "$j" 120
check_out "$j" "step 0 flushed checkpoints on the first node" "^gpuckpt: flush: $FLUSH/$j/step.0/task.0/ckpt.[0-9]+: [0-9]+ bytes"
check "no prolog removed the job's flush folder during its first run" \
	no_line "stage-in: job $j: removed $FLUSH/$j" "$E2E_DIR"/log/slurmd.gk[12].log
check_out "$j" "the flushed checkpoints were still there after the step on both nodes" '^batch: flushed after the second step: [1-9]'
check_state "$j" COMPLETED "job completed"

# 2. Requeued twice onto the same two nodes.
STEPS=400
ref=$(reference $SIZE $STEPS)
tap_diag "reference checksum (uninterrupted, outside Slurm): $ref"
# plans NODE JOB: the prologs of NODE that found JOB's shared folder and
# planned its step (one line each).
plans() { grep -c "stage-in: job $2: plan: step.0 " "$E2E_DIR/log/slurmd.$1.log"; }
s=$(job_script prolog "export GPUCKPT_TASKS=independent
srun -l -N 2 -n 2 --ntasks-per-node=1 $APP $(app_args $SIZE $STEPS $DELAY)")
j=$(submit --as gkuser1 -N 2 -n 2 --ntasks-per-node=1 --gres=gpu:1 --gpu-checkpoint=on "$s")
wait_out "$j" '^0: heat-drv: step 30$' 90
wait_out "$j" '^1: heat-drv: step 30$' 30
t0=$(date +%s)
scontrol requeue "$j"
for n in 1 2; do
	wait_until 120 '[ "$(out_count "$j" "^batch: node .* restart '"$n"' ")" -eq 1 ] &&
		[ "$(out_count "$j" "^[01]: heat-drv: resumed from step")" -ge $((2 * n)) ]'
	tap_diag "requeue $n to restart: $(($(date +%s) - t0)) s"
	# Some progress past the restore on both tasks, then again.
	base=$(out_count "$j" '^[01]: heat-drv: step')
	wait_until 60 '[ "$(out_count "$j" "^[01]: heat-drv: step")" -ge $((base + 4)) ]'
	if [ $n = 1 ]; then t0=$(date +%s) && scontrol requeue "$j"; fi
done
wait_over "$j" 240
check "two restarts" [ "$(out_count "$j" '^batch: node .* restart [12] ')" -eq 2 ]
for n in gk1 gk2; do
	c=$(plans $n "$j")
	check "$n's prolog ran and planned the restore at both restarts ($c of 2)" [ "$c" -eq 2 ]
done
for t in 0 1; do
	c=$(out_count "$j" "^$t: gpuckpt: job $j step.0 task $t: restart [12]: restoring from $E2E_DIR/bb/$j/step.0/task.$t ")
	c2=$(out_count "$j" "^$t: heat-drv: resumed from step [1-9]")
	check "task $t restored its own checkpoint and resumed at both restarts ($c, $c2 of 2)" [ "$c" -eq 2 -a "$c2" -eq 2 ]
	got=$(sed -n "s/^$t: heat-drv: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p" "$(job_out "$j")" | tail -n 1)
	check "task $t ends with the uninterrupted checksum ($got)" [ -n "$ref" -a "$got" = "$ref" ]
done
check_state "$j" COMPLETED "job completed"

# 3. A node lost and revived, the job back on it. slurmd saves the records of
#    the jobs it launched (SlurmdSpoolDir/cred_state) and restores them as it
#    starts: a job running at the crash, never revoked there, stays "seen"
#    for ever, and slurmd skips its prolog on that node, with PrologFlags=Alloc
#    too (_rpc_prolog: "prolog has already run"); the job then starts afresh
#    from an empty burst buffer. A boot must remove cred_state, as `cluster.sh
#    revive` now does (or start slurmd with -c).
drain gk2
s=$(job_script prolog-crash "srun $APP $(app_args $SIZE 500 $DELAY)")
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on --gpu-checkpoint-interval=2 --requeue "$s")
wait_running "$j" 60
wait_out "$j" "^gpuckpt: flush: $FLUSH/$j/step.0/task.0/ckpt.[0-9]+: [0-9]+ bytes in" 90
wait_out "$j" '^heat-drv: step 100$' 90
"$CLUSTER" crash gk1 >/dev/null 2>&1
scontrol update nodename=gk1 state=down reason="gpuckpt test: node lost"
# Back once the requeued job may start (cred_expire + 1 s after its requeue):
# slurmctld sends it to gk1 as gk1 registers, before it tells gk1 to end
# the run before (which would drop slurmd's record).
sleep 10
"$CLUSTER" revive gk1 >/dev/null 2>&1
scontrol update nodename=gk1 state=resume 2>/dev/null
wait_until 120 '[ "$(out_count "$j" "^batch: node gk1 restart 1 ")" -eq 1 ]'
wait_over "$j" 180
check_out "$j" "the job came back on gk1 after its revival" "^batch: node gk1 restart 1 "
check "gk1's prolog staged the flushed checkpoint in after the revival" \
	grep -q "stage-in: job $j: staged in step.0/task.0/ckpt" "$E2E_DIR/log/slurmd.gk1.log"
check_out "$j" "the task restored it" "^gpuckpt: job $j step.0 task 0: restart 1: restoring from $E2E_DIR/bb/$j/step.0/task.0 "
check_out "$j" "resumed from a step after the start" '^heat-drv: resumed from step [1-9]'
got=$(final_checksum "$j")
check "same checksum as an uninterrupted run ($got)" [ -n "$got" -a "$got" = "$(reference $SIZE 500)" ]
check_state "$j" COMPLETED "job completed"
resume gk2
tap_done
