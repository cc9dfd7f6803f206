#!/bin/bash
# Legacy CUDA IPC between two processes (tests/runtime/prog-ipc.c), on the
# CUDA driver stand-in: a parent exports a cuMemAlloc buffer
# (cuIpcGetMemHandle), a child opens it (cuIpcOpenMemHandle), and they take
# turns writing halves of it, each from what it read of the other's.
# Natively, the stand-in shares the pages between the processes. Under
# gpuckpt, the buffer is placed memory, which the runtime exports itself
# (runtime/core/interpose/ipc.c): the program must run with the native
# result instead of failing at cuIpcGetMemHandle. Application mode: both
# checkpoint at step 3 and end; both restarted from their checkpoints, the
# setup exchanges a new handle, the child's mapping comes back at the address
# it had, and both finish with the uninterrupted run's checksums.
# Restore ordering: with the parent reaching its restore point (where its
# memory is loaded) 1.5 s after the child reaches its own, the child reads
# the parent's half right after its restore point (--peek): the runtime
# holds the child's restore point until the parent has loaded, so the child
# reads what it read last before the checkpoint, never the parent's fresh
# setup (zeros).
# The importer's manifest lists its opens (format 6): with a second buffer
# opened after the first (--other after), a restart that opens the same in
# the same order restores; one that opens the second buffer first is refused
# before anything is loaded, naming the open and both addresses.
# All that with GPUCKPT_CUDA_IPC unset: the default serves it. With
# GPUCKPT_CUDA_IPC=0 nothing is as above: cuIpcGetMemHandle of placed memory
# is refused with the message that names the setting, and placed memory is
# created plain, not exportable (the stand-in's trace of cuMemCreate shows
# the handle types asked for: none with 0, a file descriptor by default).
. "${top_srcdir:-.}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/runtime/prog-ipc
tap_plan 17
unset GPUCKPT_CUDA_IPC
gk_scratch
gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME" "$PROG"

sums() { sed -n 's/^prog-ipc: \(parent\|child\) sum //p' "$1" | sort | tr '\n' ' '; }

with_standin "$PROG" --steps 8 >"$GK_SCRATCH/native.out" 2>&1
rc=$?
ref=$(sums "$GK_SCRATCH/native.out")
check "natively on the stand-in, the child opens the parent's buffer and both finish (rc $rc)" \
	test "$rc" -eq 0 -a "$(wc -w <<<"$ref")" -eq 2
[ "$rc" -eq 0 ] || sed 's/^/# /' "$GK_SCRATCH/native.out"

with_runtime "$PROG" --steps 8 >"$GK_SCRATCH/rt.out" 2>&1
rc=$?
got=$(sums "$GK_SCRATCH/rt.out")
check "under gpuckpt the program runs (rc $rc): cuIpcGetMemHandle of placed memory is served" \
	test "$rc" -eq 0
[ "$rc" -eq 0 ] || sed 's/^/# /' "$GK_SCRATCH/rt.out"
check "... with the native checksums ($got)" test -n "$ref" -a "$got" = "$ref"
check "... and no message of the runtime about IPC, no CUDA error" \
	eval '! grep -q "^gpuckpt: .*ipc:\|CUDA_ERROR" "$GK_SCRATCH/rt.out"'

D=$GK_SCRATCH/ckpt
with_runtime env GPUCKPT_DIR="$D" "$PROG" --steps 8 --checkpoint-at 3 --exit-after-checkpoint \
	>"$GK_SCRATCH/ck.out" 2>&1
rc=$?
check "both processes checkpoint at step 3, the importer's and the exporter's part written (rc $rc)" \
	eval 'grep -q "prog-ipc: child checkpoint at step 3: 1 " "$GK_SCRATCH/ck.out" &&
		grep -q "prog-ipc: parent checkpoint at step 3: 1 " "$GK_SCRATCH/ck.out"'
