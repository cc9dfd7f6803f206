#!/bin/bash
# The copy paths of a checkpoint written from device memory, on the CUDA
# driver stand-in with gpu-tables (tests/gpu): copies from the device in
# pieces smaller than a chunk (GPUCKPT_COPY_PIECE, a ring of staging slots
# per thread), a piece that does not divide the chunk, and more copy threads
# than the 8 of the default (a data file each). Each must give checkpoints
# that gpuckpt verify accepts and that restore with the uninterrupted run's
# checksum, whole and as increments; kill -9 during a write in pieces leaves
# the previous checkpoint intact; a state on two devices (the copy threads
# move from one device's context to the other's). The stand-in says nothing
# of speed.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/gpu/gpu-tables
HASH=$top_builddir/tests/cuda-standin/modules/.libs/hash_kernel_host.so
SLOWIO=$top_builddir/tests/runtime/.libs/slowio.so
PLAN=23
tap_plan $PLAN
gk_scratch

gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$PROG" "$HASH" "$SLOWIO" "$GK_RUNTIME"

ARGS=(--size 64 --steps 300 --report-every 10 --updates 4)
# Written the blocking way, from device memory: the path under test (a
# background write copies from snapshot memory instead).
export GPUCKPT_LOG_LEVEL=info GPUCKPT_HASH_MODULE=$HASH GPUCKPT_CHUNK_SIZE=1M \
	GPUCKPT_SNAPSHOT_MEMORY=off

step_of() { sed -n 's/.*"step": *\([0-9]*\).*/\1/p' "$1/manifest.json" | head -1; }

run_bg() { # NAME ENV...: gpu-tables in the background under the runtime and slowio.so
	local name=$1
	shift
	env "${GK_STANDIN_ENV[@]}" LD_PRELOAD="$(gk_preload):$SLOWIO" "$@" \
		"$PROG" "${ARGS[@]}" --delay-ms 10 >"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	PID=$!
}
data_files() { find "$1" -maxdepth 1 -name 'device0*.data' | wc -l; }

with_standin "$PROG" "${ARGS[@]}" >"$GK_SCRATCH/native.out" 2>&1
REF=$(gk_checksum_of "$GK_SCRATCH/native.out")
gk_expect "an uninterrupted run without gpuckpt gives a checksum ($REF)" native test -n "$REF"

# --- pieces of 64 KiB (16 to a chunk), 16 copy threads: a whole checkpoint,
# then an increment ---------------------------------------------------------
D=$GK_SCRATCH/pieces
run_bg pieces GPUCKPT_DIR="$D" GPUCKPT_COPY_PIECE=64K GPUCKPT_WRITERS=16
gk_wait_for pieces "step 40"; kill -USR1 $PID; gk_wait_for pieces "ckpt.000001: wrote"
gk_wait_for pieces "step 80"; kill -TERM $PID; wait $PID; status=$?
gk_expect "in pieces of 64 KiB by 16 threads: USR1 then SIGTERM, the program ends by SIGTERM ($status)" \
	pieces test $status -eq 143
gk_expect "... the copies were pieces of 64 KiB, 4 in flight, in 16 threads" pieces \
	grep -q "dumped .* with 16 threads, copies of 64 KiB, 4 in flight per thread" "$GK_SCRATCH/pieces.err"
gk_expect "... ckpt.000001 holds the device's data in 16 files, one per thread ($(data_files "$D/ckpt.000001"))" \
	pieces test "$(data_files "$D/ckpt.000001")" -eq 16
sizes=$(find "$D/ckpt.000001" -maxdepth 1 -name 'device0*.data' -printf '%s\n' | sort -n)
gk_expect "... each holds its share: none empty, none a chunk larger than another ($(echo $sizes | tr ' ' ,))" \
	pieces test "$(head -1 <<<"$sizes")" -gt 0 -a \
	"$(($(tail -1 <<<"$sizes") - $(head -1 <<<"$sizes")))" -le $((1 << 20))
