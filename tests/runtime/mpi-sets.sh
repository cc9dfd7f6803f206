#!/bin/bash
# mpi-sets.sh - four MPI ranks of examples/halo (mpirun, on the CUDA driver
# stand-in, each rank a task of a step of its own as srun makes them: its
# folder, GPUCKPT_STEP_TASKS, GPUCKPT_TASK) checkpointing together through
# gpuckpt_mpi.h: SIGUSR1 to one rank makes every rank write set 1 at the same
# step; SIGTERM to one rank makes every rank write set 2 and end; restoring
# set 2 in every rank (as the Slurm plugin would) gives the uninterrupted
# checksum; a rank given another set's id refuses to start; ranks given
# different sets are stopped at their first point; a rank killed while it
# writes its part leaves a set that is never complete, and `gpuckpt plan`
# keeps to the one before; a damaged part makes the plan fall back.
# The same under real Slurm: tests/slurm/e2e-mpi.sh.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
HALO=$top_builddir/examples/halo/halo-drv
MODULE=$top_builddir/examples/halo/.libs/halo_kernels_host.so
SLOWIO=$top_builddir/tests/runtime/.libs/slowio.so
PLAN=19
tap_plan $PLAN
gk_scratch
if [ ! -x "$HALO" ] || [ ! -e "$MODULE" ] || [ ! -e "$GK_STANDIN_DIR/libcuda.so.1" ] ||
	! command -v mpirun >/dev/null; then
	for _ in $(seq $PLAN); do tap_skip "examples/halo (needs MPI), its host kernels, the stand-in or mpirun are missing"; done
	exit 0
fi
MPIRUN=(mpirun --oversubscribe --bind-to none -n 4)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
ARGS=(--size 64 --steps 300 --report-every 10 --module "$MODULE")
B=$GK_SCRATCH/bb/7/step.0
mkdir -p "$B"

# The rank's environment, as the Slurm plugin makes it; RESTORE_N and
# RESTORE_ID (RESTORE_<rank>_N, RESTORE_<rank>_ID for one rank) ask for a set.
cat >"$GK_SCRATCH/rank.sh" <<EOF
#!/bin/bash
r=\$OMPI_COMM_WORLD_RANK
export GPUCKPT_DIR=$B/task.\$r GPUCKPT_STEP_TASKS=4 GPUCKPT_TASK=\$r GPUCKPT_LOG_LEVEL=notice
export LD_LIBRARY_PATH=$GK_STANDIN_DIR\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export LD_PRELOAD=$(gk_preload) ASAN_OPTIONS=\${ASAN_OPTIONS:-detect_leaks=0}
n=RESTORE_\${r}_N id=RESTORE_\${r}_ID
n=\${!n:-\${RESTORE_N:-}} id=\${!id:-\${RESTORE_ID:-}}
if [ -n "\$n" ]; then
	export GPUCKPT_RESTORE=\$GPUCKPT_DIR/ckpt.\$(printf %06d \$n) GPUCKPT_RESTORE_SET=\$id
fi
if [ "\$r" = "\${SLOW_RANK:-x}" ]; then
	export LD_PRELOAD=\$LD_PRELOAD:$SLOWIO GK_SLOWIO_AT=write GK_SLOWIO_SKIP=\${SLOW_SKIP:-0} GK_SLOWIO_MARK=$GK_SCRATCH/slow.mark
fi
echo \$\$ >$GK_SCRATCH/pid.\$r
exec "\$@"
EOF
chmod +x "$GK_SCRATCH/rank.sh"

