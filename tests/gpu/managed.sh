#!/bin/bash
# managed.sh - managed memory (cudaMallocManaged) on a real GPU, in both modes
# (issue 30). gpu-uvm writes three managed arrays from kernels on two streams
# and from the host every step, with cudaMemAdvise, cudaMemPrefetchAsync and
# cudaStreamAttachMemAsync, and keeps their addresses in device memory and in
# a registered host region.
#
#   application mode: SIGTERM at step 60 (checkpoint, exit 143); restored on
#     the same GPU, then (a copy of the same checkpoint) on the other GPU when
#     there are two: managed pointers intact, the uninterrupted checksum;
#   transparent mode (root, CRIU 4): the same program under gpuckpt-shepherd
#     with GPUCKPT_MODE=transparent, SIGTERM at step 60, restored by CRIU and
#     the driver (onto the other GPU when there are two): managed memory moved
#     out of the driver's way and back at the same addresses, the checksum.
#
# The same addresses: the runtime notes the reservation libcuda makes
# through libc's mmap for each managed allocation (region names
# gpuckpt.managed.<order>.<address>.<offset>.<length>) and places it there
# again when the allocation is made again (runtime/core/interpose/steer.c);
# it refuses, naming both addresses, when the address still differs. Point 2
# asserts the driver's pattern was seen for every allocation; every address
# of every run, and each placed reservation, is printed as a TAP diagnostic. Keep --size small: never ask for more managed memory than the
# GPU has free (oversubscription can hang the GPU); 3 x 32 MiB here.
#
#   make -C build/tests check-gpu     (runs it), or alone:
#   top_srcdir=$PWD top_builddir=$PWD/build bash tests/gpu/managed.sh
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
RT=$top_builddir/runtime/.libs/libgpuckpt.so
PROG=$top_builddir/tests/gpu/gpu-uvm
VAR=$top_builddir/tests/gpu/gpu-uvm-var
PLAN=10
tap_plan $PLAN
gk_scratch
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset GPUCKPT_RESTORE GPUCKPT_MODE GPUCKPT_SHEPHERD

if ! nvidia-smi -L >/dev/null 2>&1; then
	for _ in $(seq $PLAN); do tap_skip "no GPU here (nvidia-smi -L failed)"; done
	exit 0
fi
if [ ! -x "$PROG" ]; then
	for _ in $(seq $PLAN); do tap_skip "gpu-uvm is not built (configure found no nvcc)"; done
	exit 0
fi
gk_need_built "$RT"
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
	ngpu=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
	first=${CUDA_VISIBLE_DEVICES%%,*}
	second=$(cut -d, -f2 <<<"$CUDA_VISIBLE_DEVICES")
else
	first=0 second=1
fi

ARGS=(--size 4194304 --steps 200 --report-every 10 --delay-ms 10)
sum() { sed -n 's/^gpu-uvm: done: .*checksum=\(0x[0-9a-f]*\)$/\1/p' "$1" | tail -n 1; }
addrs() { sed -n 's/^gpu-uvm: managed //p' "$1" | head -n 1; }
check() { # DESCRIPTION LOG COMMAND...
	local desc=$1 log=$2; shift 2
	if "$@"; then tap_ok "$desc"; else
		tap_not_ok "$desc"; tap_diag "$(grep -v '^gpu-uvm: step' "$log" 2>/dev/null | tail -n 12)"
	fi
}
# run_until NAME STEP ENV...: the program with the runtime, SIGTERM once it
# printed "step STEP"; $status is its exit status.
run_until() {
	local name=$1 at=$2 pid
	shift 2
	env CUDA_VISIBLE_DEVICES=$first LD_PRELOAD="$RT" GPUCKPT_LOG_LEVEL=info "$@" "$PROG" \
		"${ARGS[@]}" >"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	pid=$!
	for _ in $(seq 600); do
		grep -q "^gpu-uvm: step $at$" "$GK_SCRATCH/$name.out" 2>/dev/null && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM $pid 2>/dev/null
	wait $pid
	status=$?
}

CUDA_VISIBLE_DEVICES=$first timeout 120 "$PROG" "${ARGS[@]}" >"$GK_SCRATCH/ref.out" 2>&1
REF=$(sum "$GK_SCRATCH/ref.out")
tap_diag "reference (no runtime): ${REF:-none}; managed $(addrs "$GK_SCRATCH/ref.out")"

# ---- application mode ----
D=$GK_SCRATCH/app
run_until app1 60 GPUCKPT_DIR="$D"
tap_diag "checkpointed run: managed $(addrs "$GK_SCRATCH/app1.out")"
check "application mode: a process holding managed memory is checkpointed (status $status)" \
	"$GK_SCRATCH/app1.err" test -d "$D/ckpt.000001" -a "$status" = 143
names=$(grep -o '"gpuckpt\.managed\.[0-9a-f.]*"' "$D/ckpt.000001/manifest.json" 2>/dev/null | tr '\n' ' ')
tap_diag "checkpoint's managed regions: $names"
check "application mode: the driver's reservation was seen (libc mmap) for each of the 3 allocations" \
	"$GK_SCRATCH/app1.err" test "$(grep -o '"gpuckpt\.managed\.[0-9]*\.[0-9a-f]*\.[0-9a-f]*\.[0-9a-f]*"' \
	"$D/ckpt.000001/manifest.json" 2>/dev/null | wc -l)" -eq 3
