#!/bin/bash
# e2e-procs.sh - a task that runs several CUDA processes with the runtime,
# as `srun torchrun --nproc_per_node=2` does (issue 27: torchrun), under
# real Slurm with a real CRIU: each process's runtime writes its own folder,
# and the task has one checkpoint, which the shepherd makes of them
# (runtime/shepherd/proc_parts.c): ckpt.N/proc.PID for each process beside
# criu/, each part named in the seal with its manifest's digest.
#
# The job is `srun -N 1 -n 1 bash -c 'RANK0 & RANK1 & wait'`, submitted with
# --gpu-checkpoint=on: two ranks of tests/runtime/prog-nccl (an all-reduce
# job that knows nothing of gpuckpt), rank r on device r of the two the task
# sees, on the stand-ins (tests/cuda-standin's build with the checkpoint
# API, tests/nccl-standin): the runtime's, the shepherd's and the plugin's
# logic, never evidence of what a driver or NCCL do on a GPU
# (tests/gpu/procs-gpu.sh is that, with torchrun itself).
#
#  1. After step 10: `scontrol requeue`, with the job's node drained: both
#     ranks are brought to a common collective, and the shepherd commits one
#     checkpoint of the task with both parts in it. The epilog stages it out
#     (both parts with it), the other node's prolog stages it in, and the
#     shepherd restores the task: each rank loads its part and makes its
#     communicators again.
#  2. `gpuckpt verify` checks the staged copy, both parts with it.
#  3. Both ranks' lines, over both runs, are the uninterrupted run's.
#
# Needs root and CRIU 4 or later (GK_CRIU, else /usr/local/sbin/criu, ...):
# the Debian roots have it. Without it every point is a SKIP with the reason.
#
#   flock /tmp/gk-cluster.lock make -C build/tests check TESTS=slurm/e2e-procs.sh
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

N=10
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
for f in "$SHEP_REAL" "$PROG" "$GK" "$CK/libcuda.so.1" "$NC/libnccl.so.2" "$GK_RUNTIME"; do
	[ -e "$f" ] || e2e_bail "not built: $f (make check builds the stand-ins and prog-nccl)"
done
e2e_standin_shepherd procs
e2e_start --nodes 2
ENVS=$STANDIN_ENVS
STEPS=50
ARGS="--nranks 2 --steps $STEPS --per-step 3 --floats 4096 --mib 4"
LINES='(step|ballast|done) '
# rank R's command, its NCCL id in FILE, on device R of those it sees.
rank_cmd() { echo "$PROG --rank $1 --id $2 --device $1 $ARGS --sleep-ms $3"; }

# The reference: both ranks uninterrupted, outside Slurm, as the job's user.
ref=$JOBS/ref-procs
mkdir -p "$ref" && chmod 0777 "$ref"
id=$ref/nccl.id
for r in 0 1; do
	# shellcheck disable=SC2046
	(cd "$ref" && setpriv --reuid="$(id -u gkuser1)" --regid="$(id -g gkuser1)" --clear-groups \
		env $ENVS timeout -s KILL 120 $(rank_cmd $r "$id" 0)) >"$ref/$r.out" 2>"$ref/$r.err" &
	eval "rp$r=\$!"
done
wait "$rp0" && wait "$rp1" || e2e_bail "the reference run failed: $(tail -n 3 "$ref"/*.err | tr '\n' ' ')"
for r in 0 1; do grep -E "^$LINES" "$ref/$r.out" >"$ref/$r.lines"; done
tap_diag "reference (uninterrupted, outside Slurm): $(tail -n 1 "$ref/0.lines"), $(wc -l <"$ref/0.lines") lines per rank"

