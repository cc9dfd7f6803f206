#!/bin/bash
# mpi-slurm.sh - on the GPU machine, in the checkout, as root: install Open MPI
# from the Debian packages carried in DIR (tests/gpu/mpi-debs.sh), build with
# MPI and nvcc, time the agreement (benchmarks/agree/run), and run
# tests/slurm/e2e-mpi-gpu.sh: examples/halo with 2 and 4 ranks sharing the
# GPU under real Slurm (srun --mpi=pmix), each requeued and preempted, each
# ending with the checksum of an uninterrupted run.
#
#   prepare (development machine, in the checkout):
#       echo /.gpudeps/ >> .git/info/exclude
#       ../shared/gpu-machine/fetch-debs.sh .gpudeps && cp ../shared/gpu-machine/setup.sh .gpudeps/
#       tests/gpu/mpi-debs.sh fetch .gpudeps/mpi
#   run (GPU machine, in the copy of the checkout; Slurm, Munge and iproute2
#   from .gpudeps/setup.sh):
#       bash .gpudeps/setup.sh .gpudeps && tests/gpu/mpi-slurm.sh .gpudeps/mpi
#
# What it prints: what mpi-debs.sh moved aside of the machine's own Open MPI
# and PMIx (their libraries would shadow Debian's), a line per phase with its time, the agreement's cost (a
# markdown table), the test's TAP lines (the reference checksum, then for
# each of 2 and 4 ranks, requeued and preempted: every rank restored the same
# set, resumed from one step, the uninterrupted checksum, the job completed)
# and its summary. Exit status: non-zero if a test point failed or the build
# did. The build is out of tree in GK_BUILD (default /tmp/gk-mpi-build, which
# the test users can reach: their jobs run halo-drv and preload the runtime
# from it, and a checkout under /root is not theirs to read) and incremental:
# when a run was cut off, the same command again goes on from where it was.
set -euo pipefail
deps=${1:-.gpudeps/mpi}
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${GK_BUILD:-/tmp/gk-mpi-build}
cd "$top"
say() { echo "mpi-slurm: $*"; }
t=$(date +%s)
phase() { # NAME: how long the phase before took
	local now
	now=$(date +%s)
	say "$1 ($((now - t)) s)"
	t=$now
}

"$top/tests/gpu/mpi-debs.sh" setup "$deps"
nvidia-smi -L | sed 's/^/mpi-slurm: /'
phase "setup done"
[ -x configure ] || ./autogen.sh >/dev/null 2>&1
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ]; then
	"$top/configure" --with-mpi --with-cuda=/usr/local/cuda >configure.out 2>&1 ||
		{ tail -n 20 configure.out; exit 1; }
fi
grep -E '^ *(MPI|nvcc|CUDA)' configure.out 2>/dev/null | sed 's/^/mpi-slurm: configure: /' || true
make -j"$(nproc)" >make.out 2>&1 || { tail -n 30 make.out; exit 1; }
# The test programs a `make check` needs (the test itself uses the plugin,
# the runtime, gpuckpt, the staging script, halo-drv and its cubin).
make -j"$(nproc)" check TESTS= >make-check.out 2>&1 || { tail -n 30 make-check.out; exit 1; }
[ -f examples/halo/halo_kernels.cubin ] || { say "examples/halo/halo_kernels.cubin was not built (nvcc?)"; exit 1; }
phase "build done"
# The jobs run as the test users: everything they run must be reachable.
if ! runuser -u nobody -- test -x "$build/examples/halo/halo-drv"; then
	say "$build is not reachable by other users (set GK_BUILD to a folder that is)"
	exit 1
fi

# The agreement's cost: 1,000 points a second per rank, 2, 4 and 8 ranks
# (mpirun on this machine, shared memory), nothing due.
"$top/benchmarks/agree/run" --build "$build" --points 10000 --repeat 1 2>&1 || say "the agreement benchmark failed"
phase "agreement timed"

rc=0
make -C tests check TESTS=slurm/e2e-mpi-gpu.sh >/dev/null 2>&1 || rc=$?
cat tests/slurm/e2e-mpi-gpu.log
phase "e2e-mpi-gpu.sh done, exit status $rc"
exit $rc
