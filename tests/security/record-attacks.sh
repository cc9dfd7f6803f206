#!/bin/bash
# record-attacks.sh - issue 24's hole 4: each task's exit appended up to
# 1 MiB of the user's events to the job's root-owned record in the shared
# root, with no total limit, and read the whole record back every time. The
# real code (spank-plugin/job_record.c, driven by record-tool the way
# task_exit drives it for a step's task 0) takes gksec1's events, written
# to the limit of their event file, from 12 steps of one job:
#
#   1  the record stays within 4 MiB
#   2  it says how many events were dropped, and every event offered is
#      either kept or counted as dropped
#   3  an append and its read-back read no more than the limit, not the
#      whole record
#   4  an append without the read-back reads only the record's end
#   5  the record is root's, 0600
#   6  `gpuckpt report` reads the record and counts what was dropped
#   7  the sweep removes records older than the site's age, and 8 only those
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
. "$top_srcdir/tests/security/lib.sh"

TOOL=$top_builddir/tests/security/record-tool
gk_need_built "$TOOL" "$GK_TOOL"
sec_setup 8

BB=$GK_SCRATCH/bb SH=$GK_SCRATCH/shared
mkdir -p "$BB" "$SH" && chmod 0755 "$BB" && chmod 0700 "$SH"
LIMIT=$((4 << 20))
JOB=424 STEPS=12
mkdir -m 0700 "$BB/$JOB" && chown "$U1:$G1" "$BB/$JOB"

offered=0 last=
for s in $(seq 0 $((STEPS - 1))); do
	d=$BB/$JOB/step.$s/task.0
	as gksec1 mkdir -p -m 0700 "$d"
	# The user fills the event file to the runtime's 1 MiB bound.
	as gksec1 sh -c 'awk '\''BEGIN { for (i = 0; n < 1048000; i++) {
		l = sprintf("gpuckpt-event 1 kind=checkpoint result=ok time=1732400000.%03d pid=%d ckpt=%d bytes=1048576 seconds=0.125 elapsed=12.5 gpus=8", i % 1000, 100000 + i, i + 1)
		if (n + length(l) + 1 > 1048000) break
		print l; n += length(l) + 1 } }'\'' >"$1"' _ "$d/gpuckpt.events"
	out=$("$TOOL" keep "$BB" "$SH" "$JOB" "$U1" node1 "$s" 0 2>&1)
	n=$(sed -n 's/^collected=\([0-9]*\) .*/\1/p' <<<"$out")
	offered=$((offered + ${n:-0}))
	last=$out
done
REC=$SH/records/$JOB
size=$(stat -c %s "$REC" 2>/dev/null || echo 0)
kept=$(grep -c '^gpuckpt-event 1 ' "$REC" 2>/dev/null)
dropline=$(tail -n 1 "$REC" 2>/dev/null | grep '^gpuckpt-dropped ')
dropped=$(awk '{ print $2 + 0 }' <<<"$dropline")
tap_diag "last append: $last"
tap_diag "offered $offered events over $STEPS steps; record: $size bytes, $kept events, last line '${dropline:-none}'"
check "1: the record stays within $LIMIT bytes ($size)" [ "$size" -le "$LIMIT" ]
check "2: its last line counts the dropped events, and kept + dropped = offered ($kept + ${dropped:-none} = $offered)" \
	test -n "$dropline" -a "$((kept + ${dropped:-0}))" = "$offered"
read=$(sed -n 's/.* read=\([0-9]*\).*/\1/p' <<<"$last")
check "3: the last append and its read-back read at most the limit, not the whole record (${read:-?} bytes)" \
	test -n "$read" -a "${read:-0}" -le $((LIMIT + 4096))
# Step 12's task 1: an append that needs nothing back.
d=$BB/$JOB/step.11/task.1
as gksec1 mkdir -m 0700 "$d"
as gksec1 sh -c 'for i in $(seq 2000); do echo "gpuckpt-event 1 kind=restore result=ok time=1732400001.5 ckpt=$i"; done >"$1"' _ "$d/gpuckpt.events"
out=$("$TOOL" append "$BB" "$SH" "$JOB" "$U1" node1 11 1 2>&1)
tap_diag "append: $out; record now $(stat -c %s "$REC") bytes, $(tail -n 1 "$REC")"
read=$(sed -n 's/.* read=\([0-9]*\).*/\1/p' <<<"$out")
check "4: an append to the full record reads only its end (${read:-?} bytes), counts 2000 more dropped" \
	test -n "$read" -a "${read:-0}" -le 4096 -a "$(tail -n 1 "$REC")" = "$(printf 'gpuckpt-dropped %020d' $((dropped + 2000)))"
dropped=$((dropped + 2000))
check "5: the record is root's, 0600" [ "$(stat -c '%U %a' "$REC")" = "root 600" ]

rep=$("$GK_TOOL" report --json --job "$JOB" "$SH" 2>&1)
tap_diag "report: $(head -c 400 <<<"$rep")"
check "6: gpuckpt report reads it: the kept checkpoints, the dropped events counted" \
	bash -c 'grep -q "\"checkpoints\": *$2" <<<"$1" && grep -q "\"dropped_events\": *$3\b" <<<"$1"' _ \
	"$rep" "$kept" "${dropped:-x}"

# 6. The sweep: a record untouched for 40 days goes, one of today stays;
# names that are not records are left alone.
for r in 1001 1002; do cp "$REC" "$SH/records/$r"; done
touch -d '40 days ago' "$SH/records/1001" "$SH/records/$JOB"
touch "$SH/records/1002"
: >"$SH/records/notes" && touch -d '40 days ago' "$SH/records/notes"
out=$("$TOOL" sweep "$SH" 30 2>&1)
tap_diag "sweep: $out; left: $(ls -A "$SH/records" | tr '\n' ' ')"
check "7: the sweep removes the records older than 30 days" \
	test ! -e "$SH/records/1001" -a ! -e "$SH/records/$JOB"
check "8: and keeps the newer record and what is not a record" \
	test -e "$SH/records/1002" -a -e "$SH/records/notes"
tap_done
