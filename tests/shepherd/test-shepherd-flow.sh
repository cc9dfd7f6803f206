#!/bin/bash
# The shepherd's sequences as far as they go without CRIU or a GPU, with a
# fake CRIU (root's script: `dump` writes an image, `restore` fails with an
# error line) and a stand-in for the runtime's side of the socket:
#   - a runtime that connects with no trigger signal is told ABORT;
#   - a runtime on a node without the driver's checkpoint API is told ABORT,
#     as is one that does not say READY in time, and one in application mode;
#   - a runtime that holds what the driver cannot save (REFUSE managed), one
#     whose program's CUDA context is broken (REFUSE broken ERROR), and a node
#     where an MPS daemon runs: no checkpoint, the reason named;
#   - a tree without CUDA processes is checkpointed: the shepherd's own
#     folder, criu/ root:root 0700 sealed, ckpt.000001 committed, the
#     timing line, exit 128+SIGTERM;
#   - restore verifies that checkpoint and runs CRIU (whose error lines it
#     reports), and refuses it once an image is changed, once criu/ is the
#     user's, and for another uid;
#   - the task's stdio of each kind (/dev/null, a file in append mode, a
#     pipe; a terminal) is recorded in the seal, and restore hands CRIU its
#     own in their place (--inherit-fd; its stdin for a terminal), which the
#     fake CRIU records. That CRIU then really restores the program that way
#     is for a machine where CRIU runs (tests/shepherd/stdio-criu.sh).
. "${top_srcdir:-.}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
CLIENT=$(cd "$top_builddir/tests/shepherd" 2>/dev/null && pwd)/shep-client
PLAN=35
tap_plan $PLAN
gk_scratch

gk_need_built "$SHEP" "$CLIENT"
if [ "$(id -u)" -ne 0 ]; then
	for i in $(seq $PLAN); do tap_skip "needs root (the shepherd refuses to run without it)"; done
	exit 0
fi
export GPUCKPT_LOG_LEVEL=info
chmod 0711 "$GK_SCRATCH"
# The fake CRIU runs as the job's user (nobody), as the real one does for a
# job that is not root's (criu.c): what it records goes where anyone writes.
mkdir -m 1777 "$GK_SCRATCH/fake"
ROOT=$GK_SCRATCH/nb/ckpt
mkdir -p "$GK_SCRATCH/nb" && chown nobody "$GK_SCRATCH/nb"
# The shepherd runs the client as nobody: a copy where nobody can reach it,
# whatever folder the build is in (a checkout under /root is not).
cp "$CLIENT" "$GK_SCRATCH/shep-client" && chmod 0755 "$GK_SCRATCH/shep-client"
CLIENT=$GK_SCRATCH/shep-client
USER_ARGS=(--dir "$ROOT" --uid nobody --gid nogroup --job 77 --step 0 --task 0)

FAKE=$GK_SCRATCH/criu
cat >"$FAKE" <<'EOS'
#!/bin/sh
[ "$1" = --version ] && { echo "Version: 4.1"; exit 0; }
cmd=$1; shift
# What it was asked, and whether its stdin is a terminal (for the stdio tests).
[ -n "${FAKE_CRIU_ARGS:-}" ] && { echo "$cmd $*"; [ -t 0 ] && echo "stdin: terminal"; } >>"$FAKE_CRIU_ARGS"
# Whether the process it is to dump is still there (the signal rules).
if [ -n "${FAKE_CRIU_ARGS:-}" ] && [ "$cmd" = dump ]; then
	t=$(printf '%s\n' "$@" | sed -n '/^-t$/{n;p}')
	state=$(sed 's/.*) \(.\).*/\1/' "/proc/$t/stat" 2>/dev/null)
	[ -n "$state" ] && [ "$state" != Z ] && echo "dump: pid $t alive" >>"$FAKE_CRIU_ARGS"
fi
while [ $# -gt 0 ]; do
	case $1 in -D) D=$2; shift ;; -o) LOG=$2; shift ;; esac
	shift
done
# Its log: `-o -` is its stdout (the shepherd's file in criu/).
log() { if [ "$LOG" = - ]; then cat; else cat >"$D/$LOG"; fi; }
case $cmd in
dump) echo "core of the tree" >"$D/core-1.img"; echo "dump: fine" | log; exit 0 ;;
restore) printf 'restoring\nError (criu/cr-restore.c:42): fake restore fails\n' | log; exit 1 ;;
esac
exit 1
EOS
chmod 0755 "$FAKE"

