#!/bin/bash
# e2e-modes.sh - checkpoint modes on a node that cannot do transparent mode
# (no gpuckpt-shepherd here, no usable CRIU): a program that does not use the
# gpuckpt API runs to completion as usual, the job's output says once, with
# the reason, that such programs are not checkpointed on this node, the
# runtime is told why (GPUCKPT_NO_TRANSPARENT), and a step that insists on
# transparent mode does not start and says why. (That application-mode jobs
# still checkpoint and restore is e2e-requeue.sh and e2e-preempt.sh, which run
# with the same default mode, auto.)
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 11
# A shepherd folder that exists but holds no shepherd: the probe's reason is known.
NOSHEP=${GK_E2E_CLUSTER_DIR:-/tmp/gpuckpt-e2e}-noshepherd
GK_E2E_PLUGIN_ARGS="shepherd=$NOSHEP ${GK_E2E_PLUGIN_ARGS:-}"
e2e_start
WHY="gpuckpt-shepherd not installed at $NOSHEP/gpuckpt-shepherd"
LINE="gpuckpt: job [0-9]+: programs that do not use the gpuckpt API will not be checkpointed on this node: $WHY"

# An unaware program: no API, just work and a result.
prog='s=0; for i in $(seq 1 20); do s=$((s + i * i)); sleep 0.05; done; echo "unaware $SLURM_PROCID: done sum=$s why=$GPUCKPT_NO_TRANSPARENT mode=$GPUCKPT_MODE"'
s=$(job_script unaware "echo \"batch-why: \$GPUCKPT_NO_TRANSPARENT\"
srun -n 2 bash -c '$prog'
srun -n 2 bash -c '$prog'")
j=$(submit --as gkuser1 -n 2 --gpu-checkpoint=on "$s")
wait_over "$j" 90
check "the job completed" state_is "$j" COMPLETED
n=$(out_count "$j" "^unaware [01]: done sum=2870 ")
check "every task of both steps ran to completion ($n of 4)" [ "$n" = 4 ]
n=$(out_count "$j" "$LINE")
if [ "$n" = 1 ]; then tap_ok "the job's output says exactly once why unaware programs are not checkpointed"; else
	tap_not_ok "the job's output says exactly once why unaware programs are not checkpointed ($n times)"; show_out "$j"; fi
check_out "$j" "the batch script's runtime is told why" "^batch-why: $WHY$"
check_out "$j" "each task's runtime is told why (GPUCKPT_NO_TRANSPARENT), mode auto" "^unaware 1: done sum=2870 why=$WHY mode=auto$"
check "no task ran under a shepherd (no line about one in slurmd's log)" \
	[ -z "$(grep -h 'transparent mode, shepherd socket' "$E2E_DIR"/log/slurmd.*.log)" ]

# --gpu-checkpoint-mode=app: the same line, another reason.
j=$(submit --as gkuser2 --gpu-checkpoint=on --gpu-checkpoint-mode=app --wrap "srun bash -c '$prog'")
wait_over "$j" 60
check_out "$j" "mode app: the line names the job's choice" "will not be checkpointed on this node: the job asked for application mode \\(GPUCKPT_MODE=app\\)"

# Transparent mode forced on a node that cannot: the step does not start, and says why.
j=$(submit --as gkuser1 --gpu-checkpoint=on --wrap "GPUCKPT_MODE=transparent srun bash -c 'echo forced: ran'; echo \"srun-rc: \$?\"")
wait_over "$j" 60
check "forced: the program never ran" out_lacks "$j" "^forced: ran"
check_out "$j" "forced: srun failed" "^srun-rc: [1-9]"
check_out "$j" "forced: the error says transparent mode was asked for and why it cannot be had" \
	"transparent mode was asked for \\(GPUCKPT_MODE=transparent\\) but this node cannot do it: $WHY"

# Bad values at submission, named.
out=$(sbatch --gpu-checkpoint-mode=criu --wrap true 2>&1)
if [ $? -ne 0 ] && grep -q "gpu-checkpoint-mode: invalid value 'criu' (expected auto, app or transparent)" <<<"$out"; then
	tap_ok "sbatch --gpu-checkpoint-mode=criu refused, option named"; else
	tap_not_ok "sbatch --gpu-checkpoint-mode=criu refused, option named"; tap_diag "$out"; fi
tap_done
