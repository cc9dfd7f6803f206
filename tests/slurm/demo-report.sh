#!/bin/bash
# demo-report.sh - the demo's summary lines report the event they name (issue
# 28): on a job output where restart 1 resumed from step 75 and restart 2 from
# step 197, demo.sh's own resumed_line finds each restart's line, and finds
# none for a restart that has not printed its own yet (the wait that matched
# restart 1's line and so reported "step 75" for restart 2); demo-check.sh
# (which make check-packages runs on the real demo) fails on that summary and
# passes on the right one. No cluster: the demo's code on fixed outputs.
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"
tap_plan 6
gk_scratch
demo_sh=$top_srcdir/tests/slurm/demo.sh
chk=$top_srcdir/tests/slurm/demo-check.sh
job=$GK_SCRATCH/job.out
cat >"$job" <<'OUT'
batch: node gk1 restart 0 GPU 0
heat-drv: step 60
gpuckpt: checkpoint: /tmp/bb/1/step.0/task.0/ckpt.1: wrote 100 bytes (1 region) in 0.01 s
batch: node gk2 restart 1 GPU 0
heat-drv: resumed from step 75 on device=standin (host memory)
heat-drv: step 80
gpuckpt: checkpoint: /tmp/bb/1/step.0/task.0/ckpt.2: wrote 100 bytes (1 region) in 0.01 s
batch: node gk2 restart 2 GPU 1
OUT
# demo.sh's resumed_line, as it is there (it reads $(job_out "$j")).
j=1
job_out() { echo "$job"; }
eval "$(sed -n '/^resumed_line() {/,/^}/p' "$demo_sh")"
check "demo.sh has resumed_line" [ "$(type -t resumed_line)" = function ]
check "restart 1: its own line (step 75)" [ "$(resumed_line 1)" = "heat-drv: resumed from step 75 on device=standin (host memory)" ]
check "restart 2, before it printed its own line: nothing, not restart 1's line" [ -z "$(resumed_line 2)" ]
echo "heat-drv: resumed from step 197 on device=standin (host memory)" >>"$job"
check "restart 2, once printed: its own line (step 197)" [ "$(resumed_line 2)" = "heat-drv: resumed from step 197 on device=standin (host memory)" ]

bad=$GK_SCRATCH/demo-bad.log good=$GK_SCRATCH/demo-good.log
printf '%s\n' "03:00:00  restored: restart 1 on node gk2, GPU 0 (CUDA_VISIBLE_DEVICES), resumed from step 75 on device=standin (host memory)" \
	"03:00:40  restored: restart 2 on node gk2, GPU 1 (CUDA_VISIBLE_DEVICES), resumed from step 75 on device=standin (host memory)" >"$bad"
sed '2s/step 75/step 197/' "$bad" >"$good"
out=$("$chk" "$bad" "$job"); rc=$?
tap_diag "$out"
says_75=0
grep -q 'restart 2: the demo says "resumed from step 75", the job.s output says step 197' <<<"$out" && says_75=1
check "demo-check.sh fails on the summary that reports restart 1's step for restart 2, and says so" [ $rc -eq 1 ] && [ $says_75 -eq 1 ]
out=$("$chk" "$good" "$job"); rc=$?
tap_diag "$out"
check "demo-check.sh passes on the summary that reports each restart's own step" [ $rc -eq 0 ]
tap_done
