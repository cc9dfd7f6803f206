#!/bin/bash
# e2e-procs.sh - a task that runs several CUDA processes with the runtime,
# as `srun torchrun --nproc-per-node=2` does (issue 27: torchrun), under
# real Slurm with a real CRIU: each process's runtime writes its own folder,
# and the task has one checkpoint, which the shepherd makes of them
# (runtime/shepherd/proc_parts.c): ckpt.N/proc.PID for each process beside
# criu/, each part named in the seal with its manifest's digest.
#
# The job is one task, `srun -N 1 -n 1 bash TASK.sh`, submitted with
# --gpu-checkpoint=on; each rank's lines go to a file of its own.
#
# Without a GPU (make check-slurm in the Debian roots, which have CRIU):
# TASK.sh starts two ranks of tests/runtime/prog-nccl (an all-reduce job
# that knows nothing of gpuckpt) itself, rank r on device r of the two the
# task sees, on the stand-ins (tests/cuda-standin's build with the
# checkpoint API, tests/nccl-standin): the runtime's, the shepherd's and the
# plugin's logic, never evidence of what a driver or NCCL do on a GPU. Two
# nodes: the job is requeued on gk1 and restored on gk2.
#
# On the GPU machine (two GPUs, python3 with PyTorch seeing both, CRIU 4.2 or
# later; GK_E2E_PROCS_STANDIN=1 keeps the stand-ins there; make
# check-gpu-torchrun-slurm): TASK.sh is torchrun itself (its default static
# rendezvous on 127.0.0.1) running tests/gpu/frameworks/fw_ddp.py, PyTorch
# DDP, unmodified, on GPU LOCAL_RANK, GPUCKPT_TCP=close. One node: the job is
# requeued and restored on it.
#
#  1. After step 10: `scontrol requeue`: the ranks are brought to a common
#     collective, and the shepherd commits one checkpoint of the task with
#     every part in it (torchrun's launcher writes one too: it initialises
#     CUDA to count the GPUs). The epilog stages it out, the prolog stages
#     it in, and the shepherd restores the task: each rank loads its part
#     and makes its communicators again.
#  2. After step 30: a job of the high partition takes every node, and Slurm
#     preempts this one (PreemptMode=REQUEUE): the same again, restored
#     when the high job has ended.
#  3. `gpuckpt verify` checks the newest staged copy, every part with it.
#  4. Both ranks' lines, over every run, are the uninterrupted run's.
#
# Needs root and CRIU 4 or later (GK_CRIU, else /usr/local/sbin/criu, ...):
# the Debian roots have it. Without it every point is a SKIP with the reason.
#
#   flock /tmp/gk-cluster.lock make -C build/tests check TESTS=slurm/e2e-procs.sh
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

