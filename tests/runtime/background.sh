#!/bin/bash
# Checkpoints written in the background, on the CUDA driver stand-in with
# gpu-tables (tests/gpu): the program goes on once its state is copied to
# pinned host memory; what it writes to device memory meanwhile changes
# nothing in the checkpoint; a checkpoint due during the write is taken
# after it; SIGTERM during the write finishes it, then takes the exit
# checkpoint; kill -9 during it leaves the previous checkpoint intact; a
# program that ends during it waits for it; a state larger than the budget is
# written the blocking way, said once. slowio.so slows or freezes the writes
# of a chosen checkpoint (GK_SLOWIO_SKIP: the first one is left alone).
. "${top_srcdir:-.}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/gpu/gpu-tables
HASH=$top_builddir/tests/cuda-standin/modules/.libs/hash_kernel_host.so
SLOWIO=$top_builddir/tests/runtime/.libs/slowio.so
PLAN=28
tap_plan $PLAN
gk_scratch

gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$PROG" "$HASH" "$SLOWIO" "$GK_RUNTIME"

ARGS=(--size 64 --steps 1000 --report-every 10)
export GPUCKPT_LOG_LEVEL=info GPUCKPT_HASH_MODULE=$HASH GPUCKPT_CHUNK_SIZE=1M
# Explicit, so that the tests do not depend on this machine's free memory.
export GPUCKPT_SNAPSHOT_MEMORY=256M

step_of() { sed -n 's/.*"step": *\([0-9]*\).*/\1/p' "$1/manifest.json" | head -1; }

# run_bg NAME [ENV...] -- [ARGS...]: gpu-tables in the background under the
# runtime (with slowio.so preloaded after it).
run_bg() {
	local name=$1 envs=()
	shift
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
	[ "${1:-}" = "--" ] && shift
	env "${GK_STANDIN_ENV[@]}" LD_PRELOAD="$(gk_preload):$SLOWIO" "${envs[@]}" \
		"$PROG" "${ARGS[@]}" --delay-ms 10 "$@" \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	PID=$!
}

with_standin "$PROG" "${ARGS[@]}" >"$GK_SCRATCH/native.out" 2>&1
REF=$(gk_checksum_of "$GK_SCRATCH/native.out")
gk_expect "an uninterrupted run without gpuckpt gives a checksum ($REF)" native test -n "$REF"

# --- a checkpoint in the background, the program writing meanwhile ------------
# The second checkpoint's writes are slowed (80 ms each): it takes seconds,
# and the program overwrites all its tables with garbage right after the
# pause (--scribble), then writes them back.
D=$GK_SCRATCH/bg
run_bg bg GPUCKPT_DIR="$D" GK_SLOWIO_AT=slow GK_SLOWIO_SKIP=1 GK_SLOWIO_DELAY_MS=80 \
	GK_SLOWIO_MARK="$GK_SCRATCH/bg.mark" -- --scribble
gk_wait_for bg "step 40"; kill -USR1 $PID
gk_wait_for bg "ckpt.000001: wrote"
gk_expect "the first checkpoint is written the blocking way while snapshot memory is pinned" bg \
	grep -q "written the blocking way this time" "$GK_SCRATCH/bg.err"
gk_wait_for bg "pinned for snapshots"
gk_wait_for bg "step 80"; kill -USR1 $PID
gk_wait_file "$GK_SCRATCH/bg.mark"
gk_expect "the second pauses the program only to copy its state, and goes to the background" bg \
	gk_wait_for bg "paused the program .*; the rest in the background"
at=$(sed -n 's/.*checkpoint at step \([0-9]*\)/\1/p' "$GK_SCRATCH/bg.out" | tail -1)
gk_wait_for bg "step $(((at / 10 + 2) * 10))"
gk_expect "the program goes on while it is written (step $(((at / 10 + 2) * 10)) before ckpt.000002 is committed)" bg \
	test ! -e "$D/ckpt.000002"
