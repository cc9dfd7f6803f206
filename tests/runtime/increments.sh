#!/bin/bash
# Incremental checkpoints, on the CUDA driver stand-in with gpu-tables
# (tests/gpu: large tables, a few 1 MiB blocks rewritten per step): a chunk
# unchanged since the previous checkpoint is not written again, the manifest
# refers to the checkpoint that holds it; after GPUCKPT_INCREMENTS increments
# a checkpoint is written whole; a chain is restored exactly; gpuckpt verify
# follows the references; a damaged base refuses every increment that uses it
# and the restore falls back to an older chain; prune never removes what a
# kept checkpoint refers to; a restored process writes increments against the
# checkpoint it restored; the change keys come from the hash kernel
# (the stand-in's host copy of it), or, without it, from the host, said once.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
PROG=$top_builddir/tests/gpu/gpu-tables
HASH=$top_builddir/tests/cuda-standin/modules/.libs/hash_kernel_host.so
PLAN=28
tap_plan $PLAN
gk_scratch

gk_need_built "$GK_STANDIN_DIR/libcuda.so.1" "$PROG" "$HASH" "$GK_RUNTIME"

# 128 chunks of 1 MiB; 20 steps between checkpoints rewrite at most 20 of them.
ARGS=(--size 128 --steps 1000 --report-every 10)
export GPUCKPT_LOG_LEVEL=info GPUCKPT_CHUNK_SIZE=1M GPUCKPT_SNAPSHOT_MEMORY=512M

field() { sed -n "s/^  \"$2\": *\\([0-9]*\\).*/\\1/p" "$1/manifest.json" | head -1; }
written() { sed -n "s/.*ckpt.0*$2: wrote \\([0-9]*\\) bytes.*/\\1/p" "$1" | tail -1; }

run_bg() {
	local name=$1
	shift
	env "${GK_RUNTIME_ENV[@]}" "$@" "$PROG" "${ARGS[@]}" --delay-ms 10 \
		>"$GK_SCRATCH/$name.out" 2>"$GK_SCRATCH/$name.err" &
	PID=$!
}
# chain NAME DIR [VAR=VALUE...]: SIGUSR1 after steps 40, 60, 80, 100, SIGTERM
# after 120: five checkpoints, each waited for before the next signal.
chain() {
	local name=$1 dir=$2 n=1
	shift 2
	run_bg "$name" GPUCKPT_DIR="$dir" "$@"
	for at in 40 60 80 100; do
		gk_wait_for "$name" "step $at"
		kill -USR1 $PID
		gk_wait_for "$name" "ckpt.00000$n: wrote"
		n=$((n + 1))
	done
	gk_wait_for "$name" "step 120"
	kill -TERM $PID
	wait $PID
}

with_standin "$PROG" "${ARGS[@]}" >"$GK_SCRATCH/native.out" 2>&1
REF=$(gk_checksum_of "$GK_SCRATCH/native.out")
gk_expect "an uninterrupted run without gpuckpt gives a checksum ($REF)" native test -n "$REF"

# --- a chain, change keys from the hash kernel ---------------------------------
D=$GK_SCRATCH/chain
chain chain "$D" GPUCKPT_HASH_MODULE="$HASH" GPUCKPT_INCREMENTS=2 GPUCKPT_KEEP=10
incs="$(for n in 1 2 3 4 5; do field "$D/ckpt.00000$n" increment; done | tr '\n' ' ')"
gk_expect "GPUCKPT_INCREMENTS=2: whole, increment 1, 2, whole, increment 1 ($incs)" chain \
	test "$incs" = "0 1 2 0 1 "
full=$(written "$GK_SCRATCH/chain.err" 1)
inc=$(written "$GK_SCRATCH/chain.err" 2)
gk_expect "an increment writes what changed: ${inc:-?} of ${full:-?} bytes" chain \
	test -n "$inc" -a -n "$full" -a "${inc:-0}" -gt 0 -a "$((${inc:-0} * 4))" -lt "${full:-0}"
gk_expect "the change keys came from the hash kernel" chain \
	sh -c "grep -q 'the hash kernel is loaded' '$GK_SCRATCH/chain.err' && ! grep -q 'found on the host' '$GK_SCRATCH/chain.err'"
