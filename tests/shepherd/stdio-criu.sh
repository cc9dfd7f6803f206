#!/bin/bash
# stdio-criu.sh - the task's stdio of every kind through a real CRIU dump and
# restore (runtime/shepherd/stdio.c): a file truncated by the redirection,
# a file in append mode, a pipe, /dev/null and a terminal. A program that
# counts (no GPU needed: stdio is CRIU's business, not the driver's) runs under
# `gpuckpt-shepherd run`, is checkpointed by SIGTERM half-way, its output file
# grows after the dump (as a job's output file does, which CRIU used to refuse:
# "File .../err.run has bad size 620 (expect 413)"), and `gpuckpt-shepherd
# restore`, given stdio of the same kind, must bring it back to count on to
# the end, from where it was.
#
# Last, a shepherd started in a PID namespace whose session leader is outside
# it (a container's, or a CI runner's without a session of its own): CRIU
# refuses to dump a session it cannot see, so the shepherd's program must lead
# a session of its own there (every dump in CI failed before).
#
# Needs root, munged (started here when none answers) and CRIU 4 or later: GK_CRIU, else /usr/local/sbin/criu, else
# the GPU machine's /opt/criu (shared/gpu-machine/setup.sh). Without them
# every test is a SKIP with the reason; CRIU does not run on the development
# and CI machines (DESIGN.md).
#
#   make check TESTS=shepherd/stdio-criu.sh     (in build/tests)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
KINDS=(file append pipe null tty)
PLAN=$((${#KINDS[@]} * 3 + 1))
tap_plan $PLAN
gk_scratch

gk_need_built "$SHEP"
why=
if [ "$(id -u)" -ne 0 ]; then
	why="needs root (the shepherd does)"
elif ! gk_find_criu; then
	why=$CRIU_WHY
elif ! gk_munged; then
	why=$MUNGE_WHY
elif ! command -v script >/dev/null; then
	why="script(1) is not installed (util-linux): no terminal for the tty case"
fi
if [ -n "$why" ]; then
	for i in $(seq $PLAN); do tap_skip "$why"; done
	exit 0
fi

trap '[ -n "$MUNGED" ] && kill "$MUNGED" 2>/dev/null; rm -rf "$GK_SCRATCH"' EXIT
# Nothing of ours goes into the checkpointed program.
gk_close_inherited
N=120
# Counts to N on stdout and stderr, a line each 50 ms. It ignores SIGTERM:
# outside Slurm the shepherd passes the signal on, and a program without
# the runtime would end before CRIU dumps it (the runtime's job, not
# stdio's).
PROG=(/bin/sh -c "trap '' TERM; i=0; while [ \$i -lt $N ]; do i=\$((i+1)); echo \"out \$i\"; echo \"err \$i\" >&2; sleep 0.05; done; echo done")
children_of() { cat /proc/"$1"/task/*/children 2>/dev/null; }
# shepherd_under PID: PID or the first of its descendants that is the shepherd.
shepherd_under() {
	local p=$1 c
	[ "$(readlink /proc/"$p"/exe)" = "$(readlink -f "$SHEP")" ] && { echo "$p"; return 0; }
	for c in $(children_of "$p"); do
		shepherd_under "$c" && return 0
	done
	return 1
}
# Every process under this test but the guard's own, deepest last.
descendants() { local c; for c in $(children_of "$1"); do echo "$c"; descendants "$c"; done; }
# guard SECONDS WHAT: a phase of the test (a run and its checkpoint, or a
# restore) that has not ended after SECONDS is hung. Then what every process
# under the test was doing (state, kernel function, kernel stack) and the end
# of CRIU's logs go into $GK_SCRATCH/hung, and those processes are killed, so
# the phase ends, its point fails with that why, and the next kind runs. CI
# once saw the null case hang until the suite's watchdog ended the whole test
# 20 minutes later, with nothing said (a failed stop had left the program
# stopped: runtime/shepherd/hold.c). unguard ends the watch and says it.
guard() {
	rm -f "$GK_SCRATCH/hung"
	(
		# unguard's TERM ends the watch quietly (a sleep killed in the
		# foreground would print "Terminated" into the log).
		sleep "$1" </dev/null >/dev/null 2>&1 &
		trap 'kill $! 2>/dev/null; exit 0' TERM
		wait $!
		# Not the guard itself, nor the munged this test started.
		mine=" $BASHPID ${MUNGED:-} $(descendants "$BASHPID" | tr '\n' ' ') "
		pids=
		for p in $(descendants $$); do
			case $mine in *" $p "*) ;; *) pids="$pids $p" ;; esac
		done
		[ -n "$pids" ] || exit 0
		{
			echo "$2: not over after $1 s; the processes under the test:"
			for p in $pids; do
				ps -o pid=,ppid=,stat=,wchan:28=,args= -p "$p" 2>/dev/null | cut -c1-200
				sed 's/^/      /' /proc/"$p"/stack 2>/dev/null | head -n 8
			done
			for f in "$GK_SCRATCH"/*/.tmp*/criu/dump.log "$GK_SCRATCH"/*/ckpt.*/criu/restore.log; do
				[ -f "$f" ] && { echo "the end of $f:"; tail -n 6 "$f"; }
			done
		} >"$GK_SCRATCH/hung.tmp" 2>&1
		mv "$GK_SCRATCH/hung.tmp" "$GK_SCRATCH/hung"
		kill -KILL $pids 2>/dev/null
	) &
	GUARD=$!
}
unguard() {
	kill "$GUARD" 2>/dev/null
	wait "$GUARD" 2>/dev/null
	[ -f "$GK_SCRATCH/hung" ] && tap_diag "$(cat "$GK_SCRATCH/hung")"
	rm -f "$GK_SCRATCH/hung"
}
wait_for() { # FILE PATTERN SECONDS (not past a guard that fired)
	for i in $(seq $(($3 * 20))); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		[ -f "$GK_SCRATCH/hung" ] && return 1
		sleep 0.05
	done
	return 1
}

# one KIND: run, checkpoint half-way, grow the output, restore; 3 tests.
one() {
	local kind=$1 dir=$GK_SCRATCH/$1 out=$GK_SCRATCH/$1.out log=$GK_SCRATCH/$1.log
	local again=$GK_SCRATCH/$1.out
	local args=(--criu "$CRIU" --dir "$dir" --uid 0 --gid 0 --job 1 --step 0 --task 0)
	local spid= tpid status last1 first2 last
	# A truncating redirection gets a new file for the restore, as a job run
	# again without --open-mode=append does; the others go on in the same.
	[ "$kind" = file ] && again=$GK_SCRATCH/$1.restored.out
	mkdir -p "$dir"
	echo "before the job" >"$out"
	case $kind in
	file) "$SHEP" run "${args[@]}" -- "${PROG[@]}" </dev/null >"$out" 2>&1 & ;;
	append) "$SHEP" run "${args[@]}" -- "${PROG[@]}" </dev/null >>"$out" 2>&1 & ;;
	pipe) { "$SHEP" run "${args[@]}" -- "${PROG[@]}" </dev/null 2>&1 | cat >>"$out"; } & ;;
	null) "$SHEP" run "${args[@]}" -- "${PROG[@]}" </dev/null >/dev/null 2>"$log" & ;;
	tty) script -qfec "$(printf '%q ' "$SHEP" run "${args[@]}" -- "${PROG[@]}")" "$out" \
		</dev/null >/dev/null & ;;
	esac
	tpid=$!
	# The program ends by itself in 6 s; three minutes is far beyond any
	# load seen (finding the shepherd and the 30th line may take 2).
	guard 180 "$kind: the run and its checkpoint"
	# Up to a minute: under load (a root's check-slurm beside another) the
	# append case once took no checkpoint and printed nothing, as when no
	# shepherd was found in time and SIGTERM went nowhere.
	for i in $(seq 1200); do
		spid=$(shepherd_under "$tpid") && break
		sleep 0.05
	done
	[ -n "$spid" ] || tap_diag "$kind: no gpuckpt-shepherd under pid $tpid after 60 s: $(ps -o pid=,args= --ppid "$tpid" 2>/dev/null)"
	if [ "$kind" = null ]; then
		sleep 2
	else
		wait_for "$out" "out 30" 60 || [ -f "$GK_SCRATCH/hung" ] ||
			tap_diag "$kind: no 'out 30' in $out after 60 s"
	fi
	kill -TERM "$spid" 2>/dev/null
	wait "$tpid" 2>/dev/null
	status=$?
	unguard
	if [ -n "$(ls -d "$dir"/ckpt.* 2>/dev/null)" ]; then
		tap_ok "$kind: checkpointed half-way by CRIU (the shepherd ended $status)"
	else
		tap_not_ok "$kind: checkpointed half-way by CRIU (the shepherd ended $status)"
		# The shepherd's own lines say why it took none.
		tap_diag "$(tail -n 5 "$out" "$log" 2>/dev/null; grep -h "gpuckpt" "$out" "$log" 2>/dev/null | tail -n 12
			cat "$dir"/.tmp*/criu/dump.log 2>/dev/null | grep -i error | tail -n 5)"
	fi
	echo "written by someone else after the dump" >>"$out"
	args=(--criu "$CRIU" --dir "$dir" --uid 0 --gid 0 --job 1 --step 0 --task 0)
	guard 120 "$kind: the restore"
	case $kind in
	file) "$SHEP" restore "${args[@]}" </dev/null >"$again" 2>&1 ;;
	append) "$SHEP" restore "${args[@]}" </dev/null >>"$out" 2>&1 ;;
	pipe) "$SHEP" restore "${args[@]}" </dev/null 2>&1 | cat >>"$out" ;;
	null) "$SHEP" restore "${args[@]}" </dev/null >/dev/null 2>"$log" ;;
	tty) script -qfaec "$(printf '%q ' "$SHEP" restore "${args[@]}")" "$out" </dev/null >/dev/null ;;
	esac
	status=${PIPESTATUS[0]}
	unguard
	if [ "$kind" = tty ]; then
		# script(1) gives the command's status; the restored program's is in
		# the shepherd's line, and its count in the typescript.
		status=$(grep -q "^done" "$out" && echo 0 || echo 1)
	fi
	if [ "$status" = 0 ] && grep -q "restored ckpt" "$out" "$again" "$log" 2>/dev/null; then
		tap_ok "$kind: restored by CRIU with the task's $kind as its stdio, and ran to the end"
	else
		tap_not_ok "$kind: restored by CRIU with the task's $kind as its stdio, and ran to the end (status $status)"
		tap_diag "$(tail -n 8 "$out" "$again" "$log" 2>/dev/null; grep -i error "$dir"/ckpt.*/criu/restore.log 2>/dev/null | tail -n 5)"
		# CRIU gives a task its old pid back: name whoever holds it.
		local pid
		for pid in $(grep -ho "Can't fork for [0-9]*" "$dir"/ckpt.*/criu/restore.log 2>/dev/null | grep -o "[0-9]*$"); do
			tap_diag "pid $pid is held by: $(ps -o pid=,ppid=,stat=,args= -p "$pid" 2>/dev/null || echo nobody now)"
		done
	fi
	if [ "$kind" = null ]; then
		# Nothing to read back: its end was its status (above). Its stdout
		# is /dev/null again, writable: a write that failed would be in
		# its stderr, the log (once fd 1 was the shepherd's read-only fd 0).
		if [ -s "$log" ] && ! grep -q "I/O error\|Bad file descriptor" "$log"; then
			tap_ok "null: the restored program's stdout, /dev/null again, takes its writes"
		else
			tap_not_ok "null: the restored program's stdout, /dev/null again, takes its writes"
			tap_diag "$(grep -m 3 "error" "$log" 2>/dev/null)"
		fi
		return
	fi
	# Before the line written after the dump: the first run, ended half-way
	# by the checkpoint. After it: the restored one, going on from there.
	[ "$again" = "$out" ] || cat "$again" >>"$out"
	last1=$(sed '/after the dump/,$d' "$out" | grep -o "^out [0-9]*" | tail -n 1 | cut -d' ' -f2)
	first2=$(sed '1,/after the dump/d' "$out" | grep -o "^out [0-9]*" | head -n 1 | cut -d' ' -f2)
	last=$(sed '1,/after the dump/d' "$out" | grep -o "^out [0-9]*" | tail -n 1 | cut -d' ' -f2)
	if [ -n "$last1" ] && [ "$last1" -lt "$N" ] && [ -n "$first2" ] && [ "$first2" -gt 1 ] &&
		[ "$first2" -le $((last1 + 1)) ] && [ "$first2" -ge $((last1 - 1)) ] &&
		[ "$last" = "$N" ] && sed '1,/after the dump/d' "$out" | grep -q "^done"; then
		tap_ok "$kind: it went on counting from where it was (out $last1, then out $first2) to $N"
	else
		tap_not_ok "$kind: it went on counting from where it was to $N (first run ended at '$last1', restored run began at '$first2' and ended at '$last')"
		tap_diag "$(grep -n "out \|after the dump\|done" "$out" | sed -n '1,2p;$p')"
	fi
}

