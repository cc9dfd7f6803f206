#!/bin/bash
# cli-root.sh - `gpuckpt prune` run by root (an administrator cleaning up) on
# a path that runs through a job's folder: a link the job's user put on the
# way must not lead root into another user's folders (found in the review
# of issue 24). gksec1 owns job 201 and links its step.0 to gksec2's job
# 202; root prunes "201's" task folder.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
. "$top_srcdir/tests/security/lib.sh"

TOOL=$top_builddir/runtime/gpuckpt
MKIMAGE=$top_builddir/tests/image/mkimage
sec_setup 13
BB=$GK_SCRATCH/bb
mkdir -m 0755 "$BB"
# make_job JOB USER: two committed checkpoints of task 0 of JOB's step 0.
make_job() {
	mkdir -p "$BB/$1/step.0/task.0"
	with_standin "$MKIMAGE" "$BB/$1/step.0/task.0" --unsigned --seed 1 >/dev/null 2>&1
	with_standin "$MKIMAGE" "$BB/$1/step.0/task.0" --unsigned --seed 2 >/dev/null 2>&1
	chown -R "$2:" "$BB/$1"
	chmod -R go-rwx "$BB/$1"
}
make_job 202 gksec2
make_job 203 gksec2
T2=$BB/202/step.0/task.0
T3=$BB/203/step.0/task.0
# gksec1's job 201, whose step.0 is gksec1's link to gksec2's.
mkdir -m 0700 "$BB/201"
chown gksec1: "$BB/201"
as gksec1 ln -s "$BB/202/step.0" "$BB/201/step.0"

"$TOOL" prune --keep 1 "$BB/201/step.0/task.0" >"$GK_SCRATCH/prune" 2>&1
rc=$?
check "prune as root through a user's link: the other user's older checkpoint is still there" \
	[ -d "$T2/ckpt.000001" ]
check "prune as root through a user's link: refused (status $rc)" [ "$rc" -ne 0 ]
check "prune as root through a user's link: the message names the link" \
	grep -q "201/step.0 is a symbolic link" "$GK_SCRATCH/prune"
# verify as root: what it reports on must be the folder named, not another
# user's checkpoint a link leads to.
"$TOOL" verify "$BB/201/step.0/task.0/ckpt.000002" >"$GK_SCRATCH/verify" 2>&1
check "verify as root through a user's link: refused, naming the link" \
	grep -q "201/step.0 is a symbolic link" "$GK_SCRATCH/verify"
# What must still work: an administrator's own link to the root (made by
# root in a folder only root can change), and the user's own folder.
ln -s "$BB" "$GK_SCRATCH/site"
"$TOOL" prune --dry-run --keep 1 "$GK_SCRATCH/site/203/step.0/task.0" >"$GK_SCRATCH/dry" 2>&1
check "prune as root through root's own link to the root: works" grep -q "would remove .*ckpt.000001" "$GK_SCRATCH/dry"
"$TOOL" prune --keep 1 "$T3" >"$GK_SCRATCH/own" 2>&1
check "prune as root of a user's task folder named whole: removes the older checkpoint" \
	[ ! -e "$T3/ckpt.000001" -a -d "$T3/ckpt.000002" ]

# list, inspect and plan as root: the same link must not show gksec2's
# checkpoints as job 201's.
"$TOOL" list "$BB/201/step.0/task.0" >"$GK_SCRATCH/list" 2>&1
rc=$?
check "list as root through a user's link: refused (status $rc), naming the link and uid $U1 (gksec1) that made it" \
	grep -q "201/step.0 is a symbolic link made by uid $U1 (gksec1)" "$GK_SCRATCH/list"
check "list as root through a user's link: none of the other user's checkpoints shown" \
	eval '[ "$rc" -ne 0 ] && ! grep -q "^00000[12]" "$GK_SCRATCH/list"'
