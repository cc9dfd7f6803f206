#!/bin/bash
# mpi-debs.sh - Open MPI 4.1 with PMIx 4.2, from Debian bookworm, for the GPU
# machine (Ubuntu 24.04, no package registry), so that the MPI example and
# tests/slurm/e2e-mpi-gpu.sh can run there under srun --mpi=pmix.
#
#   on a development machine:  tests/gpu/mpi-debs.sh fetch DIR      (apt-get download)
#   on the GPU machine, root:  tests/gpu/mpi-debs.sh setup DIR      (unpack into /)
#
# DIR travels with the checkout (keep it out of git: .gpudeps/ is ignored).
# setup unpacks like shared/gpu-machine/setup.sh does: into a staging folder,
# then copied in without replacing the merged-/usr links. What the machine
# has already (libhwloc15, libnuma1, zlib, libudev1) is not carried.
set -euo pipefail
PACKAGES=(
	openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev
	libpmix2 libpmix-dev
	libevent-core-2.1-7 libevent-pthreads-2.1-7
	libfabric1 libibverbs1 ibverbs-providers librdmacm1 libnl-3-200 libnl-route-3-200
	libpsm2-2 libpsm-infinipath1 libucx0
)
verb=${1:-} dir=${2:-}
[ -n "$verb" ] && [ -n "$dir" ] || { echo "usage: $0 fetch|setup DIR" >&2; exit 2; }
case $verb in
fetch)
	mkdir -p "$dir"
	(cd "$dir" && apt-get download "${PACKAGES[@]}" 2>&1 | grep -v unsandboxed || true)
	ls "$dir"/*.deb | wc -l
	;;
setup)
	[ "$(id -u)" -eq 0 ] || { echo "mpi-debs.sh setup: needs root" >&2; exit 1; }
	stage=$(mktemp -d)
	trap 'rm -rf "$stage"' EXIT
	n=0
	for p in "${PACKAGES[@]}"; do
		f=$(ls "$dir"/"${p}"_*.deb 2>/dev/null | head -n 1)
		[ -n "$f" ] || { echo "mpi-debs.sh: $p is missing in $dir (run fetch)" >&2; exit 1; }
		dpkg -x "$f" "$stage"
		n=$((n + 1))
	done
	tar -C "$stage" -cf - . | tar -C / -xf - --keep-directory-symlink --no-overwrite-dir
	# What Debian's postinst scripts would have made.
	ln -sf mpirun.openmpi /usr/bin/mpirun
	ln -sf mpicc.openmpi /usr/bin/mpicc
	ldconfig
	echo "mpi-debs.sh: $n packages unpacked; $(mpirun --version 2>&1 | head -n 1); PMIx $(dpkg-deb -f "$(ls "$dir"/libpmix2_*.deb | head -n 1)" Version)"
	;;
*) echo "usage: $0 fetch|setup DIR" >&2; exit 2 ;;
esac
