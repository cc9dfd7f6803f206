#!/bin/bash
# e2e-transparent.sh - transparent mode on the GPU machine: examples/unaware
# (no gpuckpt API) submitted with --gpu-checkpoint=on runs under
# gpuckpt-shepherd, is checkpointed by CRIU and the driver when requeued and
# when preempted, restored, and ends with exactly the output of an
# uninterrupted run; the same with GPUCKPT_ASSIST=off (driver-only device dump).
#
# Needs: root, a GPU (/dev/nvidia0, nvidia-smi), CRIU 4 or later at $GK_CRIU
# and nvcc (examples/unaware). Any of these missing: every test point is a
# SKIP with the reason, never a pass. What the build makes (the shepherd,
# from GK_SHEPHERD_DIR, default the build's runtime folder; examples/unaware
# where configure found nvcc) missing is an error (Bail out!).
#
#   GK_CRIU=/usr/local/sbin/criu make check TESTS=slurm/e2e-transparent.sh    (in build/tests)
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

N=14
SHEP=${GK_SHEPHERD_DIR:-$top_builddir/runtime}
UNAWARE=$top_builddir/examples/unaware/unaware
why=""
if [ "$(id -u)" -ne 0 ]; then
	why="needs root"
elif [ ! -c "${GK_GPU_DEVICE:-/dev/nvidia0}" ] || ! nvidia-smi -L >/dev/null 2>&1; then
	why="no GPU here (${GK_GPU_DEVICE:-/dev/nvidia0}, nvidia-smi)"
elif [ -z "${GK_CRIU:-}" ] || [ ! -x "$GK_CRIU" ]; then
	why="no CRIU: set GK_CRIU to CRIU 4 or later"
elif [ "$(gk_criu_major "$GK_CRIU")" = "" ] || [ "$(gk_criu_major "$GK_CRIU")" -lt 4 ]; then
	why="$GK_CRIU is CRIU $("$GK_CRIU" --version 2>/dev/null | head -n 1 | sed 's/Version: *//'); 4 or later is needed"
elif [ -z "${NVCC:-}" ]; then
	why="configure found no nvcc: examples/unaware is not built"
fi
if [ -z "$why" ]; then
	gk_need_built "$SHEP/gpuckpt-shepherd" "$UNAWARE"
	probe=$("$SHEP/gpuckpt-shepherd" probe --criu "$GK_CRIU" \
		--uid "$(id -u "${GK_TRANSPARENT_USER:-gkuser1}" 2>/dev/null || echo 65534)" 2>&1) ||
		why="gpuckpt-shepherd probe: $probe"
fi
if [ -n "$why" ]; then
	tap_plan $N
	for _ in $(seq $N); do tap_skip "$why"; done
	exit 0
fi
E2E_OWN_APP=1
e2e_require $N
# Whose jobs: gkuser1's by default. CRIU runs as the job's user (issue 24),
# so a root without CAP_SYS_RESOURCE (the GPU machine's) no longer keeps
# another user's job from being dumped; GK_TRANSPARENT_USER=root runs them
# as root, where CRIU runs as root.
AS=(--as "${GK_TRANSPARENT_USER:-gkuser1}")
[ "${GK_TRANSPARENT_USER:-gkuser1}" = root ] && AS=()
GK_E2E_PLUGIN_ARGS="criu=$GK_CRIU shepherd=$SHEP ${GK_E2E_PLUGIN_ARGS:-}"
e2e_start --real-gpu

STEPS=${GK_UNAWARE_STEPS:-300} DELAY=${GK_UNAWARE_DELAY_MS:-30}
ARGS="--steps $STEPS --delay-ms $DELAY --report-every 10"
# The reference: an uninterrupted run outside Slurm.
ref_out=$JOBS/reference.out
"$UNAWARE" $ARGS --out "$ref_out" >"$JOBS/reference.stdout" 2>&1
ref=$(sed -n 's/^unaware: done: .*checksum=\(0x[0-9a-f]*\)$/\1/p' "$JOBS/reference.stdout")
tap_diag "reference checksum (uninterrupted, outside Slurm): ${ref:-none}: $(tail -n 2 "$JOBS/reference.stdout")"
unaware_sum() { sed -n 's/^unaware: done: .*checksum=\(0x[0-9a-f]*\)$/\1/p' "$(job_out "$1")" | tail -n 1; }

