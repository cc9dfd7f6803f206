#!/bin/bash
# Interruptible long kernels (gpuckpt_kernel.h, issue 31) on the CUDA driver
# stand-in: prog-kernels runs one marked kernel per step; its host "kernel"
# (kern_kernels_host.c) follows the protocol of gpuckpt_kernel.cuh, slowly.
# A signal in the middle of the kernel: the runtime raises the stop word,
# the blocks not started return at once, the log names the kernel and how
# many blocks ran (fewer than all), the checkpoint is committed, and a
# restore runs only the rest, to the uninterrupted result (the program
# checks every element against the sum computed on the host: an element
# added twice or never is a wrong checksum). Both modes (blocks; loops with
# saved positions), SIGTERM, SIGUSR1 and the interval; a cooperative launch of a marked
# kernel refused by name; the drain's log naming the kernel it waited for,
# also while it waits. The same through a CUkernel handle (--via-kernel), as the
# CUDA runtime launches (cudart 12 and later), with the kernel marked by its
# CUfunction, as gpuckpt_kernel_function gives it.
# The stand-in is no evidence for a GPU: tests/gpu/kernel-interrupt.sh is.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/runtime/prog-kernels
MODULE=$top_builddir/tests/runtime/.libs/kern_kernels_host.so
tap_plan 35
gk_scratch
gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$PROG" "$MODULE" "$GK_RUNTIME"
export GPUCKPT_LOG_LEVEL=info

