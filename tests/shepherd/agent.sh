#!/bin/bash
# The runtime's side of transparent mode (runtime/core/control/agent.c) against the
# real gpuckpt-shepherd, on the CUDA driver stand-in: the stand-in has no
# checkpoint API, so the shepherd answers ABORT, and the runtime must then
# have dumped and released device memory, loaded it back, removed its .tmp
# folder and let SIGTERM end the program as it would without gpuckpt. (The
# path where the shepherd locks, CRIU dumps and the process comes back needs
# CRIU and a GPU: tests/slurm/e2e-transparent.sh and benchmarks/transparent.)
# Then a program holding managed memory, which the driver's checkpoint cannot
# hold: the runtime moves it out of the driver's way and back (managed.h). And a program whose context a faulting kernel broke:
# one reason from each side (REFUSE broken), no protocol error, nothing
# written. And SIGTERM to the shepherd alone under Slurm (proctrack/cgroup
# signals only slurmstepd's children): the runtime hears of it from the
# shepherd.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
HEAT=$top_builddir/examples/heat/heat-drv
MODULE=$top_builddir/examples/heat/.libs/heat_kernels_host.so
UNAWARE=$top_builddir/tests/runtime/prog-unaware
SLACK=$top_builddir/tests/gpu/gpu-slack
SLACK_MODULE=$top_builddir/tests/gpu/.libs/slack_kernels_host.so
DTOH=$top_builddir/tests/shepherd/prog-dtoh
PLAN=22
tap_plan $PLAN
gk_scratch

gk_need_built "$SHEP" "$HEAT" "$MODULE" "$UNAWARE" "$SLACK" "$SLACK_MODULE" "$DTOH" \
	"$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME"
if [ "$(id -u)" -ne 0 ]; then
	for i in $(seq $PLAN); do tap_skip "needs root (the shepherd refuses to run without it)"; done
	exit 0
fi

FAKE=$GK_SCRATCH/criu
printf '#!/bin/sh\n[ "$1" = --version ] && { echo "Version: 4.1"; exit 0; }\nexit 1\n' >"$FAKE"
chmod 0755 "$FAKE"
D=$GK_SCRATCH/ckpt
ARGS=(--size 96 --steps 400 --report-every 10 --module "$MODULE" --delay-ms 10)
check() { # DESCRIPTION COMMAND...
	local desc=$1; shift
	if "$@"; then tap_ok "$desc"; else
		tap_not_ok "$desc"; tap_diag "$(tail -n 20 "$GK_SCRATCH/err")"
	fi
}

# sigterm_under_shepherd READY ENV-OR-PROGRAM...: run it with the runtime
# under `gpuckpt-shepherd run`, SIGTERM the shepherd once the program printed
# READY (outside Slurm the shepherd passes the signal on); $status is the
# shepherd's exit status.
sigterm_under_shepherd() {
	local ready=$1 spid
	shift
	# Not the last run's output: its READY line made the wait end at once,
	# and SIGTERM then hit the new shell before it even opened these files
	# (status 143, the last run's lines read as this one's: points 13-19
	# failed that way under load).
	rm -f "$GK_SCRATCH/out" "$GK_SCRATCH/err"
	env "${GK_STANDIN_ENV[@]}" GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$FAKE" --dir "$D" \
		--uid 0 --gid 0 -- env "${GK_RUNTIME_ENV[@]}" GPUCKPT_LOG_LEVEL=info "$@" \
		>"$GK_SCRATCH/out" 2>"$GK_SCRATCH/err" &
	spid=$!
	for _ in $(seq 300); do grep -q "$ready" "$GK_SCRATCH/out" 2>/dev/null && break; sleep 0.1; done
	kill -TERM $spid
	wait $spid
	status=$?
}

# heat-drv uses the API; GPUCKPT_MODE=transparent makes it checkpoint
# transparently all the same.
sigterm_under_shepherd "step 100" GPUCKPT_MODE=transparent "$HEAT" "${ARGS[@]}"

check "the program ends by SIGTERM, as it would without gpuckpt ($status)" test $status -eq 143
check "the runtime wrote its part of the checkpoint and released device memory" \
	grep -q "transparent: .tmp.ckpt.000001.*: wrote [1-9][0-9]* bytes .*released [1-9][0-9]* bytes" "$GK_SCRATCH/err"
check "the shepherd said why it took no checkpoint" \
	grep -q "transparent: the shepherd took no checkpoint: .*checkpoint API\|cuCheckpoint" "$GK_SCRATCH/err"
check "the runtime loaded device memory back" \
	grep -q "transparent: device memory loaded: [1-9][0-9]* bytes" "$GK_SCRATCH/err"
check "then SIGTERM took its usual course, with one line saying so" \
	grep -q "no checkpoint taken on SIGTERM; the program ends as it would without gpuckpt" "$GK_SCRATCH/err"
check "no checkpoint was committed and no temporary folder is left" \
	test -z "$(ls -A "$D" 2>/dev/null | grep -vx gpuckpt.events)"
check "the program had not finished: it was stopped half-way" \
	test -z "$(grep 'done:' "$GK_SCRATCH/out")"