for kind in "${KINDS[@]}"; do
	one "$kind"
done

# pidns: only the dump (a restore in a fresh namespace would want pid 2 back,
# which its own shepherd holds there). The session stays the caller's, whose
# leader is outside: getsid says 0 inside.
dir=$GK_SCRATCH/pidns
mkdir -p "$dir"
# Its stdio is opened inside (the mount namespace --mount-proc makes is a
# copy: a file opened outside has a mount CRIU cannot find in it).
unshare --pid --fork --mount-proc /bin/sh -c 'o=$1; shift; exec "$@" </dev/null >"$o" 2>&1' sh "$dir.out" \
	"$SHEP" run --criu "$CRIU" --dir "$dir" --uid 0 --gid 0 --job 1 --step 0 --task 0 -- "${PROG[@]}" &
tpid=$!
guard 180 "pidns: the run and its checkpoint"
wait_for "$dir.out" "out 30" 20
# unshare's child, the shepherd (its exe cannot be read from out here).
kill -TERM $(children_of "$tpid") 2>/dev/null
wait "$tpid" 2>/dev/null
unguard
if [ -n "$(ls -d "$dir"/ckpt.* 2>/dev/null)" ]; then
	tap_ok "pidns: a program whose session leader is outside its PID namespace is checkpointed by CRIU"
else
	tap_not_ok "pidns: a program whose session leader is outside its PID namespace is checkpointed by CRIU"
	tap_diag "$(tail -n 5 "$dir.out"; cat "$dir"/.tmp*/criu/dump.log 2>/dev/null | grep -i error | tail -n 3)"
fi
# (Nothing of it is left to kill: the shepherd was the PID namespace's first
# process, and the kernel ends the rest with it. A pkill by name here killed
# the other root's run of this test: tests/run-all runs them at once.)
tap_done
