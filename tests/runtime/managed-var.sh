#!/bin/bash
# A __managed__ variable (a module's managed memory, which gpuckpt does not
# save) on the CUDA driver stand-in, as point 6 of tests/gpu/managed.sh has it
# on a GPU: prog-uvm-var's module declares one (STANDIN_MANAGED), the program
# looks it up as the CUDA runtime does (cuModuleGetGlobal), calls
# gpuckpt_protect and reaches its first checkpoint point, prints
# "prog-uvm-var: step 0", and gets a trigger signal right then:
#   - SIGUSR1 (continue): the checkpoint is refused with a line naming the
#     variable (the pattern point 6 greps for: the refusal's, never the
#     warning at the lookup), no ckpt.000001, and the
#     program goes on to its end, status 0;
#   - SIGTERM (exit): refused the same way, and the program ends as it would
#     without gpuckpt (143);
#   - the control, the lookup skipped (--no-var): SIGUSR1 writes ckpt.000001
#     and the program goes on;
#   - transparent mode under the real gpuckpt-shepherd (root; a fake CRIU,
#     never reached): the driver's checkpoint cannot hold the variable either,
#     so SIGUSR1 is refused by name and the program goes on to its end (a
#     continue trigger asked for a checkpoint, not for the end of the job;
#     it used to end by SIGUSR1's default action), and SIGTERM, refused the
#     same way, ends it as it would without gpuckpt (143).
# The signal goes to the program itself: `timeout` as the process signalled
# dies of a SIGUSR1 it does not forward, leaving the program running unsignalled
# (what failed point 6 on the GPU). The stand-in is no evidence for a GPU.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/runtime/prog-uvm-var
SHEP=$top_builddir/runtime/gpuckpt-shepherd
MODULE=$top_builddir/tests/runtime/.libs/kern_uvm_var_host.so
tap_plan 13
gk_scratch
gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$PROG" "$MODULE" "$GK_RUNTIME" "$SHEP"
unset CUDA_VISIBLE_DEVICES GPUCKPT_SHEPHERD GPUCKPT_RESTORE GPUCKPT_MODE GPUCKPT_INTERVAL

REFUSED="refused, no checkpoint written: .*managed variables of a CUDA module"
expect() { # DESCRIPTION NAME COMMAND...
	local desc=$1 name=$2; shift 2
	if "$@"; then tap_ok "$desc"; else
		tap_not_ok "$desc"
		tap_diag "$(tail -n 12 "$GK_SCRATCH/$name.out" "$GK_SCRATCH/$name.err" 2>/dev/null)"
	fi
}
# signal_at_step0 NAME SIGNAL ARGS...: runs the program with the runtime, sends
# SIGNAL to it right after "step 0"; $status is its exit status. env execs
# the program: $! is the program, the process that must get the signal.
signal_at_step0() {
	local name=$1 sig=$2 pid i
	shift 2
	env "${GK_RUNTIME_ENV[@]}" GPUCKPT_LOG_LEVEL=info GPUCKPT_DIR="$GK_SCRATCH/$name" \
		"$PROG" --module "$MODULE" --steps 15 --delay-ms 50 "$@" \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	pid=$!
	for i in $(seq 200); do
		grep -q "^prog-uvm-var: step 0$" "$GK_SCRATCH/$name.out" 2>/dev/null && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.05
	done
	kill -"$sig" $pid 2>/dev/null
	# A hang is a failure, not a stuck suite.
	for i in $(seq 600); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
	kill -KILL $pid 2>/dev/null
	wait $pid
	status=$?
}

signal_at_step0 var USR1
tap_diag "$(grep -h "refused" "$GK_SCRATCH/var.err")"
expect "the stand-in's __managed__ variable is seen as one at its lookup" var \
	grep -q "track: this process now holds managed variables of a CUDA module" "$GK_SCRATCH/var.err"
expect "SIGUSR1 right after the first checkpoint point: refused, naming the variable" var \
	grep -q "$REFUSED" "$GK_SCRATCH/var.err"