# Managed memory: no longer refused. The runtime moves it into host memory
# and gives it back to the driver before the driver's part, and after it
# (here: the shepherd's abort) has it back at the same address.
rm -rf "$D"
sigterm_under_shepherd ready "$UNAWARE" --managed
check "a program holding managed memory ends by SIGTERM ($status)" test $status -eq 143
check "the runtime did not refuse it: moved to host memory, given back to the driver" \
	grep -q "managed: 1 allocations (1048576 bytes) moved to host memory and given back to the driver" "$GK_SCRATCH/err"
# The process mapped other things since the allocation; the parts of the
# driver's reservation that the driver gave back were held by the runtime,
# so the reservation is made at the same place again.
check "after the shepherd's abort, back at its address" \
	grep -q "managed: 1 allocations back at their addresses" "$GK_SCRATCH/err"
check "no refusal named, and nothing committed" \
	test -z "$(grep "refused\|holds managed" "$GK_SCRATCH/err")" -a -z "$(ls -A "$D" 2>/dev/null | grep -vx gpuckpt.events)"

# Memory shared with another process (here: a pool pointer exported): the
# runtime sends REFUSE ipc, the shepherd names it, nothing is written.
rm -rf "$D"
sigterm_under_shepherd ready "$UNAWARE" --pool-export
check "a program that shared pool memory ends by SIGTERM, not checkpointed ($status)" \
	test $status -eq 143
check "the runtime refused, naming memory shared between processes" \
	grep -q "transparent: refused, no checkpoint taken: this process holds memory pool pointers shared between processes" "$GK_SCRATCH/err"
check "the shepherd said the same, and nothing was written" \
	test -z "$(ls -A "$D" 2>/dev/null | grep -vx gpuckpt.events)" -a -n "$(grep "transparent: no checkpoint of pid [0-9]*: pid [0-9]* holds device memory shared with another process" "$GK_SCRATCH/err")"

# SIGTERM to the shepherd alone, under Slurm: proctrack/cgroup signals only
# slurmstepd's children, which the shepherd is. The runtime must hear of it
# from the shepherd (it used to pass signals on only outside Slurm).
rm -rf "$D"
SLURM_JOB_ID=4242 sigterm_under_shepherd "step 100" GPUCKPT_MODE=transparent "$HEAT" "${ARGS[@]}"
check "under Slurm, SIGTERM to the shepherd alone: the shepherd passes it to the runtime" \
	grep -q "transparent: signal 15: checkpointing pid [0-9]* (passed on to 1 process(es) with the runtime)" "$GK_SCRATCH/err"
check "... which writes its part and releases device memory, and the program ends by SIGTERM ($status)" \
	test $status -eq 143 -a -n "$(grep "transparent: .tmp.ckpt.000001.*: wrote [1-9][0-9]* bytes .*released [1-9][0-9]* bytes" "$GK_SCRATCH/err")"

# A device-to-host copy while device memory is released: prog-dtoh's second
# thread copies in a tight loop (no call the gate held before), its first
# does host work. The copies must wait at the gate while the runtime has the
# memory released, not read memory that is gone (heat-drv's report copy hit
# that now and then: CUDA_ERROR_INVALID_VALUE, status 1 instead of 143).
rm -rf "$D"
sigterm_under_shepherd "step 20" "$DTOH" 400
check "a copy to the host on another thread while device memory is released: the program ends by SIGTERM, no failed or wrong copy ($status)" \
	test $status -eq 143 -a -z "$(grep "cuMemcpyDtoH" "$GK_SCRATCH/out")"
check "... and the memory was released and loaded back meanwhile" \
	test -n "$(grep "transparent: .tmp.ckpt.000001.*: wrote [1-9][0-9]* bytes .*released [1-9][0-9]* bytes" "$GK_SCRATCH/err")"

# A broken context: gpu-slack reads 3 MiB before its arrays, beyond the
# runtime's guards; its kernel faults and it goes on, as srad would. Before,
# this gave "cannot set up staging buffers", a protocol error and the
# driver's CUDA_ERROR_NOT_INITIALIZED.
rm -rf "$D"
sigterm_under_shepherd "step 20" GPUCKPT_MODE=transparent "$SLACK" --module "$SLACK_MODULE" \
	--edges all --size 524288 --steps 3000 --report-every 10 --delay-ms 10 --slack 3145728 \
	--keep-going
check "a program with a broken context ends by SIGTERM, not checkpointed ($status)" \
	test $status -eq 143
check "the runtime says once that the context is broken, naming the error" \
	test "$(grep -c "transparent: the program's CUDA context is broken (CUDA_ERROR_ILLEGAL_ADDRESS): no checkpoint possible" "$GK_SCRATCH/err")" = 1
check "the shepherd says the same, naming the process" \
	grep -q "transparent: no checkpoint of pid [0-9]*: pid [0-9]*: the program's CUDA context is broken (CUDA_ERROR_ILLEGAL_ADDRESS): no checkpoint possible" "$GK_SCRATCH/err"
check "no other error: no staging failure, no protocol error, nothing written" \
	test -z "$(ls -A "$D" 2>/dev/null | grep -vx gpuckpt.events)" -a -z "$(grep "staging\|not a message of the protocol\|cuCheckpointProcessLock\|draining failed" "$GK_SCRATCH/err")"
tap_done
