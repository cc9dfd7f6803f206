#!/bin/bash
# demo-check.sh DEMO-OUTPUT JOB-OUTPUT: whether each "restored:" line that
# tests/slurm/demo.sh printed reports its own restart's event: the step it
# says the job resumed from must be the one in the application's "resumed
# from step" line of that restart in the job's output (the first after that
# restart's "batch: node ... restart N" line, before the next restart's).
# Both restarts (the requeue's and the preemption's) must be reported.
# Says what it compared; exit 0 when all match, 1 otherwise.
# (make check-packages runs it on the demo run from the packages.)
set -u
[ $# -eq 2 ] && [ -r "$1" ] && [ -r "$2" ] || { echo "usage: $0 DEMO-OUTPUT JOB-OUTPUT (both readable)" >&2; exit 2; }
demo=$1 job=$2
rc=0
for n in 1 2; do
	said=$(sed -n "s/.* restored: restart $n on node .*, resumed from step \([0-9][0-9]*\) .*/\1/p" "$demo" | tail -n 1)
	own=$(awk -v n="$n" '/^batch: node / { if (on) exit; on = ($0 ~ ("^batch: node .* restart " n " ")); next }
		on && /^heat-drv: resumed from step/ { print $5; exit }' "$job")
	if [ -z "$said" ]; then
		echo "restart $n: the demo has no \"restored: restart $n ... resumed from step\" line"
		rc=1
	elif [ "$said" != "$own" ]; then
		echo "restart $n: the demo says \"resumed from step $said\", the job's output says step ${own:-(none: no resumed line after restart $n)}"
		rc=1
	else
		echo "restart $n: resumed from step $said, as the job's output says"
	fi
done
exit $rc