# same_as_reference DESC JOB FILE: the program's own file and checksum equal the reference's.
same_as_reference() {
	local got
	got=$(unaware_sum "$2")
	if [ -n "$ref" ] && [ "$got" = "$ref" ] && cmp -s "$ref_out" "$3"; then
		tap_ok "$1: same output file and checksum as an uninterrupted run ($got)"
	else
		tap_not_ok "$1: same output file and checksum as an uninterrupted run ($got = $ref)"
		tap_diag "$(diff "$ref_out" "$3" 2>&1 | head -n 10)"
		show_out "$2"
	fi
}

# The program writes its file next to the job's output; the script does not
# touch it again after a requeue: the restored program goes on appending.
# Preemption stops the step but not the batch shell: wait for the requeue.
script() { # NAME EXTRA-ENV
	job_script "$1" "$2
export GPUCKPT_LOG_LEVEL=info
srun $UNAWARE $ARGS --out $JOBS/\$SLURM_JOB_ID.data
rc=\$?
[ \$rc -eq 143 ] && sleep 600
exit \$rc"
}

# requeued NAME ENV: scontrol requeue in the middle, restore, compare.
requeued() {
	local j
	j=$(submit "${AS[@]}" --gres=gpu:1 --gpu-checkpoint=on "$(script "$1" "$2")")
	requeue_when "$j" '^unaware: step 60$' || tap_diag "job $j never reached step 60"
	wait_out "$j" '^batch: node .* restart 1 ' 180
	wait_over "$j" 300
	check_out "$j" "$1: checkpointed transparently when requeued" '^gpuckpt: transparent: checkpoint ckpt\.[0-9]+ committed'
	check_out "$j" "$1: the plugin had the shepherd restore it" "^gpuckpt: job $j step.0 task 0: restart 1: restoring .*transparently"
	check_out "$j" "$1: restored by CRIU and the driver" '^gpuckpt: transparent: restored ckpt\.[0-9]+'
	check_state "$j" COMPLETED "$1: the job completed"
	same_as_reference "$1" "$j" "$JOBS/$j.data"
	show_times "$1" "$j"
}

# The timing lines of the checkpoint and the restore, for the record: the
# shepherd's, and the runtime's phases (the first checkpoint of a job was
# seen three times slower than the next: issue 12).
show_times() { # NAME JOB
	tap_diag "$1: $(grep -hE 'gpuckpt: transparent: (checkpoint ckpt.* committed|restored|restore: GPU)|device memory loaded|wrote [0-9]+ bytes in|phases:|sealed: manifest|transfer: dumped' "$(job_out "$2")" | tr '\n' ' ')"
}

requeued requeue ":"
requeued requeue-assist-off "export GPUCKPT_ASSIST=off"

# Preemption by a job of the high partition, within GraceTime.
grace=$(sed -n 's/^PartitionName=low .*GraceTime=\([0-9]*\).*/\1/p' "$SLURM_CONF")
low=$(submit "${AS[@]}" -p low --gres=gpu:1 --gpu-checkpoint=on "$(script preempt ":")")
wait_out "$low" '^unaware: step 60$' 120
high=$(submit -p high --gres=gpu:1 --exclusive --wrap 'echo high: running; sleep 10')
t0=$(date +%s)
if wait_out "$low" '^gpuckpt: transparent: checkpoint ckpt\.[0-9]+ committed' $((grace + 10)); then
	tap_ok "preempt: checkpointed within GraceTime (${grace} s): $(($(date +%s) - t0)) s after the high job came"
else
	tap_not_ok "preempt: checkpointed within GraceTime (${grace} s)"
	show_out "$low"
fi
wait_over "$high" $((grace + 60))
check "preempt: the high job ran" out_has "$high" '^high: running'
wait_out "$low" '^batch: node .* restart 1 ' 180
wait_over "$low" 300
check_out "$low" "preempt: restored by CRIU and the driver" '^gpuckpt: transparent: restored ckpt\.[0-9]+'
same_as_reference "preempt" "$low" "$JOBS/$low.data"
show_times preempt "$low"
tap_done
