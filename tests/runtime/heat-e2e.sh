#!/bin/bash
# End-to-end on the CUDA driver stand-in, with the sample heat-drv (driver API,
# streams, stream-ordered allocation, device pointers stored in device memory):
# checkpoint on SIGTERM, resume on another GPU with the same result; several
# checkpoints in one run; a checkpoint that cannot be written; a corrupted
# newest checkpoint; too little memory; a writer killed half-way; another
# user's checkpoint.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
HEAT=$top_builddir/examples/heat/heat-drv
MODULE=$top_builddir/examples/heat/.libs/heat_kernels_host.so
SLOWIO=$top_builddir/tests/runtime/.libs/slowio.so
PLAN=42
tap_plan $PLAN
gk_scratch

gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$HEAT" "$MODULE" "$GK_RUNTIME"

ARGS=(--size 96 --steps 300 --report-every 10 --module "$MODULE")
export GPUCKPT_LOG_LEVEL=info

checksum_of() { sed -n 's/.*done: steps=[0-9]* checksum=\(0x[0-9a-f]*\).*/\1/p' "$1" | tail -1; }
resumed_step() { sed -n 's/.*resumed from step \([0-9]*\).*/\1/p' "$1" | tail -1; }

# heat_bg NAME [ENV...]: start heat-drv in the background under the runtime.
heat_bg() {
	local name=$1; shift
	env "${GK_RUNTIME_ENV[@]}" "$@" "$HEAT" "${ARGS[@]}" --delay-ms 10 \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	HEAT_PID=$!
}
# wait_for NAME PATTERN: until the run's output shows PATTERN (30 s at most).
wait_for() {
	for _ in $(seq 300); do
		grep -q "$2" "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
show() { tap_diag "$(tail -n 15 "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err" 2>/dev/null)"; }
expect() { # DESCRIPTION NAME COMMAND...: a test point, with the run's output on failure
	local desc=$1 name=$2; shift 2
	if "$@"; then tap_ok "$desc"; else tap_not_ok "$desc"; show "$name"; fi
}

# --- references -------------------------------------------------------------
with_standin "$HEAT" "${ARGS[@]}" >"$GK_SCRATCH/native.out" 2>&1
REF=$(checksum_of "$GK_SCRATCH/native.out")
expect "an uninterrupted run without gpuckpt gives a checksum ($REF)" native test -n "$REF"
with_runtime env GPUCKPT_DIR="$GK_SCRATCH/plain" "$HEAT" "${ARGS[@]}" >"$GK_SCRATCH/plain.out" 2>&1
expect "an uninterrupted run under gpuckpt gives the same checksum" plain \
	test "$(checksum_of "$GK_SCRATCH/plain.out")" = "$REF"

# --- SIGTERM half-way, resume on another GPU ---------------------------------
D=$GK_SCRATCH/term
heat_bg term GPUCKPT_DIR="$D" CUDA_VISIBLE_DEVICES=0
wait_for term "step 100"
kill -TERM $HEAT_PID; wait $HEAT_PID; status=$?
expect "SIGTERM half-way: the program checkpoints, then dies by SIGTERM ($status)" term \
	test $status -eq 143
expect "the checkpoint is committed as ckpt.000001, with no temporary left" term \
	test -f "$D/ckpt.000001/manifest.json" -a -z "$(ls -A "$D" | grep -v '^ckpt\.' | grep -vx gpuckpt.events)"
expect "the runtime's event file says it started, once" term \
	test "$(grep -c "^gpuckpt-event 1 kind=start result=ok time=[0-9.]* pid=$HEAT_PID pstart=[0-9]*$" "$D/gpuckpt.events")" = 1
expect "... and the checkpoint: ckpt 1, its bytes, its time, 1 GPU" term \
	grep -q "^gpuckpt-event 1 kind=checkpoint result=ok time=[0-9.]* pid=$HEAT_PID pstart=[0-9]* ckpt=1 bytes=[1-9][0-9]* seconds=[0-9.]* elapsed=[0-9.]* gpus=1$" "$D/gpuckpt.events"
expect "the runtime logged what it wrote" term grep -q "checkpoint: .*ckpt.000001: wrote" "$GK_SCRATCH/term.err"
"$GK_TOOL" verify "$D/ckpt.000001" >"$GK_SCRATCH/verify.out" 2>&1
expect "gpuckpt verify accepts it" verify test $? -eq 0
"$GK_TOOL" inspect "$D/ckpt.000001" >"$GK_SCRATCH/inspect.out" 2>&1
expect "gpuckpt inspect shows its label and its allocations" inspect \
	grep -q "0x2000000" "$GK_SCRATCH/inspect.out"
expect "... with the step it was taken at" inspect grep -qi "step [0-9]" "$GK_SCRATCH/inspect.out"
with_runtime env GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto CUDA_VISIBLE_DEVICES=2 \
	"$HEAT" "${ARGS[@]}" >"$GK_SCRATCH/resume.out" 2>"$GK_SCRATCH/resume.err"
K=$(resumed_step "$GK_SCRATCH/resume.out")
expect "restarted on another GPU, it resumes from the checkpoint (step ${K:-none})" resume \
	test -n "$K" -a "${K:-0}" -ge 100
expect "... on a GPU with another UUID" resume \
	test "$(grep -o 'GPU-[0-9a-f-]*' "$GK_SCRATCH/resume.out" | head -1)" != \
	"$(grep -o 'GPU-[0-9a-f-]*' "$GK_SCRATCH/term.out" | head -1)"
expect "and finishes with the uninterrupted run's checksum" resume \
	test "$(checksum_of "$GK_SCRATCH/resume.out")" = "$REF"
expect "the restore is in the event file: ckpt 1, its bytes" resume \
	grep -q "^gpuckpt-event 1 kind=restore result=ok .* ckpt=1 bytes=[1-9][0-9]* seconds=[0-9.]*$" "$D/gpuckpt.events"

# --- several checkpoints in one run ---------------------------------------------
D=$GK_SCRATCH/multi
heat_bg multi GPUCKPT_DIR="$D" GPUCKPT_KEEP=2 GPUCKPT_INCREMENTS=0
wait_for multi "step 60"; kill -USR1 $HEAT_PID
wait_for multi "ckpt.000001: wrote"; wait_for multi "step 120"; kill -USR1 $HEAT_PID
wait_for multi "ckpt.000002: wrote"; wait_for multi "step 180"; kill -TERM $HEAT_PID
wait $HEAT_PID; status=$?
expect "SIGUSR1 twice then SIGTERM: three checkpoints, the program ends by SIGTERM" multi \
	test $status -eq 143 -a "$(grep -c 'wrote' "$GK_SCRATCH/multi.err")" -eq 3
expect "only the newest two are kept (GPUCKPT_KEEP=2, every checkpoint whole)" multi \
	test "$(ls "$D" | grep -vx gpuckpt.events)" = "$(printf 'ckpt.000002\nckpt.000003')"
expect "the event file has the three, numbered 1 to 3" multi \
	test "$(sed -n 's/.*kind=checkpoint result=ok .* ckpt=\([0-9]*\) .*/\1/p' "$D/gpuckpt.events" | tr '\n' ' ')" = "1 2 3 "
step3=$(sed -n 's/.*"step": *\([0-9]*\).*/\1/p' "$D/ckpt.000003/manifest.json" | head -1)
step2=$(sed -n 's/.*"step": *\([0-9]*\).*/\1/p' "$D/ckpt.000002/manifest.json" | head -1)
with_runtime env GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto "$HEAT" "${ARGS[@]}" \
	>"$GK_SCRATCH/multi2.out" 2>"$GK_SCRATCH/multi2.err"
expect "a restart resumes from the newest (step ${step3:-?}) with the same checksum" multi2 \
	test "$(resumed_step "$GK_SCRATCH/multi2.out")" = "$step3" -a \
	"$(checksum_of "$GK_SCRATCH/multi2.out")" = "$REF"

# --- a checkpoint that cannot be written -------------------------------------------
# SIGUSR1 asks for a checkpoint and for the run to go on. The folder cannot be
# made (a file is in the way: the same for root, which a read-only folder would
# not stop): nothing is written, the runtime says why, gpuckpt_point returns
# GPUCKPT_NOT_SAVED and the program goes on to its result.
: >"$GK_SCRATCH/in-the-way"
heat_bg nosave GPUCKPT_DIR="$GK_SCRATCH/in-the-way/ckpt"
wait_for nosave "step 60"; kill -USR1 $HEAT_PID; wait $HEAT_PID; status=$?
expect "SIGUSR1 with a checkpoint folder that cannot be made: the program goes on and ends well ($status)" nosave \
	test $status -eq 0
expect "... the runtime says why no checkpoint was written" nosave \
	grep -q "checkpoint: .*in-the-way/ckpt: no checkpoint written: .*Not a directory" "$GK_SCRATCH/nosave.err"
expect "... the program was told (GPUCKPT_NOT_SAVED) and said it goes on" nosave \
	grep -q "^heat-drv: step [0-9]*: no checkpoint written; going on$" "$GK_SCRATCH/nosave.err"
expect "... with the uninterrupted run's checksum" nosave \
	test "$(checksum_of "$GK_SCRATCH/nosave.out")" = "$REF"

# --- a corrupted newest checkpoint ------------------------------------------------
printf '\xff' | dd of="$D/ckpt.000003/device0.data" bs=1 seek=100 conv=notrunc status=none
with_runtime env GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto "$HEAT" "${ARGS[@]}" \
	>"$GK_SCRATCH/older.out" 2>"$GK_SCRATCH/older.err"
expect "a corrupted newest checkpoint is refused, naming the checksum mismatch" older \
	grep -q "ckpt.000003: refused: .*checksum mismatch" "$GK_SCRATCH/older.err"
expect "... and the previous one is used: resumed from step ${step2:-?}, same checksum" older \
	test "$(resumed_step "$GK_SCRATCH/older.out")" = "$step2" -a \
	"$(checksum_of "$GK_SCRATCH/older.out")" = "$REF"
with_runtime env GPUCKPT_DIR="$D" GPUCKPT_RESTORE="$D/ckpt.000003" "$HEAT" "${ARGS[@]}" \
	>"$GK_SCRATCH/badfail.out" 2>"$GK_SCRATCH/badfail.err"
status=$?
expect "asked for exactly that checkpoint, the program does not start (status $status)" badfail \
	test $status -ne 0 -a -z "$(checksum_of "$GK_SCRATCH/badfail.out")"
expect "... and the log says why and how to start over" badfail \
	grep -q "GPUCKPT_ON_BAD_CHECKPOINT=fail" "$GK_SCRATCH/badfail.err"
with_runtime env GPUCKPT_DIR="$D" GPUCKPT_RESTORE="$D/ckpt.000003" GPUCKPT_ON_BAD_CHECKPOINT=fresh \
	"$HEAT" "${ARGS[@]}" >"$GK_SCRATCH/badfresh.out" 2>"$GK_SCRATCH/badfresh.err"
expect "with GPUCKPT_ON_BAD_CHECKPOINT=fresh it starts over and gets the same checksum" badfresh \
	grep -q "fresh start" "$GK_SCRATCH/badfresh.out"
expect "... the same checksum" badfresh test "$(checksum_of "$GK_SCRATCH/badfresh.out")" = "$REF"

# --- too little memory on the new GPU --------------------------------------------
with_runtime env GPUCKPT_DIR="$GK_SCRATCH/term" GPUCKPT_RESTORE=auto CUDA_VISIBLE_DEVICES=1 \
	GPUCKPT_STANDIN_MEMORY=1G,1M,1G,1G "$HEAT" "${ARGS[@]}" \
	>"$GK_SCRATCH/small.out" 2>"$GK_SCRATCH/small.err"
status=$?
expect "a restore onto a GPU with too little memory is refused before anything is loaded" small \
	test $status -ne 0 -a -z "$(checksum_of "$GK_SCRATCH/small.out")"
expect "... saying how much it has and how much is needed" small \
	grep -q "has .* free; the checkpoint needs" "$GK_SCRATCH/small.err"

# --- a writer killed half-way -----------------------------------------------------
for at in write fsync; do
	D=$GK_SCRATCH/kill-$at
	heat_bg k1-$at GPUCKPT_DIR="$D"
	wait_for k1-$at "step 50"; kill -TERM $HEAT_PID; wait $HEAT_PID
	env "${GK_STANDIN_ENV[@]}" LD_PRELOAD="$(gk_preload):$SLOWIO" GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto \
		GK_SLOWIO_AT=$at GK_SLOWIO_MARK="$GK_SCRATCH/mark-$at" "$HEAT" "${ARGS[@]}" --delay-ms 10 \
		>"$GK_SCRATCH/k2-$at.out" 2>"$GK_SCRATCH/k2-$at.err" &
	pid=$!
	wait_for k2-$at "step 150"; kill -USR1 $pid
	for _ in $(seq 300); do [ -e "$GK_SCRATCH/mark-$at" ] && break; sleep 0.1; done
	kill -KILL $pid; wait $pid 2>/dev/null
	expect "killed during the checkpoint's $at: the previous checkpoint is intact" k2-$at \
		"$GK_TOOL" verify "$D/ckpt.000001"
	expect "... the half-written one is not committed" k2-$at \
		test ! -e "$D/ckpt.000002" -a -n "$(ls -A "$D" | grep '^\.tmp\.')"
	with_runtime env GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto "$HEAT" "${ARGS[@]}" \
		>"$GK_SCRATCH/k3-$at.out" 2>"$GK_SCRATCH/k3-$at.err"
	expect "... and a restart resumes from the previous one with the same checksum" k3-$at \
		test -n "$(resumed_step "$GK_SCRATCH/k3-$at.out")" -a \
		"$(checksum_of "$GK_SCRATCH/k3-$at.out")" = "$REF"
done

# --- an allocation cut into parts, in several files -----------------------------
# Three writers and 4 KiB chunks: the device's bytes go to three files, each
# file filled to its share before the next, so allocations are cut in parts.
D=$GK_SCRATCH/parts
heat_bg parts GPUCKPT_DIR="$D" GPUCKPT_WRITERS=3 GPUCKPT_CHUNK_SIZE=4096
wait_for parts "step 100"
kill -TERM $HEAT_PID; wait $HEAT_PID
M=$D/ckpt.000001/manifest.json
nallocs=$(grep -c '"address":' "$M" 2>/dev/null)
nparts=$(grep -c '"file": "device0' "$M" 2>/dev/null)
expect "three writers: the device data is in three files, parts of ${nallocs:-?} allocations in ${nparts:-?} places" parts \
	test -s "$D/ckpt.000001/device0.2.data" -a ! -e "$D/ckpt.000001/device0.3.data" -a \
	"${nparts:-0}" -gt "${nallocs:-0}"
"$GK_TOOL" inspect "$D/ckpt.000001" >"$GK_SCRATCH/parts-inspect.out" 2>&1
expect "gpuckpt inspect lists the files an allocation was cut across" parts-inspect \
	grep -Eq "device0(\.[0-9])?\.data, device0\.[0-9]\.data" "$GK_SCRATCH/parts-inspect.out"
"$GK_TOOL" verify "$D/ckpt.000001" >"$GK_SCRATCH/parts-verify.out" 2>&1
expect "gpuckpt verify checks every part against its checksums" parts-verify test $? -eq 0
cp -r "$D/ckpt.000001" "$GK_SCRATCH/parts-bad"
printf 'X' | dd of="$GK_SCRATCH/parts-bad/device0.2.data" bs=1 seek=5000 conv=notrunc status=none
"$GK_TOOL" verify "$GK_SCRATCH/parts-bad" >"$GK_SCRATCH/parts-bad.out" 2>&1
expect "... and finds a byte changed in the third file" parts-bad \
	grep -q "device0.2.data: checksum mismatch" "$GK_SCRATCH/parts-bad.out"
with_runtime env GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto "$HEAT" "${ARGS[@]}" \
	>"$GK_SCRATCH/parts-resume.out" 2>"$GK_SCRATCH/parts-resume.err"
expect "... and its restart resumes with the uninterrupted run's checksum" parts-resume \
	test -n "$(resumed_step "$GK_SCRATCH/parts-resume.out")" -a \
	"$(checksum_of "$GK_SCRATCH/parts-resume.out")" = "$REF"

# --- another user's checkpoint --------------------------------------------------------
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
	chown -R nobody "$GK_SCRATCH/term"
	with_runtime env GPUCKPT_DIR="$GK_SCRATCH/term" GPUCKPT_RESTORE=auto "$HEAT" "${ARGS[@]}" \
		>"$GK_SCRATCH/foreign.out" 2>"$GK_SCRATCH/foreign.err"
	status=$?
	expect "another user's checkpoint is refused, never loaded (status $status)" foreign \
		test $status -ne 0 -a -z "$(resumed_step "$GK_SCRATCH/foreign.out")"
else
	tap_skip "needs root and the user nobody to make a checkpoint owned by someone else"
fi
tap_done