# Due during that write: taken after it, without another signal.
kill -USR1 $PID
gk_expect "a checkpoint due during the write waits for it, and says so" bg \
	gk_wait_for bg "due while ckpt.000002 is being written in the background; taken at the first checkpoint point after that"
gk_expect "the background write commits ckpt.000002" bg gk_wait_for bg "ckpt.000002: wrote .*the program was paused"
gk_expect "... and the checkpoint that waited is taken after it, as ckpt.000003" bg \
	gk_wait_for bg "ckpt.000003: wrote"
gk_wait_for bg "step $(((at / 10 + 12) * 10))"
kill -TERM $PID; wait $PID; status=$?
gk_expect "SIGTERM: the program checkpoints and ends by SIGTERM ($status)" bg test $status -eq 143
gk_expect "the exit checkpoint is written the blocking way" bg \
	sh -c "grep 'ckpt.000004: wrote' '$GK_SCRATCH/bg.err' | grep -vq 'background'"
"$GK_TOOL" verify "$D/ckpt.000002" >"$GK_SCRATCH/v.out" 2>&1
gk_expect "gpuckpt verify accepts the background checkpoint" v test $? -eq 0
gk_restore bg-r2 "$D/ckpt.000002" "$D"
gk_expect "restored from it, the run resumes at its step ($(step_of "$D/ckpt.000002"))" bg-r2 \
	test "$(gk_resumed_step "$GK_SCRATCH/bg-r2.out")" = "$(step_of "$D/ckpt.000002")"
gk_expect "... and ends with the uninterrupted run's checksum: the garbage written during its write is not in it" \
	bg-r2 test "$(gk_checksum_of "$GK_SCRATCH/bg-r2.out")" = "$REF"
gk_restore bg-r4 auto "$D"
gk_expect "the exit checkpoint restores with the same checksum" bg-r4 \
	test "$(gk_checksum_of "$GK_SCRATCH/bg-r4.out")" = "$REF" -a -n "$(gk_resumed_step "$GK_SCRATCH/bg-r4.out")"

# --- SIGTERM during a background write -------------------------------------------
D=$GK_SCRATCH/term
run_bg term GPUCKPT_DIR="$D" GK_SLOWIO_AT=slow GK_SLOWIO_SKIP=1 GK_SLOWIO_DELAY_MS=40 \
	GK_SLOWIO_MARK="$GK_SCRATCH/term.mark"
gk_wait_for term "step 40"; kill -USR1 $PID
gk_wait_for term "pinned for snapshots"; gk_wait_for term "step 80"; kill -USR1 $PID
gk_wait_file "$GK_SCRATCH/term.mark"
kill -TERM $PID; wait $PID; status=$?
gk_expect "SIGTERM during a background write: the program still ends by SIGTERM ($status)" term \
	test $status -eq 143
gk_expect "... after finishing that write" term \
	grep -q "finishing the background write of ckpt.000002 before the checkpoint the program ends with" \
	"$GK_SCRATCH/term.err"
gk_expect "... both it and the exit checkpoint are committed" term \
	test -f "$D/ckpt.000002/manifest.json" -a -f "$D/ckpt.000003/manifest.json"
gk_restore term-r auto "$D"
gk_expect "... and the restart resumes from the exit checkpoint with the same checksum" term-r \
	test "$(gk_resumed_step "$GK_SCRATCH/term-r.out")" = "$(step_of "$D/ckpt.000003")" -a \
	"$(gk_checksum_of "$GK_SCRATCH/term-r.out")" = "$REF"

# --- kill -9 during a background write -------------------------------------------
D=$GK_SCRATCH/kill
run_bg kill GPUCKPT_DIR="$D" GK_SLOWIO_AT=write GK_SLOWIO_SKIP=1 \
	GK_SLOWIO_MARK="$GK_SCRATCH/kill.mark"
gk_wait_for kill "step 40"; kill -USR1 $PID
gk_wait_for kill "pinned for snapshots"; gk_wait_for kill "step 80"; kill -USR1 $PID
gk_wait_file "$GK_SCRATCH/kill.mark"
gk_wait_for kill "step 100"
gk_expect "with its background write frozen, the program goes on" kill \
	grep -q "step 100" "$GK_SCRATCH/kill.out"