gk_expect "ckpt.000003 refers to the checkpoints that hold its unchanged chunks" chain \
	grep -q '"references": \[$' "$D/ckpt.000003/manifest.json"
"$GK_TOOL" inspect "$D/ckpt.000003" >"$GK_SCRATCH/inspect.out" 2>&1
gk_expect "gpuckpt inspect says what it needs" inspect \
	grep -q "increment     2: its unchanged chunks lie in .*ckpt.000001" "$GK_SCRATCH/inspect.out"
"$GK_TOOL" verify "$D"/ckpt.00000[1-5] >"$GK_SCRATCH/verify.out" 2>&1
gk_expect "gpuckpt verify accepts every one of them, following the references" verify test $? -eq 0
gk_restore r3 "$D/ckpt.000003" "$D"
gk_expect "a chain of three (ckpt.000003) restores exactly: uninterrupted run's checksum" r3 \
	test "$(gk_resumed_step "$GK_SCRATCH/r3.out")" = "$(field "$D/ckpt.000003" step)" -a \
	"$(gk_checksum_of "$GK_SCRATCH/r3.out")" = "$REF"
gk_restore r5 auto "$D"
gk_expect "the newest (an increment of the second whole one) too" r5 \
	test "$(gk_resumed_step "$GK_SCRATCH/r5.out")" = "$(field "$D/ckpt.000005" step)" -a \
	"$(gk_checksum_of "$GK_SCRATCH/r5.out")" = "$REF"

# --- a restored process builds on what it restored --------------------------------
cp -a "$D" "$GK_SCRATCH/again"
D2=$GK_SCRATCH/again
run_bg again GPUCKPT_DIR="$D2" GPUCKPT_RESTORE=auto GPUCKPT_HASH_MODULE="$HASH" GPUCKPT_INCREMENTS=2 \
	GPUCKPT_KEEP=10
gk_wait_for again "resumed from step"
at=$(gk_resumed_step "$GK_SCRATCH/again.out")
gk_wait_for again "step $(((at / 10 + 2) * 10))"
kill -TERM $PID; wait $PID
gk_expect "after a restore from ckpt.000005, the next checkpoint is its increment" again \
	grep -q "ckpt.000006: wrote .*increment 2 of ckpt.000005" "$GK_SCRATCH/again.err"
gk_restore again-r auto "$D2"
gk_expect "... and restores exactly" again-r test "$(gk_checksum_of "$GK_SCRATCH/again-r.out")" = "$REF"

# --- a damaged base ------------------------------------------------------------------
# ckpt.000005 is an increment of ckpt.000004 (whole); ckpt.000003 of 000002 and
# 000001. One byte of ckpt.000004 changed: 5 and 4 are refused, and the
# restore falls back to the older chain, ckpt.000003.
B=$GK_SCRATCH/damaged
cp -a "$D" "$B"
f=$(ls "$B/ckpt.000004"/device0*.data | head -1)
printf '\xff' | dd of="$f" bs=1 seek=4096 conv=notrunc status=none
"$GK_TOOL" verify "$B/ckpt.000005" >"$GK_SCRATCH/v5.out" 2>&1
status=$?
gk_expect "gpuckpt verify refuses the increment, naming the damaged file of its base ($status)" v5 \
	sh -c "test $status -eq 1 && grep -q 'ckpt.000004/device0.*checksum mismatch' '$GK_SCRATCH/v5.out'"
gk_restore fb auto "$B"
gk_expect "a restart refuses the increment of the damaged base" fb \
	grep -q "ckpt.000005: refused: ckpt.000004/.*checksum mismatch" "$GK_SCRATCH/fb.err"
gk_expect "... and the base itself" fb grep -q "ckpt.000004: refused: .*checksum mismatch" "$GK_SCRATCH/fb.err"
gk_expect "... and falls back to the older chain (ckpt.000003, step $(field "$B/ckpt.000003" step)) with the right checksum" fb \
	test "$(gk_resumed_step "$GK_SCRATCH/fb.out")" = "$(field "$B/ckpt.000003" step)" -a \
	"$(gk_checksum_of "$GK_SCRATCH/fb.out")" = "$REF"