cp -a "$D" "$GK_SCRATCH/app-copy"
env CUDA_VISIBLE_DEVICES=$first LD_PRELOAD="$RT" GPUCKPT_LOG_LEVEL=info GPUCKPT_DIR="$D" \
	GPUCKPT_RESTORE=auto timeout 120 "$PROG" "${ARGS[@]}" >"$GK_SCRATCH/app2.out" 2>"$GK_SCRATCH/app2.err"
tap_diag "restored run (same GPU): managed $(addrs "$GK_SCRATCH/app2.out")"
tap_diag "$(grep -h "reservation placed\|not restored" "$GK_SCRATCH/app2.err" | head -n 4)"
check "application mode: restored on the same GPU, managed pointers intact, checksum $(sum "$GK_SCRATCH/app2.out")" \
	"$GK_SCRATCH/app2.err" test -n "$(grep "restored at step" "$GK_SCRATCH/app2.out")" -a \
	-n "$REF" -a "$(sum "$GK_SCRATCH/app2.out")" = "$REF"
if [ "$ngpu" -lt 2 ]; then
	tap_skip "restore on another GPU needs two, this machine shows $ngpu"
else
	env CUDA_VISIBLE_DEVICES=$second LD_PRELOAD="$RT" GPUCKPT_LOG_LEVEL=info \
		GPUCKPT_DIR="$GK_SCRATCH/app-copy" GPUCKPT_RESTORE=auto timeout 120 "$PROG" "${ARGS[@]}" \
		>"$GK_SCRATCH/app3.out" 2>"$GK_SCRATCH/app3.err"
	tap_diag "restored run (other GPU): managed $(addrs "$GK_SCRATCH/app3.out")"
	tap_diag "$(grep -h "reservation placed\|not restored" "$GK_SCRATCH/app3.err" | head -n 4)"
	check "application mode: restored on the other GPU ($second), checksum $(sum "$GK_SCRATCH/app3.out")" \
		"$GK_SCRATCH/app3.err" test -n "$(grep "restored at step" "$GK_SCRATCH/app3.out")" -a \
		-n "$REF" -a "$(sum "$GK_SCRATCH/app3.out")" = "$REF"
fi
check "application mode: managed memory prefetched to the host in bulk for the write" \
	"$GK_SCRATCH/app1.err" grep -q "managed: 3 allocations ([0-9]* bytes) prefetched to host memory" \
	"$GK_SCRATCH/app1.err"

# Evidence for the choice of address scheme (diagnostics only): are the
# driver's managed addresses the same in two fresh processes, natively, and
# with address space randomisation off (setarch -R)?
for mode in native aslr-off; do
	pre=()
	[ $mode = aslr-off ] && { command -v setarch >/dev/null || continue; pre=(setarch "$(uname -m)" -R); }
	x=$(CUDA_VISIBLE_DEVICES=$first timeout 60 "${pre[@]}" "$PROG" --steps 1 2>&1 | sed -n 's/^gpu-uvm: managed //p')
	y=$(CUDA_VISIBLE_DEVICES=$first timeout 60 "${pre[@]}" "$PROG" --steps 1 2>&1 | sed -n 's/^gpu-uvm: managed //p')
	tap_diag "two fresh processes ($mode, no runtime): $( [ -n "$x" ] && [ "$x" = "$y" ] && echo same || echo DIFFERENT) addresses: $x / $y"
done

# When the application-mode restore above was refused for an address, the
# same round trip with randomisation off in both runs (diagnostic only).
if grep -q "not restored.*managed allocation" "$GK_SCRATCH/app2.err" && command -v setarch >/dev/null; then
	D=$GK_SCRATCH/norand
	run_until nr1 60 GPUCKPT_DIR="$D" setarch "$(uname -m)" -R
	env CUDA_VISIBLE_DEVICES=$first LD_PRELOAD="$RT" GPUCKPT_LOG_LEVEL=info GPUCKPT_DIR="$D" \
		GPUCKPT_RESTORE=auto timeout 120 setarch "$(uname -m)" -R "$PROG" "${ARGS[@]}" \
		>"$GK_SCRATCH/nr2.out" 2>"$GK_SCRATCH/nr2.err"
	tap_diag "with ASLR off in both runs: checkpointed $(addrs "$GK_SCRATCH/nr1.out"), restored $(addrs "$GK_SCRATCH/nr2.out"): $(grep -c "restored at step" "$GK_SCRATCH/nr2.out") restore(s), checksum $(sum "$GK_SCRATCH/nr2.out") (want $REF)"
fi

