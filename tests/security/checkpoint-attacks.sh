#!/bin/bash
# checkpoint-attacks.sh - issue 24, hole 5: root's `gpuckpt checkpoint JOBID`
# must trust only Slurm, never what another user's process says about itself.
#
# Against a real Slurm cluster (tests/slurm/cluster.sh; its users gkuser1, the
# job's owner, and gkuser2, the attacker). The attacker runs a process of
# their own on the node whose environment claims gkuser1's job
# (SLURM_JOB_ID=JOB, GPUCKPT_DIR=/tmp/<theirs>/JOB/step.0/task.0), with an
# event file there that names that live process, and a "committed"
# ckpt.000099 (a folder with a manifest.json) made once root's tool has
# looked (an attacker who makes a new one every second gets the same).
# Where Slurm let root's step into the job, root's tool took the job's folder
# from such an environment, accepted a folder of any owner, reported the
# fake checkpoint as committed, and with --exit held the job: a run ended
# with no real checkpoint (security/probe-attacks.sh shows that on the node;
# Slurm 22.05 here refuses root's own step into a user's job, so before
# issue 24 root's command failed here at srun). Now root's tool takes the
# job's user and steps from Slurm and the folder from plugstack.conf's
# bb_root and the job id, and looks at the nodes as the job's user.
#
# Then root checkpoints a real gpuckpt job of gkuser1's with such a claimant
# beside it: the checkpoint named is the job's own, under bb_root; a live
# process of gkuser2's written into the job's event file is not counted as
# the task's, and is named as ignored.
#
# Root's tool runs as on a login node: Slurm's own commands on PATH, inside
# the controller's network (the cluster's wrappers in $E2E_DIR/bin are for
# root alone).
#
# Runs from a normal build as root (make check TESTS=security/checkpoint-attacks.sh
# in build/plain); a sanitizer build or a user reports skips with the reason.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 11
e2e_start
TOOL=$GK_TOOL
EVIL=/tmp/gk-evil.$$
SIZE=64 STEPS=2400 DELAY=50

# asroot CMD...: root's command, as on a login node (asuser's way in, no setpriv).
asroot() {
	local enter
	enter=$(sed -n 's/^exec \(.*\) setpriv .*/\1/p' "$E2E_DIR/bin/asuser")
	$enter env PATH=/usr/bin:/bin:/usr/sbin:/sbin SLURM_CONF="$SLURM_CONF" "$@"
}
as1() { setpriv --reuid="$(id -u gkuser1)" --regid="$(id -g gkuser1)" --clear-groups -- "$@"; }
as2() { setpriv --reuid="$(id -u gkuser2)" --regid="$(id -g gkuser2)" --clear-groups -- "$@"; }
# pstart PID: its start time in ticks (/proc/PID/stat field 22).
pstart() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $20}'; }

# claim JOB: the attacker's process claiming JOB, and its folder with an
# event file naming it (CLAIM_PID).
claim() {
	local d=$EVIL/$1/step.0/task.0
	as2 mkdir -p "$d"
	# setpriv itself in the background: $! is the process, not a subshell.
	setpriv --reuid="$(id -u gkuser2)" --regid="$(id -g gkuser2)" --clear-groups -- \
		env -i PATH=/usr/bin:/bin SLURM_JOB_ID="$1" GPUCKPT_DIR="$d" sleep 600 &
	CLAIM_PID=$!
	wait_until 5 "[ -r /proc/$CLAIM_PID/stat ] && grep -q sleep /proc/$CLAIM_PID/comm"
	as2 sh -c "printf 'gpuckpt-event 1 kind=start result=ok time=%s pid=%s pstart=%s\n' \
		\"\$(date +%s)\" $CLAIM_PID $(pstart $CLAIM_PID) >'$d/gpuckpt.events'"
}
# fake_commit JOB: the attacker's "committed" ckpt.000099.
fake_commit() {
	as2 mkdir -p "$EVIL/$1/step.0/task.0/ckpt.000099"
	as2 sh -c "echo '{}' >'$EVIL/$1/step.0/task.0/ckpt.000099/manifest.json'"
}
cleanup_claims() {
	[ -n "${CLAIM_PID:-}" ] && kill "$CLAIM_PID" 2>/dev/null
	rm -rf "$EVIL"
}
trap 'cleanup_claims; e2e_stop' EXIT
as2 mkdir -m 0755 "$EVIL"

