#!/bin/bash
# mpi-slurm.sh - on the GPU machine, in the checkout, as root: install Open MPI
# from the Debian packages carried in DIR (tests/gpu/mpi-debs.sh), build with
# MPI and nvcc, and run tests/slurm/e2e-mpi-gpu.sh: examples/halo with 2 and
# 4 ranks sharing the GPU under real Slurm, requeued and preempted, each
# ending with the checksum of an uninterrupted run.
#
#   prepare (development machine, in the checkout):
#       echo /.gpudeps/ >> .git/info/exclude
#       ../shared/gpu-machine/fetch-debs.sh .gpudeps && cp ../shared/gpu-machine/setup.sh .gpudeps/
#       tests/gpu/mpi-debs.sh fetch .gpudeps/mpi
#   run (GPU machine, in the copy of the checkout):
#       bash .gpudeps/setup.sh .gpudeps && tests/gpu/mpi-slurm.sh .gpudeps/mpi
#
# Prints the test's TAP lines and its summary, then the agreement's cost on
# this machine (benchmarks/agree/run, 2, 4 and 8 ranks, 10,000 points each);
# exits non-zero if a test failed.
set -euo pipefail
deps=${1:-.gpudeps/mpi}
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
"$top/tests/gpu/mpi-debs.sh" setup "$deps"
[ -x configure ] || ./autogen.sh >/dev/null
mkdir -p build
cd build
[ -f Makefile ] || ../configure --with-mpi >configure.out 2>&1 || { tail -n 20 configure.out; exit 1; }
make -j"$(nproc)" >make.out 2>&1 || { tail -n 30 make.out; exit 1; }
make -j"$(nproc)" check TESTS= >make-check.out 2>&1 || { tail -n 30 make-check.out; exit 1; }
rc=0
make -C tests check TESTS=slurm/e2e-mpi-gpu.sh >/dev/null 2>&1 || rc=$?
cat tests/slurm/e2e-mpi-gpu.log
"$top/benchmarks/agree/run" --build "$top/build" --points 10000 --repeat 1 || true
exit $rc
