#!/bin/bash
# Memory the program maps itself (cuMemAddressReserve + cuMemCreate + cuMemMap
# + cuMemSetAccess, as XLA, NCCL and PyTorch's expandable segments do), on the
# CUDA driver stand-in. Application mode: the checkpoint saves it through the
# runtime's pipeline (not refused); a restart gets the same reservation
# address back when it reserves again, on the same and on another emulated
# GPU, and finishes with the uninterrupted run's checksum. Transparent mode:
# the runtime writes it, gives its physical memory back before the driver's
# checkpoint, and re-creates the mappings (same address, same access) and
# loads the contents after it; the program then finishes with the same
# checksum (the shepherd gives up on the stand-in, which has no checkpoint
# API, so the reload path runs without CRIU).
. "${top_srcdir:-.}/tests/lib/helpers.sh"
B=$top_builddir/tests/runtime
PROG=$B/prog-vmm
SHEP=$top_builddir/runtime/gpuckpt-shepherd
PLAN=17
tap_plan $PLAN
gk_scratch
gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME" "$PROG" "$SHEP"

D=$GK_SCRATCH/ckpt
with_runtime "$PROG" --steps 12 >"$GK_SCRATCH/ref.out" 2>&1
ref=$(sed -n 's/^prog-vmm: done: va .* sum //p' "$GK_SCRATCH/ref.out")
check "an uninterrupted run maps, writes and reads back its memory (sum ${ref:-none})" test -n "$ref"

with_runtime env GPUCKPT_DIR="$D" CUDA_VISIBLE_DEVICES=0 "$PROG" --steps 12 --checkpoint-at 5 \
	--exit-after-checkpoint >"$GK_SCRATCH/save.out" 2>&1
va=$(sed -n 's/^prog-vmm: va \(0x[0-9a-f]*\) .*/\1/p' "$GK_SCRATCH/save.out")
saved=$(sed -n 's/^prog-vmm: checkpoint at step \([0-9]*\): 1 .*/\1/p' "$GK_SCRATCH/save.out")
check "the checkpoint of a process holding cuMemMap memory is written, not refused (step ${saved:-none})" \
	test -n "$saved"
check "no warning that checkpoints will be refused" \
	eval '! grep -q "checkpoints will be refused\|mapped itself" "$GK_SCRATCH/save.out"'
m=$D/ckpt.000001/manifest.json
nk=$(grep -c '"kind": *"vmm"' "$m" 2>/dev/null)
nr=$(grep -c '"reservation"' "$m" 2>/dev/null)
check "the manifest lists both mappings as mapped memory, with their reservation" \
	test "${nk:-0}" -eq 2 -a "${nr:-0}" -eq 2
check "gpuckpt verify accepts the checkpoint" \
	"$top_builddir/runtime/gpuckpt" verify "$D/ckpt.000001"

for gpu in 0 2; do
	with_runtime env GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto CUDA_VISIBLE_DEVICES=$gpu \
		"$PROG" --steps 12 >"$GK_SCRATCH/r$gpu.out" 2>&1
	check "restored on emulated GPU $gpu: it resumes at step ${saved:-?}" \
		grep -q "restored at step ${saved:-none}\$" "$GK_SCRATCH/r$gpu.out"
	got=$(sed -n 's/^prog-vmm: done: //p' "$GK_SCRATCH/r$gpu.out")
	check "... at the checkpointed run's reservation address ($va), with the uninterrupted checksum ($got)" \
		test -n "$va" -a "$got" = "va $va sum $ref"
done

# The second checkpoint of a run is an increment written in the background while the
# program goes on rewriting its mappings: the restore must hold the state of
# its step, none of what came after.
B2=$GK_SCRATCH/background
with_runtime env GPUCKPT_DIR="$B2" GPUCKPT_LOG_LEVEL=info "$PROG" --steps 12 --checkpoint-at 3 \
	--checkpoint-at 6 >"$GK_SCRATCH/bg.out" 2>&1
with_runtime env GPUCKPT_DIR="$B2" GPUCKPT_RESTORE=auto "$PROG" --steps 12 >"$GK_SCRATCH/bg-r.out" 2>&1
got=$(sed -n 's/^prog-vmm: done: va .* sum //p' "$GK_SCRATCH/bg-r.out")
check "a checkpoint written in the background restores at its step with the uninterrupted checksum ($got)" \
	eval 'grep -q "ckpt.000002: wrote .*increment 1 of ckpt.000001.*the rest in the background" "$GK_SCRATCH/bg.out" && grep -q "restored at step 6\$" "$GK_SCRATCH/bg-r.out" &&
		test -n "$got" -a "$got" = "$ref"'

