#!/bin/bash
# thread-files.sh - a descriptor on a /proc file of one of the program's
# threads (/proc/P/task/T/comm) at a transparent checkpoint. CRIU dumps it
# but cannot restore it ("Can't open file proc/P/task/T/comm": it opens files
# before it makes threads), so such a checkpoint is committed useless; a JAX
# job under Slurm was caught holding one (pthread_setname_np's moment). The
# shepherd (checkpoint.c, stop_without_thread_files) gives the tree a short while to
# close it, and refuses, naming it, when it stays open:
#
#   hold:  prog-threadfile keeps the descriptor: SIGTERM commits no
#          checkpoint, the log names the file and why, the program is not
#          harmed (it counts on to the end);
#   blink: it closes the descriptor 700 ms after SIGTERM (its "count 20"):
#          the checkpoint waits for that, is committed, and restores to count
#          on to the end;
#   flicker: a thread opens the descriptor for 18 ms of every 20, over and
#          over: the checkpoint is committed and restores to count on to the
#          end. The shepherd looks at the tree stopped, so what it saw is
#          what CRIU dumps; when it looked at the running tree (before
#          2026-11-29), the descriptor was open again by the time CRIU seized
#          it and the restore failed ("Can't open file proc/P/task/T/comm"),
#          as it did for a CuPy job under Slurm on the H200.
#
# Needs root, munged and CRIU 4 (as stdio-criu.sh): SKIPs with the reason.
#
#   make check TESTS=shepherd/thread-files.sh     (in build/tests)
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"
SHEP=$top_builddir/runtime/gpuckpt-shepherd
PROG=$top_builddir/tests/shepherd/prog-threadfile
PLAN=8
tap_plan $PLAN
gk_scratch

gk_need_built "$SHEP" "$PROG"
why=
if [ "$(id -u)" -ne 0 ]; then
	why="needs root (the shepherd does)"
elif ! gk_find_criu; then
	why=$CRIU_WHY
elif ! gk_munged; then
	why=$MUNGE_WHY
fi
if [ -n "$why" ]; then
	for i in $(seq $PLAN); do tap_skip "$why"; done
	exit 0
fi
trap '[ -n "$MUNGED" ] && kill "$MUNGED" 2>/dev/null; rm -rf "$GK_SCRATCH"' EXIT
gk_close_inherited
N=80
wait_for() { # FILE PATTERN SECONDS
	for i in $(seq $(($3 * 20))); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done
	return 1
}
# run MODE: the shepherd with the program, SIGTERM at count 20; sets SPID's
# status in STATUS. Output in $GK_SCRATCH/MODE.{out,err}.
run() {
	local mode=$1 dir=$GK_SCRATCH/$1 spid
	mkdir -p "$dir"
	"$SHEP" run --criu "$CRIU" --dir "$dir" --uid 0 --gid 0 --job 1 --step 0 --task 0 -- \
		"$PROG" "$mode" "$N" </dev/null >"$GK_SCRATCH/$mode.out" 2>"$GK_SCRATCH/$mode.err" &
	spid=$!
	wait_for "$GK_SCRATCH/$mode.out" "^count 20$" 60 || tap_diag "$mode: no 'count 20' after 60 s"
	kill -TERM "$spid"
	wait "$spid"
	STATUS=$?
}

run hold
dir=$GK_SCRATCH/hold
if [ -z "$(ls -d "$dir"/ckpt.* 2>/dev/null)" ]; then
	tap_ok "hold: no checkpoint committed while a descriptor on a thread's /proc file stays open"
else
	tap_not_ok "hold: no checkpoint committed while a descriptor on a thread's /proc file stays open (found $(ls -d "$dir"/ckpt.* | xargs -n1 basename | tr '\n' ' '))"
fi
if grep -q "holds descriptor [0-9]* open on /proc/[0-9]*/task/[0-9]*/comm.*CRIU cannot restore" "$GK_SCRATCH/hold.err"; then
	tap_ok "hold: the shepherd's log names the descriptor, the file and why"
