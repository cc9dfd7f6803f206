# scenario.sh - the checkpoint scenarios, shared by run.sh (the real driver,
# make check-gpu) and standin.sh (the driver stand-in, make check). Sourced
# after tests/lib/helpers.sh. Each scenario is prepare (an uninterrupted run,
# natively and under the runtime: the reference checksum), checkpoint (signal
# a run half-way: it must die by SIGTERM leaving a committed, verifiable
# checkpoint) and verify (restore it: the run must say it resumed and end with
# the reference checksum).
#
# The caller sets:
#	SC_LOGDIR	where every run leaves NAME.cmd, NAME.out, NAME.err and
#			its checkpoints (NAME.ckpt/)
#	SC_NATIVE	array of VAR=VALUE for a run without the runtime
#	SC_RUNTIME	array of VAR=VALUE for a run with the runtime preloaded
# and may set:
#	SC_TIMEOUT	seconds one run may take before it is killed (300)
#	SC_WAIT		seconds to wait for an expected line of output (120)
#	SC_DELAY	--delay-ms of the runs that get signalled (5)
#	SC_SIGNAL_AT	the "step K" line after which SIGTERM is sent (100)
#	SC_MULTI_AT	the three "step K" lines for SIGUSR1, SIGUSR1, SIGTERM
#			("60 120 180")
#	SC_VA_BASE, SC_VA_SPAN	the range every allocation must fall in
#			under the runtime (GPUCKPT_VA_BASE or 0x200000000000;
#			16 TiB)
#	SC_DEADLINE	a value of $SECONDS after which every wait gives up
#			within a second: a suite of hung runs still ends in time
# Every program must print the lines of examples/heat/heat_app.h and accept
# --delay-ms.

: "${SC_TIMEOUT:=300}"
: "${SC_WAIT:=120}"
: "${SC_DELAY:=5}"
: "${SC_SIGNAL_AT:=100}"
: "${SC_MULTI_AT:=60 120 180}"
: "${SC_VA_BASE:=${GPUCKPT_VA_BASE:-0x200000000000}}"
: "${SC_VA_SPAN:=0x100000000000}"
SC_SKIPPED=0
SC_PID=
SC_OUT=
SC_ERR=
SC_STATUS=

