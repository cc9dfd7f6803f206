#!/bin/bash
# Managed memory (cuMemAllocManaged) checkpointed and restored, on the CUDA
# driver stand-in (runtime/core/interpose/managed.c, steer.c). The stand-in
# places managed memory as the driver does: a PROT_NONE reservation through
# libc's mmap, the memory mapped at the first 32 MiB boundary inside it, so
# the address comes from the process's mmap layout.
# GPUCKPT_STANDIN_MANAGED_BASE gives that layout a hint: a run with it gets
# other addresses than one without, as a restarted process on a GPU does.
# prog-uvm writes two managed arrays from the host and the "device" in turn
# every step and prints their checksum at the end:
#   - application checkpoint (SIGTERM at step 15), its region names carrying
#     the driver's reservation; a fresh run with another layout gets another
#     address (what a restore would get without steering); the restore, with
#     that other layout and on another emulated GPU, gets the checkpointed
#     addresses (the runtime placed the reservations), pointers kept in host
#     and device memory intact, the uninterrupted checksum; the placement the
#     program asked for (cuMemAdvise, cuMemPrefetchAsync) applied again;
#   - more managed memory than the emulated GPU has, restored onto a GPU with
#     less: managed memory is not device memory, both work;
#   - a restore whose reservation cannot be placed (the program has a page
#     at the address) is refused, naming both addresses and why, and the
#     program starts afresh;
#   - transparent mode under the real gpuckpt-shepherd (the stand-in has no
#     checkpoint API, so the shepherd aborts), with the layout hint on, so
#     that an allocation made again would land elsewhere: managed memory
#     given back to the driver before the driver's part and re-created at
#     the same addresses after it, the program going on to the same checksum;
#   - the same with another thread's mmap landing in each range the driver
#     gives back the moment it does (GPUCKPT_STANDIN_INTRUDER): the runtime
#     holds those ranges in the same step (steer.c's munmap), so the
#     allocations still come back at their addresses (both points failed,
#     "File exists", before; under ASan in CI, one run in sixty did so
#     without the stand-in's help).
# What only a GPU shows (the real driver's reservations, CRIU, UVM
# migration) is tests/gpu/managed.sh.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
B=$top_builddir/tests/runtime
SHEP=$top_builddir/runtime/gpuckpt-shepherd
PROG=$B/prog-uvm
tap_plan 20
gk_scratch
gk_need_built "$PROG" "$SHEP" "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME"
unset CUDA_VISIBLE_DEVICES GPUCKPT_SHEPHERD GPUCKPT_RESTORE GPUCKPT_MODE GPUCKPT_STANDIN_MANAGED_BASE
OTHER=0x6e0000000000

check() { # DESCRIPTION COMMAND...
	local desc=$1; shift
	if "$@"; then tap_ok "$desc"; else
		tap_not_ok "$desc"; tap_diag "$(tail -n 15 "$GK_SCRATCH/err" 2>/dev/null)"
	fi
}
sum_of() { sed -n 's/^prog-uvm: done: .*checksum \([0-9a-f]*\)$/\1/p' "$1"; }
addr_a() { sed -n 's/^prog-uvm: .*: a=\(0x[0-9a-f]*\) b=.*/\1/p' "$1"; }
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
A1=$(addr_a "$GK_SCRATCH/app1.out")
check "a checkpoint of a process holding managed memory is written (status $status)" \
	test -d "$D/ckpt.000001" -a $status -eq 143
check "... naming no refusal" \
	test -z "$(grep -i "refused" "$GK_SCRATCH/app1.err")"
# 512 KiB rounded to 2 MiB, plus 32 MiB less a page: 0x21ff000.
check "... each managed allocation a region named with the driver's reservation" \
	test "$(grep -o '"gpuckpt\.managed\.[01]\.[0-9a-f]*\.[0-9a-f]*\.21ff000"' \
		"$D/ckpt.000001/manifest.json" 2>/dev/null | wc -l)" -eq 2
