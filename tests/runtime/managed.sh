#!/bin/bash
# Managed memory (cuMemAllocManaged) checkpointed and restored, on the CUDA
# driver stand-in (runtime/core/managed.c). prog-uvm writes two managed
# arrays from the host and the "device" in turn every step and prints their
# checksum at the end:
#   - application checkpoint (SIGTERM at step 15), restore on another
#     emulated GPU: the same managed addresses, pointers kept in host and
#     device memory intact, the uninterrupted checksum; the placement the
#     program asked for (cuMemAdvise, cuMemPrefetchAsync) applied again;
#   - more managed memory than the emulated GPU has, restored onto a GPU with
#     less: managed memory is not device memory, both work;
#   - a restore whose managed allocation comes back at another address is
#     refused, naming both addresses;
#   - transparent mode under the real gpuckpt-shepherd (the stand-in has no
#     checkpoint API, so the shepherd aborts): managed memory given back to
#     the driver before the driver's part and re-created at the same
#     addresses after it, the program going on to the same checksum.
# What only a GPU shows (the real driver's addresses, CRIU, UVM migration)
# is tests/gpu/managed.sh.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
B=$top_builddir/tests/runtime
SHEP=$top_builddir/runtime/gpuckpt-shepherd
PROG=$B/prog-uvm
tap_plan 14
gk_scratch
gk_need_built "$PROG" "$SHEP" "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME"
unset CUDA_VISIBLE_DEVICES GPUCKPT_SHEPHERD GPUCKPT_RESTORE GPUCKPT_MODE GPUCKPT_STANDIN_MANAGED_BASE

check() { # DESCRIPTION COMMAND...
	local desc=$1; shift
	if "$@"; then tap_ok "$desc"; else
		tap_not_ok "$desc"; tap_diag "$(tail -n 15 "$GK_SCRATCH/err" 2>/dev/null)"
	fi
}
sum_of() { sed -n 's/^prog-uvm: done: .*checksum \([0-9a-f]*\)$/\1/p' "$1"; }
run() { # OUT ENV... -- ARGS...
	local out=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${GK_RUNTIME_ENV[@]}" GPUCKPT_LOG_LEVEL=info GPUCKPT_STANDIN_GPUS=2 "${envs[@]}" \
		"$PROG" "$@" >"$GK_SCRATCH/$out.out" 2>"$GK_SCRATCH/err"
	status=$?
	cat "$GK_SCRATCH/err" >>"$GK_SCRATCH/$out.err"
}

# The reference: no checkpoint at all.
run ref GPUCKPT_DIR="$GK_SCRATCH/none" -- --steps 30
REF=$(sum_of "$GK_SCRATCH/ref.out")
check "uninterrupted run: checksum ${REF:-none}" test -n "$REF" -a $status -eq 0

# Application checkpoint at step 15, restore on the other GPU.
D=$GK_SCRATCH/app
run app1 GPUCKPT_DIR="$D" -- --steps 30 --stop-at 15
check "a checkpoint of a process holding managed memory is written (status $status)" \
	test -d "$D/ckpt.000001" -a $status -eq 143
check "... naming no refusal" \
	test -z "$(grep -i "refused" "$GK_SCRATCH/app1.err")"
run app2 GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto CUDA_VISIBLE_DEVICES=1 GPUCKPT_STANDIN_TRACE=1 \
	-- --steps 30
check "restored on the other emulated GPU, managed pointers intact in host and device memory" \
	grep -q "restored at step 16, pointers intact" "$GK_SCRATCH/app2.out"
check "... and goes on to the uninterrupted checksum ($(sum_of "$GK_SCRATCH/app2.out"))" \
	test "$(sum_of "$GK_SCRATCH/app2.out")" = "$REF" -a -n "$(grep "restored at step 16" "$GK_SCRATCH/app2.out")"
# The program prefetched array a to device 0 before the checkpoint; after the
# load the runtime does it again (type 1: a device) before the program's
# next step.
check "the program's prefetch to the device is applied again after the load" \
	test -n "$(sed -n '/restore: .*loaded/,$p' "$GK_SCRATCH/app2.err" | grep 'cuMemPrefetchAsync.*type=1 id=0')"

