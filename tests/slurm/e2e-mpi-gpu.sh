#!/bin/bash
# e2e-mpi-gpu.sh - on the GPU machine: examples/halo (MPI + CUDA: halo
# exchange with MPI_Sendrecv, an MPI_Allreduce per step, kernels from
# halo_kernels.cubin) with 2 and then 4 ranks sharing the node's one GPU,
# under real Slurm (cluster.sh --real-gpu, srun --mpi=pmix, Open MPI), each
# requeued with scontrol and preempted by a job of the high partition; each
# run ends with the checksum of an uninterrupted run, every rank resuming
# from the same step of the same set.
#
# Needs: root, a GPU (nvidia-smi), Open MPI with PMIx (tests/gpu/mpi-debs.sh
# brings Debian's onto the GPU machine), the build configured with MPI and
# nvcc. Anything missing: every test point is a SKIP with the reason.
#
#   make -C build/tests check TESTS=slurm/e2e-mpi-gpu.sh
. "${top_srcdir:-$(dirname "$0")/../..}/tests/slurm/e2e-lib.sh"

N=20
HALO=$top_builddir/examples/halo/halo-drv
CUBIN=$top_builddir/examples/halo/halo_kernels.cubin
why=""
if [ "$(id -u)" -ne 0 ]; then
	why="needs root"
elif [ ! -c "${GK_GPU_DEVICE:-/dev/nvidia0}" ] || ! nvidia-smi -L >/dev/null 2>&1; then
	why="no GPU here (${GK_GPU_DEVICE:-/dev/nvidia0}, nvidia-smi)"
elif [ ! -x "$HALO" ] || [ ! -f "$CUBIN" ]; then
	why="examples/halo is not built with its cubin (configure found no MPI or no nvcc)"
elif [ ! -e /usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix.so ] && [ ! -e /usr/lib/slurm-wlm/mpi_pmix.so ]; then
	why="Slurm's PMIx plugin (mpi_pmix.so, slurm-wlm-basic-plugins) is not installed"
elif [ ! -e /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so ]; then
	why="libpmix.so (libpmix-dev), which Slurm's PMIx plugin opens, is not installed"
fi
if [ -n "$why" ]; then
	tap_plan $N
	for _ in $(seq $N); do tap_skip "$why"; done
	exit 0
fi
e2e_require $N
E2E_OWN_APP=1 e2e_start --real-gpu
APP_ENV=":"
SIZE=${GK_HALO_SIZE:-2048} STEPS=${GK_HALO_STEPS:-400} DELAY=${GK_HALO_DELAY_MS:-20}
# The reference: one process, uninterrupted, outside Slurm. Open MPI's
# isolated singleton starts no orted: a one-process run needs none, and the
# reference then depends on nothing but the program and the GPU.
ref_log=$E2E_DIR/reference.log
ref=$(OMPI_MCA_ess_singleton_isolated=1 "$HALO" --size "$SIZE" --steps "$STEPS" --report-every 0 2>"$ref_log" |
	sed -n 's/^halo: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p')
if [ -z "$ref" ]; then
	tap_diag "the reference run ($HALO --size $SIZE --steps $STEPS, one process, outside Slurm) printed no checksum; its stderr:"
	tap_diag "$(tail -n 20 "$ref_log")"
	e2e_bail "no reference checksum: nothing to compare the restarted runs with"
fi
tap_diag "reference checksum (one process, uninterrupted, outside Slurm): $ref"
grace=$(sed -n 's/^PartitionName=low .*GraceTime=\([0-9]*\).*/\1/p' "$SLURM_CONF")

halo_script() { # NAME RANKS
	job_script "$1" "srun --mpi=pmix -l -n $2 $HALO --size $SIZE --steps $STEPS --delay-ms $DELAY --report-every 20
rc=\$?
[ \$rc -eq 143 ] && sleep 600
exit \$rc"
}
final() { sed -n 's/^0: halo: done: .*checksum=\(0x[0-9a-f]*\).*/\1/p' "$(job_out "$1")" | tail -n 1; }
resumed() { sed -n 's/^[0-9]*: halo: resumed from step \([0-9]*\).*/\1/p' "$(job_out "$1")" | sort -un; }
resumed_count() { out_count "$1" '^[0-9]+: halo: resumed from step'; }
sets_restored() { sed -n 's/^[0-9]*: gpuckpt: job .* restoring set \([0-9]*\), as every one.*/\1/p' "$(job_out "$1")" | sort -u; }

# ends_right NAME JOB RANKS: every rank restored one set, resumed from one
# step, and the job ended with the uninterrupted checksum.
ends_right() {
	local got
	check "$1: every rank restored the same set ($(sets_restored "$2" | tr '\n' ' '))" \
		[ "$(out_count "$2" 'restoring set [0-9]+, as every one')" -eq "$3" -a "$(sets_restored "$2" | wc -l)" -eq 1 ]
	check "$1: every rank resumed from one step ($(resumed "$2" | tr '\n' ' '))" \
		[ "$(resumed_count "$2")" -eq "$3" -a "$(resumed "$2" | wc -l)" -eq 1 ]
	got=$(final "$2")
	check "$1: the uninterrupted checksum ($got = $ref)" [ -n "$ref" -a "$got" = "$ref" ]
	check "$1: the job completed" state_is "$2" COMPLETED
	tap_diag "$1: $(grep -hE 'gpuckpt: checkpoint: .*wrote|gpuckpt: restore: .*loaded' "$(job_out "$2")" | head -n 8 | tr '\n' ' ')"
}

for ranks in 2 4; do
	# Requeued.
	j=$(submit --as gkuser1 -n "$ranks" --gres=gpu:1 --gpu-checkpoint=on "$(halo_script "req$ranks" "$ranks")")
	wait_out "$j" '^0: halo: step 100$' 180
	scontrol requeue "$j"
	wait_out "$j" '^batch: node .* restart 1 ' 180
	wait_over "$j" 400
	check "$ranks ranks, requeued: every rank wrote its part and saw the set complete" \
		[ "$(out_count "$j" '^[0-9]+: gpuckpt: checkpoint: set [0-9]+ complete')" -eq "$ranks" ]
	ends_right "$ranks ranks, requeued" "$j" "$ranks"

	# Preempted by a job that needs the GPU.
	low=$(submit --as gkuser2 -p low -n "$ranks" --gres=gpu:1 --gpu-checkpoint=on "$(halo_script "pre$ranks" "$ranks")")
	wait_out "$low" '^0: halo: step 100$' 180
	high=$(submit -p high --gres=gpu:1 --exclusive --wrap 'echo high: running; sleep 10')
	wait_until $((grace + 20)) '[ "$(out_count "$low" "^[0-9]+: gpuckpt: checkpoint: set [0-9]+ complete")" -ge '"$ranks"' ]'
	check "$ranks ranks, preempted: the set was complete within GraceTime (${grace} s)" \
		[ "$(out_count "$low" '^[0-9]+: gpuckpt: checkpoint: set [0-9]+ complete')" -eq "$ranks" ]
	wait_over "$high" $((grace + 60))
	wait_out "$low" '^batch: node .* restart 1 ' 180
	wait_over "$low" 400
	ends_right "$ranks ranks, preempted" "$low" "$ranks"
done
tap_done