checksum() { sed -n 's/^done: checksum=\(0x[0-9a-f]*\) expected=\(0x[0-9a-f]*\)$/\1 \2/p' "$1"; }
good() { local c; c=$(checksum "$1"); [ -n "$c" ] && [ "${c% *}" = "${c#* }" ]; }
show() { tap_diag "$(tail -n 12 "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err" 2>/dev/null)"; }
expect() {
	local desc=$1 name=$2; shift 2
	if "$@"; then tap_ok "$desc"; else tap_not_ok "$desc"; show "$name"; fi
}
wait_for() { # NAME PATTERN: until the run's output shows it (20 s at most)
	for _ in $(seq 200); do
		grep -q "$2" "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
start() { # NAME ENV... -- ARGS...: prog-kernels in the background
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${GK_RUNTIME_ENV[@]}" "${envs[@]}" "$PROG" --module "$MODULE" "$@" \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	PID=$!
}
# executed NAME: "X Y" of the run's "interrupted" line
executed() {
	sed -n 's/.*kernel kmc: interrupted for a checkpoint .*: \([0-9]*\) of \([0-9]*\) [a-z]* executed.*/\1 \2/p' \
		"$GK_SCRATCH/$1.err" | head -1
}
in_middle() { local e; e=$(executed "$1"); [ -n "$e" ] && [ "${e% *}" -gt 0 ] && [ "${e% *}" -lt "${e#* }" ]; }

# --- blocks, never interrupted ------------------------------------------------
BLK=(--mode blocks --steps 3 --blocks 64 --threads 32)
start plain GPUCKPT_DIR="$GK_SCRATCH/plain" -- "${BLK[@]}" --delay-us 0
wait $PID
expect "a marked kernel never interrupted gives the expected result" plain good "$GK_SCRATCH/plain.out"
expect "... in one launch per step (no 'interrupted' line)" plain \
	test "$(grep -c 'interrupted for a checkpoint' "$GK_SCRATCH/plain.err")" = 0

# --- blocks, SIGTERM in the middle of step 1's kernel -----------------------------
D=$GK_SCRATCH/term
start term GPUCKPT_DIR="$D" -- "${BLK[@]}" --delay-us 20000
wait_for term "step 1: launched"; sleep 0.5
kill -TERM $PID; wait $PID; status=$?
expect "SIGTERM in the middle of a kernel: checkpoint, then the program ends by SIGTERM ($status)" term \
	test $status -eq 143
expect "the log names the interrupted kernel and its executed blocks, fewer than all ($(executed term))" term \
	in_middle term
expect "... of the kernel of step 1, which never said it was done" term \
	test "$(grep -c 'step 1: done' "$GK_SCRATCH/term.out")" = 0
expect "the checkpoint was committed after the interruption (ckpt.000001, step 1)" term \
	sh -c "test -f '$D/ckpt.000001/manifest.json' && grep -q '\"step\": *1' '$D/ckpt.000001/manifest.json' &&
		grep -n 'interrupted for a checkpoint' '$GK_SCRATCH/term.err' | head -1 | cut -d: -f1 >'$GK_SCRATCH/l1' &&
		grep -n 'ckpt.000001: wrote' '$GK_SCRATCH/term.err' | head -1 | cut -d: -f1 >'$GK_SCRATCH/l2' &&
		test \$(cat '$GK_SCRATCH/l1') -lt \$(cat '$GK_SCRATCH/l2')"
expect "the drain's log names the kernel it waited for (kmc)" term \
	grep -q "checkpoint: drained in [0-9.]* s; the last kernel launched was kmc" "$GK_SCRATCH/term.err"
start resume GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto -- "${BLK[@]}" --delay-us 0
wait $PID; status=$?
expect "restored, it resumes at step 1" resume grep -q "^resumed from step 1$" "$GK_SCRATCH/resume.out"
e=$(executed term)
expect "... the kernel from its record: the same ${e% *} of 64 blocks executed, only the rest runs" resume \
	grep -q "kernel kmc: resumed from its record: ${e% *} of 64 blocks executed" "$GK_SCRATCH/resume.err"
expect "... and ends with the uninterrupted result ($status)" resume \
	sh -c "test $status -eq 0 && grep -q '^step 2: done' '$GK_SCRATCH/resume.out'"
expect "... every element added once per step (checksum = expected)" resume good "$GK_SCRATCH/resume.out"

# --- blocks, SIGUSR1: checkpoint in the middle, the program goes on ------------------
D=$GK_SCRATCH/usr1
start usr1 GPUCKPT_DIR="$D" -- "${BLK[@]}" --delay-us 20000 --steps 1
wait_for usr1 "step 0: launched"; sleep 0.5
kill -USR1 $PID; wait $PID; status=$?
expect "SIGUSR1 in the middle of a kernel: the program goes on to its end ($status)" usr1 test $status -eq 0
expect "... after the kernel was interrupted in its middle ($(executed usr1))" usr1 in_middle usr1
expect "... and a checkpoint committed" usr1 test -f "$D/ckpt.000001/manifest.json"
expect "... the kernel relaunched for the rest: 2 launches, 1 interrupted" usr1 \
	grep -q "kernel kmc: finished: 2 launches, 1 interrupted" "$GK_SCRATCH/usr1.err"
expect "... with the uninterrupted result" usr1 good "$GK_SCRATCH/usr1.out"
start usr1r GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto -- "${BLK[@]}" --delay-us 0 --steps 1
wait $PID
expect "a restore of that checkpoint also ends with the uninterrupted result" usr1r \
	sh -c "grep -q '^resumed from step 0$' '$GK_SCRATCH/usr1r.out' && grep -q 'kmc: resumed from its record' '$GK_SCRATCH/usr1r.err'"
expect "... (checksum = expected)" usr1r good "$GK_SCRATCH/usr1r.out"

# --- the periodic checkpoint interrupts the kernel too -------------------------------
D=$GK_SCRATCH/interval
start interval GPUCKPT_DIR="$D" GPUCKPT_INTERVAL=1 -- "${BLK[@]}" --delay-us 40000 --steps 1
wait $PID; status=$?
expect "GPUCKPT_INTERVAL=1, a 2.6-s kernel: interrupted in its middle for the periodic checkpoint ($(executed interval))" interval \
	sh -c "test $status -eq 0 && test -f '$D/ckpt.000001/manifest.json' &&
		grep -q 'kernel kmc: finished: [2-9] launches, [1-9] interrupted' '$GK_SCRATCH/interval.err'"
expect "... and ends with the uninterrupted result" interval good "$GK_SCRATCH/interval.out"

# --- loop mode: positions saved per thread -------------------------------------------
LOOP=(--mode loop --steps 2 --blocks 4 --threads 8 --rounds 40)
D=$GK_SCRATCH/loop
start loop GPUCKPT_DIR="$D" -- "${LOOP[@]}" --delay-us 2000
wait_for loop "step 0: launched"; sleep 0.5
kill -TERM $PID; wait $PID; status=$?
expect "loop mode, SIGTERM in the middle: checkpoint, ends by SIGTERM ($status)" loop test $status -eq 143
expect "... the log says how many threads finished their loop, fewer than all ($(executed loop))" loop \
	in_middle loop
start loopr GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto -- "${LOOP[@]}" --delay-us 0
wait $PID
expect "... restored, each thread goes on from its saved round: the uninterrupted result" loopr \
	sh -c "grep -q 'kmc: resumed from its record' '$GK_SCRATCH/loopr.err' && grep -q '^done: ' '$GK_SCRATCH/loopr.out'"
expect "... (checksum = expected: no round run twice or skipped)" loopr good "$GK_SCRATCH/loopr.out"

# --- what is refused, what the drain says ---------------------------------------------
start coop GPUCKPT_DIR="$GK_SCRATCH/coop" -- "${BLK[@]}" --coop
wait $PID
expect "cuLaunchCooperativeKernel of a marked kernel is refused (CUDA_ERROR_NOT_SUPPORTED), by name" coop \
	sh -c "grep -q '^cooperative marked: 801$' '$GK_SCRATCH/coop.out' &&
		grep -q 'launch: kmc: cuLaunchCooperativeKernel .* of a kernel marked interruptible is refused' '$GK_SCRATCH/coop.err'"
expect "... so is cuLaunchKernelEx with the cooperative attribute" coop \
	sh -c "grep -q '^cooperative-attribute marked: 801$' '$GK_SCRATCH/coop.out' &&
		grep -q 'launch: kmc: cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE of a kernel marked' '$GK_SCRATCH/coop.err'"
expect "... an unmarked kernel's cooperative launch is not refused by gpuckpt (one refusal line each)" coop \
	test "$(grep -c 'is refused' "$GK_SCRATCH/coop.err")" = 2
# cudart 12+ launches a CUkernel (cuLibraryGetKernel) cast to CUfunction, while
# cudaGetFuncBySymbol (gpuckpt_kernel_function) gives the CUfunction that marks
# it: on an H200 (CUDA 13), a cooperative launch of a marked kernel went through.
start coopk GPUCKPT_DIR="$GK_SCRATCH/coopk" -- "${BLK[@]}" --coop --via-kernel
wait $PID
expect "through its CUkernel handle, as cudart launches: cuLaunchCooperativeKernel of the marked kernel is refused, by its marked name" coopk \
	sh -c "grep -q '^cooperative marked: 801$' '$GK_SCRATCH/coopk.out' &&
		grep -q 'launch: kmc: cuLaunchCooperativeKernel .* of a kernel marked interruptible is refused' '$GK_SCRATCH/coopk.err'"
expect "... so is cuLaunchKernelEx with the cooperative attribute; an unmarked CUkernel is not (one refusal line each)" coopk \
	sh -c "grep -q '^cooperative-attribute marked: 801$' '$GK_SCRATCH/coopk.out' &&
		grep -q 'launch: kmc: cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_COOPERATIVE of a kernel marked' '$GK_SCRATCH/coopk.err' &&
		test \$(grep -c 'is refused' '$GK_SCRATCH/coopk.err') = 2"
start drain GPUCKPT_DIR="$GK_SCRATCH/drain" -- "${BLK[@]}" --blocks 80 --delay-us 30000 --drain
wait $PID
expect "a kernel launched outside the helper is waited for: the drain's notice names it and how long" drain \
	grep -q "checkpoint: the drain waited [1-9]\.[0-9]* s for the GPU's work; the last kernel launched was kmc, .*it is marked interruptible, but was launched other than through gpuckpt_kernel_run" \
	"$GK_SCRATCH/drain.err"
# While it waits, not only after: a job that Slurm kills in the middle of the
# drain (a kernel longer than KillWait) still says which kernel held it.
expect "... and while it waits: a notice after 1 s names the kernel, before the drain ends" drain \
	sh -c "grep -n 'checkpoint: the drain has waited 1 s so far for the GPU.s work; the last kernel launched was kmc, ' '$GK_SCRATCH/drain.err' | head -1 | cut -d: -f1 >'$GK_SCRATCH/w1' &&
		grep -n 'checkpoint: the drain waited ' '$GK_SCRATCH/drain.err' | head -1 | cut -d: -f1 >'$GK_SCRATCH/w2' &&
		test -s '$GK_SCRATCH/w1' && test \$(cat '$GK_SCRATCH/w1') -lt \$(cat '$GK_SCRATCH/w2')"
# The drain's notices for a kernel launched through its CUkernel: named, not
# "kernel 0x...". Marked: by its marked name, from the drain and from the
# watching thread, which has no current context (the CUkernel's CUfunction
# is looked up in the context it was marked in).
start draink GPUCKPT_DIR="$GK_SCRATCH/draink" -- "${BLK[@]}" --blocks 80 --delay-us 30000 --drain --via-kernel
wait $PID
expect "through its CUkernel handle: the drain's notice names the marked kernel (kmc) and says it is marked" draink \
	grep -q "checkpoint: the drain waited [1-9]\.[0-9]* s for the GPU's work; the last kernel launched was kmc, .*it is marked interruptible, but was launched other than through gpuckpt_kernel_run" \
	"$GK_SCRATCH/draink.err"
expect "... so does the notice while it waits" draink \
	grep -q "checkpoint: the drain has waited 1 s so far for the GPU.s work; the last kernel launched was kmc, .*it is marked interruptible" \
	"$GK_SCRATCH/draink.err"
# Unmarked (tests/slurm/e2e-kernels.sh on a GPU): the driver's name of the
# CUkernel (cuKernelGetName; cuFuncGetName refuses a CUkernel).
start drainu GPUCKPT_DIR="$GK_SCRATCH/drainu" -- "${BLK[@]}" --blocks 80 --delay-us 30000 \
	--steps 2 --unmarked --host-ms 1000 --via-kernel
wait_for drainu "step 0: launched"; sleep 0.2
kill -TERM $PID; wait $PID
expect "an unmarked kernel launched through its CUkernel: the drain's notice names it (kmc_blocks), not 'kernel 0x...'" drainu \
	grep -q "checkpoint: the drain waited [1-9]\.[0-9]* s for the GPU's work; the last kernel launched was kmc_blocks, .*mark it interruptible" \
	"$GK_SCRATCH/drainu.err"
expect "... so does the notice while it waits" drainu \
	grep -q "checkpoint: the drain has waited 1 s so far for the GPU.s work; the last kernel launched was kmc_blocks, .*mark it interruptible" \
	"$GK_SCRATCH/drainu.err"
tap_done