# Now the older whole one too: every increment of it is refused.
f=$(ls "$B/ckpt.000001"/device0*.data | head -1)
printf '\xff' | dd of="$f" bs=1 seek=4096 conv=notrunc status=none
"$GK_TOOL" verify "$B/ckpt.000002" "$B/ckpt.000003" >"$GK_SCRATCH/v23.out" 2>&1
gk_expect "a damaged ckpt.000001 makes both its increments fail gpuckpt verify" v23 \
	test "$(grep -c 'ckpt.000001/device0.*checksum mismatch' "$GK_SCRATCH/v23.out")" -eq 2
gk_restore none auto "$B"
status=$?
gk_expect "... and with every chain damaged, the program does not start (status $status)" none \
	test $status -ne 0 -a -z "$(gk_checksum_of "$GK_SCRATCH/none.out")"
rm -rf "$B/ckpt.000004"
"$GK_TOOL" verify "$B/ckpt.000005" >"$GK_SCRATCH/v5b.out" 2>&1
gk_expect "an increment whose base is gone is refused, saying so" v5b \
	grep -q "ckpt.000005: it is an increment of ckpt.000004, which is not there" "$GK_SCRATCH/v5b.out"

# --- keep and prune ----------------------------------------------------------------
D=$GK_SCRATCH/keep
chain keep "$D" GPUCKPT_HASH_MODULE="$HASH" GPUCKPT_INCREMENTS=4 GPUCKPT_KEEP=1
left=$(ls "$D" | grep -vx gpuckpt.events | tr '\n' ' ')
needs=$(sed -n '/"references"/,/^  \]/s/^      "sequence": *\([0-9]*\).*/\1/p' "$D/ckpt.000005/manifest.json" | sort -n | tr '\n' ' ')
gk_expect "GPUCKPT_KEEP=1 keeps the newest and what it refers to (left: $left; it needs: $needs)" keep \
	test "$left" = "$(for n in $needs 5; do printf 'ckpt.%06d ' "$n"; done)"
gk_restore keep-r auto "$D"
gk_expect "... and that restores exactly" keep-r test "$(gk_checksum_of "$GK_SCRATCH/keep-r.out")" = "$REF"
out=$("$GK_TOOL" prune --keep 1 "$D" 2>&1)
gk_expect "gpuckpt prune --keep 1 removes nothing it needs" keep \
	test "$(ls "$D" | grep -vx gpuckpt.events | tr '\n' ' ')" = "$left"
gk_expect "... and says why it kept them" keep grep -q "a kept checkpoint's data lies in it" <<<"$out"
"$GK_TOOL" verify "$D/ckpt.000005" >"$GK_SCRATCH/kv.out" 2>&1
gk_expect "... the newest still verifies" kv test $? -eq 0

# --- no hash kernel: change keys on the host -----------------------------------------
D=$GK_SCRATCH/host
chain host "$D" GPUCKPT_INCREMENTS=2 GPUCKPT_KEEP=10
gk_expect "without a loadable hash kernel, changed chunks are found on the host, said once" host \
	test "$(grep -c 'changed chunks are found on the host' "$GK_SCRATCH/host.err")" -eq 1
gk_expect "... the increments are still written (increment of ckpt.000002: $(field "$D/ckpt.000002" increment))" host \
	test "$(field "$D/ckpt.000002" increment)" = 1
gk_restore host-r "$D/ckpt.000003" "$D"
gk_expect "... and restore exactly" host-r test "$(gk_checksum_of "$GK_SCRATCH/host-r.out")" = "$REF"

# --- GPUCKPT_INCREMENTS=0 --------------------------------------------------------------
D=$GK_SCRATCH/whole
chain whole "$D" GPUCKPT_HASH_MODULE="$HASH" GPUCKPT_INCREMENTS=0 GPUCKPT_KEEP=10
gk_expect "GPUCKPT_INCREMENTS=0: every checkpoint is written whole" whole \
	test "$(cat "$D"/ckpt.*/manifest.json | grep -c '"increment": 0')" -eq 5
# The kernel still runs, for all-zero chunks alone (zero-chunks.sh): its keys
# are not recorded.
gk_expect "... with no change keys recorded" whole \
	sh -c "! grep -q '\"keys\"' '$D'/ckpt.*/manifest.json"
tap_done
