#!/bin/bash
# e2e-modes.sh - checkpoint modes on a node that cannot do transparent mode,
# and what the job's output says about programs that will not be
# checkpointed. Here the shepherd folder holds no gpuckpt-shepherd (the
# probe's reason is known); then a shepherd whose probe names a missing
# capability. Nothing is said at the job's start for programs that may well
# use the gpuckpt API; the runtime is told why (GPUCKPT_NO_TRANSPARENT) and a
# CUDA program that does not use the API says so, with that reason, when a
# checkpoint signal reaches it; a program the runtime cannot be loaded into
# (statically linked) is named when it starts; a step that insists on
# transparent mode does not start and says why. (That application-mode jobs
# still checkpoint and restore is e2e-requeue.sh and e2e-preempt.sh, which
# run with the same default mode, auto.)
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

e2e_require 17
UNAWARE=$top_builddir/tests/runtime/prog-unaware
[ -x "$UNAWARE" ] || e2e_bail "not built: $UNAWARE (make check-slurm builds it)"
# A shepherd folder that exists but holds no shepherd: the probe's reason is known.
NOSHEP=${GK_E2E_CLUSTER_DIR:-/tmp/gpuckpt-e2e}-noshepherd
mkdir -p "$NOSHEP"
GK_E2E_PLUGIN_ARGS="shepherd=$NOSHEP ${GK_E2E_PLUGIN_ARGS:-}"
e2e_start
WHY="gpuckpt-shepherd not installed at $NOSHEP/gpuckpt-shepherd"
OLDLINE="programs that do not use the gpuckpt API will not be checkpointed"

# A plain program: no API, no CUDA, just work and a result.
prog='s=0; for i in $(seq 1 20); do s=$((s + i * i)); sleep 0.05; done; echo "unaware $SLURM_PROCID: done sum=$s why=$GPUCKPT_NO_TRANSPARENT mode=$GPUCKPT_MODE"'
# The tasks never talk to each other (GPUCKPT_TASKS=independent): without it a
# step of several tasks is refused transparent mode for that reason first.
s=$(job_script unaware "echo \"batch-why: \$GPUCKPT_NO_TRANSPARENT\"
export GPUCKPT_TASKS=independent
srun -n 2 bash -c '$prog'
srun -n 2 bash -c '$prog'")
j=$(submit --as gkuser1 -n 2 --gpu-checkpoint=on "$s")
wait_over "$j"
check_state "$j" COMPLETED "the job completed"
n=$(out_count "$j" "^unaware [01]: done sum=2870 ")
check "every task of both steps ran to completion ($n of 4)" [ "$n" = 4 ]
if out_lacks "$j" "$OLDLINE|^gpuckpt:"; then tap_ok "nothing about gpuckpt at the job's start (it may use the API)"; else
	tap_not_ok "nothing about gpuckpt at the job's start (it may use the API)"; show_out "$j"; fi
check_out "$j" "the batch script's runtime is told why" "^batch-why: $WHY$"
check_out "$j" "each task's runtime is told why (GPUCKPT_NO_TRANSPARENT), mode auto" "^unaware 1: done sum=2870 why=$WHY mode=auto$"
check "no task ran under a shepherd (no line about one in slurmd's log)" \
	[ -z "$(grep -h 'transparent mode, shepherd socket' "$E2E_DIR"/log/slurmd.*.log)" ]

# A CUDA program that does not use the API, requeued: it ends without a
# checkpoint and its output says why, with the probe's reason, once. (Started
# by the batch script itself: a step's last lines are often lost when Slurm
# stops srun at the same moment, which is why a step's restart says it again.)
s=$(job_script cuda-unaware "$UNAWARE")
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on "$s")
wait_out "$j" '^prog-unaware: ready$' 60
scontrol requeuehold "$j"
wait_until 60 '[ "$(job_state "$j")" = PENDING ]'
n=$(out_count "$j" "^gpuckpt: (checkpoint: )?no checkpoint taken on SIGTERM: the program does not use the gpuckpt API, and this node cannot checkpoint it transparently \\($WHY\\); it ends as it would without gpuckpt$")
if [ "$n" = 1 ]; then tap_ok "a CUDA program without the API, requeued: its output says once that no checkpoint was taken, and why (the missing shepherd)"; else
	tap_not_ok "a CUDA program without the API, requeued: its output says once that no checkpoint was taken, and why (the missing shepherd) ($n times)"; show_out "$j"; fi
scancel "$j"
# The same in a step (srun), requeued and let go: its restart says, before the
# program runs again, why the run before left nothing to restore.
s=$(job_script cuda-unaware-step "srun $UNAWARE")
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on "$s")
wait_out "$j" '^prog-unaware: ready$' 60
scontrol requeuehold "$j"
wait_until 60 '[ "$(job_state "$j")" = PENDING ]'
scontrol release "$j"
wait_out "$j" '^gpuckpt: job [0-9]+ step.0 task 0: restart 1' 120
check_out "$j" "... in a step: its restart says why it starts afresh, before the program runs" \
	"^gpuckpt: job $j step.0 task 0: restart 1: no committed checkpoint in .*; starting afresh \\(a program that does not use the gpuckpt API is not checkpointed here: $WHY\\)$"
