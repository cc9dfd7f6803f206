#!/bin/bash
# e2e-kernels.sh - interruptible long kernels (issue 31) under real Slurm: a
# --gpu-checkpoint=on job whose one kernel lasts far longer than the time
# Slurm leaves between SIGTERM and SIGKILL (KillWait for `scontrol requeue`,
# set here to GK_KILL_WAIT, 8 s; GraceTime, for preemption, the same), and
# the same kernel unmarked beside it, for the contrast.
#
# Marked (gpuckpt_kernel.h): `scontrol requeue` in the middle of the kernel.
# The runtime raises the stop word, the blocks not yet started return, the
# log names the kernel and its executed blocks (fewer than all), the
# checkpoint is committed within KillWait, before Slurm's SIGKILL; Slurm
# requeues the job, the plugin restores it from the checkpoint, the kernel
# resumes from its record (only the blocks not run) and the job ends with the
# uninterrupted result. Unmarked: the requeue comes while the program works
# on the host beside its kernel; its next gpuckpt_point() drains, i.e. waits
# for the whole kernel: the runtime's notices name the kernel it waits for
# and say to mark it, and Slurm's SIGKILL ends the job at the end of KillWait
# with no checkpoint.
#
# Here (no GPU) the program is tests/runtime/prog-kernels on the CUDA driver
# stand-in, its "kernel" a host function (kern_kernels_host.c) that follows
# gpuckpt_kernel.cuh's protocol, slowed down: 80 blocks of 0.4 s, 32 s. On
# the GPU machine (nvidia-smi sees a GPU and tests/gpu/gpu-kernel is built:
# make check-gpu-kernels builds it), the same scenario runs on one real GPU
# (cluster.sh --real-gpu) with gpu-kernel (block mode, a kernel of
# GK_E2E_KERNEL_SECONDS, 45 s by default, checked exactly on the host),
# KillWait 15 s; GK_E2E_KERNELS_STANDIN=1 keeps the stand-in there.
# GK_E2E_KERNELS_UNMARKED=1 runs the "marked" job unmarked: its points on
# the interruption and the restore must then fail (the before case).
#
# About 30 s on the stand-in (two nodes, both jobs at once), 2-3 minutes on a GPU.
#
#   flock /tmp/gk-cluster.lock make -C build/tests check TESTS=slurm/e2e-kernels.sh
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

N=16
GPU_PROG=$top_builddir/tests/gpu/gpu-kernel
# The task itself appends its lines to the job's output: no Slurm daemon
# relays them. The runtime's lines about the interrupted kernel and the
# checkpoint come as the requeue ends the step. Through srun, ended with it,
# they were once lost under load; `srun --output=FILE` did not help, because
# Slurm 22.05's slurmstepd still reads the task's stdout and stderr from
# pipes and writes the file itself, and it too can end before it has read
# them (CI, twice: points 5, 7, 8, 12 and 14 failed, yet the restart
# restored the checkpoint those lines announce). A file the task opened
# itself keeps every line once write() has returned.
# (A function: $JOBS is known once e2e_start has run.)
srun_cmd() { echo "srun $JOBS/to-out"; }
to_out() {
	printf '#!/bin/sh\n# The task appends its own stdout and stderr to the job output.\nexec "$@" >>"%s/$SLURM_JOB_ID.out" 2>&1\n' "$JOBS" >"$JOBS/to-out"
	chmod 0755 "$JOBS/to-out"
}
if [ "${GK_E2E_KERNELS_STANDIN:-0}" != 1 ] && nvidia-smi -L >/dev/null 2>&1 &&
	[ -c "${GK_GPU_DEVICE:-/dev/nvidia0}" ] && [ -x "$GPU_PROG" ]; then
	REAL=1
else
	REAL=0
fi
E2E_OWN_APP=1
e2e_require $N
if [ $REAL = 1 ]; then
	export GK_KILL_WAIT=${GK_KILL_WAIT:-15}
	export GK_GRACE_TIME=${GK_GRACE_TIME:-$GK_KILL_WAIT}
	e2e_start --real-gpu
	APP_ENV=":"
	SECS=${GK_E2E_KERNEL_SECONDS:-45}
	TAG=gpu-kernel
	KMARKED=lcg_blocks  # the name given to gpuckpt_kernel_create
	KUNMARKED=lcg_blocks # the driver's (mangled) name contains it
	LAUNCHED='^gpu-kernel: kernel started$'
	RESUMED='^gpu-kernel: resumed from step 0'
	RESULT='^gpu-kernel: result: ok n=[0-9]+ mismatches=0 '
	# The marked job's program; UNMARKED_ARGS the unmarked one's.
	marked_cmd() { echo "$(srun_cmd) $GPU_PROG --mode blocks --seconds $SECS ${1:-}"; }
	UNMARKED_CMD="$(srun_cmd) $GPU_PROG --mode blocks --seconds $SECS --unmarked --host-ms 3000"
	MID=$((SECS / 4)) # seconds into the marked kernel for the requeue
	NODE_A="" NODE_B=""
	tap_diag "on the GPU: $(nvidia-smi -L | head -n 1); gpu-kernel, kernels of about $SECS s"
