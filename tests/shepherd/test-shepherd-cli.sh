#!/bin/bash
# gpuckpt-shepherd's command line and probe, without CRIU or a GPU: every bad
# argument refused with a message that names it (exit 2), no run without root
# (tried as nobody), probe saying why a node cannot do transparent mode (no
# CRIU, CRIU too old or writable by others, the stand-in driver without the
# checkpoint API), and `run` starting a program as the user under gpuckpt-init
# as the shepherd's child, passing its exit status back, and letting a
# SIGTERM take its course when no checkpoint can be made.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
PLAN=64
tap_plan $PLAN
gk_scratch

gk_need_built "$SHEP" "$GK_STANDIN_DIR/libcuda.so.1"

# usage DESC PATTERN ARGS...: exit 2 and PATTERN in the message.
usage() {
	local desc=$1 pattern=$2 rc; shift 2
	"$SHEP" "$@" >"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err"; rc=$?
	if [ $rc -eq 2 ] && grep -qF -- "$pattern" "$GK_SCRATCH/err"; then
		tap_ok "$desc"
	else
		tap_not_ok "$desc (exit $rc)"
		tap_diag "$(cat "$GK_SCRATCH/err")"
	fi
}

OK=(--dir /tmp/gk-x --uid 0 --gid 0)

"$SHEP" --help >"$GK_SCRATCH/help" 2>&1
check "--help prints the manual, exit 0" grep -q "^SYNOPSIS" "$GK_SCRATCH/help"
usage "no command" "no command given"
usage "an unknown command" "'frobnicate': unknown command" frobnicate
for cmd in run restore attach; do
	usage "$cmd: an unknown option" "$cmd: unknown option '--frob'" $cmd --frob 1
	usage "$cmd: an option without its value" "needs a value" $cmd --dir
done
usage "probe: an unknown option" "probe: unknown option" probe --frob
usage "probe takes only --criu and --uid" "probe: takes only --criu and --uid" probe --dir /tmp
usage "probe: --uid must name a user" "--uid 'no-such-user': no such user" probe --uid no-such-user
usage "--dir relative" "--dir 'rel/dir': must be an absolute path" restore --dir rel/dir --uid 0 --gid 0
usage "--criu relative" "--criu 'criu': must be an absolute path" restore "${OK[@]}" --criu criu
usage "--uid unknown" "--uid 'no-such-user-gk': no such user" restore --dir /x --uid no-such-user-gk --gid 0
usage "--uid out of range" "no such user" restore --dir /x --uid 99999999999 --gid 0
usage "--gid unknown" "--gid '4294967290': no such group" restore --dir /x --uid 0 --gid 4294967290
usage "--keep not a number" "--keep 'two': must be a whole number" restore "${OK[@]}" --keep two
usage "--keep negative" "--keep '-1'" restore "${OK[@]}" --keep -1
usage "--keep too large" "--keep '1001'" restore "${OK[@]}" --keep 1001
usage "--keep with junk" "--keep '2x'" restore "${OK[@]}" --keep 2x
usage "--ready-timeout zero" "--ready-timeout '0'" restore "${OK[@]}" --ready-timeout 0
usage "--ready-timeout not a number" "--ready-timeout 'soon'" restore "${OK[@]}" --ready-timeout soon
usage "--lock-timeout too large" "--lock-timeout '1e9'" restore "${OK[@]}" --lock-timeout 1e9
usage "--lock-timeout nan" "--lock-timeout 'nan'" restore "${OK[@]}" --lock-timeout nan
usage "--task negative" "--task '-3'" restore "${OK[@]}" --task -3
usage "--job with a slash" "--job 'a/b'" restore "${OK[@]}" --job a/b
usage "--step empty" "--step ''" restore "${OK[@]}" --step ''
usage "--assist neither on nor off" "--assist 'yes': must be on or off" restore "${OK[@]}" --assist yes
usage "--signals unknown" "--signals 'BOGUS:exit'" restore "${OK[@]}" --signals BOGUS:exit
usage "--child not a number" "--child 'abc'" attach "${OK[@]}" --child abc
usage "--child 1" "--child '1': must be a process id" attach "${OK[@]}" --child 1
usage "--child not a child of the shepherd" "not a child process of this shepherd" attach "${OK[@]}" --child $$
usage "--child for run" "--child is for attach only" run "${OK[@]}" --child 5 -- true
usage "attach without --child" "attach: --child is required" attach "${OK[@]}"
usage "--go-fd for run" "--go-fd is for attach only" run "${OK[@]}" --go-fd 3 -- true
usage "--go-fd on the stdio" "--go-fd '2': must be a descriptor number, 3 or more" attach "${OK[@]}" --go-fd 2
usage "--go-fd not a number" "--go-fd 'x'" attach "${OK[@]}" --go-fd x
usage "--go-fd not open" "--go-fd 250: not an open descriptor" attach "${OK[@]}" --go-fd 250
usage "restore without --dir" "restore: --dir is required" restore --uid 0 --gid 0
usage "restore without --uid" "--uid and --gid are required" restore --dir /x --gid 0
usage "run without a program" "run: give the program after '--'" run "${OK[@]}"
usage "run without '--'" "run: give the program after '--'" run "${OK[@]}" true
usage "restore with a stray argument" "unexpected argument 'extra'" restore "${OK[@]}" extra