else
	tap_not_ok "hold: the shepherd's log names the descriptor, the file and why"
	tap_diag "$(tail -n 5 "$GK_SCRATCH/hold.err")"
fi
if grep -q "^done" "$GK_SCRATCH/hold.out"; then
	tap_ok "hold: the program was not harmed: it counted to the end (shepherd status $STATUS)"
else
	tap_not_ok "hold: the program was not harmed: it counted to the end (shepherd status $STATUS)"
	tap_diag "$(tail -n 3 "$GK_SCRATCH/hold.out" "$GK_SCRATCH/hold.err")"
fi

run blink
dir=$GK_SCRATCH/blink
if [ -n "$(ls -d "$dir"/ckpt.* 2>/dev/null)" ] && grep -q "waited [0-9]* ms for the tree to close" "$GK_SCRATCH/blink.err"; then
	tap_ok "blink: the checkpoint waited for the descriptor to close, then was committed ($(grep -o "waited [0-9]* ms" "$GK_SCRATCH/blink.err"))"
else
	tap_not_ok "blink: the checkpoint waited for the descriptor to close, then was committed"
	tap_diag "$(tail -n 5 "$GK_SCRATCH/blink.err")"
fi
"$SHEP" restore --criu "$CRIU" --dir "$dir" --uid 0 --gid 0 --job 1 --step 0 --task 0 \
	</dev/null >"$GK_SCRATCH/blink.restored.out" 2>"$GK_SCRATCH/blink.restored.err"
STATUS=$?
if [ "$STATUS" = 0 ] && grep -q "^done" "$GK_SCRATCH/blink.restored.out"; then
	tap_ok "blink: restored by CRIU and counted to the end"
else
	tap_not_ok "blink: restored by CRIU and counted to the end (status $STATUS)"
	tap_diag "$(tail -n 5 "$GK_SCRATCH/blink.restored.err"; grep -i error "$dir"/ckpt.*/criu/restore.log 2>/dev/null | tail -n 3)"
fi
last1=$(grep -o "^count [0-9]*" "$GK_SCRATCH/blink.out" | tail -n 1 | cut -d' ' -f2)
first2=$(grep -o "^count [0-9]*" "$GK_SCRATCH/blink.restored.out" | head -n 1 | cut -d' ' -f2)
if [ -n "$last1" ] && [ -n "$first2" ] && [ "$first2" -gt 20 ] && [ "$first2" -le $((last1 + 1)) ]; then
	tap_ok "blink: it went on from where it was (count $last1, then count $first2)"
else
	tap_not_ok "blink: it went on from where it was (first run ended at '$last1', restored run began at '$first2')"
fi

run flicker
dir=$GK_SCRATCH/flicker
"$SHEP" restore --criu "$CRIU" --dir "$dir" --uid 0 --gid 0 --job 1 --step 0 --task 0 \
	</dev/null >"$GK_SCRATCH/flicker.restored.out" 2>"$GK_SCRATCH/flicker.restored.err"
STATUS=$?
if [ -n "$(ls -d "$dir"/ckpt.* 2>/dev/null)" ]; then
	tap_ok "flicker: the checkpoint was committed ($(grep -o "waited [0-9]* ms" "$GK_SCRATCH/flicker.err" || echo "no wait"))"
else
	tap_not_ok "flicker: the checkpoint was committed"
	tap_diag "$(tail -n 5 "$GK_SCRATCH/flicker.err")"
fi
if [ "$STATUS" = 0 ] && grep -q "^done" "$GK_SCRATCH/flicker.restored.out"; then
	tap_ok "flicker: restored by CRIU and counted to the end"
else
	tap_not_ok "flicker: restored by CRIU and counted to the end (status $STATUS)"
	tap_diag "$(tail -n 3 "$GK_SCRATCH/flicker.restored.err"; grep -i error "$dir"/ckpt.*/criu/restore.log 2>/dev/null | tail -n 3)"
fi
tap_done