else
	export GK_KILL_WAIT=${GK_KILL_WAIT:-8}
	export GK_GRACE_TIME=${GK_GRACE_TIME:-$GK_KILL_WAIT}
	PROG=$top_builddir/tests/runtime/prog-kernels
	MODULE=$top_builddir/tests/runtime/.libs/kern_kernels_host.so
	for f in "$PROG" "$MODULE" "$GK_STANDIN_DIR/libcuda.so.1" "$GK_RUNTIME"; do
		[ -e "$f" ] || e2e_bail "not built: $f (make check builds the stand-in and prog-kernels)"
	done
	# The libtool wrapper of an uninstalled program may relink it on its
	# first run, which the test users cannot: the program itself, its
	# libraries (the runtime) from the build.
	[ -x "$top_builddir/tests/runtime/.libs/prog-kernels" ] && PROG=$top_builddir/tests/runtime/.libs/prog-kernels
	e2e_start
	APP_ENV="export LD_LIBRARY_PATH=$GK_STANDIN_DIR:$(dirname "$GK_RUNTIME")\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
	TAG=prog-kernels
	KMARKED=kmc
	KUNMARKED=kmc_blocks
	LAUNCHED='^step 0: launched$'
	RESUMED='^resumed from step 0$'
	RESULT='^done: checksum=(0x[0-9a-f]+) expected=\1$'
	# 80 blocks of 0.4 s: a 32-s kernel; once restored, the rest runs at
	# full speed (the delay is the stand-in's, not the kernel's work).
	marked_cmd() {
		echo "d=400000; [ \"\${SLURM_RESTART_COUNT:-0}\" -gt 0 ] && d=0
$(srun_cmd) $PROG --module $MODULE --mode blocks --steps 1 --blocks 80 --threads 32 --delay-us \$d ${1:-}"
	}
	UNMARKED_CMD="$(srun_cmd) $PROG --module $MODULE --unmarked --host-ms 3000 --steps 2 --blocks 80 --threads 32 --delay-us 400000"
	MID=2
	NODE_A="-w gk1" NODE_B="-w gk2"
fi
KW=$GK_KILL_WAIT
to_out
tap_diag "KillWait=$(scontrol show config | sed -n 's/^KillWait *= *//p'), GraceTime of the partition: $(sed -n 's/^PartitionName=low .*GraceTime=\([0-9]*\).*/\1/p' "$SLURM_CONF") s"

marked_opt=""
[ "${GK_E2E_KERNELS_UNMARKED:-0}" = 1 ] && marked_opt="--unmarked" && tap_diag "GK_E2E_KERNELS_UNMARKED=1: the 'marked' job runs its kernel unmarked"
sa=$(job_script marked "$(marked_cmd "$marked_opt")")
sb=$(job_script unmarked "$UNMARKED_CMD")
# first_run JOB: the job's output up to its first restart.
first_run() { awk '/^batch: node .* restart [1-9]/ { exit } { print }' "$(job_out "$1")"; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# --- the unmarked kernel: the requeue waits for it, Slurm kills the job ---------------
b=$(submit --as gkuser2 --gres=gpu:1 $NODE_B --gpu-checkpoint=on "$sb")
[ $REAL = 1 ] || a=$(submit --as gkuser1 --gres=gpu:1 $NODE_A --gpu-checkpoint=on "$sa")
wait_out "$b" "$LAUNCHED" 120 || { job_diag "$b"; show_out "$b"; }
# In its host work (3 s): the signal is pending at its next point, which drains.
scontrol requeue "$b"
tb=$(date +%s.%N)
# Back in the queue once its processes ended and its epilog ran (a job being
# requeued shows RUNNING, then COMPLETING or REQUEUED until then).
back_or_over() { case $(job_state "$1") in PENDING | REQUEUE_HOLD) return 0 ;; esac; is_over "$1"; }
wait_for $((KW + 30)) back_or_over "$b"
gone=$(since "$tb")
# Keep it from starting over (it would run from the beginning, for long).
scontrol hold "$b" 2>/dev/null || true
tap_diag "unmarked: requeued; the job was back in the queue $gone s later (KillWait $KW s)"
check_out "$b" "unmarked: the drain's notice names the kernel it waits for ($KUNMARKED) and says to mark it" \
	"checkpoint: the drain has waited [0-9]+ s so far for the GPU's work; the last kernel launched was [^,]*$KUNMARKED[^,]*, .*mark it interruptible"
