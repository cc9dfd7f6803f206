#!/bin/bash
# zero-chunks.sh - chunks of device memory that are entirely zero are recorded,
# not written (format 5, a "zero" part), on the CUDA driver stand-in with
# gpu-tables --pool: 4 MiB of tables and a 256 MiB pool of which 16 MiB are
# used, the rest zero (a preallocated pool, as JAX keeps one). The zero chunks
# are found by the hash kernel (the stand-in's host copy of it: never evidence
# about the GPU kernel itself), by it alone when no change keys are wanted,
# and by the host's copy when there is no kernel. The checkpoint's data files
# then hold about the non-zero part; a restore sets the zero chunks (the
# restored run fills the pool with garbage first) and ends with the
# uninterrupted run's checksum. A manifest edited to call a data chunk zero is
# refused by gpuckpt verify and by the restore; a zero part in a manifest of
# an older version is refused by its version; a state without zero chunks is
# still written as version 3 and restored.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/gpu/gpu-tables
HASH=$top_builddir/tests/cuda-standin/modules/.libs/hash_kernel_host.so
PLAN=16
tap_plan $PLAN
gk_scratch

gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$PROG" "$HASH" "$GK_RUNTIME" "$GK_TOOL"
command -v python3 >/dev/null || { for _ in $(seq $PLAN); do tap_skip "needs python3 to edit a manifest"; done; exit 0; }

ARGS=(--size 4 --pool 256 --steps 120 --report-every 10)
# Non-zero device bytes: 4 MiB of tables, 16 MiB of the pool, 64 KiB of state.
NONZERO=$(((4 + 16) * 1048576 + 65536))
# Unsigned: what is tested below is the check that does not lean on the
# signature (an unsigned checkpoint of one's own is restored; a signed one
# whose manifest was edited is refused by the signature first).
export GPUCKPT_LOG_LEVEL=info GPUCKPT_CHUNK_SIZE=1M GPUCKPT_MUNGE_SOCKET=$GK_SCRATCH/no-munged
unset GPUCKPT_HASH_MODULE GPUCKPT_INCREMENTS

version_of() { sed -n 's/^  "version": *\([0-9]*\).*/\1/p' "$1/manifest.json" | head -1; }
# The bytes of a checkpoint's data files (all but the manifest and signature).
step_of() { sed -n 's/^  "step": *\([0-9]*\).*/\1/p' "$1/manifest.json" | head -1; }
data_bytes() { find "$1" -maxdepth 1 -type f -name '*.data' -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }

run_bg() {
	local name=$1
	shift
	env "${GK_RUNTIME_ENV[@]}" "$@" "$PROG" "${ARGS[@]}" --delay-ms 5 \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	PID=$!
}
# One checkpoint on SIGTERM after step 40.
term_at_40() { # NAME DIR [VAR=VALUE...]
	local name=$1 dir=$2
	shift 2
	run_bg "$name" GPUCKPT_DIR="$dir" "$@"
	gk_wait_for "$name" "step 40" 60
	kill -TERM $PID
	wait $PID
}
small() { # DIR: its data files hold at most 1.15 x the non-zero bytes
	local b
	b=$(data_bytes "$1")
	[ "$b" -gt 0 ] && [ "$((b * 100))" -le "$((NONZERO * 115))" ]
}

with_standin "$PROG" "${ARGS[@]}" >"$GK_SCRATCH/native.out" 2>&1
REF=$(gk_checksum_of "$GK_SCRATCH/native.out")
gk_expect "an uninterrupted run without gpuckpt gives a checksum ($REF)" native test -n "$REF"

# --- zero chunks found by the hash kernel ---------------------------------------
K=$GK_SCRATCH/kernel
term_at_40 kernel "$K" GPUCKPT_HASH_MODULE="$HASH"
C=$K/ckpt.000001
gk_expect "the checkpoint is written in format 5 ($(version_of "$C")), with zero parts" kernel \
	sh -c "test '$(version_of "$C")' = 5 && grep -q '\"zero\": true' '$C/manifest.json'"
gk_expect "its data files hold about the non-zero part: $(data_bytes "$C") bytes for $NONZERO non-zero of 272 MiB" kernel \
	small "$C"
gk_expect "the log says how much was recorded, not written" kernel \
	grep -q "ckpt.000001: wrote .*of all-zero chunks recorded, not written" "$GK_SCRATCH/kernel.err"
"$GK_TOOL" verify "$C" >"$GK_SCRATCH/verify.out" 2>&1
gk_expect "gpuckpt verify accepts it" verify test $? -eq 0
gk_restore kernel-r auto "$K"
gk_expect "a restore sets the zero chunks over the garbage: the uninterrupted run's checksum" kernel-r \
	test "$(gk_resumed_step "$GK_SCRATCH/kernel-r.out")" = "$(step_of "$C")" -a \
	"$(gk_checksum_of "$GK_SCRATCH/kernel-r.out")" = "$REF"

