#!/bin/bash
# report.sh - the output of `gpuckpt report` from job records written here
# (SHARED_ROOT/records/JOB, the format of runtime/common/events.h): the
# table (jobs in numeric order, sizes for people, the newest checkpoint, GPU
# time saved in GPU-s or GPU-h, the total row), the note on lines that are
# not events, --job, and --json. The records are root's: a SKIP when not root.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

gk_need_built "$GK_TOOL"
if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP the job records are root's: run as root"
	exit 0
fi
if ! command -v jq >/dev/null; then
	echo "1..0 # SKIP jq is not installed"
	exit 0
fi
gk_scratch
SH=$GK_SCRATCH/shared
mkdir -p "$SH/records"
ev() { echo "gpuckpt-event 1 $*"; }
{
	ev kind=checkpoint result=ok time=1732400000.125 node=n1 step=0 task=0 pid=4242 pstart=1 \
		restart=0 ckpt=1 bytes=1073741824 seconds=0.5 elapsed=100 gpus=2
	ev kind=checkpoint result=ok time=1732400100.125 node=n1 step=0 task=0 pid=4242 pstart=1 \
		restart=0 ckpt=2 bytes=536870912 seconds=0.5 elapsed=200 gpus=2
	ev kind=checkpoint result=failed time=1732400200 node=n1 step=0 task=0 pid=4242 pstart=1 restart=0
	ev kind=checkpoint result=refused time=1732400210 node=n1 step=0 task=0 pid=4242 pstart=1 restart=0
	echo "this is not an event"
	ev kind=restore result=ok time=1732400300 node=n1 step=0 task=0 pid=5000 pstart=2 restart=1 \
		ckpt=2 bytes=536870912 seconds=0.25 gpus=2
} >"$SH/records/1234"
{
	ev kind=checkpoint result=ok time=1732500000 node=n2 step=0 task=0 pid=7 pstart=1 restart=0 \
		ckpt=1 bytes=3000 seconds=1 elapsed=5400 gpus=1
	ev kind=restore result=ok time=1732500100 node=n2 step=0 task=0 pid=8 pstart=2 restart=1 \
		ckpt=1 bytes=3000 seconds=1 gpus=1
	ev kind=stage-out result=ok time=1732500050 bytes=3000 seconds=1
	ev kind=explode result=ok time=1
} >"$SH/records/99"

out=$("$GK_TOOL" report "$SH" 2>&1)
rc=$?
row() { awk -v j="$1" '$1 == j' <<<"$out"; }
tap_if "$([ $rc = 0 ] && echo 1)" "report exits 0"
tap_if "$(head -1 <<<"$out" | grep -qE '^JOB +CKPTS +RESTORES +FAILED +WRITTEN +RESTORED +STAGED +LAST +SAVED$' && echo 1)" \
	"the header names the columns"
tap_if "$(awk 'NR > 1 && NF {print $1}' <<<"$out" | head -3 | tr '\n' ' ' | grep -qx '99 1234 total ' && echo 1)" \
	"jobs in numeric order (99 before 1234), then the total"
r=$(row 1234)
tap_if "$([[ $r =~ ^1234\ +2\ +1\ +2\ +1\.5\ GiB\ +512\.0\ MiB\ +0\ B\ +ckpt\.2\ \(512\.0\ MiB\)\ +400\ GPU-s$ ]] && echo 1)" \
	"job 1234: 2 checkpoints, 1 restore, 2 failures (failed, refused), 1.5 GiB written, 512.0 MiB restored, the newest ckpt.2, 200 s x 2 GPUs saved ($r)"
r=$(row 99)
tap_if "$([[ $r =~ ^99\ +1\ +1\ +0\ +2\.9\ KiB\ +2\.9\ KiB\ +2\.9\ KiB\ +ckpt\.1\ \(2\.9\ KiB\)\ +1\.50\ GPU-h$ ]] && echo 1)" \
	"job 99: staged bytes, and 5400 GPU-s shown as 1.50 GPU-h ($r)"
r=$(row total)
tap_if "$([[ $r =~ ^total\ +3\ +2\ +2\ +1\.5\ GiB\ +512\.0\ MiB\ +2\.9\ KiB\ +-\ +1\.61\ GPU-h$ ]] && echo 1)" \
	"the total row: the sums, no newest checkpoint ($r)"
tap_if "$(grep -qx '(2 lines of the records were not valid events and were left out)' <<<"$out" && echo 1)" \
	"the lines that are not events (one per job) are counted and said"

out=$("$GK_TOOL" report --job 99 "$SH" 2>&1)
tap_if "$([ -n "$(row 99)" ] && [ -z "$(row 1234)" ] && echo 1)" "--job 99: only that job"

json=$("$GK_TOOL" report --json "$SH")
q() { jq -c "$1" <<<"$json" 2>&1; }
tap_if "$([ "$(q '[.jobs[].job]')" = "[99,1234]" ] && [ "$(q .shared_root)" = "\"$SH\"" ] && echo 1)" \
	"--json: the shared root and the jobs in order ($(q '[.jobs[].job]'))"
tap_if "$([ "$(q '.jobs[1] | [.checkpoints, .restores, .failures, .bytes_written, .bytes_restored, .gpu_seconds_saved, .rejected_lines]')" = "[2,1,2,1610612736,536870912,400,1]" ] && echo 1)" \
	"--json: job 1234's counts and bytes exact ($(q '.jobs[1] | [.checkpoints, .restores, .failures, .bytes_written, .bytes_restored, .gpu_seconds_saved, .rejected_lines]'))"
tap_if "$([ "$(q '.jobs[1].events.checkpoint')" = '{"ok":2,"failed":1,"refused":1}' ] && echo 1)" \
	"--json: events by kind and result ($(q '.jobs[1].events.checkpoint'))"
tap_if "$([ "$(q '.jobs[1].last_checkpoint')" = '{"ckpt":2,"step":"0","bytes":536870912,"time":1732400100.125}' ] && echo 1)" \
	"--json: the newest checkpoint ($(q '.jobs[1].last_checkpoint'))"
tap_if "$([ "$(q '.total | [.checkpoints, .bytes_staged_out, .gpu_seconds_saved, has("last_checkpoint")]')" = "[3,3000,5800,false]" ] && echo 1)" \
	"--json: the total, without a newest checkpoint ($(q '.total | [.checkpoints, .bytes_staged_out, .gpu_seconds_saved, has("last_checkpoint")]'))"

mkdir "$GK_SCRATCH/empty"
out=$("$GK_TOOL" report "$GK_SCRATCH/empty" 2>&1)
tap_if "$([ $? = 0 ] && [[ $(row total) =~ ^total\ +0\ +0\ +0\ +0\ B ]] && echo 1)" \
	"no records yet: exit 0, a total of nothing"
out=$("$GK_TOOL" report "$GK_SCRATCH/none" 2>&1)
tap_if "$([ $? = 1 ] && grep -q "report: $GK_SCRATCH/none: No such file or directory" <<<"$out" && echo 1)" \
	"a shared root that does not exist: exit 1, named with the cause ($out)"

tap_plan "$TAP_N"
tap_done
