#!/bin/bash
# e2e-faults.sh - what goes wrong, through real Slurm: a corrupted checkpoint
# on restart (refused with a message in the job's output; the job fails or
# starts afresh, as it asked; never half-restored), a checkpoint of another
# user put in its place (refused the same way), another user's checkpoints
# unreadable, and a burst buffer that is read-only or full: a SIGUSR1
# (checkpoint and go on) then writes nothing, the job's output says why, and
# the program goes on to its result (gpuckpt_point returns GPUCKPT_NOT_SAVED,
# not an error: a checkpoint the program did not ask for must not end it).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 25
e2e_start
SIZE=64 STEPS=300 DELAY=50
ref=$(reference $SIZE $STEPS)
BB=$E2E_DIR/bb SH=$E2E_DIR/shared
s=$(job_script faults "srun $APP $(app_args $SIZE $STEPS $DELAY)")

# running_at JOB STEP: wait until the program printed step STEP (its task
# runs: it can be requeued or signalled); when it does not, say why.
running_at() {
	wait_out "$1" "^heat-drv: step $2\$" 120 && return 0
	tap_diag "job $1 did not reach step $2 within 120 s:"
	job_diag "$1"
	return 1
}
# requeue_hold JOB: requeue at step 30 and hold it; wait until its checkpoint
# is on the shared root (the epilog staged it out) and the job is back in the
# queue, held (job_held).
# (wait_until evaluates its expression in its own frame, where $1 is its
# limit: the job goes in a variable.)
requeue_hold() {
	local job=$1
	running_at "$job" 30 || return 1
	scontrol requeuehold "$job" || { job_diag "$job"; return 1; }
	wait_until 120 '[ -n "$(ls -d "$SH/$job"/step.0/task.0/ckpt.* 2>/dev/null)" ] && job_held "$job"' && return 0
	tap_diag "job $job, requeued and held: no checkpoint on the shared root, or not back in the queue, within 120 s:"
	job_diag "$job"
	return 1
}
# signal_usr1 JOB: SIGUSR1 to the job's steps (checkpoint and go on), once its
# program runs; scancel itself tries again while the job is in transition.
signal_usr1() {
	running_at "$1" 20 || return 1
	scancel --signal=USR1 "$1" && return 0
	tap_diag "job $1: scancel --signal=USR1 failed:"
	job_diag "$1"
	return 1
}
# new_part N: part N starts on a cluster that can run it, whatever the part
# before left: a job of it not over yet is cancelled (one holding a GPU of gk1
# would keep parts 4 and 5 pending), and a node found drained or down is
# named, noted in NOT_UP (the last point fails on it) and resumed; then every
# node is idle. What went wrong fails the part it happened in, not every
# part after it.
NOT_UP=""
new_part() {
	local left where="before part $1"
	[ "$1" != end ] || where="after the last part"
	left=$(squeue -h -o %i 2>/dev/null | paste -sd' ' -)
	if [ -n "$left" ]; then
		tap_diag "$where: left running by the part before, cancelled: job $left"
		# shellcheck disable=SC2086 # one word per job
		scancel $left
	fi
	wait_for 90 cluster_idle "$where" ||
		tap_diag "$where: the cluster is not idle 90 s later: nodes: $(nodes_diag); jobs: $(squeue -h -o '%i %T %r' 2>/dev/null | paste -sd, -)"
}
# cluster_idle WHERE: no job in the queue and every node idle; a node found
# drained or down on the way is resumed (and noted).
cluster_idle() {
	local n why
	for n in $(sinfo -h -N -p low -t drain,down,fail -o %N 2>/dev/null); do
		case "; $NOT_UP" in *"; $n $1 ("*) ;; *)
			why=$(sinfo -h -n "$n" -p low -o '%T: %E' 2>/dev/null)
			NOT_UP="$NOT_UP${NOT_UP:+; }$n $1 ($why)"
			tap_diag "$1: node $n was not up ($why): resumed" ;;
		esac
		resume "$n"
	done
	[ -z "$(squeue -h -o %i 2>/dev/null)" ] && [ -z "$(sinfo -h -N -p low -o %t 2>/dev/null | grep -vx idle)" ]
}
newest() { ls -d "$SH/$1"/step.0/task.0/ckpt.* | sort | tail -n 1; }
# corrupt CKPT: flip bytes in the middle of its biggest data file.
corrupt() {
	local f size
	f=$(find "$1" -type f ! -name manifest.json -printf '%s %p\n' | sort -n | tail -n 1 | cut -d' ' -f2-)
	size=$(stat -c %s "$f")
	printf 'XXXXXXXX' | dd of="$f" bs=1 seek=$((size / 2)) conv=notrunc status=none
}

# 1. Corrupted, --gpu-checkpoint-on-bad=fail: refused, the job fails.
new_part 1
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on --gpu-checkpoint-on-bad=fail "$s")
requeue_hold "$j"
# A good image of gkuser1, kept for test 3.
cp -a "$(newest "$j")" "$E2E_DIR/foreign-ckpt"
corrupt "$(newest "$j")"
scontrol release "$j"
wait_over "$j" 120
check_out "$j" "corrupted checkpoint refused, with a message in the job's output" '^gpuckpt: restore: .*(checksum|mismatch|corrupt)'
check "the job was not restored half-way (no resume)" out_lacks "$j" '^heat-drv: resumed'
check "on-bad=fail: the job failed" state_is "$j" FAILED

