#!/bin/bash
# flush-sets.sh - a step of several tasks with a flush root (GPUCKPT_FLUSH_DIR,
# as the plugin's flush_root= sets it): four MPI ranks of examples/halo
# (mpirun, the CUDA stand-in, each rank a task of a step of its own as srun
# makes them) checkpoint together every second; task 0's flush thread copies
# the step's set records beside the flushed task folders (the prolog needs
# them to restore the newest set flushed whole after a node loss), no other
# task does, each record as task 0 wrote it, and none older than task 0's
# oldest (keep-N). The prolog's side: tests/slurm/stage.sh, e2e-flush-sets.sh.
. "${top_srcdir:-.}/tests/lib/helpers.sh"
HALO=$top_builddir/examples/halo/halo-drv
MODULE=$top_builddir/examples/halo/.libs/halo_kernels_host.so
PLAN=5
tap_plan $PLAN
gk_scratch
if [ ! -x "$HALO" ] || [ ! -e "$MODULE" ] || [ ! -e "$GK_STANDIN_DIR/libcuda.so.1" ] ||
	! command -v mpirun >/dev/null; then
	for _ in $(seq $PLAN); do tap_skip "examples/halo (needs MPI), its host kernels, the stand-in or mpirun are missing"; done
	exit 0
fi
MPIRUN=(mpirun --oversubscribe --bind-to none --tag-output -n 4)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
B=$GK_SCRATCH/bb/7/step.0 F=$GK_SCRATCH/flush/7/step.0
mkdir -p "$B" "$F"/task.{0,1,2,3}
cat >"$GK_SCRATCH/rank.sh" <<EOF
#!/bin/bash
r=\$OMPI_COMM_WORLD_RANK
export GPUCKPT_DIR=$B/task.\$r GPUCKPT_FLUSH_DIR=$F/task.\$r GPUCKPT_STEP_TASKS=4 GPUCKPT_TASK=\$r
export GPUCKPT_LOG_LEVEL=notice GPUCKPT_INTERVAL=1 GPUCKPT_KEEP=2
export LD_LIBRARY_PATH=$GK_STANDIN_DIR\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export LD_PRELOAD=$(gk_preload) ASAN_OPTIONS=\${ASAN_OPTIONS:-detect_leaks=0}
exec "\$@"
EOF
chmod +x "$GK_SCRATCH/rank.sh"
OUT=$GK_SCRATCH/run.out
"${MPIRUN[@]}" "$GK_SCRATCH/rank.sh" "$HALO" --size 64 --steps 300 --report-every 10 \
	--module "$MODULE" --delay-ms 20 >"$OUT" 2>&1
recs() { ls "$1" 2>/dev/null | sed -n 's/^set\.0*\([0-9][0-9]*\)$/\1/p' | sort -n; }
lines=$(grep -c 'gpuckpt: flush: .*/step.0/set\.[0-9]*: the record of set' "$OUT")
others=$(grep 'gpuckpt: flush: .*/step.0/set\.[0-9]*: the record of set' "$OUT" | grep -vc '^\[[0-9]*,0\]')
tap_diag "sets complete: $(grep -c '^\[[0-9]*,0\].*checkpoint: set [0-9]* complete' "$OUT"); records flushed: $lines; local: $(recs "$B" | tr '\n' ' '); flush root: $(recs "$F" | tr '\n' ' ')"
check "task 0 flushed set records ($lines lines)" [ "$lines" -ge 2 ]
check "no other task did ($others lines)" [ "$others" -eq 0 ]
same=1
for n in $(recs "$F"); do
	p=$(printf %06d "$n")
	grep -Eq "^\[[0-9]*,[0-9]*\]<[a-z]*>:.*checkpoint: set $n complete" "$OUT" || same=0
	[ ! -e "$B/set.$p" ] || cmp -s "$B/set.$p" "$F/set.$p" || same=0
done
check "each flushed record is of a complete set, as task 0 wrote it" [ -n "$(recs "$F")" -a $same = 1 ]
check "none older than task 0's oldest record (keep 2: $(recs "$B" | head -n 1))" \
	[ -n "$(recs "$F")" -a "$(recs "$F" | head -n 1)" -ge "$(recs "$B" | head -n 1)" ] 2>/dev/null
check "the flushed records are the user's own files, 0600, no temporary left" \
	[ -z "$(find "$F" -maxdepth 1 -name 'set.*' ! -perm 0600)" -a -z "$(ls -a "$F" | grep '^\.tmp')" -a -n "$(recs "$F")" ]
tap_done
