#!/bin/bash
# e2e-nccl.sh - an NCCL job of two ranks on one node under real Slurm,
# checkpointed transparently as one set of its step (GPUCKPT_TASKS=nccl,
# issue 27): requeued and restored (on the other node where there are two),
# then preempted and restored again, ending with exactly the lines of an
# uninterrupted run.
#
# The job is `srun -N 1 -n 2`, one rank per task, submitted with
# --gpu-checkpoint=on and GPUCKPT_TASKS=nccl. Each task runs under
# gpuckpt-shepherd, which the plugin starts, with a real CRIU.
#
# Without a GPU (make check-slurm in the Debian roots, which have CRIU): the
# program is tests/runtime/prog-nccl (an all-reduce job that knows nothing of
# gpuckpt) on the stand-ins (tests/cuda-standin, tests/nccl-standin), the
# driver in its build with the checkpoint API (ckpt/libcuda.so.1): the whole
# transparent path of the runtime, the shepherd and the plugin, never
# evidence of what the driver or NCCL do on a GPU. Two nodes.
#
# On the GPU machine (two GPUs, python3 with PyTorch seeing both, CRIU 4.2 or
# later for the TCPStore's connections; GK_E2E_NCCL_STANDIN=1 keeps the
# stand-in there): the program is tests/gpu/frameworks/fw_ddp.py, a PyTorch
# DDP job, one GPU per rank, GPUCKPT_TCP=close. One node
# (cluster.sh --real-gpu, GK_GPU_COUNT=2); the stand-in runs its one-node
# path with GK_E2E_NCCL_NODES=1.
#
#  1. After step 10: `scontrol requeue`. Both ranks are brought to a common
#     collective, take their communicators down and are dumped by CRIU; task
#     0 records the set. With two nodes gk1 is drained, so the job comes back
#     on gk2: its epilog stages the set out, the prolog stages it in, the
#     plugin has each task's shepherd restore its part, and both ranks make
#     their communicators again.
#  2. After step 30: a job of the high partition takes every node, and Slurm
#     preempts this one (PreemptMode=REQUEUE, GraceTime): the same again,
#     brought back when the high job has ended onto the GPUs in the other
#     order. Each task sees one GPU (srun --gpu-bind=map_gpu): rank r on GPU
#     r in the first two runs, the job script maps them 1,0 in the third.
#     On the GPUs each rank's shepherd refuses that restore before restoring
#     anything (--nccl: the driver cannot map the other rank's memory on a
#     GPU the process had into it, docs/nccl.md); the job fails with its set
#     kept, and, requeued, is restored on the GPUs it had. On the stand-ins,
#     where no list of the node's GPUs says which GPUs were the node's, each
#     rank's shepherd restores it onto the other GPU.
#  3. Both ranks' lines, over every run, are the uninterrupted run's.
#
# Needs root and CRIU 4 or later (GK_CRIU, else /usr/local/sbin/criu, ...).
# Without it every point is a SKIP with the reason. About 60 s on the
# stand-in.
#
#   flock /tmp/gk-cluster.lock make -C build/tests check TESTS=slurm/e2e-nccl.sh
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

