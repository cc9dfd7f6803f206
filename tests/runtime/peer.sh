#!/bin/bash
# Peer access between two GPUs of one process, on the CUDA driver stand-in
# (gpu-peer from tests/gpu): the runtime grants the peer mappings of the
# memory it places, a checkpoint records them (format 4, each device's
# peer_access), a restore grants them again, also onto other physical GPUs;
# when the GPUs of the restart lack the route (GPUCKPT_STANDIN_NO_PEER), the
# restore is refused with a message naming both devices. The stand-in is not
# a GPU: make check-gpu runs gpu-peer on a machine with two GPUs.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/gpu/gpu-peer
PLAN=16
tap_plan $PLAN
gk_scratch

if [ ! -e "$GK_STANDIN_DIR/libcuda.so.1" ] || [ ! -x "$PROG" ]; then
	for i in $(seq $PLAN); do tap_skip "the stand-in or gpu-peer was not built"; done
	exit 0
fi
export GPUCKPT_LOG_LEVEL=info GPUCKPT_STANDIN_GPUS=4
ARGS=(--steps 120)

checksum_of() { sed -n 's/.*done: steps=[0-9]* checksum=\(0x[0-9a-f]*\).*/\1/p' "$1" | tail -1; }
show() { tap_diag "$(tail -n 20 "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err" 2>/dev/null)"; }
expect() {
	local desc=$1 name=$2; shift 2
	if "$@"; then tap_ok "$desc"; else tap_not_ok "$desc"; show "$name"; fi
}
run() { # NAME VAR=VALUE... -- ARGS...
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	with_runtime env "${envs[@]}" "$PROG" "$@" >"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err"
}
has() { grep -q -- "$2" "$GK_SCRATCH/$1.out" "$GK_SCRATCH/$1.err"; }

# The uninterrupted run under the runtime: the checksum every restore must give.
run plain GPUCKPT_DIR="$GK_SCRATCH/plain" -- "${ARGS[@]}"
REF=$(checksum_of "$GK_SCRATCH/plain.out")
expect "gpu-peer runs to the end with peer access both ways under the runtime" plain \
	test -n "$REF"
expect "the runtime granted the peer mappings (cuMemGetAccess from both devices)" plain \
	has plain "setup: both devices reach all four buffers"

# Checkpointed at SIGTERM part-way through.
DIR=$GK_SCRATCH/ckpt
env "${GK_RUNTIME_ENV[@]}" GPUCKPT_DIR="$DIR" "$PROG" "${ARGS[@]}" --delay-ms 10 \
	>"$GK_SCRATCH/first.out" 2>"$GK_SCRATCH/first.err" &
PID=$!
for _ in $(seq 300); do has first "step 40" && break; sleep 0.1; done
kill -TERM $PID
wait $PID
CK=$(ls -d "$DIR"/ckpt.* 2>/dev/null | tail -1)
expect "a checkpoint was committed at SIGTERM" first test -n "$CK"
M=$CK/manifest.json
expect "the manifest is format 4 (it holds peer access)" first \
	grep -q '"version": 4,' "$M"
expect "device 0's memory is recorded as accessible from device 1, and device 1's from 0" first \
	test "$(tr -d ' \n' <"$M" | grep -o '"peer_access":\[[0-9,]*\]' | tr '\n' ' ')" = \
	'"peer_access":[1] "peer_access":[0] '
expect "gpuckpt verify accepts it" first "$GK_TOOL" verify "$CK"
expect "gpuckpt inspect shows the peer access" first \
	test "$("$GK_TOOL" inspect "$CK" | grep -c "peer access to device [01]'s memory from device [01]$")" = 2

# Restored on the same GPUs.
run same GPUCKPT_DIR="$DIR" GPUCKPT_RESTORE="$CK" -- "${ARGS[@]}"
expect "restored on the same GPUs: peer access is granted again" same \
	has same "restored: both devices reach all four buffers"
expect "restored on the same GPUs: the uninterrupted run's checksum" same \
	test "$(checksum_of "$GK_SCRATCH/same.out")" = "$REF"

# The access comes from the checkpoint, not only from the program enabling
# peer access again in its setup.
run noenable GPUCKPT_DIR="$DIR" GPUCKPT_RESTORE="$CK" -- "${ARGS[@]}" --no-enable
expect "a restored program that does not enable peer access again still has it" noenable \
	test "$(grep -c "both devices reach all four buffers" "$GK_SCRATCH/noenable.out")" = 3 -a \
	"$(checksum_of "$GK_SCRATCH/noenable.out")" = "$REF"

# Restored on other physical GPUs, in another order (devices 0 and 1 of the
# process are physical 3 and 2 now).
run moved GPUCKPT_DIR="$DIR" GPUCKPT_RESTORE="$CK" CUDA_VISIBLE_DEVICES=3,2 -- "${ARGS[@]}"
expect "restored on physical GPUs 3,2: peer access is granted again" moved \
	has moved "restored: both devices reach all four buffers"
expect "restored on physical GPUs 3,2: the uninterrupted run's checksum" moved \
	test "$(checksum_of "$GK_SCRATCH/moved.out")" = "$REF"
expect "the restore says the devices changed" moved \
	has moved "device 0 is now gpuckpt stand-in GPU 3"

# The GPUs of the restart have no route between them: refused, both named.
run noroute GPUCKPT_DIR="$DIR" GPUCKPT_RESTORE="$CK" CUDA_VISIBLE_DEVICES=3,2 \
	GPUCKPT_STANDIN_NO_PEER=2-3 -- "${ARGS[@]}" --no-route-check
rc=$?
expect "without a peer route the restore is refused, naming both devices" noroute \
	has noroute "device 1 (gpuckpt stand-in GPU 2 (host memory), GPU-[0-9a-f-]*) has no peer access to the memory of device 0 (gpuckpt stand-in GPU 3"
expect "... and says why it is not restored" noroute \
	has noroute "the GPUs of this run lack a peer route the checkpointed run used"
expect "... and the program does not finish as if restored (exit $rc)" noroute \
	test "$rc" -ne 0 -a -z "$(checksum_of "$GK_SCRATCH/noroute.out")"
tap_done