# Without root: refused, whatever the arguments; probe still answers.
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	for i in 1 2 3; do tap_skip "needs root and setpriv to try as nobody"; done
else
	AS_NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	for cmd in run restore; do
		"${AS_NOBODY[@]}" "$SHEP" $cmd --dir /tmp/gk-x --uid nobody --gid nogroup \
			$([ $cmd = run ] && echo -- true) >/dev/null 2>"$GK_SCRATCH/err"
		rc=$?
		check "$cmd as nobody: refused without root" \
			test $rc -eq 1 -a -n "$(grep "must run as root" "$GK_SCRATCH/err")"
	done
	"${AS_NOBODY[@]}" "$SHEP" probe --criu /nonexistent >"$GK_SCRATCH/out" 2>&1
	check "probe as nobody answers (it needs no root)" grep -q "^criu: /nonexistent" "$GK_SCRATCH/out"
fi

# probe: what is missing, by name.
"$SHEP" probe --criu /nonexistent >"$GK_SCRATCH/out" 2>&1; rc=$?
check "probe --criu /nonexistent: exit 1" test $rc -eq 1
check "probe names the missing CRIU" grep -q "^criu: /nonexistent: No such file or directory" "$GK_SCRATCH/out"
with_standin "$SHEP" probe --criu /nonexistent >"$GK_SCRATCH/out" 2>&1
check "probe on the stand-in driver names the missing checkpoint API" \
	grep -q "^driver: libcuda.so.1: the driver has no cuCheckpoint.* driver 570 or later" "$GK_SCRATCH/out"
# Fake CRIUs: only what `criu --version` says and who may change it matter.
fake_criu() {
	printf '#!/bin/sh\n[ "$1" = --version ] && echo "Version: %s" && exit 0\nexit 1\n' "$1" >"$GK_SCRATCH/criu-$1"
	chmod 0755 "$GK_SCRATCH/criu-$1"
}
fake_criu 3.17; fake_criu 4.1
if [ "$(stat -c %u "$GK_SCRATCH/criu-4.1")" -ne 0 ]; then
	for i in 1 2 3; do tap_skip "fake CRIUs must be root's (run as root)"; done
else
	with_standin "$SHEP" probe --criu "$GK_SCRATCH/criu-3.17" >"$GK_SCRATCH/out" 2>&1
	check "probe refuses CRIU 3" grep -q "is CRIU 3.17; transparent mode needs 4 or later" "$GK_SCRATCH/out"
	with_standin "$SHEP" probe --criu "$GK_SCRATCH/criu-4.1" >"$GK_SCRATCH/out" 2>&1
	# (A container's root may lack capabilities: a line of their own.)
	check "probe accepts CRIU 4.1 (only the driver is missing)" \
		test "$(grep -vc "^capabilities:" "$GK_SCRATCH/out")" -eq 1 -a "$(grep -c "^driver:" "$GK_SCRATCH/out")" -eq 1
	chmod 0777 "$GK_SCRATCH/criu-4.1"
	"$SHEP" probe --criu "$GK_SCRATCH/criu-4.1" >"$GK_SCRATCH/out" 2>&1
	check "probe refuses a CRIU that others can change" grep -q "only root can change" "$GK_SCRATCH/out"
fi

# probe: the capabilities CRIU needs, with some taken out of the bounding set
# (root execs the probe, whose capabilities are then what the set allows).
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null ||
	! setpriv --bounding-set -setuid true 2>/dev/null; then
	for i in 1 2 3 4; do tap_skip "needs root and setpriv(1) able to drop capabilities"; done