gk_expect "... ckpt.000002 is an increment of it" pieces grep -q "ckpt.000002: wrote .*increment 1 of ckpt.000001" \
	"$GK_SCRATCH/pieces.err"
"$GK_TOOL" verify "$D/ckpt.000001" >"$GK_SCRATCH/v1.out" 2>&1 &&
	"$GK_TOOL" verify "$D/ckpt.000002" >>"$GK_SCRATCH/v1.out" 2>&1
gk_expect "gpuckpt verify accepts both (every checksum of the pieces' chunks)" v1 test $? -eq 0
gk_restore pieces-r1 "$D/ckpt.000001" "$D"
gk_expect "restored from the whole one, the run resumes at its step and ends with the uninterrupted checksum" \
	pieces-r1 test "$(gk_resumed_step "$GK_SCRATCH/pieces-r1.out")" = "$(step_of "$D/ckpt.000001")" -a \
	"$(gk_checksum_of "$GK_SCRATCH/pieces-r1.out")" = "$REF"
gk_restore pieces-r2 auto "$D"
gk_expect "restored from the increment, the same" pieces-r2 \
	test "$(gk_resumed_step "$GK_SCRATCH/pieces-r2.out")" = "$(step_of "$D/ckpt.000002")" -a \
	"$(gk_checksum_of "$GK_SCRATCH/pieces-r2.out")" = "$REF"
gk_restore pieces-r3 "$D/ckpt.000001" "$D" GPUCKPT_WRITERS=3
gk_expect "... and with 3 threads loading the 16 files" pieces-r3 \
	test "$(gk_checksum_of "$GK_SCRATCH/pieces-r3.out")" = "$REF"

# --- a piece that does not divide the chunk (1 MiB = 5 x 192 KiB + 64 KiB),
# a state smaller than a piece, 3 threads ---------------------------------------
D=$GK_SCRATCH/odd
run_bg odd GPUCKPT_DIR="$D" GPUCKPT_COPY_PIECE=192K GPUCKPT_WRITERS=3 GPUCKPT_INCREMENTS=0
gk_wait_for odd "step 60"; kill -TERM $PID; wait $PID; status=$?
gk_expect "pieces of 192 KiB by 3 threads: the exit checkpoint is written ($status)" odd \
	sh -c "test $status -eq 143 && grep -q 'copies of 192 KiB, 4 in flight' '$GK_SCRATCH/odd.err' && test -f '$D/ckpt.000001/manifest.json'"
"$GK_TOOL" verify "$D/ckpt.000001" >"$GK_SCRATCH/v2.out" 2>&1
gk_expect "... gpuckpt verify accepts it" v2 test $? -eq 0
gk_restore odd-r auto "$D"
gk_expect "... and it restores with the uninterrupted checksum" odd-r \
	test "$(gk_checksum_of "$GK_SCRATCH/odd-r.out")" = "$REF" -a -n "$(gk_resumed_step "$GK_SCRATCH/odd-r.out")"

# --- a piece of more than half a chunk: copies of whole chunks ---------------------
D=$GK_SCRATCH/big
run_bg big GPUCKPT_DIR="$D" GPUCKPT_COPY_PIECE=768K GPUCKPT_INCREMENTS=0
gk_wait_for big "step 30"; kill -TERM $PID; wait $PID
gk_expect "pieces of more than half a chunk: copies of whole chunks, double-buffered" big \
	grep -q "copies of 1024 KiB, 2 in flight" "$GK_SCRATCH/big.err"
gk_restore big-r auto "$D"
gk_expect "... and it restores with the uninterrupted checksum" big-r \
	test "$(gk_checksum_of "$GK_SCRATCH/big-r.out")" = "$REF"

# --- two devices: each copy thread goes from one context to the other --------------
with_standin "$PROG" "${ARGS[@]}" --devices 2 >"$GK_SCRATCH/native2.out" 2>&1
gk_expect "on two devices, an uninterrupted run without gpuckpt gives the same checksum" native2 \
	test "$(gk_checksum_of "$GK_SCRATCH/native2.out")" = "$REF"