check "... the importer is told that only transparent checkpoints are refused" \
	grep -q "opened through gpuckpt's CUDA IPC: transparent checkpoints will be refused" \
	"$GK_SCRATCH/ck.out"
with_runtime env GPUCKPT_DIR="$D" GPUCKPT_RESTORE=auto "$PROG" --steps 8 >"$GK_SCRATCH/r.out" 2>&1
rc=$?
got=$(sums "$GK_SCRATCH/r.out")
check "both restored from their checkpoints resume at step 3 (rc $rc)" \
	eval 'grep -q "prog-ipc: child restored at step 3" "$GK_SCRATCH/r.out" &&
		grep -q "prog-ipc: parent restored at step 3" "$GK_SCRATCH/r.out"'
a1=$(sed -n 's/^prog-ipc: child opened the buffer at //p' "$GK_SCRATCH/ck.out")
a2=$(sed -n 's/^prog-ipc: child opened the buffer at //p' "$GK_SCRATCH/r.out")
check "... the child's import at the address it had ($a1, $a2), with the uninterrupted checksums ($got)" \
	test -n "$a1" -a "$a1" = "$a2" -a -n "$ref" -a "$got" = "$ref"
[ "$got" = "$ref" ] || { sed 's/^/# ck: /' "$GK_SCRATCH/ck.out"; sed 's/^/# r: /' "$GK_SCRATCH/r.out"; }

D2=$GK_SCRATCH/ckpt2
with_runtime env GPUCKPT_DIR="$D2" "$PROG" --steps 8 --checkpoint-at 3 --exit-after-checkpoint \
	>"$GK_SCRATCH/ck2.out" 2>&1
GPUCKPT_LOG_LEVEL=info with_runtime env GPUCKPT_DIR="$D2" GPUCKPT_RESTORE=auto "$PROG" --steps 8 \
	--peek --parent-delay-ms 1500 >"$GK_SCRATCH/r2.out" 2>&1
rc=$?
check "the parent at its restore point 1.5 s late: the restored child reads its checkpointed half at once (rc $rc): $(sed -n 's/^prog-ipc: child peek after restore: //p' "$GK_SCRATCH/r2.out")" \
	grep -qx "prog-ipc: child peek after restore: same" "$GK_SCRATCH/r2.out"
waited=$(sed -n 's/^gpuckpt: restore: waited \([0-9.]*\) s until the 1 process(es) whose memory.*/\1/p' "$GK_SCRATCH/r2.out")
check "... its restore point waited for the parent's load (${waited:-no line} s)" \
	awk -v w="${waited:-0}" 'BEGIN { exit !(w >= 1.0) }'
got=$(sums "$GK_SCRATCH/r2.out")
check "... and both finish with the uninterrupted checksums ($got)" test -n "$ref" -a "$got" = "$ref"
[ "$got" = "$ref" ] || sed 's/^/# r2: /' "$GK_SCRATCH/r2.out"

# --- the manifest's record of the opens (format 6) --------------------------------
D3=$GK_SCRATCH/ckpt3
with_runtime env GPUCKPT_DIR="$D3" "$PROG" --steps 8 --checkpoint-at 3 --exit-after-checkpoint \
	--other after >"$GK_SCRATCH/ck3.out" 2>&1
