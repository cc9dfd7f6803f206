#!/bin/bash
# cli-labels.sh - whoever writes a checkpoint chooses its label: `gpuckpt
# inspect` and `gpuckpt list` must not pass terminal escapes or new lines
# of it to the terminal of whoever looks (an administrator, root).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

TOOL=$top_builddir/runtime/gpuckpt
MKIMAGE=$top_builddir/tests/image/mkimage
tap_plan 6
gk_scratch
label=$'step 5\e[2J\e[31m\nFORGED: OK (signed by root)\x07\xc2\x9b'
ck=$(with_standin "$MKIMAGE" "$GK_SCRATCH/root" --unsigned --label "$label" 2>/dev/null)
check "a checkpoint whose label holds escapes, a new line and a bell is written" [ -d "$ck" ]
"$TOOL" inspect "$ck" >"$GK_SCRATCH/inspect" 2>&1
check "inspect: no escape or bell byte reaches the terminal" \
	[ -z "$(LC_ALL=C grep -l $'[\x1b\x07]' "$GK_SCRATCH/inspect")" ]
check "inspect: the label cannot start a line of its own" \
	[ -z "$(grep '^FORGED' "$GK_SCRATCH/inspect")" ]
check "inspect: the label is shown escaped" \
	grep -q 'label         step 5\\x1b\[2J\\x1b\[31m\\x0aFORGED: OK (signed by root)\\x07\\xc2\\x9b$' "$GK_SCRATCH/inspect"
"$TOOL" list "$GK_SCRATCH/root" >"$GK_SCRATCH/list" 2>&1
check "list: no escape or bell byte reaches the terminal" \
	[ -z "$(LC_ALL=C grep -l $'[\x1b\x07]' "$GK_SCRATCH/list")" ]
check "list: the label cannot start a line of its own" [ -z "$(grep '^FORGED' "$GK_SCRATCH/list")" ]
tap_done