# More managed memory than the GPU has (2 x 40 MB on a 32 MiB GPU), restored
# onto a GPU with 8 MiB: handled, as the driver handles it (managed memory
# is paged in, not reserved on the device).
D=$GK_SCRATCH/over
MEM=GPUCKPT_STANDIN_MEMORY=32M,8M
run over0 $MEM GPUCKPT_DIR="$GK_SCRATCH/none2" -- --steps 6 --words 5000000
OREF=$(sum_of "$GK_SCRATCH/over0.out")
run over1 $MEM GPUCKPT_DIR="$D" -- --steps 6 --words 5000000 --stop-at 2
check "80 MB of managed memory on a 32 MiB GPU: checkpointed (status $status)" \
	test -d "$D/ckpt.000001" -a $status -eq 143 -a -n "$OREF"
run over2 $MEM GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto CUDA_VISIBLE_DEVICES=1 -- --steps 6 \
	--words 5000000
check "... and restored onto an 8 MiB GPU, with the uninterrupted checksum" \
	test "$(sum_of "$GK_SCRATCH/over2.out")" = "$OREF" -a -n "$(grep "restored at step 3" "$GK_SCRATCH/over2.out")"

# The driver gives another address: refused by name, never loaded.
D=$GK_SCRATCH/moved
run mv1 GPUCKPT_DIR="$D" -- --steps 30 --stop-at 15
run mv2 GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto GPUCKPT_STANDIN_MANAGED_BASE=0x6e0000000000 \
	-- --steps 30
check "managed memory back at another address: the restore is refused, naming both addresses" \
	grep -q "restore: .*not restored: managed allocation 0 .* is at 0x6e0000000000.* the checkpoint has it at 0x6f0000000000" \
	"$GK_SCRATCH/mv2.err"
check "... and nothing is loaded (status $status)" \
	test -z "$(grep "restored at step" "$GK_SCRATCH/mv2.out")" -a $status -ne 0

# Transparent mode, under the real shepherd.
if [ "$(id -u)" -ne 0 ]; then
	for i in 1 2 3 4; do tap_skip "needs root (the shepherd refuses to run without it)"; done
	tap_done
	exit 0
fi
FAKE=$GK_SCRATCH/criu
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "Version: 4.1"; exit 0; }\nexit 1\n' >"$FAKE"
chmod 0755 "$FAKE"
D=$GK_SCRATCH/transparent
env "${GK_STANDIN_ENV[@]}" GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$FAKE" --dir "$D" \
	--uid 0 --gid 0 -- env "${GK_RUNTIME_ENV[@]}" GPUCKPT_LOG_LEVEL=info GPUCKPT_MODE=transparent \
	"$PROG" --steps 30 --term-at 15 >"$GK_SCRATCH/tr.out" 2>"$GK_SCRATCH/err"
status=$?
cp "$GK_SCRATCH/err" "$GK_SCRATCH/tr.err"
check "transparent: no refusal for managed memory; the runtime wrote its part" \
	test -n "$(grep "transparent: .tmp.ckpt.000001.*: wrote [0-9]* bytes" "$GK_SCRATCH/tr.err")" \
	-a -z "$(grep "refused" "$GK_SCRATCH/tr.err")"
check "transparent: managed memory given back to the driver before its checkpoint" \
	grep -q "managed: 2 allocations (1048576 bytes) moved to host memory" "$GK_SCRATCH/tr.err"
check "transparent: re-created at the same addresses after it" \
	grep -q "managed: 2 allocations back at their addresses" "$GK_SCRATCH/tr.err"
check "transparent: the program went on to the uninterrupted checksum (status $status)" \
	test "$(sum_of "$GK_SCRATCH/tr.out")" = "$REF" -a $status -eq 0 -a \
	-n "$(grep "managed: 2 allocations back at their addresses" "$GK_SCRATCH/tr.err")"
tap_done
