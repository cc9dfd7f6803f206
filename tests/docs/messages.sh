#!/bin/bash
# messages.sh - docs/troubleshooting.md explains every message that the
# runtime, the shepherd and the Slurm plugin print at warning level or above:
# docs/list-messages.sh reads them from the sources (gk_warn, gk_error,
# slurm_error, the plugin's task lines, the helpers' stderr lines, the
# signal handler's, libgpuckpt-mpi's; its header lists them), and each must
# appear in the guide, in backquotes, exactly as the format string has it.
# A new message without an entry fails here.
# Usage: messages.sh [GUIDE] (default docs/troubleshooting.md).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
GUIDE=${1:-$top_srcdir/docs/troubleshooting.md}
list=$("$top_srcdir/docs/list-messages.sh" "$top_srcdir")
n=$(grep -c . <<<"$list")
check "list-messages.sh finds the messages of the three parts ($n)" \
	bash -c '[ "$1" -ge 50 ] && for p in runtime shepherd plugin; do grep -q "^$p	" <<<"$2" || exit 1; done' _ "$n" "$list"
probe() { grep -cxF "$1" <<<"$list"; }
check "... with their format strings as written (a shepherd message)" \
	[ "$(probe $'shepherd\ttransparent: checkpoint of pid %d failed: %s')" = 1 ]
check "... a plugin's task line, macros spelled out (transparent mode in a container)" \
	[ "$(probe $'plugin\ttransparent mode does not reach into containers yet: run this step with --gpu-checkpoint-mode=app (programs that use the gpuckpt API are checkpointed in containers)')" = 1 ]
check "... the signal handler's line, its arguments as %s" \
	[ "$(probe $'runtime\tcheckpoint: no checkpoint taken on %s; the program ends as it would without gpuckpt')" = 1 ]
check "... a helper's stderr line, up to its newline (the shepherd's usage error)" \
	[ "$(probe $'shepherd\tgpuckpt-shepherd: %s')" = 1 ]
check "the guide exists" [ -f "$GUIDE" ]
missing=""
while IFS=$'\t' read -r part fmt; do
	grep -qF -- "\`$fmt\`" "$GUIDE" || missing+=$'\n'"$part: $fmt"
done <<<"$list"
check "the guide explains every message$([ -n "$missing" ] && echo " (missing $(grep -c . <<<"$missing"))")" [ -z "$missing" ]
[ -n "$missing" ] && tap_diag "missing from $GUIDE:$missing"
tap_plan "$TAP_N"
tap_done
