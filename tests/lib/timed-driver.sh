#!/bin/bash
# timed-driver.sh DRIVER [DRIVER-ARGS...]: Automake's LOG_DRIVER, timed. Runs
# the test driver (tap-driver.sh) as it is, then appends the test's wall time
# to its .trs as ":gk-seconds: S" - a field Automake's harness does not read
# (it reads only :test-result:, :global-test-result:, :recheck: and
# :copy-in-global-log:). tests/run-all prints the slowest tests from these.
# The test itself runs under watchdog.sh, which ends it past its time limit.
trs=
prev=
for a in "$@"; do
	[ "$a" = -- ] && break
	[ "$prev" = --trs-file ] && trs=$a
	prev=$a
done
# The test itself (what follows "--") runs under watchdog.sh: a time limit.
args=()
seen=0
for a in "$@"; do
	args+=("$a")
	if [ "$a" = -- ] && [ $seen -eq 0 ]; then
		seen=1
		args+=(/bin/bash "$(dirname "$0")/watchdog.sh")
	fi
done
start=$(date +%s.%N)
"${args[@]}"
rc=$?
end=$(date +%s.%N)
if [ -n "$trs" ] && [ -f "$trs" ]; then
	awk -v s="$start" -v e="$end" 'BEGIN { printf ":gk-seconds: %.1f\n", e - s }' >>"$trs"
fi
exit $rc
