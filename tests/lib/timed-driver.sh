#!/bin/sh
# timed-driver.sh DRIVER [DRIVER-ARGS...]: Automake's LOG_DRIVER, timed. Runs
# the test driver (tap-driver.sh) as it is, then appends the test's wall time
# to its .trs as ":gk-seconds: S" - a field Automake's harness does not read
# (it reads only :test-result:, :global-test-result:, :recheck: and
# :copy-in-global-log:). tests/run-all prints the slowest tests from these.
trs=
prev=
for a in "$@"; do
	[ "$a" = -- ] && break
	[ "$prev" = --trs-file ] && trs=$a
	prev=$a
done
start=$(date +%s.%N)
"$@"
rc=$?
end=$(date +%s.%N)
if [ -n "$trs" ] && [ -f "$trs" ]; then
	awk -v s="$start" -v e="$end" 'BEGIN { printf ":gk-seconds: %.1f\n", e - s }' >>"$trs"
fi
exit $rc