# sc_limit SECONDS: SECONDS, or less when SC_DEADLINE is near (at least 1).
sc_limit() {
	local left
	if [ -z "${SC_DEADLINE:-}" ]; then
		echo "$1"
		return
	fi
	left=$((SC_DEADLINE - SECONDS))
	[ "$left" -lt 1 ] && left=1
	[ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}

sc_skip() {
	SC_SKIPPED=$((SC_SKIPPED + 1))
	tap_skip "$@"
}

# sc_skip_n N REASON: N tests that cannot run, for one reason.
sc_skip_n() {
	local i
	for ((i = 0; i < $1; i++)); do sc_skip "$2"; done
}

# sc_summary: the last line of a run, and its exit status.
sc_summary() {
	local passed=$((TAP_N - TAP_FAILED - SC_SKIPPED))
	echo "# $passed passed, $TAP_FAILED failed, $SC_SKIPPED skipped"
	[ "$TAP_FAILED" -eq 0 ]
}

# sc_diag [FILE...]: the tail of the last run's output (or of FILEs) as TAP
# diagnostics, so that a failure explains itself in the test log.
sc_diag() {
	local f
	[ $# -gt 0 ] || set -- "$SC_LOGDIR/$SC_NAME.cmd" "$SC_OUT" "$SC_ERR"
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "# --- ${f#"$SC_LOGDIR"/} (last 15 lines)"
		tail -n 15 "$f" | sed 's/^/#   /'
	done
}

# sc_start NAME native|runtime [VAR=VALUE...] -- CMD [ARG...]: start CMD in the
# background with its output in $SC_LOGDIR/NAME.{out,err}; sets SC_PID.
sc_start() {
	local mode=$2 envs=() prefix=()
	SC_NAME=$1
	shift 2
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do
		envs+=("$1")
		shift
	done
	shift
	if [ "$mode" = runtime ]; then
		prefix=("${SC_RUNTIME[@]}")
	else
		prefix=("${SC_NATIVE[@]}")
	fi
	SC_OUT=$SC_LOGDIR/$SC_NAME.out
	SC_ERR=$SC_LOGDIR/$SC_NAME.err
	echo "$mode: ${prefix[*]} ${envs[*]} $*" >"$SC_LOGDIR/$SC_NAME.cmd"
	# env execs the program: $! is the program itself, and signals reach it.
	env "${prefix[@]}" "${envs[@]}" "$@" >"$SC_OUT" 2>"$SC_ERR" &
	SC_PID=$!
}

# sc_alive: is the last started program still running (and not a zombie)?
sc_alive() {
	local stat
	kill -0 "$SC_PID" 2>/dev/null || return 1
	read -r stat <"/proc/$SC_PID/stat" 2>/dev/null || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}

# sc_wait_exit [SECONDS]: wait for the program to end; SC_STATUS gets its exit
# status (128+N when signal N ended it). A program still running after
# SECONDS is killed, SC_STATUS=timeout and the return status is 1.
sc_wait_exit() {
	local limit ticks=0
	limit=$(sc_limit "${1:-$SC_TIMEOUT}")
	while sc_alive; do
		if [ "$ticks" -ge $((limit * 10)) ]; then
			kill -KILL "$SC_PID" 2>/dev/null
			wait "$SC_PID" 2>/dev/null
			SC_STATUS=timeout
			echo "(killed after ${limit}s)" >>"$SC_ERR"
			return 1
		fi
		sleep 0.1
		ticks=$((ticks + 1))
	done
	wait "$SC_PID"
	SC_STATUS=$?
	return 0
}

# sc_wait_line REGEX [SECONDS]: wait until the program's stdout has a line
# matching REGEX. Returns 1 on timeout, 2 when the program ended first.
sc_wait_line() {
	local limit ticks=0
	limit=$(sc_limit "${2:-$SC_WAIT}")
	while ! grep -Eq -- "$1" "$SC_OUT"; do
		sc_alive || {
			grep -Eq -- "$1" "$SC_OUT" && return 0
			return 2
		}
		[ "$ticks" -ge $((limit * 10)) ] && return 1
		sleep 0.1
		ticks=$((ticks + 1))
	done
}

# sc_wait_next_step PROG [SECONDS]: wait until the program prints one more
# "step K" line than it has now (it goes on), or ends (return 1).
sc_wait_next_step() {
	local limit ticks=0 before
	limit=$(sc_limit "${2:-$SC_WAIT}")
	before=$(grep -c "^$1: step " "$SC_OUT")
	while [ "$(grep -c "^$1: step " "$SC_OUT")" -le "$before" ]; do
		sc_alive || return 1
		[ "$ticks" -ge $((limit * 10)) ] && return 1
		sleep 0.1
		ticks=$((ticks + 1))
	done
}

# sc_stop: end a program a failed test leaves running.
sc_stop() {
	sc_alive && kill -KILL "$SC_PID" 2>/dev/null
	wait "$SC_PID" 2>/dev/null
	return 0
}

# sc_checksum PROG FILE: the checksum of the "done" line, empty if none.
sc_checksum() {
	sed -n "s/^$1: done: steps=[0-9]* checksum=\(0x[0-9a-f]*\)\$/\1/p" "$2" | tail -n 1
}

# sc_resumed PROG FILE: K of "resumed from step K", empty if none.
sc_resumed() {
	sed -n "s/^$1: resumed from step \([0-9]*\) on device=.*/\1/p" "$2" | tail -n 1
}

# sc_first_step PROG FILE: K of the first "step K" line, empty if none. After
# a restore it must not be below the step resumed from: the registered step
# counter came back too, the run did not start over.
sc_first_step() {
	sed -n "s/^$1: step \([0-9]*\)\$/\1/p" "$2" | head -n 1
}

# sc_uuid FILE: the device UUID of the fresh start or resumed line.
sc_uuid() {
	sed -n 's/.*: \(fresh start:\|resumed from step [0-9]*\) .*device=.*(\(GPU-[0-9a-fA-F-]*\))$/\2/p' \
		"$1" | tail -n 1
}

# sc_latest DIR: the newest committed checkpoint under DIR (its name), or
# nothing. Temporary directories of a checkpoint being written do not count.
sc_latest() {
	ls -1 "$1" 2>/dev/null | grep -E '^ckpt\.[0-9]+$' | sort -V | tail -n 1
}

# sc_wait_new_ckpt DIR OLD [SECONDS]: wait until the newest checkpoint under
# DIR is another than OLD; prints its name.
sc_wait_new_ckpt() {
	local limit ticks=0 now
	limit=$(sc_limit "${3:-$SC_WAIT}")
	while :; do
		now=$(sc_latest "$1")
		if [ -n "$now" ] && [ "$now" != "$2" ]; then
			echo "$now"
			return 0
		fi
		[ "$ticks" -ge $((limit * 10)) ] && return 1
		sleep 0.1
		ticks=$((ticks + 1))
	done
}

# sc_verify LABEL CKPTDIR: gpuckpt verify on a checkpoint; its output is kept.
sc_verify() {
	timeout "$(sc_limit 60)" "$GK_TOOL" verify "$2" >"$SC_LOGDIR/$1.out" 2>"$SC_LOGDIR/$1.err"
}

# sc_reference LABEL PROG CMD...: two tests. An uninterrupted run natively
# and one under the runtime must finish with the same checksum; sets SC_REF to
# the reference checksum (the runtime's, else the native one; empty if none).
sc_reference() {
	local label=$1 prog=$2 native ref
	shift 2
	SC_REF=
	sc_start "$label.native" native -- "$@" --delay-ms 0
	sc_wait_exit
	native=$(sc_checksum "$prog" "$SC_OUT")
	if [ "$SC_STATUS" = 0 ] && [ -n "$native" ]; then
		tap_ok "$label: prepare: native run (no runtime) ends with checksum $native"
	else
		tap_not_ok "$label: prepare: native run (no runtime) ends with a checksum (exit status $SC_STATUS)"
		sc_diag
	fi
	sc_start "$label.reference" runtime -- "$@" --delay-ms 0
	sc_wait_exit
	ref=$(sc_checksum "$prog" "$SC_OUT")
	if [ "$SC_STATUS" = 0 ] && [ -n "$ref" ] && [ "$ref" = "$native" ]; then
		tap_ok "$label: prepare: uninterrupted run under the runtime ends with the same checksum"
	else
		tap_not_ok "$label: prepare: uninterrupted run under the runtime ends with the native checksum (exit status $SC_STATUS, checksum '${ref}', native '${native}')"
		sc_diag
	fi
	SC_REF=${ref:-$native}
}

# sc_checkpoint LABEL PROG DIR [VAR=VALUE...] -- CMD...: two tests. Run under
# the runtime with GPUCKPT_DIR=DIR, SIGTERM after "step $SC_SIGNAL_AT": the
# program must die by SIGTERM, and leave a committed checkpoint that gpuckpt
# verify accepts. Sets SC_CKPT to its path (empty if none).
sc_checkpoint() {
	local label=$1 prog=$2 dir=$3 envs=() ck
	shift 3
	while [ "$1" != "--" ]; do
		envs+=("$1")
		shift
	done
	shift
	SC_CKPT=
	rm -rf "$dir"
	mkdir -p "$dir"
	sc_start "$label.term" runtime "${envs[@]}" GPUCKPT_DIR="$dir" -- "$@" --delay-ms "$SC_DELAY"
	if sc_wait_line "^$prog: step $SC_SIGNAL_AT\$"; then
		kill -TERM "$SC_PID"
		sc_wait_exit
		if [ "$SC_STATUS" = 143 ]; then
			tap_ok "$label: checkpoint: SIGTERM after step $SC_SIGNAL_AT ends the run by SIGTERM"
		else
			tap_not_ok "$label: checkpoint: SIGTERM after step $SC_SIGNAL_AT ends the run by SIGTERM (exit status $SC_STATUS, expected 143)"
			sc_diag
		fi
	else
		tap_not_ok "$label: checkpoint: the run never printed 'step $SC_SIGNAL_AT' (it ended or hung)"
		sc_stop
		sc_diag
	fi
	ck=$(sc_latest "$dir")
	if [ -z "$ck" ]; then
		tap_not_ok "$label: checkpoint: a committed checkpoint is left in $dir"
		tap_diag "$(ls -la "$dir" 2>&1)"
	elif sc_verify "$label.verify" "$dir/$ck"; then
		SC_CKPT=$dir/$ck
		tap_ok "$label: checkpoint: $ck is committed and gpuckpt verify accepts it"
	else
		SC_CKPT=$dir/$ck
		tap_not_ok "$label: checkpoint: gpuckpt verify accepts $ck"
		sc_diag "$SC_LOGDIR/$label.verify.out" "$SC_LOGDIR/$label.verify.err"
	fi
}

# sc_restore LABEL PROG DIR MIN [VAR=VALUE...] -- CMD...: one test. Run under
# the runtime with GPUCKPT_RESTORE=auto: it must say it resumed from a step of
# at least MIN and end with the reference checksum SC_REF.
sc_restore() {
	local label=$1 prog=$2 dir=$3 min=$4 envs=() sum from first
	shift 4
	while [ "$1" != "--" ]; do
		envs+=("$1")
		shift
	done
	shift
	sc_start "$label.restore" runtime "${envs[@]}" GPUCKPT_DIR="$dir" GPUCKPT_RESTORE=auto \
		-- "$@" --delay-ms 0
	sc_wait_exit
	sum=$(sc_checksum "$prog" "$SC_OUT")
	from=$(sc_resumed "$prog" "$SC_OUT")
	first=$(sc_first_step "$prog" "$SC_OUT")
	if [ "$SC_STATUS" = 0 ] && [ -n "$from" ] && [ "$from" -ge "$min" ] &&
		[ "${first:-$from}" -ge "$from" ] && [ -n "$SC_REF" ] && [ "$sum" = "$SC_REF" ]; then
		tap_ok "$label: verify: resumed from step $from and ended with the reference checksum"
	else
		tap_not_ok "$label: verify: resumed from a step >= $min, went on from there and ended with the reference checksum (exit status $SC_STATUS, resumed from '${from}', first step printed '${first}', checksum '${sum}', reference '${SC_REF}')"
		sc_diag
	fi
}

# sc_scenario LABEL PROG CMD...: prepare, checkpoint, verify (5 tests).
SC_SCENARIO_TESTS=5
sc_scenario() {
	local label=$1 prog=$2
	shift 2
	sc_reference "$label" "$prog" "$@"
	sc_checkpoint "$label" "$prog" "$SC_LOGDIR/$label.ckpt" -- "$@"
	sc_restore "$label" "$prog" "$SC_LOGDIR/$label.ckpt" "$SC_SIGNAL_AT" -- "$@"
}

# sc_multi LABEL PROG CMD...: several checkpoints in one run (4 tests):
# SIGUSR1 twice (each commits a new checkpoint and the run goes on), then
# SIGTERM (a third, and the run ends by SIGTERM); the restore resumes from the
# last one with the reference checksum. Needs SC_REF from sc_reference.
SC_MULTI_TESTS=4
sc_multi() {
	local label=$1 prog=$2 dir=$SC_LOGDIR/$1.multi.ckpt at sig n=0 last= now
	local -a points
	shift 2
	read -r -a points <<<"$SC_MULTI_AT"
	rm -rf "$dir"
	mkdir -p "$dir"
	sc_start "$label.multi" runtime GPUCKPT_DIR="$dir" -- "$@" --delay-ms "$SC_DELAY"
	for at in "${points[@]}"; do
		n=$((n + 1))
		sig=USR1
		[ "$n" -eq "${#points[@]}" ] && sig=TERM
		if ! sc_wait_line "^$prog: step $at\$"; then
			tap_not_ok "$label: several checkpoints: the run never printed 'step $at'"
			sc_diag
			continue
		fi
		kill -"$sig" "$SC_PID"
		if ! now=$(sc_wait_new_ckpt "$dir" "$last"); then
			tap_not_ok "$label: several checkpoints: SIGUSR1/SIGTERM #$n after step $at commits a new checkpoint"
			tap_diag "$(ls -la "$dir" 2>&1)"
			sc_diag
			continue
		fi
		last=$now
		if [ "$sig" = USR1 ]; then
			if sc_wait_next_step "$prog"; then
				tap_ok "$label: several checkpoints: SIGUSR1 after step $at commits $now and the run goes on"
			else
				tap_not_ok "$label: several checkpoints: the run goes on after SIGUSR1 and $now"
				sc_diag
			fi
		else
			sc_wait_exit
			if [ "$SC_STATUS" = 143 ]; then
				tap_ok "$label: several checkpoints: SIGTERM after step $at commits $now and ends the run by SIGTERM"
			else
				tap_not_ok "$label: several checkpoints: SIGTERM after step $at ends the run by SIGTERM (exit status $SC_STATUS)"
				sc_diag
			fi
		fi
	done
	sc_stop
	sc_restore "$label.multi" "$prog" "$dir" "${points[${#points[@]} - 1]}" -- "$@"
}

# sc_manifest_field DIR KEY: a top-level number of a checkpoint's manifest.
sc_manifest_field() {
	sed -n "s/^  \"$2\": *\([0-9]*\).*/\1/p" "$1/manifest.json" | head -n 1
}

# sc_written LOG N: the bytes the log says checkpoint N wrote.
sc_written() {
	sed -n "s/.*ckpt\.0*$2: wrote \([0-9]*\) bytes.*/\1/p" "$1" | tail -n 1
}

# sc_wait_log REGEX [SECONDS]: like sc_wait_line, in the runtime's log (stderr).
sc_wait_log() {
	local limit ticks=0
	limit=$(sc_limit "${2:-$SC_WAIT}")
	while ! grep -Eq -- "$1" "$SC_ERR"; do
		[ "$ticks" -ge $((limit * 10)) ] && return 1
		sleep 0.1
		ticks=$((ticks + 1))
	done
}

# sc_background LABEL PROG CMD...: a checkpoint written in the background
# (4 tests). SIGUSR1 after the first point of SC_MULTI_AT: the first
# checkpoint, written the blocking way while snapshot memory is pinned;
# SIGUSR1 after the second: written in the background, the program pausing
# only for the copy to host memory, then overwriting its whole state with
# garbage and writing it back (--scribble) while the write goes on; SIGTERM
# after the third: the exit checkpoint, blocking. The background one must
# restore with the reference checksum SC_REF (CMD's, from sc_reference), as
# must the exit one. The program must accept --scribble (gpu-tables).
SC_BACKGROUND_TESTS=4
sc_background() {
	local label=$1.background prog=$2 dir=$SC_LOGDIR/$1.background.ckpt n=0 paused from sum
	local -a points
	shift 2
	read -r -a points <<<"$SC_MULTI_AT"
	rm -rf "$dir"
	mkdir -p "$dir"
	sc_start "$label" runtime GPUCKPT_DIR="$dir" GPUCKPT_SNAPSHOT_MEMORY="${SC_SNAPSHOT:-4G}" -- \
		"$@" --scribble --delay-ms "$SC_DELAY"
	for at in "${points[@]}"; do
		n=$((n + 1))
		sc_wait_line "^$prog: step $at\$" || break
		if [ "$n" -lt 3 ]; then
			kill -USR1 "$SC_PID"
			sc_wait_log "ckpt\.0*$n: wrote" || break
			[ "$n" -eq 1 ] && { sc_wait_log "pinned for snapshots" || break; }
		else
			kill -TERM "$SC_PID"
		fi
	done
	sc_wait_exit
	paused=$(sed -n 's/.*ckpt\.000002: wrote .*the program was paused \([0-9.]*\) s, the rest in the background.*/\1/p' "$SC_ERR")
	if [ -n "$paused" ]; then
		tap_ok "$label: the second checkpoint paused the program $paused s and was written in the background"
		tap_diag "$(grep -E 'paused the program|ckpt\.00000[12]: wrote|pinned' "$SC_ERR")"
	else
		tap_not_ok "$label: the second checkpoint (SIGUSR1 after step ${points[1]}) is written in the background"
		sc_diag
	fi
	if [ "$SC_STATUS" = 143 ] && grep -q "ckpt.000003: wrote" "$SC_ERR" &&
		! grep "ckpt.000003: wrote" "$SC_ERR" | grep -q "the rest in the background"; then
		tap_ok "$label: SIGTERM: the exit checkpoint is written the blocking way, the run ends by SIGTERM"
	else
		tap_not_ok "$label: SIGTERM after step ${points[2]} writes the exit checkpoint (blocking) and ends the run by SIGTERM (exit status $SC_STATUS)"
		sc_diag
	fi
	sc_start "$label.restore2" runtime GPUCKPT_DIR="$dir" GPUCKPT_RESTORE="$dir/ckpt.000002" -- \
		"$@" --delay-ms 0
	sc_wait_exit
	from=$(sc_resumed "$prog" "$SC_OUT")
	sum=$(sc_checksum "$prog" "$SC_OUT")
	if [ "$SC_STATUS" = 0 ] && [ -n "$from" ] && [ "$from" = "$(sc_manifest_field "$dir/ckpt.000002" step)" ] &&
		[ "$sum" = "$SC_REF" ]; then
		tap_ok "$label: the background checkpoint (step $from) restores with the reference checksum: the garbage written during its write is not in it"
	else
		tap_not_ok "$label: the background checkpoint restores with the reference checksum (exit status $SC_STATUS, resumed from '${from}', checksum '${sum}', reference '${SC_REF}')"
		sc_diag
	fi
	sc_restore "$label" "$prog" "$dir" "${points[2]}" -- "$@"
}

# sc_increments LABEL PROG CMD...: incremental checkpoints (5 tests). With
# GPUCKPT_INCREMENTS=2, SIGUSR1 after the first two points of SC_INCR_AT ("60 80
# 100") and SIGTERM after the third give a whole checkpoint and two increments.
# The program must be gpu-tables with its default --updates 1: each step
# rewrites one 1 MiB block and a small state, so an increment (1 MiB chunks)
# may write no more than one chunk per step since the checkpoint before it
# (the steps from the manifests: a loaded machine lets the program run ahead
# of the signals), plus SC_INCR_SLACK_MIB (3) for the state and host memory,
# and less than the whole one. The changed chunks must be found by the hash
# kernel;
# the newest must verify and restore with SC_REF; and with one byte of the
# whole one flipped, the increment must be refused.
SC_INCREMENT_TESTS=5
sc_increments() {
	local label=$1.increments prog=$2 dir=$SC_LOGDIR/$1.increments.ckpt n=0 full inc2 inc3 file off
	local copy=$SC_LOGDIR/$1.increments.damaged
	local -a points
	shift 2
	read -r -a points <<<"${SC_INCR_AT:-60 80 100}"
	rm -rf "$dir"
	mkdir -p "$dir"
	sc_start "$label" runtime GPUCKPT_DIR="$dir" GPUCKPT_INCREMENTS=2 GPUCKPT_KEEP=10 \
		GPUCKPT_CHUNK_SIZE=1M -- "$@" --delay-ms "$SC_DELAY"
	for at in "${points[@]}"; do
		n=$((n + 1))
		sc_wait_line "^$prog: step $at\$" || break
		if [ "$n" -lt 3 ]; then
			kill -USR1 "$SC_PID"
			sc_wait_log "ckpt\.0*$n: wrote" || break
			# A checkpoint due while snapshot memory is pinned waits for
			# it, and the program goes on changing chunks meanwhile.
			if grep -q "is pinned in the background" "$SC_ERR"; then
				sc_wait_log "pinned for snapshots" || break
			fi
		else
			kill -TERM "$SC_PID"
		fi
	done
	sc_wait_exit
	full=$(sc_written "$SC_ERR" 1)
	inc2=$(sc_written "$SC_ERR" 2)
	inc3=$(sc_written "$SC_ERR" 3)
	local s1 s2 s3 mib=1048576 slack=$((${SC_INCR_SLACK_MIB:-3} * 1048576)) max2=0 max3=0
	s1=$(sc_manifest_field "$dir/ckpt.000001" step 2>/dev/null)
	s2=$(sc_manifest_field "$dir/ckpt.000002" step 2>/dev/null)
	s3=$(sc_manifest_field "$dir/ckpt.000003" step 2>/dev/null)
	[ -n "$s1" ] && [ -n "$s2" ] && [ -n "$s3" ] &&
		max2=$(((s2 - s1) * mib + slack)) && max3=$(((s3 - s2) * mib + slack))
	if [ "$SC_STATUS" = 143 ] && [ -n "$full" ] && [ -n "$inc2" ] && [ -n "$inc3" ] &&
		[ "$(sc_manifest_field "$dir/ckpt.000002" increment)" = 1 ] &&
		[ "$(sc_manifest_field "$dir/ckpt.000003" increment)" = 2 ] &&
		[ "$inc2" -le "$max2" ] && [ "$inc3" -le "$max3" ] &&
		[ "$inc2" -lt "$full" ] && [ "$inc3" -lt "$full" ]; then
		tap_ok "$label: a whole checkpoint of $full bytes (step $s1), then increments of $inc2 bytes (step $s2) and $inc3 bytes (step $s3): no more than the chunks the steps between changed"
	else
		tap_not_ok "$label: a whole checkpoint, then two increments writing no more than a chunk per step between them plus $((slack / mib)) MiB, and less than the whole (exit status $SC_STATUS, bytes written: '${full}', '${inc2}' (at most '${max2}'), '${inc3}' (at most '${max3}'), steps '${s1:-}' '${s2:-}' '${s3:-}')"
		sc_diag
	fi
	if grep -q "the hash kernel is loaded" "$SC_ERR" && ! grep -q "found on the host" "$SC_ERR"; then
		tap_ok "$label: the changed chunks were found by the hash kernel"
	else
		tap_not_ok "$label: the changed chunks are found by the hash kernel, not on the host"
		sc_diag
	fi
	if sc_verify "$label.verify" "$dir/ckpt.000003"; then
		tap_ok "$label: gpuckpt verify accepts the newest increment, following its references"
	else
		tap_not_ok "$label: gpuckpt verify accepts the newest increment"
		sc_diag "$SC_LOGDIR/$label.verify.out" "$SC_LOGDIR/$label.verify.err"
	fi
	sc_restore "$label" "$prog" "$dir" "${points[2]}" -- "$@"
	rm -rf "$copy"
	cp -a "$dir" "$copy"
	# A byte in the middle of the first part that the newest increment reads
	# from the whole one (its manifest: a part with "sequence": 1).
	# (The list of checkpoints referred to has "sequence": 1 too, without "file".)
	read -r file off < <(awk '/"sequence": 1,/ { s = 1; next }
		s == 1 && /"file":/ { gsub(/[",]/, "", $2); f = $2; s = 2; next }
		s == 1 { s = 0 }
		s == 2 && /"offset":/ { gsub(/,/, "", $2); o = $2; next }
		s == 2 && /"size":/ { print f, o + int($2 / 2); exit }' "$copy/ckpt.000003/manifest.json")
	[ -n "${off:-}" ] && [ -f "$copy/ckpt.000001/$file" ] &&
		printf '\377' | dd of="$copy/ckpt.000001/$file" bs=1 seek="$off" count=1 conv=notrunc \
			status=none
	sc_start "$label.damaged" runtime GPUCKPT_DIR="$copy" GPUCKPT_RESTORE="$copy/ckpt.000003" -- \
		"$@" --delay-ms 0
	sc_wait_exit
	if [ "$SC_STATUS" != 0 ] && [ "$SC_STATUS" != timeout ] &&
		[ -z "$(sc_checksum "$prog" "$SC_OUT")" ] && grep -q "ckpt.000001/" "$SC_ERR"; then
		tap_ok "$label: with a byte of its base flipped ($file at $off), the increment is refused (exit status $SC_STATUS)"
		tap_diag "$(grep refused "$SC_ERR" | tail -n 2)"
	else
		tap_not_ok "$label: with a byte of its base ckpt.000001 flipped (${file:-no part found} at ${off:-?}), the increment is refused, naming the base (exit status $SC_STATUS)"
		sc_diag
	fi
}

# sc_other_gpu LABEL PROG DEV_A DEV_B CMD...: checkpoint on one GPU and restore
# on another, chosen by CUDA_VISIBLE_DEVICES (2 tests). Needs SC_REF.
SC_OTHER_GPU_TESTS=2
sc_other_gpu() {
	local label=$1.other-gpu prog=$2 a=$3 b=$4 dir=$SC_LOGDIR/$1.other-gpu.ckpt ck before after
	local from first
	shift 4
	rm -rf "$dir"
	mkdir -p "$dir"
	sc_start "$label" runtime CUDA_VISIBLE_DEVICES="$a" GPUCKPT_DIR="$dir" -- "$@" \
		--delay-ms "$SC_DELAY"
	if sc_wait_line "^$prog: step $SC_SIGNAL_AT\$"; then
		kill -TERM "$SC_PID"
		sc_wait_exit
	else
		sc_stop
	fi
	before=$(sc_uuid "$SC_OUT")
	ck=$(sc_latest "$dir")
	if [ "$SC_STATUS" = 143 ] && [ -n "$ck" ]; then
		tap_ok "$label: checkpoint $ck taken on CUDA_VISIBLE_DEVICES=$a ($before)"
	else
		tap_not_ok "$label: checkpoint taken on CUDA_VISIBLE_DEVICES=$a (exit status $SC_STATUS, checkpoint '${ck}')"
		sc_diag
	fi
	sc_start "$label.restore" runtime CUDA_VISIBLE_DEVICES="$b" GPUCKPT_DIR="$dir" \
		GPUCKPT_RESTORE=auto -- "$@" --delay-ms 0
	sc_wait_exit
	after=$(sc_uuid "$SC_OUT")
	from=$(sc_resumed "$prog" "$SC_OUT")
	first=$(sc_first_step "$prog" "$SC_OUT")
	if [ "$SC_STATUS" = 0 ] && [ -n "$from" ] && [ "${first:-$from}" -ge "$from" ] &&
		[ -n "$before" ] &&
		[ -n "$after" ] && [ "$after" != "$before" ] &&
		[ "$(sc_checksum "$prog" "$SC_OUT")" = "$SC_REF" ]; then
		tap_ok "$label: restored on CUDA_VISIBLE_DEVICES=$b ($after) with the reference checksum"
	else
		tap_not_ok "$label: restored on CUDA_VISIBLE_DEVICES=$b, another GPU, with the reference checksum (exit status $SC_STATUS, device '${after}' vs '${before}', checksum '$(sc_checksum "$prog" "$SC_OUT")', reference '${SC_REF}')"
		sc_diag
	fi
}

# sc_corrupt LABEL PROG CKPT CMD...: a copy of checkpoint CKPT with one byte
# flipped in its largest data file must be refused: the run fails, and never
# finishes on bad data (1 test).
SC_CORRUPT_TESTS=1
sc_corrupt() {
	local label=$1.corrupt prog=$2 ck=$3 dir=$SC_LOGDIR/$1.corrupt.ckpt copy file size off byte
	shift 3
	if [ -z "$ck" ] || [ ! -d "$ck" ]; then
		tap_not_ok "$label: a corrupted checkpoint is refused (no checkpoint to corrupt)"
		return
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	copy=$dir/$(basename "$ck")
	cp -a "$ck" "$copy"
	file=$(find "$copy" -type f ! -name '*.json' -printf '%s %p\n' | sort -n | tail -n 1)
	size=${file%% *}
	file=${file#* }
	if [ -z "$file" ] || [ "$size" -lt 1 ]; then
		tap_not_ok "$label: a corrupted checkpoint is refused (no data file in $ck)"
		return
	fi
	off=$((size / 2))
	byte=$(od -An -tu1 -j "$off" -N 1 "$file" | tr -d ' ')
	printf "$(printf '\\%03o' $((byte ^ 0xff)))" |
		dd of="$file" bs=1 seek="$off" count=1 conv=notrunc status=none
	sc_start "$label" runtime GPUCKPT_DIR="$dir" GPUCKPT_RESTORE="$copy" -- "$@" --delay-ms 0
	sc_wait_exit
	if [ "$SC_STATUS" != 0 ] && [ "$SC_STATUS" != timeout ] &&
		[ -z "$(sc_checksum "$prog" "$SC_OUT")" ]; then
		tap_ok "$label: a byte flipped in ${file#"$copy"/} is refused (exit status $SC_STATUS)"
		tap_diag "$(tail -n 3 "$SC_ERR")"
	else
		tap_not_ok "$label: a byte flipped in ${file#"$copy"/} at offset $off is refused (exit status $SC_STATUS)"
		sc_diag
	fi
}

# sc_route LABEL PROG CMD...: one program that prints "PROG: alloc WHAT ADDR"
# lines (2 tests): it runs natively, and under the runtime every allocation
# lies in [SC_VA_BASE, SC_VA_BASE + SC_VA_SPAN).
SC_ROUTE_TESTS=2
sc_route() {
	local label=$1 prog=$2 addr what outside= n=0
	shift 2
	sc_start "$label.native" native -- "$@"
	sc_wait_exit
	if [ "$SC_STATUS" = 0 ] && [ -n "$(sc_checksum "$prog" "$SC_OUT")" ]; then
		tap_ok "$label: runs natively (no runtime)"
	else
		tap_not_ok "$label: runs natively (no runtime) (exit status $SC_STATUS)"
		sc_diag
	fi
	sc_start "$label.runtime" runtime -- "$@"
	sc_wait_exit
	while read -r _ _ what addr _; do
		n=$((n + 1))
		if ! [[ $addr =~ ^0x[0-9a-fA-F]+$ ]] ||
			((addr < SC_VA_BASE || addr >= SC_VA_BASE + SC_VA_SPAN)); then
			outside+=" $what=$addr"
		fi
	done < <(grep "^$prog: alloc " "$SC_OUT")
	if [ "$SC_STATUS" = 0 ] && [ -n "$(sc_checksum "$prog" "$SC_OUT")" ] && [ "$n" -ge 2 ] &&
		[ -z "$outside" ]; then
		tap_ok "$label: under the runtime its $n allocations lie in the reserved range"
	else
		tap_not_ok "$label: under the runtime every allocation lies in [$SC_VA_BASE, +$SC_VA_SPAN) (exit status $SC_STATUS, $n allocations, outside:${outside:- none})"
		sc_diag
	fi
	tap_diag "$(grep "^$prog: alloc " "$SC_OUT")"
}