N=12
PY=${GK_PYTHON:-$(command -v python3 2>/dev/null || true)}
DDP=$top_srcdir/tests/gpu/frameworks/fw_ddp.py
REAL=0
if [ "${GK_E2E_PROCS_STANDIN:-0}" != 1 ] && [ -c /dev/nvidia1 ] &&
	[ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')" -ge 2 ] && [ -n "$PY" ] &&
	timeout 120 "$PY" -c 'import torch, torch.distributed.run; assert torch.cuda.device_count() >= 2' >/dev/null 2>&1; then
	REAL=1
fi
why=
if [ "$(id -u)" -ne 0 ]; then
	why="needs root"
elif ! gk_find_criu; then
	why=$CRIU_WHY
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
GK=$top_builddir/runtime/gpuckpt
# The libtool wrapper may relink on its first run, which the test users
# cannot: the program itself.
[ -x "$top_builddir/tests/runtime/.libs/prog-nccl" ] && PROG=$top_builddir/tests/runtime/.libs/prog-nccl
[ -x "$top_builddir/runtime/.libs/gpuckpt" ] && GK=$top_builddir/runtime/.libs/gpuckpt
E2E_OWN_APP=1
e2e_require $N
STEPS=80
if [ $REAL = 1 ]; then
	# One node, its two GPUs; the job runs as root (PyTorch is installed
	# under root's home there).
	NODE_A=gk1 NODE_B=gk1 AS=()
	gk_need_built "$SHEP_REAL" "$GK" "$GK_RUNTIME"
	GK_E2E_PLUGIN_ARGS="criu=$CRIU shepherd=$(dirname "$SHEP_REAL") ${GK_E2E_PLUGIN_ARGS:-}"
	export GK_GPU_COUNT=2
	e2e_start --real-gpu
	CACHE=$JOBS/cache-procs
	mkdir -p "$CACHE/home"
	ENVS="NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CUBLAS_WORKSPACE_CONFIG=:4096:8 HOME=$CACHE/home TRITON_CACHE_DIR=$CACHE/triton GPUCKPT_TCP=close"
	LINES='fw-ddp: (step|done)'
	port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
	# torchrun's two workers, each the unmodified DDP job on GPU LOCAL_RANK,
	# its lines in OUT.rLOCAL_RANK; SLEEP between steps.
	task_cmd() {
		echo "exec $PY -m torch.distributed.run --nnodes=1 --nproc-per-node=2 --master-addr=127.0.0.1 --master-port=$(port) --no-python bash -c 'exec $PY $DDP --steps $STEPS --sleep $2 >>$1.r\$LOCAL_RANK 2>&1'"
	}
	PARTS='2|3' # torchrun's launcher initialises CUDA to count the GPUs: a part of its own
	tap_diag "on the GPUs: $(nvidia-smi -L | head -n 2 | tr '\n' ' '); torchrun with PyTorch DDP (fw_ddp.py), $STEPS steps"
else
	NODE_A=gk1 NODE_B=gk2 AS=(--as gkuser1)
	for f in "$SHEP_REAL" "$PROG" "$GK" "$CK/libcuda.so.1" "$NC/libnccl.so.2" "$GK_RUNTIME"; do
		[ -e "$f" ] || e2e_bail "not built: $f (make check builds the stand-ins and prog-nccl)"
	done
	e2e_standin_shepherd procs
	e2e_start --nodes 2
	ENVS=$STANDIN_ENVS
	ARGS="--nranks 2 --steps $STEPS --per-step 3 --floats 4096 --mib 4"
	LINES='(step|ballast|done) '
	# Both ranks of prog-nccl started by one shell, rank r on device r of
	# the two the task sees, their NCCL id in a file, their lines in
	# OUT.rR; SLEEP ms between steps.
	task_cmd() {
		local id=$1.id r
		for r in 0 1; do
			printf '%s --rank %s --id %s --device %s %s --sleep-ms %s >>%s.r%s 2>&1 & ' "$PROG" $r "$id" $r "$ARGS" "$2" "$1" $r
		done
		echo wait
	}
	PARTS=2
fi

# The reference: both ranks uninterrupted, outside Slurm.
ref=$JOBS/ref-procs
mkdir -p "$ref" && chmod 0777 "$ref"
task_cmd "$ref/out" 0 >"$ref/task.sh"
if [ $REAL = 1 ]; then
	(cd "$ref" && env $ENVS timeout -s KILL 300 bash "$ref/task.sh") >"$ref/run.log" 2>&1
else
	(cd "$ref" && setpriv --reuid="$(id -u gkuser1)" --regid="$(id -g gkuser1)" --clear-groups \
		env $ENVS timeout -s KILL 120 bash "$ref/task.sh") >"$ref/run.log" 2>&1
fi
for r in 0 1; do grep -E "^$LINES" "$ref/out.r$r" >"$ref/$r.lines" 2>/dev/null; done
[ -s "$ref/0.lines" ] && [ -s "$ref/1.lines" ] || e2e_bail "the reference run failed: $(tail -n 3 "$ref/run.log" "$ref"/out.r* 2>/dev/null | tr '\n' ' ')"
tap_diag "reference (uninterrupted, outside Slurm): $(tail -n 1 "$ref/0.lines"), $(wc -l <"$ref/0.lines") lines per rank"

# One task, both ranks in it, their lines in files of their own.
RUN=$JOBS/procs-run
mkdir -p "$RUN" && chmod 0777 "$RUN"
task_cmd "$RUN/out" "$([ $REAL = 1 ] && echo 0.15 || echo 150)" >"$RUN/task.sh"
s=$(job_script procs "export GPUCKPT_LOG_LEVEL=info $ENVS
srun -N 1 -n 1 bash $RUN/task.sh")
rank_out() { cat "$RUN/out.r$2" 2>/dev/null; }
rank_lines() { rank_out "$1" "$2" | grep -E "^$LINES"; }
# count_ranks REGEX: lines of both ranks' own output matching it.
count_ranks() { cat "$RUN"/out.r0 "$RUN"/out.r1 2>/dev/null | grep -Ec "$1"; }
run_count() {
	awk -v k="$2" -v re="$3" '/^batch: node .* restart [0-9]+ / { run = $5 } run == k && $0 ~ re { n++ }
		END { print n + 0 }' "$(job_out "$1")"
}
until_out() { wait_until "$3" "out_has '$1' '$2' || is_over '$1'" && out_has "$1" "$2"; }
step_line() { echo "^${LINES%%(*}step $1 "; }

[ $NODE_A = $NODE_B ] || drain $NODE_B
j=$(submit "${AS[@]}" -N 1 -n 1 --gres=gpu:2 --gpu-checkpoint=on "$s")
wait_running "$j" 60
[ $NODE_A = $NODE_B ] || resume $NODE_B
# rank_at K: rank 1 printed step K (or the job is over).
rank_at() { wait_until 300 "grep -Eq '$(step_line "$1")' '$RUN/out.r1' 2>/dev/null || is_over '$j'" || { job_diag "$j"; show_out "$j"; }; }
rank_at 10
scontrol requeue "$j"
[ $NODE_A = $NODE_B ] || drain $NODE_A
until_out "$j" "^batch: node $NODE_B restart 1 " 120 || job_diag "$j"
nparts=$(run_count "$j" 0 "gpuckpt: transparent: ($PARTS) processes of the task wrote checkpoints; each becomes a part")
check "the shepherd took the ranks' folders as parts of the task's one checkpoint" \
	eval '[ "$nparts" = 1 ] && [ "$(run_count "$j" 0 "gpuckpt: transparent: checkpoint ckpt\.[0-9]+ committed")" = 1 ]'
n=$(sed -nE "s/.*gpuckpt: transparent: ([0-9]+) processes of the task wrote checkpoints.*/\1/p" "$(job_out "$j")" | head -n 1)
copy=$(ls -d "$E2E_DIR"/shared/"$j"/step.0/task.0/ckpt.* 2>/dev/null | tail -n 1)
parts=$(cd "$copy" 2>/dev/null && ls -d proc.* 2>/dev/null | tr '\n' ' ')
check "$NODE_A's epilog staged it out with every part in it ($copy: ${parts:-none})" \
	eval '[ -n "$n" ] && [ "$(echo $parts | wc -w)" = "$n" ] && [ -d "$copy/criu" ] &&
		grep -q "stage-out: job $j: staged out step.0/" "$E2E_DIR/log/slurmd.$NODE_A.log"'
# The seal names each part with its manifest's digest.
sealed=$(sed -n '/"parts"/,/}/p' "$copy/criu/SEAL" 2>/dev/null | grep -Eo '"proc\.[0-9]+": *"[0-9a-f]{64}"' | wc -l)
check "the seal names every part with its manifest's digest ($sealed of ${n:-?})" test "$sealed" = "${n:-x}"
[ $NODE_A = $NODE_B ] || resume $NODE_A
rank_at 30
check "$NODE_B's prolog staged it in" grep -q "stage-in: job $j: staged in step.0/" "$E2E_DIR/log/slurmd.$NODE_B.log"
check "the shepherd restored the task once, and each rank loaded its own part and made its communicators again" \
	eval '[ "$(run_count "$j" 1 "gpuckpt: transparent: restored ckpt\.[0-9]+")" = 1 ] &&
		[ "$(count_ranks "gpuckpt: transparent: restored from .*/ckpt\.[0-9]+/proc\.[0-9]+; the program goes on")" = 2 ] &&
		[ "$(count_ranks "gpuckpt: nccl: communicators made again")" = 2 ]'

# Preempted by a job of the high partition that takes every node.
nnodes=1
[ $NODE_A = $NODE_B ] || nnodes=2
t0=$(date +%s)
high=$(submit -p high -N $nnodes --gres=gpu:2 --exclusive --wrap 'echo high: running on $SLURM_JOB_NODELIST; sleep 8')
grace=$(sed -n 's/^PartitionName=low .*GraceTime=\([0-9]*\).*/\1/p' "$SLURM_CONF")
wait_running "$high" $((grace + 60)) || job_diag "$high"
check "a job of the high partition preempted it ($(($(date +%s) - t0)) s, GraceTime $grace s)" state_is "$high" RUNNING
wait_over "$high" 60
wait_over "$j" 300
check "... the shepherd committed a second checkpoint of the task, and restored it when the job came back" \
	eval '[ "$(run_count "$j" 1 "gpuckpt: transparent: checkpoint ckpt\.[0-9]+ committed")" = 1 ] &&
		[ "$(run_count "$j" 2 "gpuckpt: transparent: restored ckpt\.[0-9]+")" = 1 ] &&
		[ "$(count_ranks "gpuckpt: transparent: restored from .*/ckpt\.[0-9]+/proc\.[0-9]+; the program goes on")" = 4 ]'
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
owner=gkuser1
[ $REAL = 1 ] && owner=root
# The newest copy: the preemption's checkpoint.
copy=$(ls -d "$E2E_DIR"/shared/"$j"/step.0/task.0/ckpt.* 2>/dev/null | tail -n 1)
n=$(ls -d "$copy"/proc.* 2>/dev/null | wc -l)
v=$("$GK" verify --owner $owner "$copy" 2>&1)
check "gpuckpt verify: the staged copy and every part are good ($(echo "$v" | grep -c ': OK ') OK lines)" \
	eval '[ -n "$n" ] && [ "$(echo "$v" | grep -c "/proc\.[0-9]*: OK ")" = "$n" ] && ! echo "$v" | grep -qv ": OK "'
[ "$(echo "$v" | grep -c ': OK ')" = $((${n:-0} + 1)) ] || tap_diag "$v"
bad=$(cat "$(job_out "$j")" "$RUN"/out.r0 "$RUN"/out.r1 2>/dev/null | grep -E 'gpuckpt: .*(refused|checkpoint of pid [0-9]+ failed|restore failed|cannot move)' | head -n 3)
check "no part was refused and no checkpoint failed${bad:+: $bad}" test -z "$bad"
if [ "$TAP_FAILED" -gt 0 ]; then
	tap_diag "$(grep -E 'batch:|gpuckpt' "$(job_out "$j")" | tail -n 30)"
	tap_diag "$(tail -n 12 "$RUN"/out.r0 "$RUN"/out.r1 2>/dev/null)"
fi
[ $REAL = 1 ] && tap_diag "torchrun after the restores: $(awk '/^batch: node .* restart [12] / { on = 1 } on' "$(job_out "$j")" | grep -iE 'error|broken pipe|Traceback' | grep -v slurmstepd | head -n 4 | cut -c1-240)"
tap_done