kill -KILL $PID; wait $PID 2>/dev/null
"$GK_TOOL" verify "$D/ckpt.000001" >"$GK_SCRATCH/kv.out" 2>&1
gk_expect "kill -9 during the background write: the previous checkpoint is intact" kv test $? -eq 0
gk_expect "... the one being written is not committed" kill \
	test ! -e "$D/ckpt.000002" -a -n "$(ls -A "$D" | grep '^\.tmp\.ckpt\.000002')"
gk_restore kill-r auto "$D"
gk_expect "... and a restart resumes from the previous one with the same checksum" kill-r \
	test "$(gk_resumed_step "$GK_SCRATCH/kill-r.out")" = "$(step_of "$D/ckpt.000001")" -a \
	"$(gk_checksum_of "$GK_SCRATCH/kill-r.out")" = "$REF"

# --- the program ends during a background write -----------------------------------
D=$GK_SCRATCH/end
run_bg end GPUCKPT_DIR="$D" GK_SLOWIO_AT=slow GK_SLOWIO_SKIP=1 GK_SLOWIO_DELAY_MS=100 \
	GK_SLOWIO_MARK="$GK_SCRATCH/end.mark" -- --steps 130
gk_wait_for end "step 40"; kill -USR1 $PID
gk_wait_for end "pinned for snapshots"; gk_wait_for end "step 100"; kill -USR1 $PID
wait $PID; status=$?
gk_expect "a program that ends during a background write ends normally ($status)" end test $status -eq 0
gk_expect "... after waiting for the write, which is committed" end \
	sh -c "grep -q 'the program ends while ckpt.000002 is written in the background; waiting' '$GK_SCRATCH/end.err' && test -f '$D/ckpt.000002/manifest.json'"
gk_restore end-r "$D/ckpt.000002" "$D"
gk_expect "... and restores with the uninterrupted run's checksum" end-r \
	test "$(gk_checksum_of "$GK_SCRATCH/end-r.out")" = "$REF"

# --- a budget the state does not fit in --------------------------------------------
D=$GK_SCRATCH/small
run_bg small GPUCKPT_DIR="$D" GPUCKPT_SNAPSHOT_MEMORY=8M
gk_wait_for small "step 40"; kill -USR1 $PID; gk_wait_for small "ckpt.000001: wrote"
gk_wait_for small "step 60"; kill -USR1 $PID; gk_wait_for small "ckpt.000002: wrote"
gk_wait_for small "step 80"; kill -TERM $PID; wait $PID; status=$?
gk_expect "GPUCKPT_SNAPSHOT_MEMORY=8M for 64 MiB: the checkpoints are written the blocking way ($status)" small \
	sh -c "test $status -eq 143 && ! grep -q 'in the background' '$GK_SCRATCH/small.err' && test -f '$D/ckpt.000003/manifest.json'"
gk_expect "... said once in the log" small \
	test "$(grep -c 'do not fit in the host memory for snapshots' "$GK_SCRATCH/small.err")" -eq 1
gk_restore small-r auto "$D"
gk_expect "... and they restore with the same checksum" small-r \
	test "$(gk_checksum_of "$GK_SCRATCH/small-r.out")" = "$REF"

# --- no snapshot memory at all ------------------------------------------------------
D=$GK_SCRATCH/off
run_bg off GPUCKPT_DIR="$D" GPUCKPT_SNAPSHOT_MEMORY=off
gk_wait_for off "step 40"; kill -USR1 $PID; gk_wait_for off "ckpt.000001: wrote"
gk_wait_for off "step 60"; kill -USR1 $PID; gk_wait_for off "ckpt.000002: wrote"
kill -TERM $PID; wait $PID
gk_expect "GPUCKPT_SNAPSHOT_MEMORY=off: every checkpoint holds the program until it is written" off \
	sh -c "! grep -q 'in the background' '$GK_SCRATCH/off.err' && grep -q 'every checkpoint holds the program' '$GK_SCRATCH/off.err'"
tap_done
