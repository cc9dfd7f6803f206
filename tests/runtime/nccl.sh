#!/bin/bash
# nccl.sh - NCCL communicators at a transparent checkpoint (issue 27;
# runtime/core/interpose/nccl.c), on the CUDA and NCCL stand-ins: two ranks
# of tests/runtime/prog-nccl, each under its own `gpuckpt-shepherd run` (as
# srun starts one task per GPU), share device memory through the stand-in
# NCCL's exported and imported VMM handles, which the driver's checkpoint
# cannot hold. A checkpoint signal must bring both ranks to the same
# collective (a rank behind runs forward), take the communicators down so
# that nothing shared is left, and make them again behind the program's
# handles; the program must then print the uninterrupted run's lines. The
# stand-in has no checkpoint API, so the shepherd gives up after READY (as
# in tests/shepherd/agent.sh), and SIGUSR1 (a continue trigger) lets the
# program go on: the whole path but CRIU's dump and the driver's restore,
# which tests/gpu/nccl-gpu.sh runs on two GPUs.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
PROG=$top_builddir/tests/runtime/prog-nccl
PLAN=13
tap_plan $PLAN
gk_scratch
gk_need_built "$SHEP" "$PROG" "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME"
if [ "$(id -u)" -ne 0 ]; then
	for _ in $(seq $PLAN); do tap_skip "needs root (the shepherd refuses to run without it)"; done
	exit 0
fi
FAKE=$GK_SCRATCH/criu
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "Version: 4.1"; exit 0; }\nexit 1\n' >"$FAKE"
chmod 0755 "$FAKE"
ARGS=(--nranks 2 --steps 24 --per-step 3 --floats 4096 --mib 4)
# Nothing of a failed point outlives the test.
trap 'pkill -KILL -f "$GK_SCRATCH/" 2>/dev/null; rm -rf "${GK_KEEP_SCRATCH:+/nonexistent}${GK_KEEP_SCRATCH:-$GK_SCRATCH}"' EXIT
lines() { grep -E '^(step|ballast|done)' "$1"; }
wait_for() { # PATTERN FILE...
	local f
	for _ in $(seq 600); do
		for f in "${@:2}"; do grep -qs "$1" "$f" || { sleep 0.1; continue 2; }; done
		return 0
	done
	return 1
}

# pair NAME MODE [ARGS...]: both ranks in the background, rank r's output in
# NAME.r.out/.err; MODE plain (stand-ins only), runtime (preloaded), or
# shepherd (each rank under its own shepherd, $S/NAME/r as its folder, so
# that the ranks meet in $S/NAME; with STEP set, as the two tasks of one
# Slurm step with GPUCKPT_TASKS=nccl). Sets pid0 and pid1.
pair() {
	local name=$1 mode=$2 r
	shift 2
	mkdir -p "$GK_SCRATCH/$name"
	for r in 0 1; do
		local cmd=()
		case $mode in
		plain) cmd=(env "${GK_STANDIN_ENV[@]}") ;;
		runtime) cmd=(env "${GK_RUNTIME_ENV[@]}") ;;
		shepherd) cmd=(env "${GK_STANDIN_ENV[@]}" GPUCKPT_LOG_LEVEL=info
			${GPUCKPT_NCCL_TIMEOUT:+GPUCKPT_NCCL_TIMEOUT=$GPUCKPT_NCCL_TIMEOUT}
			"$SHEP" run --criu "$FAKE" --dir "$GK_SCRATCH/$name/r$r" --uid 0 --gid 0 --
			env "${GK_RUNTIME_ENV[@]}" GPUCKPT_LOG_LEVEL=info
			${STEP:+GPUCKPT_STEP_TASKS=2 GPUCKPT_TASK=$r GPUCKPT_TASKS=nccl}) ;;
		esac
		"${cmd[@]}" "$PROG" --rank $r --id "$GK_SCRATCH/$name/id" "${ARGS[@]}" "$@" \
			>"$GK_SCRATCH/$name.$r.out" 2>"$GK_SCRATCH/$name.$r.err" &
		eval "pid$r=\$!"
	done
}
# Both ranks end, within a minute (a rank left waiting for its peer is a
# failure, not a hang of the test).
both_end() {
	local a b
	( sleep 60; kill -KILL "$pid0" "$pid1" 2>/dev/null ) &
	local guard=$!
	wait "$pid0"; a=$?
	wait "$pid1"; b=$?
	kill "$guard" 2>/dev/null
	[ $a = 0 ] && [ $b = 0 ]
}
same_as_ref() { # NAME: both ranks printed the reference lines
	lines "$GK_SCRATCH/$1.0.out" | cmp -s - "$GK_SCRATCH/ref.lines" &&
		lines "$GK_SCRATCH/$1.1.out" | cmp -s - "$GK_SCRATCH/ref1.lines"
}

