#!/bin/bash
# metrics-attacks.sh - issue 24's hole 2: a lock that any local user could
# take froze root's metrics update, and with it task_exit, the prolog and
# the epilog of every gpuckpt job on the node (jobs sat in COMPLETING). The
# real update (spank-plugin/metrics.c, driven by record-tool as the epilog
# drives it) runs as root while gksec1 holds flock on everything of the
# metrics folder they can open:
#
#   1  root's update finishes within a bound (the old code waited forever)
#   2  and the counter it added is in the file
#   3  the lock root takes is one no user can open
#   4  a root updater stuck holding that lock delays the next one by a
#      bounded wait only, and the missed update is reported, not waited for
#   6  a lock file that others could open (left by hand, or an older
#      install), held by gksec1, is replaced, not waited for
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
. "$top_srcdir/tests/security/lib.sh"

TOOL=$top_builddir/tests/security/record-tool
gk_need_built "$TOOL"
sec_setup 7

M=$GK_SCRATCH/metrics
mkdir -m 0755 "$M"
PROM=$M/gpuckpt.prom
jobs_total() { awk '$1 == "gpuckpt_jobs_total" { print $2 }' "$PROM" 2>/dev/null; }

"$TOOL" metrics "$PROM" >"$GK_SCRATCH/first" 2>&1
tap_diag "$(cat "$GK_SCRATCH/first")"
before=$(jobs_total)

# gksec1 holds an exclusive flock on the folder and on every entry of it
# that they can open, for longer than the test.
PIDS=()
for f in "$M" "$M"/* "$M"/.[!.]*; do
	[ -e "$f" ] || continue
	setpriv --reuid="$U1" --regid="$G1" --clear-groups -- flock -n -F "$f" sleep 120 \
		>/dev/null 2>&1 &
	PIDS+=($!)
done
sleep 0.5
held=$(for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && echo x; done | wc -l)
tap_diag "gksec1 holds flock on $held of $((${#PIDS[@]})) entries of the metrics folder"

t0=$(date +%s)
timeout 30 "$TOOL" metrics "$PROM" >"$GK_SCRATCH/second" 2>&1
rc=$?
t1=$(date +%s)
tap_diag "update under the user's locks: rc=$rc after $((t1 - t0)) s: $(cat "$GK_SCRATCH/second")"
check "1: root's metrics update finishes within 10 s while a user holds flock on the folder (rc=$rc, $((t1 - t0)) s)" \
	test "$rc" -ne 124 -a $((t1 - t0)) -le 10
check "2: and its count is in the file (gpuckpt_jobs_total ${before:-none} -> $(jobs_total))" \
	test -n "$before" -a "$(jobs_total)" = "$((before + 1))"
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
wait 2>/dev/null

# 3. Whatever root locks, gksec1 cannot open: every file of the folder a
# user can open is one root never locks (the file, which readers need).
opened=$(for f in "$M"/.[!.]* "$M"/*; do
	[ -f "$f" ] || continue
	as gksec1 sh -c ': <"$1"' _ "$f" 2>/dev/null && echo "${f##*/}"
done | tr '\n' ' ')
tap_diag "entries gksec1 can open: ${opened:-none}; entries: $(ls -A "$M" | tr '\n' ' ')"
check "3: the lock is a file of root's that no user can open" \
	bash -c '[ -f "$1/.gpuckpt.prom.lock" ] && [ "$(stat -c "%U %a" "$1/.gpuckpt.prom.lock")" = "root 600" ] && [ "$2" = "gpuckpt.prom " ]' _ "$M" "$opened"

# 4. A stuck root updater (root's own process holding the lock).
flock -F "$M/.gpuckpt.prom.lock" sleep 60 &
HOLDER=$!
sleep 0.5
before=$(jobs_total)
t0=$(date +%s)
timeout 30 "$TOOL" metrics "$PROM" >"$GK_SCRATCH/third" 2>&1
rc=$?
t1=$(date +%s)
kill "$HOLDER" 2>/dev/null
wait 2>/dev/null
tap_diag "update while root's lock is held: rc=$rc after $((t1 - t0)) s: $(cat "$GK_SCRATCH/third")"
check "4: a held lock makes root give up within 10 s (rc=$rc, $((t1 - t0)) s)" \
	test "$rc" -ne 124 -a $((t1 - t0)) -le 10
check "5: and the missed update is reported, naming the file and why, the counters left as they were" \
	bash -c '[ "$1" -eq 1 ] && grep -q "gpuckpt.prom.*lock" "$2" && [ "$3" = "$4" ]' _ "$rc" \
	"$GK_SCRATCH/third" "$before" "$(jobs_total)"

# 6. The lock file once had a mode that let gksec1 open it, and they hold it.
chmod 0644 "$M/.gpuckpt.prom.lock"
setpriv --reuid="$U1" --regid="$G1" --clear-groups -- flock -n -F "$M/.gpuckpt.prom.lock" sleep 120 \
	>/dev/null 2>&1 &
HOLDER=$!
sleep 0.5
before=$(jobs_total)
t0=$(date +%s)
timeout 30 "$TOOL" metrics "$PROM" >"$GK_SCRATCH/fourth" 2>&1
rc=$?
t1=$(date +%s)
tap_diag "update while gksec1 holds a lock file they could open: rc=$rc after $((t1 - t0)) s: $(cat "$GK_SCRATCH/fourth")"
check "6: a lock file others could open is replaced, and the update done at once (rc=$rc, $((t1 - t0)) s)" \
	test "$rc" = 0 -a $((t1 - t0)) -le 2 -a "$(jobs_total)" = "$((before + 1))"
check "7: the new lock is root's 0600 again" [ "$(stat -c '%U %a' "$M/.gpuckpt.prom.lock")" = "root 600" ]
kill "$HOLDER" 2>/dev/null
wait 2>/dev/null
tap_done