# Without steering: a fresh run with the other layout has its memory elsewhere.
run fresh GPUCKPT_DIR="$GK_SCRATCH/none3" GPUCKPT_STANDIN_MANAGED_BASE=$OTHER -- --steps 2
check "a fresh run with another mmap layout gets another address ($(addr_a "$GK_SCRATCH/fresh.out") vs ${A1:-none})" \
	test -n "$A1" -a "$(addr_a "$GK_SCRATCH/fresh.out")" = "$OTHER"
run app2 GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto CUDA_VISIBLE_DEVICES=1 GPUCKPT_STANDIN_TRACE=1 \
	GPUCKPT_STANDIN_MANAGED_BASE=$OTHER GPUCKPT_LOG_LEVEL=debug -- --steps 30
check "restored with that layout on the other emulated GPU: the checkpointed address ($(addr_a "$GK_SCRATCH/app2.out")), pointers intact in host and device memory" \
	test -n "$(grep "restored at step 16, pointers intact" "$GK_SCRATCH/app2.out")" -a \
	"$(addr_a "$GK_SCRATCH/app2.out")" = "$A1"
check "... because the runtime placed the driver's reservations where they were" \
	test "$(grep -c "managed: allocation [01]: the driver's reservation placed at" "$GK_SCRATCH/app2.err")" -eq 2
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

# The reservation's place is taken in the restarted process: refused by
# name, never loaded.
D=$GK_SCRATCH/moved
run mv1 GPUCKPT_DIR="$D" -- --steps 30 --stop-at 15
AM=$(addr_a "$GK_SCRATCH/mv1.out")
run mv2 GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto GPUCKPT_STANDIN_MANAGED_BASE=$OTHER -- --steps 30 \
	--block "${AM:-0}"
check "a reservation that cannot be placed again: the restore is refused, naming both addresses and why" \
	grep -q "restore: .*not restored[^:]*: managed allocation 0 .* is at $OTHER.* the checkpoint has it at ${AM:-none} .*could not be placed there again: File exists" \
	"$GK_SCRATCH/mv2.err"
check "... and nothing is loaded: the program starts afresh, as GPUCKPT_ON_BAD_CHECKPOINT's default says (status $status)" \
	test -z "$(grep "restored at step" "$GK_SCRATCH/mv2.out")" -a \
	-n "$(grep "fresh start" "$GK_SCRATCH/mv2.out")"

# Transparent mode, under the real shepherd.
if [ "$(id -u)" -ne 0 ]; then
	for i in 1 2 3 4 5 6 7; do tap_skip "needs root (the shepherd refuses to run without it)"; done
	tap_done
	exit 0
fi
FAKE=$GK_SCRATCH/criu
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "Version: 4.1"; exit 0; }\nexit 1\n' >"$FAKE"
chmod 0755 "$FAKE"
D=$GK_SCRATCH/transparent
env "${GK_STANDIN_ENV[@]}" GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$FAKE" --dir "$D" \
	--uid 0 --gid 0 -- env "${GK_RUNTIME_ENV[@]}" GPUCKPT_LOG_LEVEL=info GPUCKPT_MODE=transparent \
	GPUCKPT_STANDIN_MANAGED_BASE=$OTHER \
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

D=$GK_SCRATCH/intruder
env "${GK_STANDIN_ENV[@]}" GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$FAKE" --dir "$D" \
	--uid 0 --gid 0 -- env "${GK_RUNTIME_ENV[@]}" GPUCKPT_LOG_LEVEL=info GPUCKPT_MODE=transparent \
	GPUCKPT_STANDIN_MANAGED_BASE=$OTHER GPUCKPT_STANDIN_INTRUDER=1 \
	"$PROG" --steps 30 --term-at 15 >"$GK_SCRATCH/in.out" 2>"$GK_SCRATCH/err"
status=$?
check "intruder: managed memory given back to the driver, another thread's mmap ready at each range it frees" \
	grep -q "managed: 2 allocations (1048576 bytes) moved to host memory" "$GK_SCRATCH/err"
check "intruder: re-created at the same addresses all the same" \
	grep -q "managed: 2 allocations back at their addresses" "$GK_SCRATCH/err"
check "intruder: the uninterrupted checksum (status $status)" \
	test "$(sum_of "$GK_SCRATCH/in.out")" = "$REF" -a $status -eq 0
tap_done
