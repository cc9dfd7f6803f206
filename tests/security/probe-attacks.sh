#!/bin/bash
# probe-attacks.sh - issue 24, hole 5, on the node: `gpuckpt checkpoint
# --on-node JOB`, the probe that `gpuckpt checkpoint` runs on each of a
# job's nodes, run here as root the way the tool ran it before issue 24
# where Slurm let root's step into the job (or an admin runs it by hand).
#
# gksec1 is the attacker, gksec2 the job's user (Slurm's word, given to the
# probe as --uid). The attacker runs a process whose environment claims the
# job (SLURM_JOB_ID, GPUCKPT_DIR=a folder of theirs) with an event file
# naming it and a "committed" ckpt.000099. Before issue 24 root's probe took
# that folder as the job's and reported the fake checkpoint. Now, as root, it
# reads only BB_ROOT/JOB (--bb-root), of the job's user (--uid), the steps
# Slurm lists (--steps), and processes of that user; what it passes over it
# names in "ignored". The cluster side (root's whole command, through
# Slurm) is checkpoint-attacks.sh.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
. "$top_srcdir/tests/security/lib.sh"

GK_TOOL=${GK_TOOL:-$top_builddir/runtime/gpuckpt}
sec_setup 9

J=4242
BB=$GK_SCRATCH/bb EVIL=$GK_SCRATCH/evil
mkdir -m 0755 "$BB"
install -d -o gksec1 -g gksec1 -m 0755 "$EVIL"
as gksec1 mkdir -p "$EVIL/$J/step.0/task.0"

pstart() { sed 's/.*) //' "/proc/$1/stat" | awk '{print $20}'; }
# start_claim USER DIR: USER's process claiming job J with GPUCKPT_DIR=DIR
# (its pid in CLAIM), and a start event naming it in DIR.
start_claim() {
	# setpriv itself in the background: $! is then the process (as() would
	# put a root subshell in between).
	setpriv --reuid="$(id -u "$1")" --regid="$(id -g "$1")" --clear-groups -- \
		env -i PATH=/usr/bin:/bin SLURM_JOB_ID=$J GPUCKPT_DIR="$2" sleep 300 &
	CLAIM=$!
	for _ in $(seq 100); do grep -q sleep "/proc/$CLAIM/comm" 2>/dev/null && break; sleep 0.02; done
	start_event "$1" "$2" "$CLAIM"
}
# start_event USER DIR PID: a start event for PID appended to DIR's event file, as USER.
start_event() {
	as "$1" sh -c "printf 'gpuckpt-event 1 kind=start result=ok time=%s pid=%s pstart=%s\n' \
		\"\$(date +%s)\" $3 $(pstart "$3") >>'$2/gpuckpt.events'"
}
# fake committed checkpoint N of USER in DIR.
commit() {
	as "$1" mkdir -p "$2/ckpt.$3"
	as "$1" sh -c "echo '{}' >'$2/ckpt.$3/manifest.json'"
}
# jqt JSON [ARGS] FILTER: FILTER holds for JSON (jq 1.6 -e passes empty input).
jqt() {
	local j=$1
	shift
	[ -n "$j" ] && jq -e "$@" <<<"$j" >/dev/null
}
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$GK_SCRATCH"' EXIT

# The attacker's claimant first: a lower pid, met first in /proc.
start_claim gksec1 "$EVIL/$J/step.0/task.0"
ATTACKER=$CLAIM
pids+=("$CLAIM")
commit gksec1 "$EVIL/$J/step.0/task.0" 000099
# The job's own folder, task and process (what the plugin and runtime make).
install -d -o gksec2 -g gksec2 -m 0700 "$BB/$J" "$BB/$J/step.0" "$BB/$J/step.0/task.0"
start_claim gksec2 "$BB/$J/step.0/task.0"
VICTIM=$CLAIM
pids+=("$CLAIM")
commit gksec2 "$BB/$J/step.0/task.0" 000003

# probe ARGS...: root's probe, its JSON line in P (stderr in PERR), status in RC.
probe() {
	P=$("$GK_TOOL" checkpoint --on-node "$@" $J 2>"$GK_SCRATCH/perr")
	RC=$?
	PERR=$(cat "$GK_SCRATCH/perr")
	tap_diag "checkpoint --on-node $* $J: status $RC: $P $PERR"
}

# 1. As root's `gpuckpt checkpoint` ran the probe (no site setting given).
probe
check "root's probe never takes the attacker's folder for the job's, nor reports their ckpt.000099" \
	bash -c '! grep -q "$1" <<<"$2" && ! jq -e "any(.tasks[]?; .newest == 99)" <<<"${2:-null}" >/dev/null' _ "$EVIL" "$P"

# 2. As root's `gpuckpt checkpoint` runs it now: bb_root, uid, steps from Slurm.
probe --bb-root "$BB" --uid "$U2" --steps 0,batch
check "root's probe with Slurm's word reports the job's own folder only" \
	jqt "$P" --arg d "$BB/$J/step.0/task.0" '.job_dir != null and (.tasks | length) == 1 and .tasks[0].dir == $d and .tasks[0].newest == 3 and .tasks[0].live == 1'
check "it names the attacker's process as ignored (pid $ATTACKER, gksec1)" \
	jqt "$P" --arg p "process $ATTACKER " 'any(.ignored[]; contains($p) and contains("gksec1"))'

# 3. A process of another user named in the job's own event file.
start_event gksec2 "$BB/$J/step.0/task.0" "$ATTACKER"
probe --bb-root "$BB" --uid "$U2" --steps 0
check "a live process of another user in the job's events does not count as the task's, and is named" \
	jqt "$P" --arg p "process $ATTACKER " '.tasks[0].live == 1 and any(.ignored[]; contains($p) and contains("not the job"))'

# 4. A step Slurm does not list for the job.
probe --bb-root "$BB" --uid "$U2" --steps 1
check "a step Slurm does not list is not reported, and is named" \
	jqt "$P" '(.tasks | length) == 0 and any(.ignored[]; contains("step.0"))'

# 5. The job's folder owned by someone else than the job's user.
chown gksec1 "$BB/$J"
probe --bb-root "$BB" --uid "$U2" --steps 0
check "a job folder not of the job's user is not read, and is named" \
	jqt "$P" --arg d "$BB/$J" '.job_dir == null and (.tasks | length) == 0 and any(.ignored[]; startswith($d + ":") and contains("gksec1"))'
chown gksec2 "$BB/$J"

# 6. A bb_root that a user could change is refused (named).
mkdir -m 0777 "$GK_SCRATCH/openbb"
probe --bb-root "$GK_SCRATCH/openbb" --uid "$U2" --steps 0
check "a bb_root writable by others is not used, and is named" \
	jqt "$P" '.job_dir == null and any(.ignored[]; contains("bb_root"))'

# 7. The job's user: their probe still finds their folder (their own process).
P=$(as gksec2 "$GK_TOOL" checkpoint --on-node $J 2>&1)
check "the job's user's probe (no --bb-root) finds the job's folder from their own process" \
	jqt "$P" --arg d "$BB/$J" '.job_dir == $d and .tasks[0].newest == 3'
# ... and another user cannot ask for the job's user's view.
P=$(as gksec1 "$GK_TOOL" checkpoint --on-node --bb-root "$BB" --uid "$U2" $J 2>&1)
check "a probe run by another user than --uid's reports no folder" \
	bash -c '! jq -e ".job_dir != null" <<<"$1" >/dev/null 2>&1' _ "$P"
tap_done