# A __managed__ variable is not saved: refused by name, the program goes on.
# SIGUSR1 goes to the program itself: env execs it, so $! is the program (not
# `timeout`, which dies of a SIGUSR1 it does not forward and leaves the
# program running unsignalled); a watchdog stands in for timeout's limit. The
# pattern is the refusal's, not the load-time warning's. The same scenario on
# the stand-in: tests/runtime/managed-var.sh.
if [ -x "$VAR" ]; then
	D=$GK_SCRATCH/var
	env CUDA_VISIBLE_DEVICES=$first LD_PRELOAD="$RT" GPUCKPT_LOG_LEVEL=info GPUCKPT_DIR="$D" \
		"$VAR" --steps 30 --delay-ms 100 \
		>"$GK_SCRATCH/var.out" 2>"$GK_SCRATCH/var.err" &
	vpid=$!
	for _ in $(seq 300); do
		grep -q "^gpu-uvm-var: step 0$" "$GK_SCRATCH/var.out" 2>/dev/null && break
		kill -0 $vpid 2>/dev/null || break
		sleep 0.1
	done
	kill -USR1 $vpid 2>/dev/null
	for _ in $(seq 1200); do kill -0 $vpid 2>/dev/null || break; sleep 0.1; done
	kill -KILL $vpid 2>/dev/null
	wait $vpid
	vstatus=$?
	tap_diag "$(grep -h "refused, no checkpoint written" "$GK_SCRATCH/var.err")"
	check "a __managed__ variable: the checkpoint is refused, naming it; the program goes on (status $vstatus)" \
		"$GK_SCRATCH/var.err" test -n "$(grep "refused, no checkpoint written: .*managed variables of a CUDA module" "$GK_SCRATCH/var.err")" \
		-a ! -d "$D/ckpt.000001" -a -n "$(grep "gpu-uvm-var: done" "$GK_SCRATCH/var.out")" -a "$vstatus" -eq 0
else
	tap_skip "gpu-uvm-var is not built"
fi

# ---- transparent mode ----
criu_major() { "$1" --version 2>/dev/null | sed -n 's/^Version: *\([0-9]*\).*/\1/p' | head -n 1; }
why=
CRIU=${GK_CRIU:-}
if [ "$(id -u)" -ne 0 ]; then
	why="needs root (the shepherd does)"
elif [ -z "$CRIU" ] && [ -x /usr/local/sbin/criu ]; then
	CRIU=/usr/local/sbin/criu
elif [ -z "$CRIU" ] && [ -x /opt/criu/usr/sbin/criu ]; then
	CRIU=$GK_SCRATCH/criu
	printf '#!/bin/sh\nLD_LIBRARY_PATH=/opt/criu/usr/lib/x86_64-linux-gnu:/opt/criu/lib/x86_64-linux-gnu exec /opt/criu/usr/sbin/criu "$@"\n' >"$CRIU"
	chmod 0755 "$CRIU"
fi
if [ -z "$why" ] && { [ -z "$CRIU" ] || [ -z "$(criu_major "$CRIU")" ] || [ "$(criu_major "$CRIU")" -lt 4 ]; }; then
	why="no CRIU 4 or later (GK_CRIU, /usr/local/sbin/criu, /opt/criu)"
fi
if [ -z "$why" ] && [ ! -x "$SHEP" ]; then
	why="gpuckpt-shepherd is not built"
fi
if [ -n "$why" ]; then
	for _ in 1 2 3 4; do tap_skip "$why"; done
	tap_done
	exit 0
fi
D=$GK_SCRATCH/tr out=$GK_SCRATCH/tr.out log=$GK_SCRATCH/tr.err
mkdir -p "$D"
CUDA_VISIBLE_DEVICES=$first GPUCKPT_LOG_LEVEL=info "$SHEP" run --criu "$CRIU" --dir "$D" --uid 0 \
	--gid 0 -- env LD_PRELOAD="$RT" GPUCKPT_MODE=transparent "$PROG" "${ARGS[@]}" >"$out" 2>"$log" &
spid=$!
for _ in $(seq 600); do grep -q "^gpu-uvm: step 60$" "$out" 2>/dev/null && break; sleep 0.1; done
kill -TERM "$spid"
wait "$spid"
tap_diag "transparent run: managed $(addrs "$out")"
check "transparent: checkpointed, managed memory moved out of the driver's way first" "$log" \
	test -n "$(grep "checkpoint ckpt\.[0-9]* committed" "$log")" -a \
	-n "$(grep "managed: 3 allocations ([0-9]* bytes) moved to host memory and given back" "$log")"
to=$first
[ "$ngpu" -ge 2 ] && to=$second
CUDA_VISIBLE_DEVICES=$to GPUCKPT_LOG_LEVEL=info timeout 300 "$SHEP" restore --criu "$CRIU" \
	--dir "$D" --uid 0 --gid 0 >>"$out" 2>>"$log"
status=$?
check "transparent: restored by CRIU and the driver on GPU $to (status $status)" "$log" \
	test "$status" = 0 -a -n "$(grep "restored ckpt" "$log")"
check "transparent: managed memory back at the same addresses" "$log" \
	grep -q "managed: 3 allocations back at their addresses" "$log"
check "transparent: the uninterrupted checksum ($(sum "$out"), want $REF)" "$log" \
	test -n "$REF" -a "$(sum "$out")" = "$REF"
tap_done
