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
sec_setup 6
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
tap_done