C3=$(ls -d "$D3"/child/ckpt.* 2>/dev/null | tail -1)
o1=$(sed -n 's/^prog-ipc: child opened the buffer at //p' "$GK_SCRATCH/ck3.out")
o2=$(sed -n 's/^prog-ipc: child opened the other buffer at \(0x[0-9a-f]*\) .*/\1/p' "$GK_SCRATCH/ck3.out")
imports=$(python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
print(m["version"], " ".join("%d:%s:%d" % (i["ordinal"], i["address"], i["size"]) for i in m["ipc_imports"]))' \
	"$C3/manifest.json" 2>&1)
check "the importer's checkpoint (format 6) lists its two opens in order, at their addresses ($imports)" \
	test "$imports" = "6 0:$o1:1048576 1:$o2:65536"
cp -a "$D3" "$GK_SCRATCH/ckpt3b"
with_runtime env GPUCKPT_DIR="$D3" GPUCKPT_RESTORE=auto timeout 120 "$PROG" --steps 8 --other after \
	>"$GK_SCRATCH/r3.out" 2>&1
rc=$?
got=$(sums "$GK_SCRATCH/r3.out")
check "restarted opening the same in the same order: both resume at step 3 with the uninterrupted checksums (rc $rc, $got)" \
	eval 'grep -q "prog-ipc: child restored at step 3" "$GK_SCRATCH/r3.out" && test -n "$ref" -a "$got" = "$ref"'
[ "$got" = "$ref" ] || sed 's/^/# r3: /' "$GK_SCRATCH/r3.out"
with_runtime env GPUCKPT_DIR="$GK_SCRATCH/ckpt3b" GPUCKPT_RESTORE=auto timeout 120 "$PROG" --steps 8 \
	--other first >"$GK_SCRATCH/r4.out" 2>&1
n1=$(sed -n 's/^prog-ipc: child opened the other buffer at \(0x[0-9a-f]*\) .*/\1/p' "$GK_SCRATCH/r4.out")
check "restarted opening the other buffer first: the child's restore is refused, naming open 0 at $n1 and $o1, and it does not resume" \
	eval 'grep -q "not restored: CUDA IPC open 0 is $n1 (65536 bytes, .*) in this run and was $o1 (1048576 bytes, .*) in the checkpoint" "$GK_SCRATCH/r4.out" &&
		! grep -q "prog-ipc: child restored" "$GK_SCRATCH/r4.out"'

# Turned off: GPUCKPT_CUDA_IPC=0.
with_runtime env GPUCKPT_CUDA_IPC=0 GPUCKPT_STANDIN_TRACE=1 "$PROG" --steps 2 \
	>"$GK_SCRATCH/off.out" 2>&1
rc=$?
msg="gpuckpt: ipc: 0x[0-9a-f]*: CUDA IPC of device memory is turned off under gpuckpt (GPUCKPT_CUDA_IPC=0; unset it to let gpuckpt serve it, or run without --gpu-checkpoint)"
said=$(grep -cx "$msg" "$GK_SCRATCH/off.out")
check "with GPUCKPT_CUDA_IPC=0, cuIpcGetMemHandle of placed memory is refused (rc $rc), the message naming the setting ($said)" \
	eval 'test "$rc" -ne 0 -a "$said" -eq 1 &&
		grep -q "prog-ipc: parent: cuIpcGetMemHandle: CUDA_ERROR_NOT_SUPPORTED" "$GK_SCRATCH/off.out"'
[ "$rc" -ne 0 ] || grep -v "stand-in" "$GK_SCRATCH/off.out" | sed 's/^/# off: /'
created() { grep -c "^gpuckpt stand-in: cuMemCreate(.* handles=$1 -> .*) = CUDA_SUCCESS" "$2"; }
n0=$(created 0 "$GK_SCRATCH/off.out")
nx=$(created '0x[0-9a-f]*' "$GK_SCRATCH/off.out")
check "... placed memory created plain: $n0 cuMemCreate asking no handle type, $nx asking one, nothing exported" \
	eval 'test "$n0" -gt 0 -a "$nx" -eq 0 && ! grep -q "cuMemExportToShareableHandle" "$GK_SCRATCH/off.out"'
with_runtime env GPUCKPT_STANDIN_TRACE=1 "$PROG" --steps 2 >"$GK_SCRATCH/on.out" 2>&1
rc=$?
n1=$(created 0x1 "$GK_SCRATCH/on.out")
check "by default (rc $rc), placed memory is created exportable as a file descriptor ($n1 cuMemCreate) and exported" \
	eval 'test "$rc" -eq 0 -a "$n1" -gt 0 && grep -q "cuMemExportToShareableHandle(.*) = CUDA_SUCCESS" "$GK_SCRATCH/on.out"'
tap_done
