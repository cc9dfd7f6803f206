#!/bin/bash
# messages.sh - docs/troubleshooting.md explains every message that the
# runtime, the shepherd and the Slurm plugin print at warning level or above:
# docs/list-messages.sh reads them from the sources (gk_warn, gk_error,
# slurm_error), and each must appear in the guide, in backquotes, exactly as
# the format string has it. A new message without an entry fails here.
# Usage: messages.sh [GUIDE] (default docs/troubleshooting.md).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
GUIDE=${1:-$top_srcdir/docs/troubleshooting.md}
list=$("$top_srcdir/docs/list-messages.sh" "$top_srcdir")
n=$(grep -c . <<<"$list")
check "list-messages.sh finds the messages of the three parts ($n)" \
	bash -c '[ "$1" -ge 50 ] && for p in runtime shepherd plugin; do grep -q "^$p	" <<<"$2" || exit 1; done' _ "$n" "$list"
probe=$(grep -c 'transparent: checkpoint of pid %d failed: %s' <<<"$list")
check "... with their format strings as written (a shepherd message)" [ "$probe" = 1 ]
check "the guide exists" [ -f "$GUIDE" ]
missing=""
while IFS=$'\t' read -r part fmt; do
	grep -qF -- "\`$fmt\`" "$GUIDE" || missing+=$'\n'"$part: $fmt"
done <<<"$list"
check "the guide explains every message$([ -n "$missing" ] && echo " (missing $(grep -c . <<<"$missing"))")" [ -z "$missing" ]
[ -n "$missing" ] && tap_diag "missing from $GUIDE:$missing"
tap_plan "$TAP_N"
tap_done
