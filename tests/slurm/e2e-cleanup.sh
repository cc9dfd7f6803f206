#!/bin/bash
# e2e-cleanup.sh - what a killed demo or test leaves behind is taken down: a
# cluster left running (its starter gone, as after a kill -9 of the demo) is
# stopped by a plain `cluster.sh stop`, which finds it through
# /run/gpuckpt-test-cluster, and by the next test's or demo's start; a start
# that fails half-way takes down what it made.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

E2E_OWN_APP=1
e2e_require 11
LEFT=${GK_E2E_CLUSTER_DIR:-/tmp/gpuckpt-e2e}-left
REC=/run/gpuckpt-test-cluster
netns_left() { ip netns list | grep -c '^gpuckpt-'; }
ctl_pid() { cat "$1/run/slurmctld.started" 2>/dev/null; }
users_made() { cat "$1/users-made" 2>/dev/null; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }
dead() { [ -n "$1" ] && ! kill -0 "$1" 2>/dev/null; }
refused_start() { ! GK_CLUSTER_DIR=$1 "$CLUSTER" start >/dev/null 2>&1; }

# Whatever an earlier run left, first (this test's own start does the same).
[ -s "$REC" ] && env -u GK_CLUSTER_DIR "$CLUSTER" stop >/dev/null 2>&1

# 1. A cluster whose starter is gone: `cluster.sh stop` alone finds it.
GK_CLUSTER_DIR=$LEFT "$CLUSTER" start >/dev/null 2>&1
check "a cluster started in $LEFT is on record" [ "$(cat "$REC" 2>/dev/null)" = "$LEFT" ]
pid=$(ctl_pid "$LEFT")
made=$(users_made "$LEFT")
check "its daemons and namespaces are up (slurmctld $pid)" alive "$pid"
env -u GK_CLUSTER_DIR "$CLUSTER" stop >/dev/null 2>&1
check "a plain 'cluster.sh stop' ends its daemons" dead "$pid"
check "... removes its network namespaces" [ "$(netns_left)" = 0 ]
gone=1
for u in $made; do getent passwd "$u" >/dev/null && gone=0; done
check "... the test users it made (${made:-none})" [ $gone = 1 ]
check "... its folder and the record" [ ! -e "$LEFT" -a ! -e "$REC" ]

# 2. The next start (a test's, the demo's) takes a leftover down first.
GK_CLUSTER_DIR=$LEFT "$CLUSTER" start >/dev/null 2>&1
pid=$(ctl_pid "$LEFT")
check "another cluster is refused while one is set up" refused_start "$LEFT-2"
e2e_start
check "e2e_start stopped the leftover cluster" dead "$pid"
check "... and started its own" [ "$(cat "$REC" 2>/dev/null)" = "$E2E_DIR" -a ! -e "$LEFT" -a -n "$(sinfo -h -N -o %N)" ]
"$CLUSTER" stop >/dev/null 2>&1

# 3. A start that fails half-way (here: no plugin) takes down what it made.
out=$(GK_CLUSTER_DIR=$LEFT GK_PLUGIN=/nonexistent/spank_gpuckpt.so "$CLUSTER" start 2>&1)
check "a start without the plugin fails, naming it" grep -q "no plugin at /nonexistent/spank_gpuckpt.so" <<<"$out"
check "... and leaves no namespace, folder or record" \
	[ "$(netns_left)" = 0 -a ! -e "$LEFT" -a ! -e "$REC" ]
tap_done