D=$GK_SCRATCH/two
ONE_DEVICE=("${ARGS[@]}")
ARGS+=(--devices 2)
run_bg two GPUCKPT_DIR="$D" GPUCKPT_COPY_PIECE=128K GPUCKPT_WRITERS=5 GPUCKPT_INCREMENTS=0
gk_wait_for two "step 50"; kill -TERM $PID; wait $PID; status=$?
gk_expect "two devices, pieces of 128 KiB, 5 threads: the exit checkpoint is written ($status)" two \
	sh -c "test $status -eq 143 && test -f '$D/ckpt.000001/manifest.json'"
gk_expect "... with each device's data in 5 files of its own" two \
	test "$(find "$D/ckpt.000001" -maxdepth 1 -name 'device1*.data' -size +0 | wc -l)" -eq 5 -a \
	"$(find "$D/ckpt.000001" -maxdepth 1 -name 'device0*.data' -size +0 | wc -l)" -eq 5
"$GK_TOOL" verify "$D/ckpt.000001" >"$GK_SCRATCH/v3.out" 2>&1 &&
	gk_restore two-r auto "$D"
gk_expect "... it verifies and restores with the uninterrupted checksum" two-r \
	test "$(gk_checksum_of "$GK_SCRATCH/two-r.out")" = "$REF" -a -n "$(gk_resumed_step "$GK_SCRATCH/two-r.out")"
ARGS=("${ONE_DEVICE[@]}")

# --- kill -9 while a checkpoint is written in pieces --------------------------------
D=$GK_SCRATCH/kill
run_bg kill GPUCKPT_DIR="$D" GPUCKPT_COPY_PIECE=64K GPUCKPT_WRITERS=12 GK_SLOWIO_AT=write \
	GK_SLOWIO_SKIP=1 GK_SLOWIO_MARK="$GK_SCRATCH/kill.mark"
gk_wait_for kill "step 40"; kill -USR1 $PID; gk_wait_for kill "ckpt.000001: wrote"
gk_wait_for kill "step 70"; kill -USR1 $PID
gk_wait_file "$GK_SCRATCH/kill.mark"
kill -KILL $PID; wait $PID 2>/dev/null
"$GK_TOOL" verify "$D/ckpt.000001" >"$GK_SCRATCH/kv.out" 2>&1
gk_expect "kill -9 during a write in pieces: the previous checkpoint is intact" kv test $? -eq 0
gk_expect "... the one being written is not committed" kill \
	test ! -e "$D/ckpt.000002" -a -n "$(ls -A "$D" | grep '^\.tmp\.ckpt\.000002')"
gk_restore kill-r auto "$D"
gk_expect "... and a restart resumes from the previous one with the uninterrupted checksum" kill-r \
	test "$(gk_resumed_step "$GK_SCRATCH/kill-r.out")" = "$(step_of "$D/ckpt.000001")" -a \
	"$(gk_checksum_of "$GK_SCRATCH/kill-r.out")" = "$REF"

# --- a bad value ---------------------------------------------------------------------
with_runtime env GPUCKPT_DIR="$GK_SCRATCH/bad" GPUCKPT_COPY_PIECE=1000 "$PROG" "${ARGS[@]}" \
	>"$GK_SCRATCH/bad.out" 2>"$GK_SCRATCH/bad.err"
gk_expect "GPUCKPT_COPY_PIECE=1000 is refused, naming the variable; the program runs without gpuckpt" bad \
	sh -c "grep -q \"GPUCKPT_COPY_PIECE: copy_piece: invalid value '1000'\" '$GK_SCRATCH/bad.err' && test \"\$(sed -n 's/.*done: steps=[0-9]* checksum=\\(0x[0-9a-f]*\\).*/\\1/p' '$GK_SCRATCH/bad.out')\" = '$REF'"
tap_done
