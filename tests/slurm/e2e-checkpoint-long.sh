#!/bin/bash
# e2e-checkpoint-long.sh - `gpuckpt checkpoint` of a job whose node has more
# to say than srun passes on in one piece (issue 29). The tool learns what each
# node holds from a probe run as a step of the job (`srun --label`, one task
# per node), which prints one line of JSON naming every task folder of the
# job on its node. srun hands a task's output on in pieces of at most 1024
# bytes and, with --label, ends each piece as a line of its own with the
# task's label (Slurm 24.11: a line of 2000 bytes comes out as "0: " + 1024
# bytes and "0: " + 976 bytes). A restarted 4-rank MPI job holds every rank's
# folder on each of its nodes (stage-in brings them all), and its nodes'
# lines grew past 1024 bytes: the tool read neither piece, took the ranks of
# that node for ended, and said "checkpoint NOT committed ... the task ended
# without a checkpoint" (the hour-long soak on trixie, seed 43: jobs 128, 156
# and 308), or that no program in the job used the GPU.
#
# Here a one-node job runs six short steps before its long one, so that its
# node holds eight task folders (the batch step's among them) and its answer
# is about 2 KiB: the tool must find the running task, signal it and name its
# new checkpoint, in text and as JSON.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 6
e2e_start
SIZE=64 STEPS=2400 DELAY=50
as1() { asuser gkuser1 "$@"; }

s=$(job_script manysteps "for i in 1 2 3 4 5 6; do srun $APP $(app_args $SIZE 2 0) >/dev/null 2>&1; done
srun $APP $(app_args $SIZE $STEPS $DELAY)
rc=\$?
[ \$rc -eq 143 ] && sleep 600
exit \$rc")
j=$(submit --as gkuser1 --gpu-checkpoint=on "$s")
wait_running "$j" 90 && wait_out "$j" '^heat-drv: step 20$' 120
check "job $j runs its seventh step" [ "$(job_state "$j")" = RUNNING ]

# What the node says, as the tool asks it (one task per node, labelled).
ans=$(as1 srun --jobid="$j" --overlap -N 1 -n 1 --label --quiet "$GK_TOOL" checkpoint --on-node "$j" 2>/dev/null)
whole=$(sed 's/^ *0: //' <<<"$ans" | tr -d '\n')
pieces=$(grep -c '^ *0: ' <<<"$ans")
tap_diag "the node's answer: ${#whole} bytes, in $pieces labelled line(s) from srun ($(sinfo --version 2>/dev/null))"
check "the node's answer names the job's eight task folders ($(jq '.tasks | length' <<<"$whole" 2>/dev/null))" \
	[ "$(jq '.tasks | length' <<<"$whole" 2>/dev/null)" = 8 ]
check "it is longer than one 1024-byte piece of srun's output (${#whole} bytes)" [ "${#whole}" -gt 1100 ]

out=$(as1 "$GK_TOOL" checkpoint "$j" 2>&1); rc=$?
tap_diag "$out"
ok=0; [ $rc -eq 0 ] && grep -q "^job $j: checkpoint committed" <<<"$out" && ok=1
check "gpuckpt checkpoint: exit 0, committed (exit $rc)" [ $ok = 1 ]
check "it names the running task's new checkpoint" \
	grep -q "^  step 6 task 0  gk1:$E2E_DIR/bb/$j/step.6/task.0/ckpt.[0-9]\{6\}  " <<<"$out"
js=$(as1 "$GK_TOOL" checkpoint --json "$j" 2>/dev/null); rc=$?
ok=0; [ $rc -eq 0 ] && jq -e '.committed == true and (.tasks | length) == 1 and .tasks[0].status == "committed" and .tasks[0].step == "6"' <<<"$js" >/dev/null && ok=1
check "--json: exit 0, the one running task committed (exit $rc)" [ $ok = 1 ]
[ $ok = 1 ] || tap_diag "$js"
scancel "$j"
wait_over "$j" 60
tap_done