# 2. Corrupted, --gpu-checkpoint-on-bad=fresh: refused, the job starts afresh.
new_part 2
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on --gpu-checkpoint-on-bad=fresh "$s")
running_at "$j" 20
node=$(job_node "$j")
# Meanwhile: gkuser2, on the same node, cannot read gkuser1's checkpoints.
wait_until 30 '[ -n "$(ls -d "$E2E_DIR/nodes/$node/bb/$j"/step.0/task.0/ 2>/dev/null)" ]'
k=$(submit --as gkuser2 -w "$node" --wrap "ls $BB/$j 2>&1; cat $BB/$j/step.0/task.0/* 2>&1; ls $SH 2>&1; echo probe-done")
wait_over "$k" 60
check_out "$k" "another user cannot list a job's burst-buffer folder" "ls: cannot open directory '$BB/$j': Permission denied"
check_out "$k" "nor read what is in it" "^cat: .*$BB/$j/step.0/task.0/.*: Permission denied"
requeue_hold "$j"
check "the shared copy is root's alone (0700)" [ "$(stat -c '%U %a' "$SH/$j")" = "root 700" ]
corrupt "$(newest "$j")"
scontrol release "$j"
wait_over "$j" 120
check_out "$j" "corrupted checkpoint refused" '^gpuckpt: restore: .*(checksum|mismatch|corrupt)'
check_out "$j" "on-bad=fresh: started afresh after the refusal" '^batch: node .* restart 1 '
check "no resume from the bad image" out_lacks "$j" '^heat-drv: resumed'
check "... and finished with the right checksum" [ "$(final_checksum "$j")" = "$ref" ]

# 3. gkuser1's (good) image put in place of gkuser2's: refused as foreign.
new_part 3
j=$(submit --as gkuser2 --gres=gpu:1 --gpu-checkpoint=on --gpu-checkpoint-on-bad=fresh "$s")
requeue_hold "$j"
c=$(newest "$j")
rm -rf "$c" && cp -a "$E2E_DIR/foreign-ckpt" "$c"
scontrol release "$j"
wait_over "$j" 120
# gpuckpt-stage hands nothing of another owner's to this job: refused in the
# prolog, named in slurmd's log (the runtime would refuse it too).
check "another user's checkpoint refused: not staged in (slurmd's log names it)" \
	grep -qs "stage-in: job $j: error: .*/ckpt.[0-9]*: belongs to someone else; refused; not staged in" \
	"$E2E_DIR"/log/slurmd.*.log
check "not loaded" out_lacks "$j" '^heat-drv: resumed'
check "the job started afresh and finished right" [ "$(final_checksum "$j")" = "$ref" ]

# 4. gk1's burst buffer read-only: the job runs on, its output says why.
new_part 4
nodeexec gk1 mount -o remount,bind,ro "$BB"
j=$(submit --as gkuser1 -w gk1 --gres=gpu:1 --gpu-checkpoint=on "$s")
signal_usr1 "$j"
wait_over "$j" 120
nodeexec gk1 mount -o remount,bind,rw "$BB"
check_out "$j" "read-only burst buffer: the plugin says no checkpoint can be written" "^gpuckpt: job $j step.0 task 0: no checkpoint can be written: .*Read-only file system"
check "... once per step (not again as slurmstepd's own error)" \
	[ "$(out_count "$j" "no checkpoint can be written")" = 2 -a "$(out_count "$j" "error: gpuckpt")" = 0 ]
check_out "$j" "the checkpoint attempt says why it wrote nothing" '^gpuckpt: checkpoint: .*: no checkpoint written: .*Read-only file system'
check_out "$j" "the program learnt that none was written and went on" '^heat-drv: step [0-9]+: no checkpoint written; going on$'
check "the job ran on to the right result" [ "$(final_checksum "$j")" = "$ref" ]
check_state "$j" COMPLETED "job completed"

# 5. gk1's burst buffer full (a 64 KiB tmpfs; the image is larger).
new_part 5
nodeexec gk1 mount -t tmpfs -o size=64k,mode=0755 gpuckpt-full "$BB"
s2=$(job_script faults-big "srun $APP $(app_args 256 $STEPS $DELAY)")
ref256=$(reference 256 $STEPS)
j=$(submit --as gkuser1 -w gk1 --gres=gpu:1 --gpu-checkpoint=on "$s2")
signal_usr1 "$j"
wait_over "$j" 120
nodeexec gk1 umount "$BB"
check_out "$j" "full burst buffer: the output says why no checkpoint was written" '^gpuckpt: checkpoint: .*: no checkpoint written: .*No space left on device'
check_out "$j" "the program learnt that none was written and went on" '^heat-drv: step [0-9]+: no checkpoint written; going on$'
check "no partial checkpoint left under a committed name" [ -z "$(ls -d "$E2E_DIR/nodes/gk1/bb/$j"/step.0/task.0/ckpt.* 2>/dev/null)" ]
check "the job ran on to the right result" [ "$(final_checksum "$j")" = "$ref256" ]
check_state "$j" COMPLETED "job completed"
# The parts' jobs (the prologs and epilogs of the plugin and gpuckpt-stage
# among them) left no node drained or down.
new_part end
check "no node was left drained or down${NOT_UP:+: $NOT_UP}" [ -z "$NOT_UP" ]
tap_done