pair ref plain --sleep-ms 0
both_end
lines "$GK_SCRATCH/ref.0.out" >"$GK_SCRATCH/ref.lines"
lines "$GK_SCRATCH/ref.1.out" >"$GK_SCRATCH/ref1.lines"
check "the uninterrupted run: both ranks print $(grep -c '^step' "$GK_SCRATCH/ref.lines") step lines with the same checksums" \
	eval '[ "$(grep -c "^step" "$GK_SCRATCH/ref.lines")" = 24 ] &&
		diff <(grep -E "^(step|done)" "$GK_SCRATCH/ref.lines") <(grep -E "^(step|done)" "$GK_SCRATCH/ref1.lines") >/dev/null'

pair rt runtime --sleep-ms 0
both_end
check "under the runtime (its NCCL entry points in between): the same lines" same_as_ref rt

# A checkpoint signal to both shepherds in the middle of the run.
pair cut shepherd --sleep-ms 40
wait_for '^step 6 ' "$GK_SCRATCH/cut.0.out" "$GK_SCRATCH/cut.1.out"
kill -USR1 "$pid0" "$pid1"
both_end
status=$?
check "SIGUSR1 to both shepherds: each rank takes its communicator down at a common collective" \
	grep -q "nccl: communicators taken down at a common collective" "$GK_SCRATCH/cut.0.err" "$GK_SCRATCH/cut.1.err"
check "... nothing shared is left for the driver to refuse (no 'REFUSE ipc'), and both make it again" \
	eval '! grep -q "holds device memory shared with another process" "$GK_SCRATCH/cut.0.err" "$GK_SCRATCH/cut.1.err" &&
		grep -q "nccl: communicators made again" "$GK_SCRATCH/cut.0.err" &&
		grep -q "nccl: communicators made again" "$GK_SCRATCH/cut.1.err"'
check "... and both go on to print the uninterrupted run's lines (exit status $status)" same_as_ref cut
check "... leaving no rendezvous file behind" \
	eval '[ -z "$(ls "$GK_SCRATCH/cut" | grep gpuckpt-nccl)" ]'

# Rank 1 late: it sleeps before its step's collectives and rank 0 does not
# sleep, so the signal finds rank 1 behind rank 0, which waits inside the
# next step's first all-reduce (the runtime's info line says how many
# collectives each rank ran forward). The sleep is long against the signal's
# delay (up to 0.1 s of polling, 0.1 s, and a loaded CI machine's lag): with
# 200 ms a CI run once saw rank 0 run forward and rank 1 not: most likely
# the signal came after rank 1 woke, as the ranks raced through a step.
# As the two tasks of one step, rank 1's folder holding checkpoint 3 already:
# both parts are to be written as checkpoint 4, members of one set.
mkdir -p "$GK_SCRATCH/late/r1/ckpt.000003"
STEP=1 pair late shepherd --sleep-ms 600 --late-rank 1
wait_for '^step 4 ' "$GK_SCRATCH/late.0.out" "$GK_SCRATCH/late.1.out"
sleep 0.1
kill -USR1 "$pid0" "$pid1"
both_end
status=$?
check "a rank behind runs forward to the others' collective, and both go on with the uninterrupted run's lines (exit status $status)" \
	eval 'grep -q "nccl: communicators made again" "$GK_SCRATCH/late.1.err" && same_as_ref late'
check "... the late rank says it ran collectives forward, the other none ($(grep -ho 'ran [0-9]* collectives forward' "$GK_SCRATCH/late.1.err" "$GK_SCRATCH/late.0.err" | tr '\n' ';'))" \
	eval 'grep -Eq "this rank ran [1-9][0-9]* collectives forward" "$GK_SCRATCH/late.1.err" &&
		grep -q "this rank ran 0 collectives forward" "$GK_SCRATCH/late.0.err"'
