#!/bin/bash
# watchdog.sh COMMAND...: runs one test (timed-driver.sh puts it between the
# TAP driver and the test) and ends it if it runs past its time, so that a
# hung test is one named failure instead of a stuck suite: a test that hung
# for good (a forked child of an ASan program deadlocked in the allocator)
# once held the whole CI run until its 90-minute limit killed everything,
# and the log said nothing of where it hung.
#
# The limit is GK_TEST_TIMEOUT seconds (0: none); by default 1200, plus
# twice SOAK_SECONDS when a soak's length is set (the slowest test of a full
# run took 432 s). Past it, the test's processes are listed on stderr (it
# goes into the test's log), with the kernel function each waits in, then
# the test's process group gets SIGTERM, and SIGKILL 10 s later. The exit
# status is then 124, as timeout(1) says it.
limit=${GK_TEST_TIMEOUT:-$((1200 + 2 * ${SOAK_SECONDS:-0}))}
case $limit in '' | *[!0-9]*)
	echo "watchdog: GK_TEST_TIMEOUT='$limit' is not a number of seconds" >&2
	exit 2
	;;
esac
[ "$limit" -gt 0 ] || exec "$@"

# The test in a session (and process group) of its own, so that all of it
# can be ended at once: setsid, not job control, which would fight make for
# a terminal when run from one. bash's notices of ended background jobs go
# nowhere, the test's stderr where it went.
exec 3>&2 2>/dev/null
setsid "$@" 2>&3 &
test_pid=$!
sleep "$limit" &
timer=$!
wait -n "$test_pid" "$timer"
if kill -0 "$test_pid" 2>/dev/null; then
	{
		echo "# watchdog: the test ran past ${limit} s (GK_TEST_TIMEOUT) and is ended; its processes:"
		ps -o pid=,ppid=,stat=,wchan:28=,etimes=,args= -g "$test_pid" 2>/dev/null |
			cut -c1-300 | sed 's/^/#   /'
	} >&3
	kill -TERM -- -"$test_pid" 2>/dev/null
	for _ in $(seq 20); do kill -0 "$test_pid" 2>/dev/null || break; sleep 0.5; done
	kill -KILL -- -"$test_pid" 2>/dev/null
	wait "$test_pid"
	exit 124
fi
kill "$timer" 2>/dev/null
wait "$test_pid"