# Memory exported to other processes cannot be saved with this one: refused,
# by name, and the program is told (GPUCKPT_NOT_SAVED) and goes on.
with_runtime env GPUCKPT_DIR="$GK_SCRATCH/export" "$PROG" --steps 12 --checkpoint-at 5 --export \
	>"$GK_SCRATCH/export.out" 2>&1
check "a process that exported mapped memory is refused, naming it, and goes on" \
	eval 'grep -q "refused, no checkpoint written: .*exported to other processes" "$GK_SCRATCH/export.out" &&
		grep -q "checkpoint at step [0-9]*: 3 " "$GK_SCRATCH/export.out" &&
		grep -q "done: va" "$GK_SCRATCH/export.out"'

# Transparent mode, under the real shepherd (root only).
if [ "$(id -u)" -ne 0 ]; then
	for i in $(seq 6); do tap_skip "needs root (the shepherd refuses to run without it)"; done
	exit 0
fi
FAKE=$GK_SCRATCH/criu
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "Version: 4.1"; exit 0; }\nexit 1\n' >"$FAKE"
chmod 0755 "$FAKE"
T=$GK_SCRATCH/transparent
env "${GK_STANDIN_ENV[@]}" GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$FAKE" --dir "$T" \
	--uid 0 --gid 0 -- env "${GK_RUNTIME_ENV[@]}" GPUCKPT_LOG_LEVEL=info GPUCKPT_MODE=transparent \
	"$PROG" --steps 12 --delay-ms 150 --survive-term >"$GK_SCRATCH/t.out" 2>"$GK_SCRATCH/t.err" &
spid=$!
for _ in $(seq 300); do grep -q "step 3" "$GK_SCRATCH/t.out" 2>/dev/null && break; sleep 0.1; done
kill -TERM $spid
wait $spid
check "transparent: the runtime wrote mapped memory itself (not left to the driver)" \
	grep -q "transparent: .*wrote [1-9][0-9]* bytes .*released [1-9][0-9]* bytes" "$GK_SCRATCH/t.err"
check "... and gave back the physical memory under the program's own mappings" \
	grep -q "vmm: released [1-9][0-9]* bytes in 2 mappings" "$GK_SCRATCH/t.err"
check "... re-created them at the same addresses with the same access after the shepherd gave up" \
	grep -q "vmm: mapped 2 mappings again" "$GK_SCRATCH/t.err"
check "... and the program, which handles SIGTERM itself, went on" \
	grep -q "SIGTERM seen 1 time" "$GK_SCRATCH/t.out"
got=$(sed -n 's/^prog-vmm: done: va .* sum //p' "$GK_SCRATCH/t.out")
check "... and finished with the uninterrupted checksum ($got)" test -n "$got" -a "$got" = "$ref"

# Exported memory in transparent mode: the runtime refuses before anything is
# written (REFUSE ipc), naming it; the shepherd names the process.
E=$GK_SCRATCH/transparent-export
env "${GK_STANDIN_ENV[@]}" GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$FAKE" --dir "$E" \
	--uid 0 --gid 0 -- env "${GK_RUNTIME_ENV[@]}" GPUCKPT_LOG_LEVEL=info GPUCKPT_MODE=transparent \
	"$PROG" --steps 12 --delay-ms 150 --survive-term --export >"$GK_SCRATCH/e.out" 2>"$GK_SCRATCH/e.err" &
spid=$!
for _ in $(seq 300); do grep -q "step 3" "$GK_SCRATCH/e.out" 2>/dev/null && break; sleep 0.1; done
kill -TERM $spid
wait $spid
check "transparent: exported mapped memory is refused by the runtime and the shepherd, nothing written" \
	eval 'grep -q "transparent: refused, no checkpoint taken: this process holds device memory exported to other processes" "$GK_SCRATCH/e.err" &&
		grep -q "transparent: no checkpoint of pid [0-9]*: pid [0-9]* holds device memory shared with another process" "$GK_SCRATCH/e.err" &&
		! grep -q "vmm: released" "$GK_SCRATCH/e.err" &&
		test -z "$(ls -A "$E" 2>/dev/null | grep -vx gpuckpt.events)"'
