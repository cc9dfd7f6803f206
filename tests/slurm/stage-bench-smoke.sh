#!/bin/bash
# stage-bench-smoke.sh - the staging benchmark (benchmarks/stage/run, make
# bench-stage) at its smallest, so that it cannot rot between the times
# someone measures with it: 2 jobs of 2 tasks, checkpoints written by the
# real runtime on the CUDA stand-in, staged out and back in by gpuckpt-stage
# launched as the SPANK plugin launches it. About 2 s. The figures mean
# nothing at this size; the test is that every stage succeeded and staged
# every file (--smoke exits 1 otherwise).
. "${top_srcdir:-$(dirname "$0")/../..}/tests/lib/helpers.sh"

PLAN=4
tap_plan $PLAN
if [ "$(id -u)" -ne 0 ]; then
	for i in $(seq $PLAN); do tap_skip "needs root (gpuckpt-stage runs as root)"; done
	exit 0
fi
gk_need_built "$top_builddir/benchmarks/stage/stage-launch" "$top_builddir/scheduler-hooks/gpuckpt-stage" \
	"$top_builddir/examples/heat/heat-drv" "$top_builddir/examples/heat/.libs/heat_kernels_host.so" \
	"$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME"
gk_scratch
"$top_srcdir/benchmarks/stage/run" --build "$top_builddir" --smoke >"$GK_SCRATCH/out" 2>&1
status=$?
check "the smoke run stages everything out and back in (exit $status)" [ $status -eq 0 ]
check "the runtime wrote the template: three checkpoints per task" \
	grep -q "^stage/run: template: 3 checkpoints, [1-9][0-9]* files" "$GK_SCRATCH/out"
check "2 stage-outs at once, none failed, every checkpoint staged" \
	grep -q "^stage/run: C=2 out run 1: .*; 12 ckpts, .*; 0 of 2 failed" "$GK_SCRATCH/out"
check "2 stage-ins at once, none failed, every checkpoint staged" \
	grep -q "^stage/run: C=2 in run 1: .*; 12 ckpts, .*; 0 of 2 failed" "$GK_SCRATCH/out"
tap_diag "$(cat "$GK_SCRATCH/out")"
tap_done
