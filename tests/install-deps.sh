#!/bin/bash
# Install, from Debian's packages, what building and testing gpuckpt needs.
# Does nothing for packages already there; needs root for the rest.
# The CUDA toolkit (cuda.h; nvcc for the GPU tests and CUDA examples: it
# needs g++ as its host compiler) is not a Debian package: README.md says
# where to get it; it is expected at
# /usr/local/cuda (or configure --with-cuda=DIR, CUDA_PREFIX for run-all/demo).
#
#   tests/install-deps.sh [--criu]
#
# --criu also installs CRIU 4 or later, which transparent mode needs on the
# nodes (optional: the tests here do not need it; CRIU does not run on
# Debian bookworm's glibc and kernel's vDSO anyway, DESIGN.md). Only where the
# system's own packages have it (Debian trixie and later); elsewhere it says
# where CRIU 4 comes from and installs nothing.
set -euo pipefail
criu=0
case ${1:-} in
--criu) criu=1 ;;
"") ;;
*) echo "install-deps: unknown option '$1' (expected --criu)" >&2; exit 2 ;;
esac
packages=(
	autoconf automake libtool pkg-config make gcc g++
	libjson-c-dev libhwloc-dev libmunge-dev munge libxxhash-dev libssl-dev
	slurmctld slurmd slurm-client libslurm-dev slurm-wlm-basic-plugins
	bats iproute2 lua5.1 procps psmisc util-linux jq groff-base git debootstrap
	# the manifest's JSON Schema (tests/image/manifest-schema.sh)
	python3-jsonschema
	dpkg-dev debhelper lintian clang-14 libclang-rt-14-dev
	# the RPMs (make rpm, tests/packages/rpm.sh): rpmbuild and rpmlint
	rpm rpmlint
	# containers (tests/slurm/e2e-containers.sh): images, enroot/pyxis builds, podman
	squashfs-tools libbsd-dev linux-libc-dev podman runc
	openmpi-bin libopenmpi-dev libpmix-dev
	# OpenCL (runtime/core/interpose/opencl.c, tests/opencl/): the ICD loader and
	# its headers, pocl's CPU device, clinfo to say what devices a node has
	ocl-icd-opencl-dev ocl-icd-libopencl1 pocl-opencl-icd clinfo
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ $criu -eq 1 ] && ! dpkg-query -W -f='${Status}' criu 2>/dev/null | grep -q "install ok installed"; then
	v=$(apt-cache policy criu 2>/dev/null | sed -n 's/^ *Candidate: *\([0-9]*\).*/\1/p')
	if [ -n "$v" ] && [ "$v" -ge 4 ] 2>/dev/null; then
		missing+=(criu)
	else
		echo "install-deps: this system's packages have no CRIU 4 (candidate: ${v:-none});" \
			"transparent mode needs it on the nodes: Debian trixie's criu 4.1.1 (or a newer" \
			"release, or CRIU built from source, criu.org); see docs/transparent.md" >&2
	fi
fi
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: everything is installed"
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]}; run as root to install them" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# The fuzz targets' compiler is named for bookworm (clang-14); a release
# without it (trixie, whose root runs only the Slurm tests: debian-root.sh)
# goes on without, saying so.
for p in clang-14 libclang-rt-14-dev; do
	if [[ " ${missing[*]} " == *" $p "* ]] &&
		! apt-cache policy "$p" 2>/dev/null | grep -q '^ *Candidate: [0-9]'; then
		echo "install-deps: $p is not in this release's packages; the fuzz tests need it"
		for i in "${!missing[@]}"; do [ "${missing[$i]}" = "$p" ] && unset 'missing[i]'; done
	fi
done
missing=("${missing[@]}")
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: done"
	exit 0
fi
# Debian's slurmd/slurmctld postinst scripts try to start the daemons through
# systemd; keep them from starting anything on this machine. A policy the
# machine already has (container images often ship one) is left as it is.
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod +x /usr/sbin/policy-rc.d
	trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