scancel "$j"

# A statically linked program: named when it starts.
STATIC=/sbin/ldconfig
j=$(submit --as gkuser2 --gpu-checkpoint=on --wrap "srun $STATIC --version >/dev/null; srun bash -c 'echo dynamic-ran'")
wait_over "$j" 60
check_out "$j" "a statically linked program is named at its start: it will not be checkpointed" \
	"^gpuckpt: job $j step.0: $STATIC is statically linked: LD_PRELOAD cannot load anything into it, so it will not be checkpointed: a SIGTERM \\(preemption, requeue\\) ends it as it would without gpuckpt$"
check "a dynamically linked one is not (one such line in all)" [ "$(out_count "$j" 'will not be checkpointed')" = 1 ]

# --gpu-checkpoint-mode=app: the runtime gets the job's choice as the reason.
j=$(submit --as gkuser2 --gpu-checkpoint=on --gpu-checkpoint-mode=app --wrap "srun bash -c 'echo \"app-why: \$GPUCKPT_NO_TRANSPARENT\"'")
wait_over "$j" 60
check_out "$j" "mode app: the runtime is told the job's choice" "^app-why: the job asked for application mode \\(GPUCKPT_MODE=app\\)$"

# Transparent mode forced on a node that cannot: the step does not start, and says why, once.
j=$(submit --as gkuser1 --gpu-checkpoint=on --wrap "GPUCKPT_MODE=transparent srun bash -c 'echo forced: ran'; echo \"srun-rc: \$?\"")
wait_over "$j" 60
check "forced: the program never ran" out_lacks "$j" "^forced: ran"
check_out "$j" "forced: srun failed" "^srun-rc: [1-9]"
n=$(out_count "$j" "transparent mode was asked for \\(GPUCKPT_MODE=transparent\\) but this node cannot do it: $WHY")
if [ "$n" = 1 ]; then tap_ok "forced: the error says, once, that transparent mode was asked for and why it cannot be had"; else
	tap_not_ok "forced: the error says, once, that transparent mode was asked for and why it cannot be had ($n times)"; show_out "$j"; fi

# Bad values at submission, named.
out=$(sbatch --gpu-checkpoint-mode=criu --wrap true 2>&1)
if [ $? -ne 0 ] && grep -q "gpuckpt: --gpu-checkpoint-mode takes auto, app or transparent" <<<"$out" &&
	grep -q "criu" <<<"$out"; then
	tap_ok "sbatch --gpu-checkpoint-mode=criu refused, option named"; else
	tap_not_ok "sbatch --gpu-checkpoint-mode=criu refused, option named"; tap_diag "$out"; fi

# A node whose probe fails for a reason of its own (here a missing
# capability, as the shepherd names it): the reason reaches the job's output.
SHEPDIR=${GK_E2E_CLUSTER_DIR:-/tmp/gpuckpt-e2e}-capshepherd
rm -rf "$SHEPDIR" && mkdir -p "$SHEPDIR"
CAPWHY="caps: root lacks CAP_SYS_RESOURCE, which CRIU needs to dump another user's processes"
printf '#!/bin/sh\n[ "$1" = probe ] && { echo "%s"; exit 1; }\nexit 1\n' "$CAPWHY" >"$SHEPDIR/gpuckpt-shepherd"
chmod 0755 "$SHEPDIR" "$SHEPDIR/gpuckpt-shepherd"
sed -i "s|shepherd=$NOSHEP|shepherd=$SHEPDIR|" "$E2E_DIR/etc/plugstack.conf"
j=$(submit --as gkuser1 --gpu-checkpoint=on --gpu-checkpoint-mode=transparent --wrap "srun bash -c 'echo forced: ran'")
wait_over "$j" 60
check_out "$j" "the probe's own reason (a missing capability) is in the job's output" \
	"transparent mode was asked for \\(GPUCKPT_MODE=transparent\\) but this node cannot do it: $CAPWHY"
s=$(job_script cap-unaware "$UNAWARE")
j=$(submit --as gkuser1 --gres=gpu:1 --gpu-checkpoint=on "$s")
wait_out "$j" '^prog-unaware: ready$' 60
scancel --signal=TERM --full "$j"
wait_over "$j" 60
check_out "$j" "... and in an unaware program's line when the signal comes" \
	"^gpuckpt: (checkpoint: )?no checkpoint taken on SIGTERM: .* \\($CAPWHY\\); it ends as it would without gpuckpt$"
rm -rf "$SHEPDIR" "$NOSHEP"
tap_done