"$TOOL" inspect "$BB/201/step.0/task.0/ckpt.000002" >"$GK_SCRATCH/inspect" 2>&1
rc=$?
check "inspect as root through a user's link: refused (status $rc), naming the link and its owner, nothing shown" \
	eval '[ "$rc" -ne 0 ] && grep -q "201/step.0 is a symbolic link made by uid $U1" "$GK_SCRATCH/inspect" &&
		! grep -q "^Checkpoint" "$GK_SCRATCH/inspect"'
# plan JOBDIR: gksec1 names gksec2's job folder as one of its own.
as gksec1 ln -s "$BB/202" "$BB/201/job"
"$TOOL" plan --owner gksec2 "$BB/201/job" >"$GK_SCRATCH/plan" 2>&1
rc=$?
check "plan as root through a user's link: refused (status $rc), naming the link and its owner, no plan of the other job" \
	eval '[ "$rc" -ne 0 ] && grep -q "201/job is a symbolic link made by uid $U1" "$GK_SCRATCH/plan" &&
		! grep -q "^step.0" "$GK_SCRATCH/plan"'
# What must still work as root: list, inspect and plan of a user's own
# folders named whole.
"$TOOL" list "$BB/202/step.0/task.0" >"$GK_SCRATCH/list-own" 2>&1
check "list as root of a user's own task folder: lists it" grep -q "^000002 " "$GK_SCRATCH/list-own"
"$TOOL" inspect "$BB/202/step.0/task.0/ckpt.000002" >"$GK_SCRATCH/inspect-own" 2>&1 &&
"$TOOL" plan --owner gksec2 "$BB/202" >"$GK_SCRATCH/plan-own" 2>&1
check "inspect and plan as root of a user's own folders: shown" \
	eval 'grep -q "^Checkpoint" "$GK_SCRATCH/inspect-own" && grep -q "^step.0 " "$GK_SCRATCH/plan-own"'
# verify as root of an increment: its base (ckpt.000001 beside it) must be
# looked up in the folder that was opened and checked, not by the path
# again. gksec1's job 204: ckpt.000002 an increment of ckpt.000001. Root's
# verify is held (gdb) once the checkpoint folder is open; gksec1 then
# moves task.0 away and puts a link to gksec2's task folder in its place.
mkdir -p "$BB/204/step.0/task.0"
with_standin "$MKIMAGE" "$BB/204/step.0/task.0" --unsigned --seed 4 >/dev/null 2>&1
with_standin "$MKIMAGE" "$BB/204/step.0/task.0" --unsigned --increment-of 1 >/dev/null 2>&1
chown -R gksec1: "$BB/204"
chmod -R go-rwx "$BB/204"
printf '#!/bin/sh\ncd "%s/204/step.0" && mv task.0 task.old && ln -s "%s" task.0\n' "$BB" "$T2" \
	>"$GK_SCRATCH/tools/swap"
chmod 0755 "$GK_SCRATCH/tools/swap"
if ! command -v gdb >/dev/null; then
	tap_skip "verify's base through the opened folder: needs gdb to hold verify at the right point"
else
	ASAN_OPTIONS=detect_leaks=0 gdb -q -batch -ex 'set breakpoint pending on' \
		-ex 'break gk_manifest_parse' -ex run -ex 'delete' \
		-ex "shell setpriv --reuid=$U1 --regid=$G1 --clear-groups $GK_SCRATCH/tools/swap" \
		-ex continue --args "$TOOL" verify --owner gksec1 \
		"$BB/204/step.0/task.0/ckpt.000002" >"$GK_SCRATCH/verify-chain" 2>&1
	check "verify as root: an increment's base is read in the folder opened, not through the user's link put on its path meanwhile" \
		eval '[ -L "$BB/204/step.0/task.0" ] && grep -q "ckpt.000002: OK" "$GK_SCRATCH/verify-chain"'
	grep -q "ckpt.000002: OK" "$GK_SCRATCH/verify-chain" ||
		tap_diag "$(grep -v '^\[' "$GK_SCRATCH/verify-chain" | tail -n 8)"
fi
tap_done