N=19
PY=${GK_PYTHON:-$(command -v python3 2>/dev/null || true)}
DDP=$top_srcdir/tests/gpu/frameworks/fw_ddp.py
REAL=0
if [ "${GK_E2E_NCCL_STANDIN:-0}" != 1 ] && [ -c /dev/nvidia1 ] &&
	[ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')" -ge 2 ] && [ -n "$PY" ] &&
	timeout 120 "$PY" -c 'import torch; assert torch.cuda.device_count() >= 2' >/dev/null 2>&1; then
	REAL=1
fi
why=
if [ "$(id -u)" -ne 0 ]; then
	why="needs root"
elif ! gk_find_criu; then
	why=$CRIU_WHY
elif [ $REAL = 1 ] && [ "$("$CRIU" --version | sed -n 's/^Version: *4\.\([0-9]*\).*/\1/p' | head -n 1)" -lt 2 ] 2>/dev/null; then
	# PyTorch's TCPStore keeps TCP connections, which CRIU 4.1 cannot dump.
	why="$CRIU is CRIU $("$CRIU" --version | sed -n 's/^Version: *//p' | head -n 1): a DDP job's TCP connections need 4.2 or later"
fi
if [ -n "$why" ]; then
	tap_plan $N
	for _ in $(seq $N); do tap_skip "$why"; done
	exit 0
fi
SHEP_REAL=$top_builddir/runtime/gpuckpt-shepherd
CK=$top_builddir/tests/cuda-standin/ckpt/.libs
NC=$top_builddir/tests/nccl-standin/.libs
PROG=$top_builddir/tests/runtime/prog-nccl
# The libtool wrapper may relink on its first run, which the test users
# cannot: the program itself.
[ -x "$top_builddir/tests/runtime/.libs/prog-nccl" ] && PROG=$top_builddir/tests/runtime/.libs/prog-nccl
E2E_OWN_APP=1
e2e_require $N
STEPS=60
if [ $REAL = 1 ]; then
	NNODES=1
	gk_need_built "$SHEP_REAL" "$GK_RUNTIME"
	GK_E2E_PLUGIN_ARGS="criu=$CRIU shepherd=$(dirname "$SHEP_REAL") ${GK_E2E_PLUGIN_ARGS:-}"
	export GK_GPU_COUNT=2
	e2e_start --real-gpu
	CACHE=$JOBS/cache-ddp
	mkdir -p "$CACHE/home" && chown -R gkuser1: "$CACHE"
	# NVLink multicast off, as for every program on the GPU machines; the
	# TCPStore's connections dumped and restored closed (docs/nccl.md).
	ENVS="NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CUBLAS_WORKSPACE_CONFIG=:4096:8 HOME=$CACHE/home TRITON_CACHE_DIR=$CACHE/triton GPUCKPT_TCP=close"
	port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
	# rank R's command with the rendezvous at PORT: the one GPU it sees.
	rank_cmd() { echo "env RANK=$1 WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$2 $PY $DDP --steps $STEPS --sleep 0.15"; }
	LINES='fw-ddp: (step|done)'
	REF_ENV=$ENVS
	tap_diag "on the GPUs: $(nvidia-smi -L | head -n 2 | tr '\n' ' '); PyTorch DDP (fw_ddp.py), $STEPS steps"
else
	NNODES=${GK_E2E_NCCL_NODES:-2}
	for f in "$SHEP_REAL" "$PROG" "$CK/libcuda.so.1" "$NC/libnccl.so.2" "$GK_RUNTIME"; do
		[ -e "$f" ] || e2e_bail "not built: $f (make check builds the stand-ins and prog-nccl)"
	done
	e2e_standin_shepherd nccl
	e2e_start --nodes "$NNODES"
	ENVS=$STANDIN_ENVS
	ARGS="--nranks 2 --steps $STEPS --per-step 3 --floats 4096 --mib 4"
	# The rendezvous file of NCCL's id (rank 0 writes it) stands for the port.
	port() { echo "$JOBS/nccl-$RANDOM.id"; }
	rank_cmd() { echo "$PROG --rank $1 --id $2 $ARGS --sleep-ms 150"; }
	LINES='(step|ballast|done) '
	REF_ENV=$ENVS
fi
NODE_A=gk1 NODE_B=gk2
[ "$NNODES" = 1 ] && NODE_B=gk1
# Whose job: gkuser1's, unless that user cannot import PyTorch (installed
# under root's home on the GPU machine): then root's.
AS=gkuser1
if [ $REAL = 1 ] && ! (cd / && setpriv --reuid="$(id -u $AS)" --regid="$(id -g $AS)" --clear-groups \
	env HOME=/tmp timeout 120 "$PY" -c 'import torch' >/dev/null 2>&1); then
	tap_diag "$AS cannot import torch: the job runs as root"
	AS=root
fi
SUBMIT_AS=(--as $AS)
[ $AS = root ] && SUBMIT_AS=()

# The reference: both ranks uninterrupted, outside Slurm, as the job's user,
# rank r on GPU r.
ref=$JOBS/ref
mkdir -p "$ref" && chmod 0777 "$ref"
rp=$(port)
for r in 0 1; do
	# shellcheck disable=SC2046
	(cd "$ref" && setpriv --reuid="$(id -u $AS)" --regid="$(id -g $AS)" --clear-groups \
		env CUDA_VISIBLE_DEVICES=$r $REF_ENV timeout -s KILL 300 $(rank_cmd $r "$rp" | sed 's/--sleep-ms 150/--sleep-ms 0/; s/--sleep 0.15/--sleep 0/')) \
		>"$ref/$r.out" 2>"$ref/$r.err" &
	eval "rp$r=\$!"
done
wait "$rp0" && wait "$rp1" || e2e_bail "the reference run failed: $(tail -n 3 "$ref"/*.err | tr '\n' ' ')"
for r in 0 1; do grep -E "^$LINES" "$ref/$r.out" >"$ref/$r.lines"; done
tap_diag "reference (uninterrupted, outside Slurm): $(tail -n 1 "$ref/0.lines"), $(wc -l <"$ref/0.lines") lines per rank"

# One rank per task, each seeing one GPU: rank r on GPU r, until the third
# run (the restore after the preemption), where they are swapped. srun -l
# puts the task's number before each line.
jp=$(port)
s=$(job_script nccl "export GPUCKPT_TASKS=nccl GPUCKPT_LOG_LEVEL=info $ENVS
map=0,1
[ \"\${SLURM_RESTART_COUNT:-0}\" = 2 ] && map=1,0
echo \"batch: ranks on GPUs \$map\"
srun -l -N 1 -n 2 --gpu-bind=map_gpu:\$map bash -c 'if [ \$SLURM_PROCID = 0 ]; then exec $(rank_cmd 0 "$jp"); else exec $(rank_cmd 1 "$jp"); fi'")

# rank_lines JOB R: rank R's program lines, over every run of the job.
rank_lines() { sed -nE "s/^$2: ($LINES.*)/\1/p" "$(job_out "$1")"; }
# count JOB REGEX: lines of the job's output matching it; run_count JOB K
# REGEX: those of its run K (restart K's, 0 the first).
count() { out_count "$@"; }
# until_out JOB REGEX SECONDS: wait_out that gives up as soon as the job is over.
until_out() { wait_until "$3" "out_has '$1' '$2' || is_over '$1'" && out_has "$1" "$2"; }
run_count() {
	awk -v k="$2" -v re="$3" '/^batch: node .* restart [0-9]+ / { run = $5 } run == k && $0 ~ re { n++ }
		END { print n + 0 }' "$(job_out "$1")"
}

# step_line K: rank 1's line of step K (both modes print "step K ").
step_line() { echo "^1: ${LINES%%(*}step $1 "; }

# --- 1. requeued on NODE_A, restored on NODE_B ------------------------------
[ "$NNODES" = 1 ] || drain $NODE_B
j=$(submit "${SUBMIT_AS[@]}" -N 1 -n 2 --gres=gpu:2 --gpu-checkpoint=on "$s")
wait_running "$j" 60
[ "$NNODES" = 1 ] || resume $NODE_B
check "job $j starts on $NODE_A" \
	eval '[ "$(job_node "$j")" = $NODE_A ]'
until_out "$j" "$(step_line 10)" 300 || { job_diag "$j"; show_out "$j"; }
scontrol requeue "$j"
[ "$NNODES" = 1 ] || drain $NODE_A
until_out "$j" "^batch: node $NODE_B restart 1 " 120 || job_diag "$j"
check "both ranks were brought to a common collective and their communicators taken down" \
	eval '[ "$(count "$j" "^[01]: gpuckpt: nccl: communicators taken down at a common collective")" -ge 2 ]'
check "both parts of the set were committed by CRIU and the driver before the requeue ended the job" \
	eval '[ "$(run_count "$j" 0 "^[01]: gpuckpt: transparent: checkpoint ckpt\.[0-9]+ committed")" = 2 ]'
check "$NODE_A's epilog staged the set out to the shared root" \
	grep -q "stage-out: job $j: staged out step.0/" "$E2E_DIR/log/slurmd.$NODE_A.log"
check "... and took $NODE_A's copy away: it left nothing behind, the NCCL ranks' rendezvous files neither" \
	eval '! grep -q "stage-out: job $j: .*left on the burst buffer\|stage-out: job $j: kept" "$E2E_DIR/log/slurmd.$NODE_A.log"'
check "$NODE_B's prolog staged it in" \
	grep -q "stage-in: job $j: staged in step.0/" "$E2E_DIR/log/slurmd.$NODE_B.log"
check_out "$j" "restarted on $NODE_B" "^batch: node $NODE_B restart 1 "
[ "$NNODES" = 1 ] || resume $NODE_A
until_out "$j" "$(step_line 30)" 300 || { job_diag "$j"; show_out "$j"; }
check "the plugin had each task's shepherd restore its part of the set (task 0 and task 1)" \
	eval 'out_has "$j" "^([01]: )?gpuckpt: job $j step.0 task 0: restart 1: restoring .*transparently" &&
		out_has "$j" "^([01]: )?gpuckpt: job $j step.0 task 1: restart 1: restoring .*transparently"'
check "both ranks were restored by CRIU and the driver, and made their communicators again" \
	eval '[ "$(run_count "$j" 1 "^[01]: gpuckpt: transparent: restored ckpt\.[0-9]+")" = 2 ] &&
		[ "$(run_count "$j" 1 "^[01]: gpuckpt: nccl: communicators made again")" = 2 ]'

# --- 2. preempted by a job that needs every node ----------------------------
t0=$(date +%s)
high=$(submit -p high -N "$NNODES" --gres=gpu:2 --exclusive --wrap 'echo high: running on $SLURM_JOB_NODELIST; sleep 8')
grace=$(sed -n 's/^PartitionName=low .*GraceTime=\([0-9]*\).*/\1/p' "$SLURM_CONF")
wait_running "$high" $((grace + 60)) || job_diag "$high"
check "a job of the high partition preempted it ($(($(date +%s) - t0)) s, GraceTime $grace s)" state_is "$high" RUNNING
wait_over "$high" 60
wait_over "$j" 300
# The job's record must say so for this run (restart 1): on Slurm before
# 24.05 the plugin requeues a preempted job only then (requeue_preempted),
# and a restored program's environment still names run 0.
check "... both parts of a second set committed (4 in all), recorded as checkpoints of the job's second run" \
	eval '[ "$(count "$j" "^[01]: gpuckpt: transparent: checkpoint ckpt\.[0-9]+ committed")" = 4 ] &&
		[ "$(grep -c " kind=checkpoint result=ok .* restart=1 " "$E2E_DIR/shared/records/$j" 2>/dev/null)" = 2 ]'
check_out "$j" "it came back after the high job" '^batch: node .* restart 2 '
# The third run maps rank r onto GPU 1-r. On the GPUs each rank's shepherd
# refuses that before restoring anything: the driver cannot map the other
# rank's memory on a GPU the process had into it (gk_gpu_shared_move,
# docs/nccl.md). The job fails, its set kept; requeued, it comes back on the
# GPUs it had. The stand-ins have no node GPU list to go by, so there the
# other order is restored.
if [ $REAL = 1 ]; then
	check "... in the other order, one GPU per rank: each rank's shepherd refused the restore before restoring anything, naming why" \
		eval '[ "$(run_count "$j" 2 "^[01]: gpuckpt: transparent: restore: .*would move off GPU-.*the CUDA driver cannot map")" = 2 ] &&
			[ "$(run_count "$j" 2 "^[01]: gpuckpt: transparent: restored ckpt")" = 0 ]'
	scontrol requeue "$j"
	wait_for 120 out_has "$j" '^batch: node .* restart 3 ' || job_diag "$j"
	wait_over "$j" 300
	check "requeued onto the GPUs it had: both ranks restored from that set, and made their communicators again (4 restores in all)" \
		eval '[ "$(count "$j" "^[01]: gpuckpt: transparent: restored ckpt\.[0-9]+")" = 4 ] &&
			[ "$(run_count "$j" 3 "^[01]: gpuckpt: nccl: communicators made again")" = 2 ]'
else
	check "... and both ranks were restored again (4 restores in all)" \
		eval '[ "$(count "$j" "^[01]: gpuckpt: transparent: restored ckpt\.[0-9]+")" = 4 ]'
	# The shepherd names a GPU that changed: rank r from GPU r to GPU 1-r.
	moved=$(awk '/^batch: node .* restart 2 / { on = 1 } on && /^[01]: gpuckpt: transparent: restore: GPU 0: / { print $1, $(NF - 2), $NF }' "$(job_out "$j")" | sort)
	u0=GPU-5af057a1-0000-0000-0000-000000000000 u1=GPU-5af057a1-0100-0000-0000-000000000001
	if [ "$(echo $moved)" = "0: $u0 $u1 1: $u1 $u0" ]; then
		tap_ok "... onto the GPUs in the other order: each rank's shepherd restored it onto the other GPU ($(echo $moved))"
	else
		tap_not_ok "... onto the GPUs in the other order: each rank's shepherd restored it onto the other GPU ($(echo $moved))"
		tap_diag "$(awk '/^batch: node .* restart 2 / { on = 1 } on' "$(job_out "$j")" | grep -E 'batch:|restore|GPU' | head -n 20)"
	fi
fi

# --- 3. the result --------------------------------------------------------
check_state "$j" COMPLETED "the job completed"
for r in 0 1; do
	rank_lines "$j" $r >"$JOBS/$j.$r.lines"
	if cmp -s "$JOBS/$j.$r.lines" "$ref/$r.lines"; then
		tap_ok "rank $r: its lines over every run are the uninterrupted run's ($(wc -l <"$ref/$r.lines") lines, $(tail -n 1 "$ref/$r.lines"))"
	else
		tap_not_ok "rank $r: its lines over every run are the uninterrupted run's"
		tap_diag "$(diff "$ref/$r.lines" "$JOBS/$j.$r.lines" | head -n 12)"
	fi
done
# Every run but the refused one (the third on the GPUs).
skip_run=-1
[ $REAL = 1 ] && skip_run=2
bad=$(awk -v k=$skip_run '/^batch: node .* restart [0-9]+ / { run = $5 } run != k' "$(job_out "$j")" |
	grep -E 'gpuckpt: .*(refused|checkpoint of pid [0-9]+ failed|restore failed|transparent: restore: /)' | head -n 3)
check "no part was refused and no checkpoint failed${bad:+: $bad}" test -z "$bad"
if [ $REAL = 1 ]; then
	check "the driver reports no process of the job locked or checkpointed any more" \
		eval '! grep -q "transparent: .*cuCheckpointProcessUnlock.*failed\|could not unlock" "$(job_out "$j")"'
else
	check "the driver stand-in's state folder is empty again: every process it locked was unlocked" \
		test -z "$(ls -A "$SHEPDIR/state")"
fi
tap_done
