#!/bin/bash
# e2e-flush.sh - checkpoints that survive the loss of a node (issue 15): the
# runtime copies each committed checkpoint to the flush root (flush_root= in
# plugstack.conf, shared by the nodes) while the job runs.
#
# 1. Node lost: a job with --gpu-checkpoint-interval runs on gk1; once a
#    checkpoint was flushed, gk1 "crashes" (cluster.sh crash: SIGKILL to its
#    slurmd and every process of the job, its burst buffer wiped) and is
#    marked down. Slurm requeues the job by itself; gk2's prolog stages in the
#    flushed copy (the epilog never ran: the shared root has nothing); the job
#    resumes and ends with the uninterrupted run's checksum.
# 2. Crash during a flush: the flush is throttled (GPUCKPT_FLUSH_RATE) so that
#    the node dies while a copy is half-way in the flush root; the previous
#    flushed checkpoint is used, never the half copy.
# 3. Flush root read-only, then back: the job goes on, says so once, and the
#    first checkpoint after the flush root is writable again is flushed.
# 4. Flush root full: the job goes on, says so once, ends correctly.
#
# Read-only and full are made inside the node's own mount namespace (the one
# its slurmd and the job's processes share), so only that node sees them.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

N=27
e2e_require $N
FLUSH=$E2E_DIR/flush
export GK_E2E_PLUGIN_ARGS="flush_root=$FLUSH"
e2e_start
mkdir -p "$FLUSH"
chmod 0755 "$FLUSH"

# in_node NODE CMD...: run CMD in the node's mount namespace (cluster.sh's nodeexec,
# which also enters the Debian root of the 24.11 tests: a bare nsenter -m landed
# outside that chroot there, and the flush root never turned read-only or full).
in_node() { nodeexec "$@"; }
restarts() { scontrol show job -o "$1" | sed -n 's/.* Restarts=\([0-9]*\).*/\1/p'; }
flushed() { ls "$FLUSH/$1/step.0/task.0" 2>/dev/null | grep -E '^ckpt\.[0-9]+$' | sort | tail -n 1; }
crash_down() {
	"$CLUSTER" crash "$1" >/dev/null 2>&1
	scontrol update nodename="$1" state=down reason="gpuckpt test: node lost"
}
revive() {
	"$CLUSTER" revive "$1" >/dev/null 2>&1
	scontrol update nodename="$1" state=resume
	wait_until 60 '[ "$(sinfo -h -n '"$1"' -o %t)" = idle ]'
}

SIZE=64 STEPS=500 DELAY=60
ref=$(reference $SIZE $STEPS)
tap_diag "reference checksum (uninterrupted, outside Slurm): $ref"
s=$(job_script flush "srun $APP $(app_args $SIZE $STEPS $DELAY)")

# 1. Node lost.
drain gk2
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on --gpu-checkpoint-interval=2 --requeue "$s")
wait_running "$j" 60 && resume gk2
check "job $j starts on gk1" [ "$(job_node "$j")" = gk1 ]
wait_out "$j" "^gpuckpt: flush: $FLUSH/$j/step.0/task.0/ckpt.[0-9]+: [0-9]+ bytes in" 90
wait_out "$j" '^heat-drv: step 100$' 90
last=$(flushed "$j")
tap_diag "flushed before the crash: $last"
check "a committed checkpoint was flushed while the job ran ($last)" [ -n "$last" -a -f "$FLUSH/$j/step.0/task.0/$last/manifest.json" ]
check "the flushed copy is the job's user's" [ "$(stat -c %U "$FLUSH/$j/step.0/task.0/$last")" = gkuser1 ]
crash_down gk1
t0=$(date +%s)
wait_for 150 out_has "$j" '^batch: node gk2 restart 1'
tap_diag "node lost to restart on gk2: $(($(date +%s) - t0)) s"
wait_over "$j" 180
check "requeued by Slurm itself after the node failure (Restarts=$(restarts "$j"))" [ "$(restarts "$j")" = 1 ]
check "gk1's epilog never ran (nothing staged out there)" sh -c "! grep -q 'stage-out: job $j' '$E2E_DIR/log/slurmd.gk1.log'"
check "gk2's prolog staged in a flushed checkpoint" grep -Eq "stage-in: job $j: staged in step.0/task.0/ckpt.[0-9]+: .* from $FLUSH/$j/step.0/task.0/ckpt" "$E2E_DIR/log/slurmd.gk2.log"
check_out "$j" "resumed on gk2 from a step after the start" '^heat-drv: resumed from step [1-9][0-9]*'
got=$(final_checksum "$j")
check "same checksum as an uninterrupted run ($got = $ref)" [ -n "$ref" -a "$got" = "$ref" ]
check_state "$j" COMPLETED "job completed"
revive gk1