# 1. A job of gkuser1's without gpuckpt, whose step ignores SIGUSR1 (so that
# the vulnerable tool's signal does not end it), requeueable (--exit).
s=$(job_script plain "srun bash -c \"trap '' USR1; sleep 600\"")
j=$(submit --as gkuser1 -N 1 -n 1 --requeue --gpu-checkpoint=off "$s")
wait_running "$j" 90 && wait_until 60 "squeue -h -s -j $j -o %i | grep -q '^$j\.0$'"
check "a job of gkuser1's is running, with step 0" state_is "$j" RUNNING
claim "$j"
tap_diag "gkuser2's process $CLAIM_PID claims job $j: GPUCKPT_DIR=$EVIL/$j/step.0/task.0"

out=$JOBS/root-ckpt.out err=$JOBS/root-ckpt.err
: >"$out"
: >"$err"
asroot "$TOOL" checkpoint --exit --timeout 30 "$j" >"$out" 2>"$err" &
tool=$!
# Once the tool has looked and waits, the attacker "commits" a checkpoint.
if wait_until 60 "grep -q 'waiting for the checkpoint' '$err' || ! kill -0 $tool 2>/dev/null"; then
	grep -q 'waiting for the checkpoint' "$err" && fake_commit "$j"
fi
wait "$tool"
rc=$?
all=$(cat "$out" "$err")
tap_diag "$all"
check "root's checkpoint --exit of that job: exit 1 (nothing committed)" [ $rc -eq 1 ]
check "the attacker's ckpt.000099 is not reported as committed" \
	bash -c '! grep -q "checkpoint committed" <<<"$1" && ! grep -q "ckpt.000099" <<<"$1"' _ "$all"
check "the job was not ended by --exit: still running, not held" state_is "$j" RUNNING
check "it says the job does not run with gpuckpt" grep -q "job $j does not run with gpuckpt" <<<"$all"
scancel "$j"
kill "$CLAIM_PID" 2>/dev/null
wait "$CLAIM_PID" 2>/dev/null

# 2. Root checkpoints a real gpuckpt job of gkuser1's, a claimant beside it.
s=$(job_script ondemand "srun $APP $(app_args $SIZE $STEPS $DELAY)
rc=\$?
[ \$rc -eq 143 ] && sleep 600
exit \$rc")
# The claimant comes first (a lower pid: the old tool's /proc scan met it first).
j2=$(submit --as gkuser1 -N 1 -n 1 --hold --gpu-checkpoint=on "$s")
claim "$j2"
scontrol release "$j2"
wait_running "$j2" 90 && wait_until 90 "[ \"\$(out_count $j2 '^heat-drv: step 20$')\" = 1 ]"
check "a gpuckpt job of gkuser1's is running" state_is "$j2" RUNNING
fake_commit "$j2"
# The job's user names gkuser2's live process in the job's event file (on
# the job's node: each node has its own burst buffer).
node2=$(job_node "$j2")
ev=$E2E_DIR/bb/$j2/step.0/task.0/gpuckpt.events
nodeexec "$node2" setpriv --reuid="$(id -u gkuser1)" --regid="$(id -g gkuser1)" --clear-groups -- \
	sh -c "printf 'gpuckpt-event 1 kind=start result=ok time=%s pid=%s pstart=%s\n' \
	\"\$(date +%s)\" $CLAIM_PID $(pstart $CLAIM_PID) >>'$ev'"
out=$(asroot "$TOOL" checkpoint --timeout 60 "$j2" 2>&1); rc=$?
tap_diag "$out"
check "root's checkpoint of it: exit 0, committed" \
	bash -c '[ $1 -eq 0 ] && grep -q "^job $2: checkpoint committed" <<<"$3"' _ $rc "$j2" "$out"
read -r cnode cpath < <(sed -n "s/^  step 0 task 0  \(gk[12]\):\([^ ]*\)  .*/\1 \2/p" <<<"$out")
own_ckpt() {
	case $cpath in
	"$E2E_DIR/bb/$j2/step.0/task.0/ckpt."[0-9]*) nodeexec "$cnode" test -f "$cpath/manifest.json" ;;
	*) return 1 ;;
	esac
}
check "the checkpoint named is the job's own, under bb_root ($cnode:$cpath)" own_ckpt
check "the attacker's folder is not reported" bash -c '! grep -q "$1" <<<"$2"' _ "$EVIL" "$out"
check "gkuser2's process in the job's events is named as ignored (pid $CLAIM_PID)" \
	grep -q "ignored on gk[12]: process $CLAIM_PID (in .*) runs as gkuser2" <<<"$out"
js=$(asroot "$TOOL" checkpoint --json --timeout 60 "$j2" 2>/dev/null)
check "--json: committed, and the ignored process listed" \
	bash -c '[ -n "$1" ] && jq -e --arg p "process $2 " ".committed == true and any(.ignored[]; .what | contains(\$p))" <<<"$1" >/dev/null' _ "$js" "$CLAIM_PID"
scancel "$j2"
tap_done
