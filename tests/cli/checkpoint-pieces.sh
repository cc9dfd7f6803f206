#!/bin/bash
# checkpoint-pieces.sh - `gpuckpt checkpoint` reads its nodes' answers
# however srun cut them (issue 29). The tool asks each node of the job
# through `srun --label` (one task per node), whose probe prints one line of
# JSON. srun passes a task's output on in pieces of at most 1024 bytes, each
# printed as a line of its own behind the task's label, and interleaves the
# nodes' pieces as they come (Slurm 24.11; tests/slurm/e2e-checkpoint-long.sh
# shows it on a real cluster). Here Slurm's commands are stand-ins in a
# folder of root's first in PATH: srun prints two nodes' answers of about
# 3.5 KiB each cut into such pieces, interleaved; the checkpoint they report
# must be read as committed on both nodes. And an answer that does not come
# from one node (its pieces cut short) is asked for again, not taken for
# tasks that ended. Root runs the tool (root's PATH keeps only folders of
# root's): a SKIP when not root.
. "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/helpers.sh"

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP root runs the tool here (Slurm's stand-ins in a folder of root's)"
	exit 0
fi
for c in python3 jq; do
	command -v $c >/dev/null || { echo "1..0 # SKIP $c is not installed"; exit 0; }
done
gk_need_built "$GK_TOOL"
tap_plan 5

d=$(mktemp -d /tmp/gk-pieces.XXXXXX)
trap 'rm -rf "$d"' EXIT
chmod 0755 "$d"
mkdir -m 0755 "$d/bin"
mkdir -m 1777 "$d/state"
nobody=$(id -u nobody) nogroup=$(id -g nobody)
cat >"$d/bin/scontrol" <<EOF
#!/bin/bash
echo "JobId=77 JobName=t UserId=nobody($nobody) GroupId=nogroup($nogroup) JobState=RUNNING Requeue=1 BatchFlag=1 NumNodes=2 NodeList=gk[1-2]"
EOF
cat >"$d/bin/squeue" <<'EOF'
#!/bin/bash
printf '77.0\n77.batch\n'
EOF
cat >"$d/bin/scancel" <<EOF
#!/bin/bash
echo "\$*" >>"$d/state/scancel"
EOF
# srun: the probes' answers. Sixteen task folders per node (as a restarted MPI
# job's), two of them running: newest 3 before the signal, 4 after. Mode
# short: only the running tasks' folders (answers of one piece each), and the
# second node's first answer after the signal cut short (half of it lost);
# whole again after.
cat >"$d/bin/srun" <<EOF
#!/usr/bin/python3
import json, os, sys
st = "$d/state"
calls = 0
try:
    calls = int(open(st + "/calls").read())
except OSError:
    pass
calls += 1
open(st + "/calls", "w").write(str(calls))
mode = open(st + "/mode").read().strip() if os.path.exists(st + "/mode") else "whole"
def answer(node, live):
    tasks = []
    for t in (live if mode == "short" else range(16)):
        newest = (3 if calls == 1 else 4) if t in live else 1
        tasks.append({"step": "0", "task": t, "dir": "/bb/77/step.0/task.%d" % t,
                      "live": 1 if t in live else 0, "ok": newest, "failed": 0,
                      "refused": 0, "newest": newest, "newest_bytes": 4096,
                      "last_ok": {"ckpt": newest, "bytes": 4096, "seconds": 0.01},
                      "last_failure": None})
    return json.dumps({"node": node, "job_dir": "/bb/77", "tasks": tasks,
                       "ignored": []}, separators=(",", ":"))
a = [answer("gk1", (0, 1)), answer("gk2", (2, 3))]
pieces = [[x[i:i + 1024] for i in range(0, len(x), 1024)] for x in a]
if mode == "short" and calls == 2:
    pieces[1] = [a[1][:len(a[1]) // 2]]
for i in range(max(len(p) for p in pieces)):
    for label in (0, 1):
        if i < len(pieces[label]):
            sys.stdout.write("%d: %s\n" % (label, pieces[label][i]))
EOF
chmod 0755 "$d/bin/"*
run_tool() { env PATH="$d/bin:/usr/bin:/bin" "$GK_TOOL" checkpoint --bb-root /bb --timeout 20 "$@" 77 2>&1; }

out=$(run_tool); rc=$?
tap_diag "$out"
check "answers of about 3.5 KiB per node in 1024-byte pieces, interleaved: committed (exit $rc)" [ $rc -eq 0 ]
n=$(grep -Ec '^  step 0 task ([01]  gk1|[23]  gk2):/bb/77/step.0/task.[0-3]/ckpt.000004 ' <<<"$out")
check "both nodes' running tasks named with their new checkpoint ($n of 4)" [ "$n" = 4 ]
check "the tasks were signalled" grep -qs -- '--signal=USR1 77.0' "$d/state/scancel"

rm -f "$d/state/calls"
echo short >"$d/state/mode"
out=$(run_tool --json); rc=$?
tap_diag "$(jq -c '{committed, tasks: [.tasks[] | {node, task, status}]}' <<<"$out" 2>&1)"
check "one node's answer cut short once: asked again, committed (exit $rc)" [ $rc -eq 0 ]
ok=0; jq -e '(.tasks | length) == 4 and all(.tasks[]; .status == "committed")' <<<"$out" >/dev/null && ok=1
check "no task taken for ended: the four committed" [ $ok = 1 ]
tap_done