set_line() { sed -n 's/.*nccl: this rank.s part is member \([0-9]*\) of 2 of set \([0-9]*\) (id \([0-9a-f]*\)).*/\1 \2 \3/p' "$GK_SCRATCH/late.$1.err"; }
s0=$(set_line 0) s1=$(set_line 1)
check "... as two tasks of one step, both parts are members 0 and 1 of one set and written as checkpoint 4, past rank 1's checkpoint 3 ($s0 / $s1)" \
	eval '[ "${s0%% *}" = 0 ] && [ "${s1%% *}" = 1 ] && [ "${s0#0 }" = "${s1#1 }" ] &&
		[ "$(echo "$s0" | cut -d" " -f2)" = 4 ] &&
		grep -q "transparent: .tmp.ckpt.000004[.].*: wrote" "$GK_SCRATCH/late.0.err" &&
		grep -q "transparent: .tmp.ckpt.000004[.].*: wrote" "$GK_SCRATCH/late.1.err"'
rec=$GK_SCRATCH/late/set.000004
check "... task 0 recorded set 4 in the step's folder, with the set's id and 2 members, before the dump ($(tr '\n' ' ' <"$rec" 2>/dev/null | cut -c1-160))" \
	eval 'grep -q "${s0##* }" "$rec" && grep -Eq "\"?members\"?[=: ]+2" "$rec" && grep -q nccl "$rec"'

# GPUCKPT_TASKS=nccl in a step of two tasks, but this process's only
# communicator is its own (one rank): its part could never be one of the
# step's set, so no checkpoint, and the program goes on.
mkdir -p "$GK_SCRATCH/lone"
env "${GK_STANDIN_ENV[@]}" GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$FAKE" \
	--dir "$GK_SCRATCH/lone/r0" --uid 0 --gid 0 -- env "${GK_RUNTIME_ENV[@]}" \
	GPUCKPT_STEP_TASKS=2 GPUCKPT_TASK=0 GPUCKPT_TASKS=nccl "$PROG" --rank 0 --nranks 1 \
	--id "$GK_SCRATCH/lone/id" --steps 24 --per-step 3 --floats 4096 --mib 4 --sleep-ms 40 \
	>"$GK_SCRATCH/lone.0.out" 2>"$GK_SCRATCH/lone.0.err" &
pid0=$!
wait_for '^step 6 ' "$GK_SCRATCH/lone.0.out"
kill -USR1 "$pid0"
wait "$pid0"
status=$?
check "GPUCKPT_TASKS=nccl, a process without a communicator of the step's tasks: refused, naming why, and it runs to the end (exit status $status)" \
	eval '[ $status = 0 ] && grep -q "GPUCKPT_TASKS=nccl, but this process holds no NCCL communicator of all 2 tasks" "$GK_SCRATCH/lone.0.err" &&
		grep -q "^done checksum" "$GK_SCRATCH/lone.0.out" && ! ls "$GK_SCRATCH/lone/r0" | grep -q "^ckpt[.]" &&
		grep -q "no checkpoint of pid [0-9]*: pid [0-9]*: the step.s tasks are NCCL ranks (GPUCKPT_TASKS=nccl), but it holds no NCCL communicator of all of them" "$GK_SCRATCH/lone.0.err"'

# Only rank 0 is signalled: rank 1 never says how far it is.
GPUCKPT_NCCL_TIMEOUT=2 pair alone shepherd --sleep-ms 100
wait_for '^step 4 ' "$GK_SCRATCH/alone.0.out" "$GK_SCRATCH/alone.1.out"
kill -USR1 "$pid0"
both_end
status=$?
check "a rank whose peer never answers gives up after GPUCKPT_NCCL_TIMEOUT, naming the rank, and takes no checkpoint" \
	eval 'grep -q "cannot bring the NCCL ranks to a common point: rank 1 of 2 of an NCCL communicator did not say how far it is within 2 s" "$GK_SCRATCH/alone.0.err" &&
		grep -q "NCCL communicators whose ranks could not be brought to a common collective" "$GK_SCRATCH/alone.0.err"'
check "... and both ranks go on with the uninterrupted run's lines (exit status $status)" same_as_ref alone
tap_done
