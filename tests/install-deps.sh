#!/bin/bash
# Install, from Debian's packages, what building and testing gpuckpt needs.
# Does nothing for packages already there; needs root for the rest.
# The CUDA toolkit (cuda.h, nvcc) is not a Debian package: it is expected at
# /usr/local/cuda (or configure --with-cuda=DIR).
set -euo pipefail
packages=(
	autoconf automake libtool pkg-config make gcc
	libjson-c-dev libhwloc-dev libmunge-dev munge libxxhash-dev libssl-dev
	slurmctld slurmd slurm-client libslurm-dev
	bats iproute2 lua5.1 procps psmisc util-linux jq groff-base
	openmpi-bin libopenmpi-dev libpmix-dev
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
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
# Debian's slurmd/slurmctld postinst scripts try to start the daemons through
# systemd; keep them from starting anything on this machine.
printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
chmod +x /usr/sbin/policy-rc.d
trap 'rm -f /usr/sbin/policy-rc.d' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