check "unmarked: no checkpoint was written: Slurm's SIGKILL came first" \
	sh -c "! grep -q 'checkpoint: .*: wrote [0-9]* bytes' '$(job_out "$b")'"
check "unmarked: the job ran until KillWait ended it (back in the queue ${gone} s after the requeue, KillWait ${KW} s)" \
	awk -v g="$gone" -v k="$KW" 'BEGIN { exit !(g >= k - 2) }'
never_done() { ! first_run "$1" | grep -Eq '^step 0: done|^gpu-kernel: kernel done'; }
check "unmarked: the kernel never finished in that run" never_done "$b"
scancel "$b" 2>/dev/null || true

# --- the marked kernel: interrupted, checkpointed, restored, resumed ----------------------
[ $REAL = 1 ] && a=$(submit --as gkuser1 --gres=gpu:1 $NODE_A --gpu-checkpoint=on "$sa")
wait_out "$a" "$LAUNCHED" 120 || { job_diag "$a"; show_out "$a"; }
sleep "$MID"
scontrol requeue "$a"
ta=$(date +%s.%N)
if wait_out "$a" '^gpuckpt: checkpoint: .*: wrote [0-9]+ bytes' $((KW + 5)); then
	took=$(since "$ta")
else
	took=never
fi
tap_diag "marked: requeued $MID s after the kernel was seen started; the checkpoint committed: ${took} s after the requeue"
tap_diag "$(grep -h "interrupted for a checkpoint\|the drain\|: wrote" "$(job_out "$a")" | head -n 4)"
ex=$(first_run "$a" | sed -En "s/.*kernel $KMARKED: interrupted for a checkpoint .*: ([0-9]+) of ([0-9]+) blocks executed.*/\1 \2/p" | head -n 1)
check "marked: the log names the interrupted kernel ($KMARKED) and its executed blocks, fewer than all (${ex:-none})" \
	test -n "$ex" -a "${ex% *}" -lt "${ex#* }"
check "marked: ... in the middle of the kernel, which never finished in that run" never_done "$a"
li=$(first_run "$a" | grep -n "interrupted for a checkpoint" | head -n 1 | cut -d: -f1)
lw=$(first_run "$a" | grep -En "^gpuckpt: checkpoint: .*: wrote [0-9]+ bytes" | head -n 1 | cut -d: -f1)
check "marked: the checkpoint was committed after the interruption" \
	test -n "$li" -a -n "$lw" -a "${li:-0}" -lt "${lw:-0}"
check "marked: ... within KillWait, before Slurm's SIGKILL (${took} s after the requeue, KillWait ${KW} s)" \
	awk -v t="$took" -v k="$KW" 'BEGIN { exit !(t != "never" && t + 0 < k) }'
wait_out "$a" '^batch: node .* restart 1 ' 120
check_out "$a" "marked: Slurm requeued the job and it started again" '^batch: node .* restart 1 '
wait_over "$a" $((REAL ? 300 : 120))
check_out "$a" "marked: the plugin restored the task from its checkpoint" \
	"^gpuckpt: job $a step.0 task 0: restart 1: restoring from $E2E_DIR/bb/$a/step.0/task.0"
check_out "$a" "marked: restored, the program resumed at the kernel's step" "$RESUMED"
check_out "$a" "marked: ... the kernel from its record: ${ex% *} of ${ex#* } blocks already executed, only the rest ran" \
	"kernel $KMARKED: resumed from its record: ${ex% *} of ${ex#* } blocks executed"
check_out "$a" "marked: ... and the job ended with the uninterrupted result" "$RESULT"
check "marked: exactly one checkpoint, the requeue's: none after the restore" \
	[ "$(out_count "$a" '^gpuckpt: checkpoint: .*: wrote [0-9]+ bytes')" = 1 ]
check_state "$a" COMPLETED "marked: the job completed"
check "the unmarked job was taken off the queue" sh -c "scontrol show job -o '$b' | grep -q 'JobState=CANCELLED'"
tap_done