# halo_run NAME [ENV...]: four ranks in the background; MPIRUN_PID.
halo_run() {
	local name=$1
	shift
	rm -f "$GK_SCRATCH"/pid.*
	env "$@" "${MPIRUN[@]}" "$GK_SCRATCH/rank.sh" "$HALO" "${ARGS[@]}" --delay-ms 20 \
		>"$GK_SCRATCH/$name.out" 2>&1 &
	MPIRUN_PID=$!
}
wait_line() { # NAME PATTERN [SECONDS]
	for _ in $(seq $((${3:-60} * 10))); do
		grep -Eq "$2" "$GK_SCRATCH/$1.out" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
count() { grep -Ec "$2" "$GK_SCRATCH/$1.out" 2>/dev/null; }
final() { sed -n 's/^halo: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p' "$GK_SCRATCH/$1.out" | tail -n 1; }
show() { tap_diag "$(tail -n 20 "$GK_SCRATCH/$1.out")"; }
expect() { # DESCRIPTION NAME COMMAND...
	local desc=$1 name=$2
	shift 2
	if "$@"; then tap_ok "$desc"; else tap_not_ok "$desc"; show "$name"; fi
}
set_id() { sed -n 's/.* id=\([0-9a-f]*\) .*/\1/p' "$B/set.$(printf %06d "$1")" 2>/dev/null; }
step_of() { # TASK N: the program step recorded in that task's ckpt.N
	sed -n 's/^ *"step": \([0-9]*\),.*/\1/p' "$B/task.$1/ckpt.$(printf %06d "$2")/manifest.json" 2>/dev/null
}

REF=$(with_standin "$HALO" "${ARGS[@]}" 2>/dev/null | sed -n 's/^halo: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p')
expect "one process, no gpuckpt: a checksum ($REF)" none test -n "$REF"

# SIGUSR1 to rank 2 alone, then SIGTERM to rank 1 alone.
halo_run run
wait_line run '^halo: step 60$'
kill -USR1 "$(cat "$GK_SCRATCH/pid.2")"
for _ in $(seq 300); do [ "$(count run 'checkpoint: set 1 complete')" -ge 4 ] && break; sleep 0.1; done
expect "SIGUSR1 to rank 2: every rank wrote set 1 ($(count run 'checkpoint: set 1 complete') of 4)" run \
	test "$(count run 'checkpoint: set 1 complete')" -eq 4
wait_line run '^halo: step 150$'
kill -TERM "$(cat "$GK_SCRATCH/pid.1")"
wait "$MPIRUN_PID"
expect "SIGTERM to rank 1: every rank wrote set 2 and ended ($(count run 'checkpoint: set 2 complete') complete, no done line)" run \
	test "$(count run 'checkpoint: set 2 complete')" -eq 4 -a -z "$(final run)"
expect "the set records of sets 1 and 2" run test -n "$(set_id 1)" -a -n "$(set_id 2)"
steps=$(for t in 0 1 2 3; do step_of $t 2; done | sort -u)
expect "set 2 was taken at one step in every rank ($(echo $steps))" run test "$(echo "$steps" | wc -l)" -eq 1
expect "gpuckpt verify: sets 2 and 1 good in every task" run \
	bash -c "'$GK_TOOL' verify '$B' | grep -c ': OK (4 tasks' | grep -qx 2"

# Restored in every rank, as the plugin would give it.
halo_run restore RESTORE_N=2 RESTORE_ID="$(set_id 2)"
wait "$MPIRUN_PID"
expect "every rank resumed from set 2, from one step ($(count restore 'resumed from step'))" restore \
	test "$(count restore 'resumed from step')" -eq 4 -a \
	"$(sed -n 's/^halo: resumed from step \([0-9]*\).*/\1/p' "$GK_SCRATCH/restore.out" | sort -u | wc -l)" -eq 1
expect "... and ended with the uninterrupted checksum ($(final restore) = $REF)" restore test "$(final restore)" = "$REF"

# Rank 3 told to restore set 2 under set 1's id: it refuses and stops.
halo_run wrongid RESTORE_N=2 RESTORE_ID="$(set_id 2)" RESTORE_3_ID="$(set_id 1)"
wait "$MPIRUN_PID"
expect "a part asked for under another set's id is refused, the rank stops" wrongid \
	grep -q "belongs to set $(set_id 2) .*set $(set_id 1) was asked for" "$GK_SCRATCH/wrongid.out"
expect "... and the job ends without a result (nothing mixed)" wrongid test -z "$(final wrongid)"

# Rank 3 restores set 1, the others set 2: stopped at the first point.
halo_run mixed RESTORE_N=2 RESTORE_ID="$(set_id 2)" RESTORE_3_N=1 RESTORE_3_ID="$(set_id 1)"
wait "$MPIRUN_PID"
expect "ranks restoring different sets are stopped at their first point" mixed \
	grep -q "did not all restore the same checkpoint set" "$GK_SCRATCH/mixed.out"
expect "... without a result" mixed test -z "$(final mixed)"

# Rank 2 killed while it writes its part of set 3.
rm -f "$GK_SCRATCH/slow.mark"
halo_run killed RESTORE_N=2 RESTORE_ID="$(set_id 2)" SLOW_RANK=2 SLOW_SKIP=0
wait_line killed '^halo: step 200$'
kill -USR1 "$(cat "$GK_SCRATCH/pid.0")"
for _ in $(seq 300); do [ -s "$GK_SCRATCH/slow.mark" ] && break; sleep 0.1; done
expect "rank 2 stopped half-way through its part of set 3" killed test -s "$GK_SCRATCH/slow.mark"
kill -KILL "$(cat "$GK_SCRATCH/slow.mark")" 2>/dev/null
# mpirun ends the job when a rank dies; it is only told to if it does not.
for _ in $(seq 200); do kill -0 "$MPIRUN_PID" 2>/dev/null || break; sleep 0.1; done
kill -TERM "$MPIRUN_PID" 2>/dev/null
{ wait "$MPIRUN_PID"; } 2>/dev/null
expect "set 3 was never recorded" killed test ! -e "$B/set.000003"
plan=$("$GK_TOOL" plan "$(dirname "$B")" 2>"$GK_SCRATCH/plan.err")
expect "gpuckpt plan keeps to set 2 ($(echo $plan))" killed grep -q "^step.0 set sequence=2 " <<<"$plan"
expect "... naming set 3 as not used" killed grep -q "set 3 not used" "$GK_SCRATCH/plan.err"

# Rank 1's part of set 2 damaged: the plan falls back to set 1 for all.
# In the middle of its first allocation's bytes (between allocations a data
# file holds padding that no checksum covers).
read -r file off size < <(jq -r '[.allocations[] | select(.size > 1024)][0].parts[0] | "\(.file) \(.offset) \(.size)"' "$B/task.1/ckpt.000002/manifest.json")
printf 'XXXXXXXX' | dd of="$B/task.1/ckpt.000002/$file" bs=1 seek=$((off + size / 2)) conv=notrunc status=none
plan=$("$GK_TOOL" plan "$(dirname "$B")" 2>"$GK_SCRATCH/plan.err")
expect "one part of set 2 damaged: the plan falls back to set 1 ($(echo $plan))" killed \
	grep -q "^step.0 set sequence=1 " <<<"$plan"
expect "... naming the damaged part" killed grep -q "set 2 refused: task 1: ckpt.000002: device0.data: checksum mismatch" "$GK_SCRATCH/plan.err"
halo_run fallback RESTORE_N=1 RESTORE_ID="$(set_id 1)"
wait "$MPIRUN_PID"
expect "every rank restored set 1 and ended with the uninterrupted checksum ($(final fallback))" fallback \
	test "$(count fallback 'resumed from step')" -eq 4 -a "$(final fallback)" = "$REF"
tap_done