# 2. Crash during a flush. A bigger grid, flushed at 256 KiB/s: each copy
# takes seconds, and the node dies while one is half-way there.
BIG=512
ref2=$(reference $BIG 600)
s2=$(job_script flush-slow "export GPUCKPT_FLUSH_RATE=256K; srun $APP $(app_args $BIG 600 60)")
drain gk2
j=$(submit --as gkuser2 --gres=gpu:1 --gpu-checkpoint=on --gpu-checkpoint-interval=3 --requeue "$s2")
wait_running "$j" 60 && resume gk2
wait_out "$j" "^gpuckpt: flush: $FLUSH/$j/step.0/task.0/ckpt.[0-9]+: [0-9]+ bytes in" 120
wait_until 60 '[ -n "$(ls -a "$FLUSH/$j/step.0/task.0" | grep "^\.tmp\.ckpt\.")" ]'
last=$(flushed "$j")
partial=$(ls -a "$FLUSH/$j/step.0/task.0" | grep '^\.tmp\.ckpt\.' | head -n 1)
tap_diag "at the crash: complete $last, being copied $partial"
check "the node dies while a flush is half-way ($partial)" [ -n "$partial" ]
crash_down gk1
wait_for 150 out_has "$j" '^batch: node gk2 restart 1'
wait_over "$j" 240
staged=$(sed -n "s/.*stage-in: job $j: staged in step.0\/task.0\/\(ckpt.[0-9]*\): .*/\1/p" "$E2E_DIR/log/slurmd.gk2.log" | tail -n 1)
check "the newest complete flushed checkpoint was staged in ($staged = $last)" [ -n "$last" -a "$staged" = "$last" ]
check "nothing but committed checkpoints was staged in" sh -c "! grep -q 'stage-in: job $j: staged in .*\.tmp' '$E2E_DIR/log/slurmd.gk2.log'"
check_out "$j" "resumed from a step after the start" '^heat-drv: resumed from step [1-9][0-9]*'
got=$(final_checksum "$j")
check "same checksum as an uninterrupted run ($got = $ref2)" [ -n "$ref2" -a "$got" = "$ref2" ]
check_state "$j" COMPLETED "job completed"
revive gk1

# 3. Read-only, then writable again (gk1 only).
in_node gk1 mount --bind "$FLUSH" "$FLUSH"
drain gk2
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on --gpu-checkpoint-interval=2 "$s")
wait_running "$j" 60 && resume gk2
wait_out "$j" "^gpuckpt: flush: $FLUSH/$j/step.0/task.0/ckpt.[0-9]+: [0-9]+ bytes in" 90
in_node gk1 mount -o remount,bind,ro "$FLUSH"
wait_out "$j" "^gpuckpt: warning: flush: $FLUSH/$j/step.0/task.0: .*Read-only file system" 30
before=$(out_count "$j" '^gpuckpt: checkpoint: .*wrote')
wait_until 30 '[ "$(out_count "$j" "^gpuckpt: checkpoint: .*wrote")" -ge $((before + 2)) ]'
check "read-only flush root said once, over several checkpoints" [ "$(out_count "$j" 'Read-only file system')" -eq 1 ]
check_out "$j" "the message says the job goes on with its node-local checkpoints" "the job goes on with its checkpoints in $E2E_DIR/bb/$j/step.0/task.0"
in_node gk1 mount -o remount,bind,rw "$FLUSH"
wait_out "$j" "^gpuckpt: flush: $FLUSH/$j/step.0/task.0: writable again" 30
check_out "$j" "said once when the flush root is writable again" "^gpuckpt: flush: $FLUSH/$j/step.0/task.0: writable again"
n=$(grep -n 'writable again' "$(job_out "$j")" | head -n 1 | cut -d: -f1)
check "the next checkpoint was flushed" sh -c "tail -n +$n '$(job_out "$j")' | grep -Eq '^gpuckpt: flush: .*/ckpt.[0-9]+: [0-9]+ bytes in'"
wait_over "$j" 180
check_state "$j" COMPLETED "job completed"
check "same checksum as an uninterrupted run" [ "$(final_checksum "$j")" = "$ref" ]
in_node gk1 umount "$FLUSH"

# 4. Full: a flush root of 8 KiB (gk1 only; the plugin makes the job's
# folders in it, the first data file does not fit).
in_node gk1 mount -t tmpfs -o size=8k,mode=0755 gkflush "$FLUSH"
drain gk2
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on --gpu-checkpoint-interval=2 "$s")
wait_running "$j" 60 && resume gk2
wait_over "$j" 180
check_state "$j" COMPLETED "job completed with a full flush root"
check "same checksum as an uninterrupted run" [ "$(final_checksum "$j")" = "$ref" ]
check "several checkpoints were written" [ "$(out_count "$j" '^gpuckpt: checkpoint: .*wrote')" -ge 2 ]
check "the full flush root was said once" [ "$(out_count "$j" '^gpuckpt: warning: flush: .*No space left on device')" -eq 1 ]
check "nothing half-copied is left as a checkpoint there" [ -z "$(in_node gk1 sh -c "ls '$FLUSH/$j/step.0/task.0' 2>/dev/null | grep -E '^ckpt'")" ]
check "the epilog staged them to the shared root instead" grep -q "stage-out: job $j: staged out step.0/task.0/ckpt" "$E2E_DIR/log/slurmd.gk1.log"
in_node gk1 umount "$FLUSH"
tap_done