# --- the kernel alone, when no change keys are wanted ---------------------------------
N=$GK_SCRATCH/nokeys
term_at_40 nokeys "$N" GPUCKPT_HASH_MODULE="$HASH" GPUCKPT_INCREMENTS=0
gk_expect "without change keys (GPUCKPT_INCREMENTS=0) the kernel still finds the zero chunks ($(data_bytes "$N/ckpt.000001") bytes), and records no keys" nokeys \
	sh -c "grep -q '\"zero\": true' '$N/ckpt.000001/manifest.json' && ! grep -q '\"keys\"' '$N/ckpt.000001/manifest.json'"
gk_expect "... the data is small" nokeys small "$N/ckpt.000001"

# --- no kernel: the host's copy, when keys are computed there -------------------------
H=$GK_SCRATCH/host
run_bg host GPUCKPT_DIR="$H"
gk_wait_for host "step 40" 60
kill -USR1 $PID
gk_wait_for host "ckpt.000001: wrote" 60
gk_wait_for host "step 60" 60
kill -TERM $PID
wait $PID
gk_expect "without a kernel, the keys' copy on the host finds the zero chunks ($(data_bytes "$H/ckpt.000001") bytes)" host \
	sh -c "grep -q 'found on the host' '$GK_SCRATCH/host.err' && grep -q '\"zero\": true' '$H/ckpt.000001/manifest.json'"
gk_expect "... the data is small" host small "$H/ckpt.000001"
gk_restore host-r auto "$H"
gk_expect "the newest (ckpt.000002, $(grep -c '"zero": true' "$H/ckpt.000002/manifest.json") zero parts) restores exactly" host-r \
	test "$(gk_resumed_step "$GK_SCRATCH/host-r.out")" = "$(step_of "$H/ckpt.000002")" -a \
	"$(gk_checksum_of "$GK_SCRATCH/host-r.out")" = "$REF"

# --- a zero flag that lies -------------------------------------------------------------
# A part held by a file turned into a zero part, checksums kept: the data would
# be dropped, and the restore would run on zeros.
T=$GK_SCRATCH/tampered
cp -a "$K" "$T"
python3 - "$T/ckpt.000001/manifest.json" <<'EOF'
import json, sys
p = sys.argv[1]
m = json.load(open(p))
for a in m["allocations"]:
    for i, part in enumerate(a["parts"]):
        if "file" in part:
            a["parts"][i] = {"zero": True, "size": part["size"]}
            break
    else:
        continue
    break
json.dump(m, open(p, "w"), indent=2)
EOF
"$GK_TOOL" verify "$T/ckpt.000001" >"$GK_SCRATCH/tv.out" 2>&1
status=$?
gk_expect "gpuckpt verify refuses a data part marked zero ($status)" tv \
	sh -c "test $status -ne 0 && grep -q 'recorded as all zero, but its checksum is not that of zeros' '$GK_SCRATCH/tv.out'"
gk_restore tr auto "$T"
gk_expect "a restore refuses it and does not resume from it" tr \
	sh -c "grep -q 'recorded as all zero' '$GK_SCRATCH/tr.err' && ! grep -q 'resumed from step' '$GK_SCRATCH/tr.out'"
# The same zero part in a manifest that says version 4: an older reader would
# have looked for it in a file; this one refuses it by the version.
O=$GK_SCRATCH/v4
cp -a "$K" "$O"
sed -i 's/^  "version": 5,/  "version": 4,/' "$O/ckpt.000001/manifest.json"
"$GK_TOOL" verify "$O/ckpt.000001" >"$GK_SCRATCH/v4.out" 2>&1
status=$?
gk_expect "a zero part in a version 4 manifest is refused ($status)" v4 \
	sh -c "test $status -ne 0 && grep -q \"zero' needs format version 5\" '$GK_SCRATCH/v4.out'"

# --- no zero chunk: version 3, as before ------------------------------------------------
ARGS=(--size 16 --steps 120 --report-every 10)
with_standin "$PROG" "${ARGS[@]}" >"$GK_SCRATCH/native3.out" 2>&1
REF3=$(gk_checksum_of "$GK_SCRATCH/native3.out")
P=$GK_SCRATCH/plain
term_at_40 plain "$P" GPUCKPT_HASH_MODULE="$HASH"
gk_expect "a state without zero chunks is written as version 3 ($(version_of "$P/ckpt.000001")), without zero parts" plain \
	sh -c "test '$(version_of "$P/ckpt.000001")' = 3 && ! grep -q '\"zero\"' '$P/ckpt.000001/manifest.json'"
gk_restore plain-r auto "$P"
gk_expect "... and restored exactly" plain-r \
	test "$(gk_resumed_step "$GK_SCRATCH/plain-r.out")" = "$(step_of "$P/ckpt.000001")" -a \
	"$(gk_checksum_of "$GK_SCRATCH/plain-r.out")" = "$REF3"