else
	# CRIU runs as the job's user for another user's job (criu.c): root
	# must be able to become that user; CAP_SYS_RESOURCE is no longer needed.
	setpriv --bounding-set -setuid "$SHEP" probe --criu /nonexistent >"$GK_SCRATCH/out" 2>&1
	rc=$?
	check "probe without CAP_SETUID: exit 1, the line names it and what cannot be done" \
		test $rc -eq 1 -a -n "$(grep "^capabilities: .*CAP_SETUID missing (CapEff [0-9a-f]*): the shepherd cannot run CRIU as the job's user" "$GK_SCRATCH/out")"
	setpriv --bounding-set -setuid "$SHEP" probe --uid 0 --criu /nonexistent >"$GK_SCRATCH/out" 2>&1
	check "... which root's own jobs do not need (--uid 0)" \
		test -z "$(grep CAP_SETUID "$GK_SCRATCH/out")"
	setpriv --bounding-set -sys_resource "$SHEP" probe --uid nobody --criu /nonexistent >"$GK_SCRATCH/out" 2>&1
	check "... and CAP_SYS_RESOURCE another user's job no longer needs (--uid nobody)" \
		test -z "$(grep CAP_SYS_RESOURCE "$GK_SCRATCH/out")"
	setpriv --bounding-set -sys_ptrace,-kill "$SHEP" probe --uid 0 --criu /nonexistent >"$GK_SCRATCH/out" 2>&1
	check "probe without CAP_SYS_PTRACE names it, even for root's jobs" \
		grep -q "^capabilities: CAP_SYS_PTRACE missing .*: CRIU cannot seize the processes" "$GK_SCRATCH/out"
fi

# run: a program as the user, the shepherd's child.
RUNDIR=$GK_SCRATCH/nb
chmod 0711 "$GK_SCRATCH"; mkdir -p "$RUNDIR" && chown nobody "$RUNDIR"
if [ "$(id -u)" -ne 0 ]; then
	for i in 1 2 3 4 5 6 7; do tap_skip "needs root"; done
else
	"$SHEP" run --dir "$RUNDIR/ckpt" --uid nobody --gid nogroup -- /bin/sh -c \
		'echo "$(id -u) $GPUCKPT_DIR $GPUCKPT_SHEPHERD"; exit 7' >"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err"
	rc=$?
	read -r uid dir sock <"$GK_SCRATCH/out"
	check "run: the program's exit status comes back (7)" test $rc -eq 7
	check "run: the program runs as the user" test "$uid" = "$(id -u nobody)"
	check "run: GPUCKPT_DIR names the checkpoint folder" test "$dir" = "$RUNDIR/ckpt"
	check "run: GPUCKPT_SHEPHERD names the socket" test -n "$(echo "$sock" | grep '^gpuckpt-shepherd\.[0-9]*\.[0-9a-f]\{16\}$')"
	# SIGTERM to the shepherd and the program, as Slurm sends it: no CRIU
	# here, so no checkpoint, and the program ends the way it would.
	"$SHEP" run --criu /nonexistent --dir "$RUNDIR/ckpt" --uid nobody --gid nogroup -- \
		/bin/sleep 60 >"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err" &
	spid=$!
	for i in $(seq 50); do
		prog=$(cat /proc/$spid/task/$spid/children 2>/dev/null | awk '{print $1}')
		[ -n "$prog" ] && break
		sleep 0.1
	done
	kill -TERM $spid
	sleep 0.5
	[ -n "$prog" ] && kill -TERM "$prog"
	wait $spid; rc=$?
	check "run: SIGTERM without CRIU ends the program as SIGTERM would (143)" test $rc -eq 143
	check "run: and says why there was no checkpoint" grep -q "no checkpoint of pid .*: no usable CRIU" "$GK_SCRATCH/err"
	# SIGTERM to the shepherd alone (outside Slurm, or Slurm's
	# proctrack/cgroup, which signals only slurmstepd's children): the
	# program has no runtime, so it hears of it only once no checkpoint
	# came of it, and then ends as SIGTERM ends it.
	"$SHEP" run --criu /nonexistent --dir "$RUNDIR/ckpt" --uid nobody --gid nogroup -- \
		/bin/sleep 60 >"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err" &
	spid=$!
	for i in $(seq 50); do
		prog=$(cat /proc/$spid/task/$spid/children 2>/dev/null | awk '{print $1}')
		[ -n "$prog" ] && [ "$(cat /proc/"$prog"/comm 2>/dev/null)" = sleep ] && break
		sleep 0.1
	done
	kill -TERM $spid
	( sleep 20; kill -KILL "$prog" 2>/dev/null ) &
	guard=$!
	wait $spid; rc=$?
	kill $guard 2>/dev/null
	check "run: SIGTERM to the shepherd alone, no checkpoint: the program then ends by SIGTERM (143)" \
		test $rc -eq 143
fi
tap_done
