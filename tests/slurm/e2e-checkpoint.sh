#!/bin/bash
# e2e-checkpoint.sh - `gpuckpt checkpoint JOBID`, checkpoint on demand, run by
# the job's own user against real slurmctld and slurmd: a two-node job is
# checkpointed while it runs (every task commits a new ckpt.N, which the tool
# names with its node, folder and size; the job goes on), again with --json;
# another user's job is refused with a message naming its owner, and nothing
# is signalled; a job without --gpu-checkpoint is told so and left running;
# a finished job, a program that ends on the signal instead of checkpointing
# (not committed: exit 1 with the reason), a program started by the batch
# script itself (refused without --full); bad command lines; and --exit,
# which checkpoints, ends the run (asking Slurm again when it refuses),
# holds the job, and `scontrol release` resumes it from the checkpoint to
# the uninterrupted run's result.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 37
e2e_start
TOOL=$GK_TOOL
SIZE=64 STEPS=2400 DELAY=50
ref=$(reference $SIZE $STEPS)
tap_diag "reference checksum (uninterrupted, outside Slurm): $ref"

# newest_on NODE DIR: the newest committed ckpt.N in DIR on NODE's burst buffer.
newest_on() { nodeexec "$1" sh -c "ls -d '$2'/ckpt.[0-9]* 2>/dev/null | sort | tail -n 1"; }
as1() { asuser gkuser1 "$@"; }

