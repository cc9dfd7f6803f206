#!/bin/bash
# source-tree.sh - tests/lib/source-tree.sh, which lets tests/run-all and
# ./demo build out of tree from a source folder that was also configured in
# place: a folder that is not configured is used as it is; one that is, is
# copied (the files git knows, as they are now, and new ones it does not
# ignore; not what it ignores, not what was deleted) and configure is made in
# the copy; one that is configured but no git checkout is refused, saying
# why. On a throw-away git repository with a stand-in autogen.sh. And git
# tracks no program the build makes (make distclean would delete it).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
. "$top_srcdir/tests/lib/source-tree.sh"
tap_plan 11
if ! command -v git >/dev/null; then
	for i in $(seq 11); do tap_skip "git is not installed"; done
	exit 0
fi
gk_scratch
T=$GK_SCRATCH/src
mkdir -p "$T/sub"
cd "$T" || exit 1
git init -q . && git config user.email t@example.invalid && git config user.name test
printf '#!/bin/sh\ncd "$(dirname "$0")" && echo generated >configure\n' >autogen.sh
chmod +x autogen.sh
echo kept >sub/kept.c; echo old >changed.c; echo gone >deleted.c
printf '*.o\n/config.status\n' >.gitignore
git add -A && git commit -q -m init
echo new >changed.c; rm deleted.c; echo untracked >new.c; echo obj >built.o

out=$(gk_vpath_source "$T" "$GK_SCRATCH/copy" 2>&1); rc=$?
check "a folder not configured in place is used as it is" [ $rc -eq 0 -a "$(tail -n 1 <<<"$out")" = "$T" ]
check "... with configure made in it" [ -f "$T/configure" ]
rm -f "$T/configure"

: >config.status
src=$(gk_vpath_source "$T" "$GK_SCRATCH/copy" 2>"$GK_SCRATCH/err"); rc=$?
check "configured in place: the copy is used ($src)" [ $rc -eq 0 -a "$src" = "$GK_SCRATCH/copy" ]
check "... and it says so" grep -q "is configured in place: building from a copy of its sources in $GK_SCRATCH/copy" "$GK_SCRATCH/err"
check "the copy has the tracked files, as they are now" \
	[ "$(cat "$src/sub/kept.c")" = kept -a "$(cat "$src/changed.c")" = new ]
check "... and new files git does not ignore" [ -f "$src/new.c" ]
check "... not what git ignores, nor the in-place configuration" [ ! -e "$src/built.o" -a ! -e "$src/config.status" ]
check "... nor a file deleted since" [ ! -e "$src/deleted.c" ]
check "configure is made in the copy, not in the configured folder" [ -f "$src/configure" -a ! -e "$T/configure" ]

rm -rf .git
gk_vpath_source "$T" "$GK_SCRATCH/copy2" >/dev/null 2>"$GK_SCRATCH/err"; rc=$?
refused_ok() {
	[ $rc -eq 1 ] && grep -q "is configured in place (config.status) and is not a git checkout: run 'make distclean' there" "$GK_SCRATCH/err"
}
check "configured in place and no git checkout: refused, saying what to do" refused_ok

if git -C "$top_srcdir" rev-parse --git-dir >/dev/null 2>&1; then
	elves=$(cd "$top_srcdir" && git ls-files -z | while IFS= read -r -d '' f; do
		[ -f "$f" ] && [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] && echo "$f"; done)
	check "git tracks no compiled program${elves:+ ($elves)}" [ -z "$elves" ]
else
	tap_skip "the sources are not a git checkout"
fi
tap_done