# One task, both ranks in it; each rank's lines carry "rR: " (the ranks'
# own output interleaves in the task's).
jid=$JOBS/procs-$RANDOM.id
s=$(job_script procs "export GPUCKPT_LOG_LEVEL=info $ENVS
srun -N 1 -n 1 bash -c '$(rank_cmd 0 "$jid" 150) 2>&1 | sed -u \"s/^/r0: /\" & $(rank_cmd 1 "$jid" 150) 2>&1 | sed -u \"s/^/r1: /\" & wait'")
rank_lines() { sed -nE "s/^r$2: ($LINES.*)/\1/p" "$(job_out "$1")"; }
run_count() {
	awk -v k="$2" -v re="$3" '/^batch: node .* restart [0-9]+ / { run = $5 } run == k && $0 ~ re { n++ }
		END { print n + 0 }' "$(job_out "$1")"
}
until_out() { wait_until "$3" "out_has '$1' '$2' || is_over '$1'" && out_has "$1" "$2"; }

drain gk2
j=$(submit --as gkuser1 -N 1 -n 1 --gres=gpu:2 --gpu-checkpoint=on "$s")
wait_running "$j" 60
resume gk2
until_out "$j" "^r1: step 10 " 300 || { job_diag "$j"; show_out "$j"; }
scontrol requeue "$j"
drain gk1
until_out "$j" "^batch: node gk2 restart 1 " 120 || job_diag "$j"
check "the shepherd took both ranks' folders as parts of the task's one checkpoint" \
	eval '[ "$(run_count "$j" 0 "gpuckpt: transparent: 2 processes of the task wrote checkpoints; each becomes a part")" = 1 ] &&
		[ "$(run_count "$j" 0 "gpuckpt: transparent: checkpoint ckpt\.[0-9]+ committed")" = 1 ]'
copy=$(ls -d "$E2E_DIR"/shared/"$j"/step.0/task.0/ckpt.* 2>/dev/null | tail -n 1)
parts=$(cd "$copy" 2>/dev/null && ls -d proc.* 2>/dev/null | tr '\n' ' ')
check "gk1's epilog staged it out with both parts in it ($copy: ${parts:-none})" \
	eval '[ "$(echo $parts | wc -w)" = 2 ] && [ -d "$copy/criu" ] &&
		grep -q "stage-out: job $j: staged out step.0/" "$E2E_DIR/log/slurmd.gk1.log"'
# The seal names each part with its manifest's digest.
sealed=$(sed -n '/"parts"/,/}/p' "$copy/criu/SEAL" 2>/dev/null | grep -Eo '"proc\.[0-9]+": *"[0-9a-f]{64}"' | wc -l)
check "the seal names both parts with their manifests' digests ($sealed)" test "$sealed" = 2
resume gk1
wait_over "$j" 300
check "gk2's prolog staged it in" grep -q "stage-in: job $j: staged in step.0/" "$E2E_DIR/log/slurmd.gk2.log"
check "the shepherd restored the task once, and each rank loaded its own part and made its communicators again" \
	eval '[ "$(run_count "$j" 1 "gpuckpt: transparent: restored ckpt\.[0-9]+")" = 1 ] &&
		[ "$(run_count "$j" 1 "^r[01]: .*gpuckpt: transparent: restored from .*/ckpt\.[0-9]+/proc\.[0-9]+; the program goes on")" = 2 ] &&
		[ "$(run_count "$j" 1 "^r[01]: .*gpuckpt: nccl: communicators made again")" = 2 ]'
check_state "$j" COMPLETED "the job completed"
for r in 0 1; do
	rank_lines "$j" $r >"$JOBS/$j.$r.lines"
	if cmp -s "$JOBS/$j.$r.lines" "$ref/$r.lines"; then
		tap_ok "rank $r: its lines over both runs are the uninterrupted run's ($(wc -l <"$ref/$r.lines") lines, $(tail -n 1 "$ref/$r.lines"))"
	else
		tap_not_ok "rank $r: its lines over both runs are the uninterrupted run's"
		tap_diag "$(diff "$ref/$r.lines" "$JOBS/$j.$r.lines" | head -n 12)"
	fi
done
v=$("$GK" verify --owner gkuser1 "$copy" 2>&1)
check "gpuckpt verify: the staged copy and both its parts are good ($(echo "$v" | grep -c ': OK ') OK lines)" \
	eval '[ "$(echo "$v" | grep -c "/proc\.[0-9]*: OK ")" = 2 ] && ! echo "$v" | grep -qv ": OK "'
[ "$(echo "$v" | grep -c ': OK ')" = 3 ] || tap_diag "$v"
bad=$(grep -E 'gpuckpt: .*(refused|checkpoint of pid [0-9]+ failed|restore failed|cannot move)' "$(job_out "$j")" | head -n 3)
check "no part was refused and no checkpoint failed${bad:+: $bad}" test -z "$bad"
[ "$TAP_FAILED" -gt 0 ] && tap_diag "$(grep -E 'batch:|gpuckpt' "$(job_out "$j")" | tail -n 40)"
tap_done