# The two tasks compute alone (GPUCKPT_TASKS=independent): a step of several
# tasks is otherwise checkpointed only through gpuckpt_mpi.h (e2e-mpi.sh).
s=$(job_script ondemand "export GPUCKPT_TASKS=independent
srun $APP $(app_args $SIZE $STEPS $DELAY)
rc=\$?
[ \$rc -eq 143 ] && sleep 600
exit \$rc")
j=$(submit --as gkuser1 -N 2 -n 2 --gpu-checkpoint=on "$s")
wait_running "$j" 90 && wait_until 90 "[ \"\$(out_count $j '^heat-drv: step 20$')\" = 2 ]"
check "a two-node job of gkuser1 is running" state_is "$j" RUNNING

# 1. The user checkpoints it.
out=$(as1 "$TOOL" checkpoint "$j" 2>&1); rc=$?
tap_diag "$out"
check "gpuckpt checkpoint: exit 0" [ $rc -eq 0 ]
check "it says the checkpoint is committed" grep -q "^job $j: checkpoint committed" <<<"$out"
n1=$(grep -c "^  step 0 task [01]  gk[12]:$E2E_DIR/bb/$j/step.0/task.[01]/ckpt.[0-9]\{6\}  [0-9.]* [KMG]\{0,1\}i\{0,1\}B$" <<<"$out")
check "each task's checkpoint named with its node, folder and size ($n1 of 2)" [ "$n1" = 2 ]
ok_paths=1
while read -r node path; do
	[ "$(newest_on "$node" "$(dirname "$path")")" = "$path" ] &&
		nodeexec "$node" test -f "$path/manifest.json" || ok_paths=0
done < <(sed -n "s/^  step 0 task [01]  \(gk[12]\):\([^ ]*\)  .*/\1 \2/p" <<<"$out")
check "each named checkpoint is that task's newest committed one, on that node" [ "$ok_paths" = 1 ]
check "the size is the checkpoint's" grep -q "^  total [0-9.]* [KMG]iB" <<<"$out"
step_then=$(out_count "$j" '^heat-drv: step ')
wait_until 30 "[ \$(out_count $j '^heat-drv: step ') -gt $((step_then + 2)) ]"
check "the job goes on after the checkpoint" state_is "$j" RUNNING

# 2. Again, as JSON: a newer checkpoint per task.
js=$(as1 "$TOOL" checkpoint --json "$j" 2>/dev/null); rc=$?
check "--json: exit 0" [ $rc -eq 0 ]
check "--json: committed, two tasks, bytes" \
	jq -e '.committed == true and (.tasks | length) == 2 and all(.tasks[]; .status == "committed" and .bytes > 0) and .bytes > 0 and .ended == null' <<<"$js"
first=$(sed -n "s/^  step 0 task 0  gk[12]:.*ckpt.\([0-9]*\)  .*/\1/p" <<<"$out")
second=$(jq -r '.tasks[] | select(.task == 0) | .checkpoint' <<<"$js" | sed 's/.*ckpt\.//')
check "--json: task 0's checkpoint is newer than the first ($first < $second)" [ "$((10#${second:-0}))" -gt "$((10#${first:-0}))" ]

# 3. Another user's job: refused before anything is sent.
before=$(out_count "$j" "SIGUSR1 received|checkpoint: .*: wrote")
out=$(asuser gkuser2 "$TOOL" checkpoint "$j" 2>&1); rc=$?
tap_diag "$out"
check "another user's job: exit 1" [ $rc -eq 1 ]
check "another user's job: the message names the owner" \
	grep -q "job $j belongs to gkuser1, not to you (gkuser2): only a job's owner (or root) can checkpoint it" <<<"$out"
sleep 3
check "another user's job: nothing was signalled" [ "$(out_count "$j" "SIGUSR1 received|checkpoint: .*: wrote")" = "$before" ]
out=$(asuser gkuser2 scancel --signal=USR1 "$j" 2>&1)
check "(and Slurm itself refuses gkuser2 the signal)" grep -qi "denied" <<<"$out"

# 4. A job without --gpu-checkpoint: told so, left running.
p=$(submit --as gkuser1 --gpu-checkpoint=off --wrap "srun sleep 300")
wait_running "$p" 90
out=$(as1 "$TOOL" checkpoint "$p" 2>&1); rc=$?
tap_diag "$out"
check "no --gpu-checkpoint: exit 1" [ $rc -eq 1 ]
check "no --gpu-checkpoint: said so" \
	grep -q "job $p does not run with gpuckpt: none of its tasks on gk[12] has a checkpoint folder (submit it with --gpu-checkpoint=on)" <<<"$out"
sleep 1
check "no --gpu-checkpoint: the job was not signalled and runs on" state_is "$p" RUNNING
scancel "$p"

# 5. A program that ends on the signal instead of checkpointing: not committed.
UNAWARE=$top_builddir/tests/runtime/prog-unaware
if [ -x "$UNAWARE" ] && [ -f "$GK_STANDIN_DIR/libcuda.so.1" ]; then
	u=$(submit --as gkuser1 --gpu-checkpoint=on --gpu-checkpoint-mode=app \
		--wrap "export LD_LIBRARY_PATH=$GK_STANDIN_DIR; srun $UNAWARE; echo srun-rc \$?; sleep 5")
	wait_out "$u" "^prog-unaware: ready" 90
	out=$(as1 "$TOOL" checkpoint --timeout 60 "$u" 2>&1); rc=$?
	tap_diag "$out"
	check "a program that is not checkpoint-aware: exit 1" [ $rc -eq 1 ]
	check "it says the checkpoint was not committed, and why" \
		grep -q "^  step 0 task 0  gk[12]: ended: the program ended without committing a checkpoint" <<<"$out"
	check "(the program ended by the signal, as without gpuckpt)" wait_out "$u" "no checkpoint taken on SIGUSR1" 30
else
	for _ in 1 2 3; do tap_skip "tests/runtime/prog-unaware or the CUDA stand-in is not built"; done
fi

# 5b. A program started by the batch script itself: not signalled without --full.
bs=$(job_script batchonly "$APP $(app_args $SIZE $STEPS $DELAY)")
b=$(submit --as gkuser1 --gpu-checkpoint=on "$bs")
wait_out "$b" '^heat-drv: step 20$' 90
out=$(as1 "$TOOL" checkpoint "$b" 2>&1); rc=$?
tap_diag "$out"
check "program in the batch script: exit 1, says to use srun or --full with a trap" \
	bash -c '[ $1 -eq 1 ] && grep -q "its program runs in the batch script itself (step batch).*give --full" <<<"$2"' _ $rc "$out"
check "program in the batch script: not signalled, runs on" \
	bash -c 'sleep 2; [ "$(scontrol show job -o "$1" | sed -n "s/.*JobState=\([A-Z]*\).*/\1/p")" = RUNNING ] && ! grep -q "SIGUSR1 received" "$2"' _ "$b" "$(job_out "$b")"
scancel "$b"

# 6. A finished job; bad command lines; --help.
out=$(as1 "$TOOL" checkpoint "$p" 2>&1); rc=$?
check "a job that is not running: exit 1, its state named" \
	bash -c '[ $1 -eq 1 ] && grep -Eq "job $2 is (CANCELLED|COMPLETING): only a running job can be checkpointed" <<<"$3"' _ $rc "$p" "$out"
out=$(as1 "$TOOL" checkpoint 999999 2>&1); rc=$?
check "an unknown job: exit 1, said so" bash -c '[ $1 -eq 1 ] && grep -q "job 999999: no such job" <<<"$2"' _ $rc "$out"
out=$("$TOOL" checkpoint 2>&1); rc=$?
check "no job id: usage error (exit 2)" bash -c '[ $1 -eq 2 ] && grep -q "missing the job id JOBID; see gpuckpt --help" <<<"$2"' _ $rc "$out"
out=$("$TOOL" checkpoint 12x 2>&1); rc=$?
check "a bad job id: usage error naming it" bash -c '[ $1 -eq 2 ] && grep -q "'"'"'12x'"'"' is not a job id" <<<"$2"' _ $rc "$out"
out=$("$TOOL" checkpoint --exit --requeue 5 2>&1); rc=$?
check "--exit with --requeue: usage error" [ $rc -eq 2 ]
out=$("$TOOL" checkpoint --help); rc=$?
check "--help: NAME, SYNOPSIS, OPTIONS, EXIT STATUS, EXAMPLES" \
	bash -c '[ $1 -eq 0 ] && for s in NAME SYNOPSIS DESCRIPTION OPTIONS "EXIT STATUS" EXAMPLES; do grep -q "^$s$" <<<"$2" || exit 1; done' _ $rc "$out"

# 7. --exit: checkpoint, end the run, hold; release resumes from it. Its
# first `scontrol requeuehold` is refused, as Slurm 24.11 refused some under
# load and left the job running (docs/soak.md), by an scontrol put first in
# the tool's PATH: the tool asks again while the job still runs.
fault=$E2E_DIR/fault-bin
mkdir -p "$fault" && : >"$fault/calls" && chmod 0755 "$fault" && chmod 0666 "$fault/calls"
cat >"$fault/scontrol" <<SCRIPT
#!/bin/sh
if [ "\$1" = requeuehold ]; then
	echo "\$*" >>'$fault/calls'
	if [ "\$(wc -l <'$fault/calls')" -eq 1 ]; then
		echo "Unexpected message received for job \$2" >&2
		exit 1
	fi
fi
exec /usr/bin/scontrol "\$@"
SCRIPT
chmod 0755 "$fault/scontrol"
out=$(as1 env PATH="$fault:/usr/bin:/bin" "$TOOL" checkpoint --exit "$j" 2>&1); rc=$?
tap_diag "$out"
check "--exit: exit 0" [ $rc -eq 0 ]
check "--exit: the refused requeuehold was asked again, saying so ($(wc -l <"$fault/calls") calls)" \
	bash -c '[ "$(wc -l <"$1")" = 2 ] && grep -q "scontrol requeuehold $2 failed (Unexpected message received for job $2); the job still runs: asking again" <<<"$3"' \
	_ "$fault/calls" "$j" "$out"
check "--exit: committed, then the run ended and the job is held" \
	grep -q "^job $j: this run ended and the job is held; \`scontrol release $j\` runs it again from its newest checkpoint" <<<"$out"
check "--exit: the job is pending, held" bash -c 'scontrol show job -o "$1" | grep -qi "JobState=PENDING.*Reason=[^ ]*held"' _ "$j"
check "--exit: the tasks checkpointed on SIGTERM too" wait_out "$j" "SIGTERM received|checkpoint: .*: wrote" 5
as1 scontrol release "$j"
wait_over "$j" 300
check "released: it restored from its checkpoint" out_has "$j" "^heat-drv: resumed from step [1-9]"
check_state "$j" COMPLETED "released: completed"
fin=$(final_checksum "$j")
check "released: same checksum as an uninterrupted run ($fin = $ref)" [ "${fin:-none}" = "$ref" ]
check "released: both tasks ended with it" [ "$(out_count "$j" "^heat-drv: done: .*checksum=$ref")" = 2 ]
tap_done
