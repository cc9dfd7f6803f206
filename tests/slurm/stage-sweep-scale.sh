#!/bin/bash
# stage-sweep-scale.sh - the sweep that every epilog runs (gpuckpt-stage out,
# then sweep; scheduler-hooks/stage/sweep.c) against a large site's squeue:
# 5,000 job folders in the shared root, 200,000 jobs in squeue's answer. It
# looked each folder's job up by reading squeue's whole answer again, so its
# processor time grew with folders x jobs (benchmarks/stage/run found it:
# 10,000 of each added 3.4 s to one epilog; here it took about 6 s, and an
# epilog wave runs one per ending job at once). It must stay linear: under
# 1 processor second here, with the right folder still removed. About 2 s.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

STAGE=${GK_STAGE:-$top_builddir/scheduler-hooks/gpuckpt-stage}
N=5000 M=200000
PLAN=4
tap_plan $PLAN
if [ "$(id -u)" -ne 0 ]; then
	for i in $(seq $PLAN); do tap_skip "needs root (gpuckpt-stage runs as root)"; done
	exit 0
fi
gk_need_built "$STAGE"
gk_scratch
chmod 0755 "$GK_SCRATCH"
BB=$GK_SCRATCH/bb SH=$GK_SCRATCH/shared
mkdir -p "$BB" "$SH" && chmod 0755 "$BB" && chmod 0700 "$SH"

# Jobs 1..M, every one running but the last folder's: COMPLETED, and listed
# last, where a lookup that stops early would not find it.
first=100001 last=$((100000 + N))
seq 1 $M | awk -v l=$last '$1 != l { print $1 " RUNNING" } END { print l " COMPLETED" }' \
	>"$GK_SCRATCH/states"
printf '#!/bin/sh\ncat %s\n' "$GK_SCRATCH/states" >"$GK_SCRATCH/squeue"
chmod 0755 "$GK_SCRATCH/squeue"
(cd "$SH" && seq $first $last | xargs mkdir -m 0700)

TIMEFORMAT=%U
cpu=$( { time "$STAGE" sweep --bb-root "$BB" --shared-root "$SH" --squeue "$GK_SCRATCH/squeue" \
	>"$GK_SCRATCH/out" 2>&1; } 2>&1)
status=$?
check "the sweep succeeds (exit $status)" [ $status -eq 0 ]
check "its processor time stays linear: ${cpu} s for $N folders and $M jobs (under 1 s)" \
	awk -v c="$cpu" 'BEGIN { exit !(c + 0 < 1) }'
check "the finished job's folder, listed last by squeue, is removed" \
	grep -q "sweep: job $last is over (COMPLETED): removed $SH/$last" "$GK_SCRATCH/out"
check "every running job's folder is kept" \
	[ "$(find "$SH" -mindepth 1 -maxdepth 1 -name '[0-9]*' | wc -l)" = $((N - 1)) ]
tap_done