expect "... no checkpoint written" var test ! -e "$GK_SCRATCH/var/ckpt.000001"
expect "... the program goes on to its end (status $status, want 0)" var \
	test $status -eq 0 -a -n "$(grep "^prog-uvm-var: done" "$GK_SCRATCH/var.out")"

signal_at_step0 term TERM
expect "SIGTERM: refused, naming the variable" term grep -q "$REFUSED" "$GK_SCRATCH/term.err"
expect "... the program ends as without gpuckpt (status $status, want 143), nothing written" term \
	test $status -eq 143 -a ! -e "$GK_SCRATCH/term/ckpt.000001" \
	-a -z "$(grep "^prog-uvm-var: done" "$GK_SCRATCH/term.out")"

signal_at_step0 novar USR1 --no-var
expect "control, no __managed__ variable: SIGUSR1 writes a checkpoint" novar \
	test -d "$GK_SCRATCH/novar/ckpt.000001"
expect "... and the program goes on to its end (status $status, want 0)" novar \
	test $status -eq 0 -a -n "$(grep "^prog-uvm-var: done" "$GK_SCRATCH/novar.out")"
expect "... no refusal" novar test -z "$(grep -i "refused" "$GK_SCRATCH/novar.err")"

# under_shepherd NAME SIGNAL: the same, GPUCKPT_MODE=transparent, under
# `gpuckpt-shepherd run` (outside Slurm the shepherd gets the signal and
# passes it on); $status is the shepherd's, which ends as the program did.
under_shepherd() {
	local name=$1 sig=$2 spid i
	env "${GK_STANDIN_ENV[@]}" GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$FAKE" \
		--dir "$GK_SCRATCH/$name" --uid 0 --gid 0 -- env "${GK_RUNTIME_ENV[@]}" \
		GPUCKPT_LOG_LEVEL=info GPUCKPT_MODE=transparent "$PROG" --module "$MODULE" --steps 15 \
		--delay-ms 50 >"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	spid=$!
	for i in $(seq 200); do
		grep -q "^prog-uvm-var: step 0$" "$GK_SCRATCH/$name.out" 2>/dev/null && break
		kill -0 $spid 2>/dev/null || break
		sleep 0.05
	done
	kill -"$sig" $spid 2>/dev/null
	for i in $(seq 600); do kill -0 $spid 2>/dev/null || break; sleep 0.05; done
	kill -KILL $spid 2>/dev/null
	wait $spid
	status=$?
}
TREFUSED="transparent: refused, no checkpoint taken: .*managed variables of a CUDA module"
if [ "$(id -u)" -ne 0 ]; then
	for _ in 1 2 3 4; do tap_skip "transparent mode needs root (the shepherd refuses to run without it)"; done
	tap_done
	exit
fi
FAKE=$GK_SCRATCH/criu
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "Version: 4.1"; exit 0; }\nexit 1\n' >"$FAKE"
chmod 0755 "$FAKE"
under_shepherd tusr1 USR1
expect "transparent, SIGUSR1: refused, naming the variable" tusr1 grep -q "$TREFUSED" "$GK_SCRATCH/tusr1.err"
expect "... the program goes on to its end (status $status, want 0), saying so, nothing written" tusr1 \
	test $status -eq 0 -a -n "$(grep "^prog-uvm-var: done" "$GK_SCRATCH/tusr1.out")" \
	-a ! -e "$GK_SCRATCH/tusr1/ckpt.000001" -a -n "$(grep "no checkpoint taken on SIGUSR1 (a continue trigger); the program goes on" "$GK_SCRATCH/tusr1.err")"
under_shepherd tterm TERM
expect "transparent, SIGTERM: refused, naming the variable" tterm grep -q "$TREFUSED" "$GK_SCRATCH/tterm.err"
expect "... the program ends as without gpuckpt (status $status, want 143)" tterm \
	test $status -eq 143 -a -z "$(grep "^prog-uvm-var: done" "$GK_SCRATCH/tterm.out")" \
	-a ! -e "$GK_SCRATCH/tterm/ckpt.000001"
tap_done
