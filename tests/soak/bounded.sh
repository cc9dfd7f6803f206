#!/bin/bash
# bounded.sh - the soak of make check-slurm (issue 29): tests/soak/soak.sh
# with a fixed seed and at most 5 minutes in all, run once per CI run: on the
# newest Slurm release the suite knows (tests/slurm/debian-root.sh expected
# sid, the sid root's phase of tests/run-all). Elsewhere it is a SKIP saying
# so, so that the bookworm and trixie phases do not pay for it;
# GK_SOAK_ANY_SLURM=1 runs it on any release. `make soak` is the long run.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

newest=$("$top_srcdir/tests/slurm/debian-root.sh" expected sid)
have=$(slurmd -V 2>/dev/null | sed -n 's/^slurm[-a-z]* \([0-9]*\.[0-9]*\).*/\1/p')
if [ -z "${GK_SOAK_ANY_SLURM:-}" ] && [ "$have" != "$newest" ]; then
	tap_plan 1
	tap_skip "the bounded soak runs on the newest Slurm release only ($newest, the sid root of tests/run-all); this is ${have:-no Slurm} (GK_SOAK_ANY_SLURM=1 runs it anyway)"
	exit 0
fi
export SOAK_SEED=29 SOAK_SECONDS=120 SOAK_NODES=4 SOAK_JOBS=6 SOAK_FAULT_GAP=5 SOAK_DRAIN=120
exec "$top_srcdir/tests/soak/soak.sh"