# children_of PID: its children, from every thread.
children_of() { cat /proc/"$1"/task/*/children 2>/dev/null; }
# wait_prog SHEPHERD NAMES: the pid of the program (its child whose name
# matches NAMES, a grep -E pattern), once it runs. Not just any child: the
# shepherd's own short-lived ones (CRIU's version check) come first.
wait_prog() {
	local c
	for i in $(seq 100); do
		for c in $(children_of "$1"); do
			grep -Eqx "$2" /proc/"$c"/comm 2>/dev/null && { echo "$c"; return; }
		done
		sleep 0.05
	done
}
wait_line() { # FILE PATTERN [SECONDS, default 5]
	for i in $(seq $((${3:-5} * 20))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}
# The shepherd's checkpoint has ended, either way (a loaded CI machine with
# sanitizers can take seconds: the seal syncs the file system).
OUTCOME="committed\|no checkpoint of pid\|checkpoint of pid [0-9]* failed"
wait_outcome() { wait_line "$GK_SCRATCH/err" "$OUTCOME" 60; }

# 1. A runtime that connects on its own.
"$SHEP" run --criu "$FAKE" --ready-timeout 0.5 "${USER_ARGS[@]}" -- \
	"$CLIENT" "HELLO 1 transparent" >"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err"
rc=$?
check "a runtime that connects without a trigger signal is told ABORT" \
	grep -q "^ABORT the shepherd received no trigger signal" "$GK_SCRATCH/out"
check "and the program's exit status comes back" test $rc -eq 0

# 2. A trigger, a runtime, no checkpoint API on this node.
"$SHEP" run --criu "$FAKE" --ready-timeout 2 "${USER_ARGS[@]}" -- \
	"$CLIENT" --on-signal USR1 "HELLO 1 transparent" "READY .tmp.ckpt.000001.h.1 1" \
	>"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err" &
spid=$!
prog=$(wait_prog $spid shep-client)
wait_line "$GK_SCRATCH/out" waiting
kill -USR1 "$prog"
sleep 0.2
kill -USR1 $spid
wait $spid
check "a runtime on a node without the checkpoint API is told ABORT" \
	grep -q "^ABORT the CUDA driver's checkpoint API is not available" "$GK_SCRATCH/out"
check "nothing was committed" test ! -e "$ROOT/ckpt.000001"

# trigger_client ARGS...: a run whose program is shep-client --on-signal USR1;
# USR1 goes to the program, then to the shepherd, as Slurm's signal would.
trigger_client() {
	"$SHEP" run --criu "$FAKE" --ready-timeout 2 "${USER_ARGS[@]}" -- \
		"$CLIENT" --on-signal USR1 "$@" >"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err" &
	spid=$!
	prog=$(wait_prog $spid shep-client)
	wait_line "$GK_SCRATCH/out" waiting
	kill -USR1 "$prog"
	sleep 0.2
	kill -USR1 $spid
	wait $spid
}
trigger_client "HELLO 1 transparent"
check "a runtime that does not say READY in time is told ABORT" \
	grep -q "^ABORT not ready within --ready-timeout" "$GK_SCRATCH/out"
trigger_client "HELLO 1 app"
check "a runtime in application mode is told ABORT: no transparent checkpoint" \
	grep -q "^ABORT a process of the task uses application mode" "$GK_SCRATCH/out"

trigger_client "HELLO 1 transparent" "REFUSE managed"
check "a runtime holding managed memory is told ABORT, naming it" \
	grep -q "^ABORT pid [0-9]* holds managed (unified) memory, which the CUDA driver's checkpoint cannot save" "$GK_SCRATCH/out"
check "the shepherd's own line says why there is no checkpoint" \
	grep -q "transparent: no checkpoint of pid [0-9]*: pid [0-9]* holds managed" "$GK_SCRATCH/err"

# A runtime whose program's context is broken (a kernel faulted before the
# signal): no checkpoint, one reason, naming the error.
trigger_client "HELLO 1 transparent" "REFUSE broken CUDA_ERROR_ILLEGAL_ADDRESS"
check "a runtime whose CUDA context is broken is told ABORT, naming the error" \
	grep -q "^ABORT pid [0-9]*: the program's CUDA context is broken (CUDA_ERROR_ILLEGAL_ADDRESS): no checkpoint possible" "$GK_SCRATCH/out"

# An MPS daemon on the node (a process of that name): refused, naming it.
cp /bin/sleep "$GK_SCRATCH/nvidia-cuda-mps-control"
"$GK_SCRATCH/nvidia-cuda-mps-control" 60 &
mps=$!
# Until it has exec'd, the child is still called bash.
for i in $(seq 200); do [ "$(cat /proc/$mps/comm 2>/dev/null)" = nvidia-cuda-mps ] && break; sleep 0.05; done
"$SHEP" run --criu "$FAKE" "${USER_ARGS[@]}" -- /bin/sleep 60 >"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err" &
spid=$!
prog=$(wait_prog $spid "sh|sleep")
kill -TERM $spid
wait_outcome
[ -n "$prog" ] && kill -TERM "$prog"
wait $spid
kill $mps; wait $mps 2>/dev/null
check "with an MPS daemon on the node, no checkpoint: the reason is named" \
	grep -q "no checkpoint of pid [0-9]*: an MPS daemon runs on this node (pid $mps)" "$GK_SCRATCH/err"
grep -q "an MPS daemon runs" "$GK_SCRATCH/err" || tap_diag "the shepherd said: $(cat "$GK_SCRATCH/err")"
check "and nothing was committed" test ! -e "$ROOT/ckpt.000001"

# Everything from here on needs a committed transparent checkpoint, whose seal
# carries root's Munge credential: without munged the shepherd rightly
# commits nothing, which says nothing about what these points test.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
	while [ "$TAP_N" -lt $PLAN ]; do tap_skip "needs munged: a transparent checkpoint's seal carries root's Munge credential"; done
	exit 0
fi

# 3. A tree without CUDA: checkpointed by CRIU alone.
"$SHEP" run --criu "$FAKE" "${USER_ARGS[@]}" -- /bin/sleep 60 >"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err" &
spid=$!
prog=$(wait_prog $spid "sh|sleep")
kill -TERM $spid
wait_outcome
[ -n "$prog" ] && kill -TERM "$prog" # Slurm signals the program too
wait $spid; rc=$?
check "the checkpoint is committed as ckpt.000001 with criu/SEAL" test -f "$ROOT/ckpt.000001/criu/SEAL"
[ -f "$ROOT/ckpt.000001/criu/SEAL" ] || tap_diag "the shepherd said: $(cat "$GK_SCRATCH/err")"
check "criu/ is root:root 0700" test "$(stat -c '%u:%g %a' "$ROOT/ckpt.000001/criu")" = "0:0 700"
check "the checkpoint and its manifest are the user's" \
	test "$(stat -c %U "$ROOT/ckpt.000001") $(stat -c %U "$ROOT/ckpt.000001/manifest.json")" = "nobody nobody"
check "the timing line" grep -Eq "gpuckpt: transparent: checkpoint ckpt.000001 committed: runtime [0-9.]+ s, lock [0-9.]+ s, driver [0-9.]+ s, criu [0-9.]+ s, commit [0-9.]+ s, total [0-9.]+ s \(runtime device data 0 bytes, criu images [0-9]+ bytes\)" "$GK_SCRATCH/err"
check "the shepherd exits 128+SIGTERM after a checkpoint on SIGTERM" test $rc -eq 143
grep -Eq "\"uid\": ?65534" "$ROOT/ckpt.000001/criu/SEAL" && grep -Eq "\"job\": ?\"77\"" "$ROOT/ckpt.000001/criu/SEAL"
check "the seal names the user and the job" test $? -eq 0
"$top_builddir/runtime/gpuckpt" list "$ROOT" >"$GK_SCRATCH/list" 2>&1
check "gpuckpt list shows it" grep -Eq "^000001 +[0-9TZ:-]+ +transparent" "$GK_SCRATCH/list"
"$top_builddir/runtime/gpuckpt" verify --owner nobody "$ROOT/ckpt.000001" >"$GK_SCRATCH/verify" 2>&1
check "gpuckpt verify (root) checks the images against the seal" \
	grep -q "OK .*transparent: .* of CRIU images match their seal" "$GK_SCRATCH/verify"

# 4. Restore.
restore() { "$SHEP" restore --criu "$FAKE" "${USER_ARGS[@]}" "$@" >"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err"; }
restore; rc=$?
check "restore verifies the seal and runs CRIU, whose failure it reports" \
	test $rc -eq 1 -a -n "$(grep "criu restore failed (exit 1) | Error (criu/cr-restore.c:42): fake restore fails" "$GK_SCRATCH/err")"
check "CRIU's restore log is kept in criu/" test -f "$ROOT/ckpt.000001/criu/restore.log"
restore; rc=$?
check "a second restore is not refused for the log of the first" \
	test -n "$(grep "fake restore fails" "$GK_SCRATCH/err")"
"$SHEP" restore --criu "$FAKE" --dir "$ROOT" --uid root --gid root --task 0 >"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err"
check "restore for another uid is refused" grep -q "nb is owned by uid 65534; it must be root.s" "$GK_SCRATCH/err"
echo more >>"$ROOT/ckpt.000001/criu/core-1.img"
restore
check "restore refuses a changed image" grep -q "criu/core-1.img: its checksum differs from the seal" "$GK_SCRATCH/err"
"$top_builddir/runtime/gpuckpt" verify --owner nobody "$ROOT/ckpt.000001" >"$GK_SCRATCH/verify" 2>&1
rc=$?
check "... and so does gpuckpt verify, with exit status 1 ($rc)" \
	test $rc -eq 1 -a -n "$(grep "core-1.img: its checksum differs from the seal" "$GK_SCRATCH/verify")"
mv "$ROOT/ckpt.000001/criu" "$GK_SCRATCH/criu.root"
mkdir "$ROOT/ckpt.000001/criu" && cp -p "$GK_SCRATCH/criu.root/"* "$ROOT/ckpt.000001/criu/" &&
	chown -R nobody "$ROOT/ckpt.000001/criu"
restore
check "restore refuses a criu/ that is the user's" grep -q "not root:root 0700" "$GK_SCRATCH/err"

# 5. The task's stdio. A checkpoint of a program whose stdin is /dev/null,
# whose stdout is a file opened for appending and whose stderr is a pipe,
# each also the shepherd's own (as slurmstepd gives them to both). The
# program ignores SIGTERM, which the shepherd passes on outside Slurm: its
# fds must still be there when they are recorded.
OUTFILE=$GK_SCRATCH/job.out
STUBBORN=(/bin/sh -c 'trap "" TERM; exec /bin/sleep 60')
seal_of() { ls -d "$ROOT"/ckpt.* | sort -V | tail -n 1; }
# wait_stubborn PID: until it ignores SIGTERM (the shell set the trap and
# exec'd sleep).
wait_stubborn() {
	for i in $(seq 100); do
		[ "$(cat /proc/"$1"/comm 2>/dev/null)" = sleep ] && return
		sleep 0.05
	done
}
echo "before the job" >"$OUTFILE"
exec 7> >(cat >"$GK_SCRATCH/err") # an anonymous pipe, the shell's child
"$SHEP" run --criu "$FAKE" "${USER_ARGS[@]}" -- "${STUBBORN[@]}" </dev/null >>"$OUTFILE" 2>&7 &
spid=$!
exec 7>&-
prog=$(wait_prog $spid "sh|sleep")
wait_stubborn "$prog"
kill -TERM $spid
wait_outcome
[ -n "$prog" ] && kill -KILL "$prog"
wait $spid
SEAL=$(seal_of)/criu/SEAL
tr -d ' \n' <"$SEAL" | grep -q '"stdio_task":\["null","file","pipe"\]'
check "the seal records the task's stdio kinds: null, file, pipe" test $? -eq 0
tr -d ' \n' <"$SEAL" | grep -q '"stdio_task":\["null","file","pipe"\]' ||
	tap_diag "$(cat "$SEAL" 2>&1; cat "$GK_SCRATCH/err")"
# The output file grows after the dump, as a job's output file does.
echo "written after the dump" >>"$OUTFILE"
export FAKE_CRIU_ARGS=$GK_SCRATCH/fake/criu-args
rm -f "$FAKE_CRIU_ARGS"
restore
pipe=$(tr -d ' \n' <"$SEAL" | sed -n 's/.*"stdio":\["[^"]*","[^"]*","\(pipe:\[[0-9]*\]\)"\].*/\1/p')
args=$(grep "^restore " "$FAKE_CRIU_ARGS" 2>/dev/null)
# /dev/null is CRIU's to reopen with the flags each fd had (stdio.c says why).
check "restore leaves /dev/null to CRIU (no --inherit-fd for it)" \
	test -n "$args" -a -z "$(grep -F -- "dev/null" <<<"$args")"
check "... its own stdout for the output file, by the file's path (fd[11]:${OUTFILE#/})" \
	grep -qF -- "--inherit-fd fd[11]:${OUTFILE#/}" <<<"$args"
check "... and its own stderr for the pipe (fd[12]:$pipe)" \
	test -n "$pipe" -a -n "$(grep -F -- "--inherit-fd fd[12]:$pipe" <<<"$args")"
[ -n "$args" ] || tap_diag "CRIU was run with: $(cat "$FAKE_CRIU_ARGS" 2>&1); the shepherd said: $(cat "$GK_SCRATCH/err")"

# A terminal (srun --pty, or run by hand): script(1) gives the shepherd one.
if ! command -v script >/dev/null; then
	for i in 1 2 3; do tap_skip "script(1) is not installed (util-linux)"; done
else
	# script runs a shell on the terminal, which execs the shepherd.
	script -qec "exec $(printf '%q ' "$SHEP" run --criu "$FAKE" "${USER_ARGS[@]}" -- \
		"${STUBBORN[@]}") 2>$GK_SCRATCH/err.tty" /dev/null </dev/null >/dev/null &
	tpid=$!
	spid=
	for i in $(seq 100); do
		spid=$(children_of $tpid | awk '{print $1}')
		[ -n "$spid" ] && [ "$(readlink /proc/"$spid"/exe)" = "$(readlink -f "$SHEP")" ] && break
		sleep 0.05
	done
	prog=$(wait_prog "$spid" "sh|sleep")
	wait_stubborn "$prog"
	kill -TERM "$spid"
	wait_line "$GK_SCRATCH/err.tty" "$OUTCOME" 60
	[ -n "$prog" ] && kill -KILL "$prog"
	wait $tpid
	SEAL=$(seal_of)/criu/SEAL
	tr -d ' \n' <"$SEAL" | grep -q '"stdio_task":\["tty","tty","file"\]'
	check "a terminal is recorded as the task's terminal (stderr stays a file here)" test $? -eq 0
	rm -f "$FAKE_CRIU_ARGS"
	restore </dev/null
	check "restore without a terminal refuses, saying the program had one" \
		grep -q "the program's fd 0 was the task's terminal (/dev/pts/[0-9]*); restore it from a terminal" "$GK_SCRATCH/err"
	script -qec "$(printf '%q ' "$SHEP" restore --criu "$FAKE" "${USER_ARGS[@]}")" /dev/null \
		</dev/null >/dev/null 2>&1
	check "restore from a terminal gives it to CRIU as its stdin, not as --inherit-fd" \
		test -n "$(grep "^stdin: terminal" "$FAKE_CRIU_ARGS" 2>/dev/null)" -a \
		-z "$(grep -- "--inherit-fd fd\[1[01]\]" "$FAKE_CRIU_ARGS" 2>/dev/null)" -a \
		-n "$(grep -- "--inherit-fd fd\[12\]:" "$FAKE_CRIU_ARGS" 2>/dev/null)"
fi

# 6. Signals: a program without the runtime that does not handle SIGTERM,
# and SIGTERM to the shepherd alone (outside Slurm, or proctrack/cgroup):
# the shepherd does not pass it on before the dump, so CRIU finds the
# program alive (it used to be killed first: "Unable to detach from PID").
rm -f "$FAKE_CRIU_ARGS"
"$SHEP" run --criu "$FAKE" "${USER_ARGS[@]}" -- /bin/sleep 60 </dev/null >/dev/null \
	2>"$GK_SCRATCH/err" &
spid=$!
# The program, once it is sleep (the shepherd's own short-lived children,
# such as CRIU's version check, come and go before it).
prog=
for i in $(seq 100); do
	for c in $(children_of $spid); do
		[ "$(cat /proc/"$c"/comm 2>/dev/null)" = sleep ] && prog=$c
	done
	[ -n "$prog" ] && break
	sleep 0.05
done
kill -TERM $spid
wait_outcome
wait $spid; rc=$?
check "a program without the runtime is not sent SIGTERM before the dump: CRIU finds it alive" \
	grep -q "^dump: pid $prog alive" "$FAKE_CRIU_ARGS"
grep -q "^dump: pid $prog alive" "$FAKE_CRIU_ARGS" ||
	tap_diag "program $prog; CRIU: $(cat "$FAKE_CRIU_ARGS" 2>&1); the shepherd: $(cat "$GK_SCRATCH/err")"
check "the checkpoint is taken and the shepherd ends 128+SIGTERM ($rc)" test $rc -eq 143
[ -n "$prog" ] && kill -KILL "$prog" 2>/dev/null
unset FAKE_CRIU_ARGS
tap_done
